package commerce_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// paidOrder checks out qty units of a product and pays for them through the
// processor's webhook; it returns the order id and its payment intent.
func (f *fixture) paidOrder(t *testing.T, acct string, productID int64, qty int) (int64, string) {
	t.Helper()
	orderID := f.checkoutOrder(t, item(productID, qty))
	sess := f.sessionObject(t, orderID, "complete", "paid")
	f.event(t, fmt.Sprintf("evt_pay_%d", seq.Add(1)), "checkout.session.completed", acct, sess).Expect(t, 200)
	return orderID, sess["payment_intent"].(string)
}

func (f *fixture) action(t *testing.T, orderID int64, action string, body any) *apitest.Resp {
	t.Helper()
	return f.do(t, "POST", fmt.Sprintf("/orders/%d/%s", orderID, action), body)
}

// The life of a checkout order: pending, paid, refunded in part,
// delivered, refunded in full; each step's event, and the steps refused
// on the way with 409.
func TestOrderLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	rec := f.recordEvents(t)
	pid := f.product(t, map[string]any{"price": 1000, "track_inventory": true, "stock_quantity": 5})
	orderID := f.checkoutOrder(t, item(pid, 2))
	rec.expect(t, "order.created", orderID, "pending", "unpaid")

	p := f.action(t, orderID, "fulfill", nil).Problem(t, 409, "conflict")
	assert.Contains(t, p["detail"], "only a paid order can be fulfilled")
	f.action(t, orderID, "refund", nil).Problem(t, 409, "conflict")

	sess := f.sessionObject(t, orderID, "complete", "paid")
	pi := sess["payment_intent"].(string)
	f.event(t, "evt_life_paid", "checkout.session.completed", acct, sess).Expect(t, 200)
	rec.expect(t, "order.paid", orderID, "paid", "paid")

	// A partial refund goes to the processor on the connected account.
	o := f.env.Send(apitest.Request{Method: "POST", Path: fmt.Sprintf("/v1/orders/%d/refund", orderID), Key: f.p.Key,
		Header: map[string]string{"Idempotency-Key": "refund-1"}, Body: map[string]any{"amount": 500}}).Expect(t, 200).JSON(t)
	assert.Equal(t, "paid", o["status"])
	assert.Equal(t, "partially_refunded", o["payment_status"])
	assert.Equal(t, float64(500), o["refunded_amount"])
	refunds := f.mock.Requests("POST /v1/refunds")
	require.Len(t, refunds, 1)
	assert.Equal(t, acct, refunds[0].Header.Get("Stripe-Account"))
	assert.Equal(t, "refund-1", refunds[0].Header.Get("Idempotency-Key"))
	assert.Equal(t, pi, refunds[0].Form.Get("payment_intent"))
	assert.Equal(t, "500", refunds[0].Form.Get("amount"))
	rec.expect(t, "order.refunded", orderID, "paid", "partially_refunded")

	p = f.action(t, orderID, "refund", map[string]any{"amount": 1501}).Problem(t, 422, "validation_failed")
	assert.Contains(t, p["errors"], "amount")
	f.action(t, orderID, "refund", map[string]any{"amount": 0}).Problem(t, 422, "validation_failed")

	o = f.action(t, orderID, "fulfill", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, "delivered", o["status"])
	rec.expect(t, "order.fulfilled", orderID, "delivered", "partially_refunded")
	f.action(t, orderID, "fulfill", nil).Problem(t, 409, "conflict")
	p = f.action(t, orderID, "cancel", nil).Problem(t, 409, "conflict")
	assert.Contains(t, p["detail"], "delivered")

	// Without an amount, the rest is refunded.
	o = f.action(t, orderID, "refund", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, "refunded", o["payment_status"])
	assert.Equal(t, float64(2000), o["refunded_amount"])
	assert.Equal(t, "delivered", o["status"])
	assert.Equal(t, "1500", f.mock.Requests("POST /v1/refunds")[1].Form.Get("amount"))
	rec.expect(t, "order.refunded", orderID, "delivered", "refunded")
	p = f.action(t, orderID, "refund", map[string]any{"amount": 1}).Problem(t, 409, "conflict")
	assert.Contains(t, p["detail"], "refunded")
	rec.none(t)

	// The processor's later events for those refunds change nothing.
	f.event(t, "evt_life_ch", "charge.refunded", acct, map[string]any{"id": "ch_x", "payment_intent": pi, "amount_refunded": 2000}).Expect(t, 200)
	assert.Equal(t, float64(2000), f.order(t, orderID)["refunded_amount"])
	rec.none(t)

	// Stock: two sold.
	f.expectStock(t, pid, 3, 0)
}

// Cancelling a pending checkout expires its session at the processor and
// frees the stock; a cancelled order cannot be fulfilled, refunded or
// cancelled again.
func TestOrderCancelPending(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	rec := f.recordEvents(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 2})
	cs := f.checkout(t, item(pid, 2)).Expect(t, 201).JSON(t)
	orderID := num(cs["order_id"])
	rec.expect(t, "order.created", orderID, "pending", "unpaid")

	o := f.action(t, orderID, "cancel", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, "cancelled", o["status"])
	assert.Equal(t, "unpaid", o["payment_status"])
	rec.expect(t, "order.cancelled", orderID, "cancelled", "unpaid")
	expire := f.mock.Requests(fmt.Sprintf("POST /v1/checkout/sessions/%s/expire", cs["payment_session_id"]))
	require.Len(t, expire, 1)
	assert.Equal(t, acct, expire[0].Header.Get("Stripe-Account"))
	f.expectStock(t, pid, 2, 0)

	p := f.action(t, orderID, "fulfill", nil).Problem(t, 409, "conflict")
	assert.Contains(t, p["detail"], "cancelled")
	f.action(t, orderID, "cancel", nil).Problem(t, 409, "conflict")
	f.action(t, orderID, "refund", nil).Problem(t, 409, "conflict")
	rec.none(t)

	// A session the buyer already completed cannot be cancelled: its
	// payment is on the way.
	other := f.checkoutOrder(t, item(pid, 1))
	sess := f.order(t, other)["payment_session_id"].(string)
	f.mock.Fail("POST /v1/checkout/sessions/"+sess+"/expire", 400, "invalid_request_error", "Only Checkout Sessions with a status in [\"open\"] can be expired.")
	f.mock.Patch("/v1/checkout/sessions/"+sess, map[string]any{"status": "complete", "payment_status": "paid"})
	p = f.action(t, other, "cancel", nil).Problem(t, 409, "conflict")
	assert.Contains(t, p["detail"], "completed this checkout")
	assert.Equal(t, "pending", f.order(t, other)["status"])
}

// An order cancelled while its session is being created: the checkout
// answers 409 and the session is expired at once.
func TestOrderCancelledDuringCheckout(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 1})
	f.mock.Before("POST /v1/checkout/sessions", func() {
		pending := f.do(t, "GET", "/orders?status=pending", nil).Expect(t, 200).JSON(t)["data"].([]any)
		require.Len(t, pending, 1)
		f.action(t, num(pending[0].(map[string]any)["id"]), "cancel", nil).Expect(t, 200)
	})
	p := f.checkout(t, item(pid, 1)).Problem(t, 409, "conflict")
	assert.Contains(t, p["detail"], "cancelled")
	assert.Len(t, f.mock.Requests("POST /v1/checkout/sessions"), 1)
	assert.Len(t, f.mock.Requests("POST /v1/checkout/sessions/"), 1, "and expired at once")
	f.expectStock(t, pid, 1, 0)
}

// Cancelling a paid order puts its units back.
func TestOrderCancelPaidRestocks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 4})
	orderID, _ := f.paidOrder(t, acct, pid, 3)
	stock, _ := f.stock(t, pid)
	require.Equal(t, int64(1), stock)
	rec := f.recordEvents(t)
	o := f.action(t, orderID, "cancel", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, "cancelled", o["status"])
	assert.Equal(t, "paid", o["payment_status"], "cancelling does not refund")
	rec.expect(t, "order.cancelled", orderID, "cancelled", "paid")
	f.expectStock(t, pid, 4, 0)
	assert.Empty(t, f.mock.Requests("POST /v1/checkout/sessions/"), "no session to expire for a paid order")
	// A cancelled, paid order can still be refunded.
	assert.Equal(t, "refunded", f.action(t, orderID, "refund", nil).Expect(t, 200).JSON(t)["payment_status"])
}

// A payment that arrives after the order was cancelled is recorded (to be
// refunded) without selling stock again.
func TestOrderPaymentAfterCancel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 1})
	orderID := f.checkoutOrder(t, item(pid, 1))
	f.action(t, orderID, "cancel", nil).Expect(t, 200)
	f.event(t, "evt_late_paid", "checkout.session.completed", acct, f.sessionObject(t, orderID, "complete", "paid")).Expect(t, 200)
	o := f.order(t, orderID)
	assert.Equal(t, "cancelled", o["status"])
	assert.Equal(t, "paid", o["payment_status"])
	f.expectStock(t, pid, 1, 0)
}

func TestManualOrders(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := f.recordEvents(t)
	pid := f.product(t, map[string]any{"price": 700, "track_inventory": true, "stock_quantity": 3, "sku": "BAG"})
	draft := f.product(t, map[string]any{"price": 300, "status": "draft"})

	// Scopes: manual orders and refunds need commerce:admin.
	writer := f.p.NewKey(false, "commerce:write", "commerce:read")
	p := f.env.Do("POST", "/v1/orders", writer, map[string]any{"items": []any{item(pid, 1)}}).Problem(t, 403, "forbidden")
	assert.Equal(t, "this key lacks the scope commerce:admin", p["detail"])
	admin := f.p.NewKey(false, "commerce:admin")

	// Paid at once: stock sold, created and paid events.
	o := f.env.Do("POST", "/v1/orders", admin, map[string]any{"items": []any{item(pid, 2), item(draft, 1)},
		"customer": map[string]any{"name": "Walk In", "email": "walk@example.com"}, "payment_status": "paid"}).Expect(t, 201).JSON(t)
	paidID := num(o["id"])
	assert.Equal(t, "paid", o["status"])
	assert.Equal(t, "paid", o["payment_status"])
	assert.Equal(t, float64(1700), o["total"])
	assert.Nil(t, o["payment_session_id"])
	rec.expect(t, "order.created", paidID, "paid", "paid")
	rec.expect(t, "order.paid", paidID, "paid", "paid")
	f.expectStock(t, pid, 1, 0)

	// Unpaid: pending with the stock held; more than is left is refused.
	f.env.Do("POST", "/v1/orders", admin, map[string]any{"items": []any{item(pid, 2)}}).Problem(t, 409, "conflict")
	o = f.env.Do("POST", "/v1/orders", admin, map[string]any{"items": []any{item(pid, 1)}}).Expect(t, 201).JSON(t)
	assert.Equal(t, "pending", o["status"])
	rec.expect(t, "order.created", num(o["id"]), "pending", "unpaid")
	f.expectStock(t, pid, 1, 1)
	f.action(t, num(o["id"]), "cancel", nil).Expect(t, 200)
	rec.expect(t, "order.cancelled", num(o["id"]), "cancelled", "unpaid")
	f.expectStock(t, pid, 1, 0)

	// A manual order paid outside the processor is refunded as a record.
	f.env.Do("POST", fmt.Sprintf("/v1/orders/%d/refund", paidID), writer, nil).Problem(t, 403, "forbidden")
	o = f.env.Do("POST", fmt.Sprintf("/v1/orders/%d/refund", paidID), admin, map[string]any{"amount": 700}).Expect(t, 200).JSON(t)
	assert.Equal(t, "partially_refunded", o["payment_status"])
	assert.Equal(t, float64(700), o["refunded_amount"])
	rec.expect(t, "order.refunded", paidID, "paid", "partially_refunded")
	assert.Empty(t, f.mock.Requests("POST /v1/refunds"))

	// Bad bodies.
	f.env.Do("POST", "/v1/orders", admin, map[string]any{}).Problem(t, 400, "bad_request")
	f.env.Do("POST", "/v1/orders", admin, map[string]any{"items": []any{item(pid, 1)}, "payment_status": "refunded"}).Problem(t, 422, "validation_failed")
	f.env.Do("POST", "/v1/orders", admin, map[string]any{"items": []any{item(pid, 1)}, "status": "paid"}).Problem(t, 400, "bad_request")
}

func TestOrderListAndGet(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pid := f.product(t, map[string]any{"price": 100})
	var ids []int64
	for i := range 5 {
		body := map[string]any{"items": []any{item(pid, i+1)}}
		if i%2 == 0 {
			body["payment_status"] = "paid"
		}
		ids = append(ids, num(f.do(t, "POST", "/orders", body).Expect(t, 201).JSON(t)["id"]))
	}
	page := f.do(t, "GET", "/orders?limit=2", nil).Expect(t, 200).JSON(t)
	data := page["data"].([]any)
	require.Len(t, data, 2)
	assert.Equal(t, float64(ids[4]), data[0].(map[string]any)["id"], "newest first")
	assert.Equal(t, true, page["has_more"])
	next := f.do(t, "GET", "/orders?limit=2&cursor="+page["next_cursor"].(string), nil).Expect(t, 200).JSON(t)
	assert.Equal(t, float64(ids[2]), next["data"].([]any)[0].(map[string]any)["id"])

	paid := f.do(t, "GET", "/orders?status=paid", nil).Expect(t, 200).JSON(t)
	assert.Len(t, paid["data"], 3)
	assert.Equal(t, false, paid["has_more"])
	assert.Nil(t, paid["next_cursor"])
	assert.Len(t, f.do(t, "GET", "/orders?payment_status=unpaid", nil).Expect(t, 200).JSON(t)["data"], 2)
	f.do(t, "GET", "/orders?status=shipped", nil).Problem(t, 422, "validation_failed")

	o := f.order(t, ids[0])
	for _, k := range []string{"id", "number", "status", "payment_status", "items", "subtotal", "total", "refunded_amount",
		"currency", "customer", "payment_session_id", "created_at", "updated_at"} {
		assert.Contains(t, o, k)
	}
	_, err := time.Parse(time.RFC3339, o["created_at"].(string))
	require.NoError(t, err)
	f.do(t, "GET", "/orders/999999", nil).Problem(t, 404, "not_found")
	f.do(t, "GET", "/orders/abc", nil).Problem(t, 404, "not_found")
	reader := f.p.NewKey(false, "commerce:read")
	f.env.Do("GET", "/v1/orders", reader, nil).Expect(t, 200)
	f.env.Do("POST", fmt.Sprintf("/v1/orders/%d/fulfill", ids[0]), reader, nil).Problem(t, 403, "forbidden")
}

// The release job settles an order its processor events left pending:
// an open session is expired and the order cancelled; a session paid
// meanwhile marks the order paid.
func TestReleaseJob(t *testing.T) {
	t.Parallel()
	f := setup(t, apitest.WithWorkers())
	f.connect(t)
	rec := f.recordEvents(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 5})
	open := f.checkoutOrder(t, item(pid, 1))
	paid := f.checkoutOrder(t, item(pid, 2))
	paidSession := f.order(t, paid)["payment_session_id"].(string)
	f.mock.Patch("/v1/checkout/sessions/"+paidSession, map[string]any{"status": "complete", "payment_status": "paid", "payment_intent": "pi_released"})

	ctx := context.Background()
	rows, err := f.env.Server.Pool.Query(ctx, `SELECT id FROM river.river_job WHERE kind = 'commerce.release_order' AND args->>'project_id' = $1`, f.p.ID)
	require.NoError(t, err)
	jobIDs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, jobIDs, 2)
	for _, id := range jobIDs {
		_, err := f.env.Server.River.JobRetry(ctx, id)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		return f.order(t, open)["status"] == "cancelled" && f.order(t, paid)["status"] == "paid"
	}, 20*time.Second, 100*time.Millisecond)
	assert.Len(t, f.mock.Requests(fmt.Sprintf("POST /v1/checkout/sessions/%s/expire", f.order(t, open)["payment_session_id"])), 1)
	f.expectStock(t, pid, 3, 0)
	seen := map[string]bool{}
	for range 4 {
		e := rec.next(t)
		seen[fmt.Sprintf("%s %v", e.Type, e.Data["id"])] = true
	}
	assert.Equal(t, map[string]bool{fmt.Sprintf("order.created %d", open): true, fmt.Sprintf("order.created %d", paid): true,
		fmt.Sprintf("order.cancelled %d", open): true, fmt.Sprintf("order.paid %d", paid): true}, seen)
	rec.none(t)
}
