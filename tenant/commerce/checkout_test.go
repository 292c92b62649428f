package commerce_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestCheckoutCreatesSessionOnConnectedAccount(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"name": "Mug", "price": 1250, "currency": "eur", "track_inventory": true, "stock_quantity": 10, "sku": "MUG-1"})

	before := queryOne[int64](t, f, `SELECT COALESCE(sum(amount), 0) FROM credit_ledger`)

	req := apitest.Request{Method: "POST", Path: "/v1/checkout-sessions", Key: f.p.Key,
		Header: map[string]string{"Idempotency-Key": "idem-checkout-1"},
		Body: map[string]any{
			"items":       []any{item(pid, 3)},
			"customer":    map[string]any{"name": "Ada Buyer", "email": "ada@example.com"},
			"success_url": "https://shop.test/thanks?session={CHECKOUT_SESSION_ID}",
			"cancel_url":  "https://shop.test/cart",
		}}
	cs := f.env.Send(req).Expect(t, 201).JSON(t)
	assert.ElementsMatch(t, []string{"order_id", "payment_session_id", "checkout_url", "expires_at"}, keys(cs))
	sessionID := cs["payment_session_id"].(string)
	assert.True(t, strings.HasPrefix(sessionID, "cs_"), sessionID)
	assert.True(t, strings.HasPrefix(cs["checkout_url"].(string), "https://"), cs["checkout_url"])
	exp, err := time.Parse(time.RFC3339, cs["expires_at"].(string))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(cs["expires_at"].(string), "Z"))
	assert.WithinDuration(t, time.Now().Add(time.Hour), exp, 2*time.Minute)

	// A retry with the same key is answered from the idempotency store:
	// the same session, no second order or session.
	again := f.env.Send(req).Expect(t, 201)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, sessionID, again.JSON(t)["payment_session_id"])

	// The processor saw one session on the project's connected account,
	// with the caller's Idempotency-Key and the success URL unchanged.
	reqs := f.mock.Requests("POST /v1/checkout/sessions")
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, acct, r.Header.Get("Stripe-Account"))
	assert.Equal(t, "idem-checkout-1", r.Header.Get("Idempotency-Key"))
	assert.Equal(t, "https://shop.test/thanks?session={CHECKOUT_SESSION_ID}", r.Form.Get("success_url"))
	assert.Equal(t, "https://shop.test/cart", r.Form.Get("cancel_url"))
	assert.Equal(t, "payment", r.Form.Get("mode"))
	assert.Equal(t, "3", r.Form.Get("line_items[0][quantity]"))
	assert.Equal(t, "1250", r.Form.Get("line_items[0][price_data][unit_amount]"))
	assert.Equal(t, "eur", r.Form.Get("line_items[0][price_data][currency]"))
	assert.Equal(t, "Mug", r.Form.Get("line_items[0][price_data][product_data][name]"))
	assert.Equal(t, "ada@example.com", r.Form.Get("customer_email"))
	orderID := num(cs["order_id"])
	assert.Equal(t, f.p.ID, r.Form.Get("metadata[project_id]"))
	assert.Equal(t, fmt.Sprint(orderID), r.Form.Get("metadata[order_id]"))
	assert.Equal(t, fmt.Sprint(orderID), r.Form.Get("payment_intent_data[metadata][order_id]"))

	// The order exists before payment, pending, with the stock reserved.
	o := f.order(t, orderID)
	assert.Equal(t, "pending", o["status"])
	assert.Equal(t, "unpaid", o["payment_status"])
	assert.Equal(t, sessionID, o["payment_session_id"])
	assert.Equal(t, float64(3750), o["subtotal"])
	assert.Equal(t, float64(3750), o["total"])
	assert.Equal(t, float64(0), o["refunded_amount"])
	assert.Equal(t, "eur", o["currency"])
	assert.Equal(t, fmt.Sprintf("ORD-%06d", orderID), o["number"])
	assert.Equal(t, map[string]any{"name": "Ada Buyer", "email": "ada@example.com"}, o["customer"])
	assert.Equal(t, []any{map[string]any{"product_id": float64(pid), "variant_id": nil, "name": "Mug", "sku": "MUG-1",
		"quantity": float64(3), "unit_price": float64(1250), "total": float64(3750)}}, o["items"])
	f.expectStock(t, pid, 10, 3)

	// Checkout costs no credits.
	assert.Equal(t, before, queryOne[int64](t, f, `SELECT COALESCE(sum(amount), 0) FROM credit_ledger`))

	// The release job is scheduled after the session's expiry.
	var scheduled time.Time
	require.NoError(t, f.env.Server.Pool.QueryRow(context.Background(),
		`SELECT scheduled_at FROM river.river_job WHERE kind = 'commerce.release_order' AND args->>'project_id' = $1 AND (args->>'order_id')::bigint = $2`,
		f.p.ID, orderID).Scan(&scheduled))
	assert.WithinDuration(t, exp.Add(15*time.Minute), scheduled, 2*time.Minute)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCheckoutVariantPriceAndStock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.connect(t)
	p := f.do(t, "POST", "/products", map[string]any{"name": "Tee", "price": 2000, "status": "active", "track_inventory": true,
		"variants": []any{map[string]any{"name": "Large", "price": 2200, "sku": "TEE-L", "stock_quantity": 2, "options": map[string]any{"size": "L"}}}}).Expect(t, 201).JSON(t)
	pid := num(p["id"])
	vid := num(p["variants"].([]any)[0].(map[string]any)["id"])

	cs := f.checkout(t, map[string]any{"product_id": pid, "variant_id": vid, "quantity": 2}).Expect(t, 201).JSON(t)
	o := f.order(t, num(cs["order_id"]))
	it := o["items"].([]any)[0].(map[string]any)
	assert.Equal(t, "Tee - Large", it["name"])
	assert.Equal(t, "TEE-L", it["sku"])
	assert.Equal(t, float64(vid), it["variant_id"])
	assert.Equal(t, float64(2200), it["unit_price"])
	stock, reserved := f.variantStock(t, vid)
	assert.Equal(t, []int64{2, 2}, []int64{stock, reserved})

	// The variant is sold out; the product row itself holds nothing.
	f.checkout(t, map[string]any{"product_id": pid, "variant_id": vid, "quantity": 1}).Problem(t, 409, "conflict")
	_, productReserved := f.stock(t, pid)
	assert.Equal(t, int64(0), productReserved)
}

// Twenty concurrent checkouts of a product with five in stock: exactly
// five sessions, fifteen 409 conflict "insufficient stock", never oversold.
func TestCheckoutStockConcurrency(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 5})

	const n = 20
	var wg sync.WaitGroup
	results := make([]*apitest.Resp, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := f.tryCheckout(item(pid, 1))
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = r
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	created, conflicts := 0, 0
	sessions := map[string]bool{}
	for _, r := range results {
		switch r.Status {
		case 201:
			created++
			sessions[r.JSON(t)["payment_session_id"].(string)] = true
		case 409:
			p := r.Problem(t, 409, "conflict")
			assert.Contains(t, p["detail"], "insufficient stock")
			conflicts++
		default:
			t.Fatalf("unexpected status %d: %s", r.Status, r.Body)
		}
	}
	assert.Equal(t, 5, created)
	assert.Equal(t, 15, conflicts)
	assert.Len(t, sessions, 5)
	assert.Len(t, f.mock.Requests("POST /v1/checkout/sessions"), 5, "a session is created only for reserved stock")
	f.expectStock(t, pid, 5, 5)
	assert.Equal(t, 5, queryOne[int](t, f, `SELECT count(*) FROM orders`))
}

func TestCheckoutRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 1})

	// Before onboarding, and before the account can take charges: 409.
	p := f.checkout(t, item(pid, 1)).Problem(t, 409, "connect_not_ready")
	assert.Contains(t, p["detail"], "onboard")
	f.onboard(t)
	f.checkout(t, item(pid, 1)).Problem(t, 409, "connect_not_ready")
	assert.Empty(t, f.mock.Requests("POST /v1/checkout/sessions"))
	f.expectStock(t, pid, 1, 0)

	f.connect(t)
	draft := f.product(t, map[string]any{"status": "draft"})
	eur := f.product(t, map[string]any{"currency": "eur"})
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		field  string
	}{
		{"no items", map[string]any{"success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 400, "bad_request", ""},
		{"no success_url", map[string]any{"items": []any{item(pid, 1)}, "cancel_url": "https://a.test/c"}, 400, "bad_request", ""},
		{"item without quantity", map[string]any{"items": []any{map[string]any{"product_id": pid}}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 400, "bad_request", ""},
		{"empty items", map[string]any{"items": []any{}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 422, "validation_failed", "items"},
		{"zero quantity", map[string]any{"items": []any{item(pid, 0)}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 422, "validation_failed", "items[0].quantity"},
		{"bad url", map[string]any{"items": []any{item(pid, 1)}, "success_url": "shop/thanks", "cancel_url": "https://a.test/c"}, 422, "validation_failed", "success_url"},
		{"bad email", map[string]any{"items": []any{item(pid, 1)}, "customer": map[string]any{"email": "nope"}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 422, "validation_failed", "customer.email"},
		{"unknown product", map[string]any{"items": []any{item(999999, 1)}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 422, "validation_failed", "items[0].product_id"},
		{"draft product", map[string]any{"items": []any{item(draft, 1)}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 422, "validation_failed", "items[0].product_id"},
		{"two currencies", map[string]any{"items": []any{item(pid, 1), item(eur, 1)}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 422, "validation_failed", "items[1].product_id"},
		{"more than in stock", map[string]any{"items": []any{item(pid, 2)}, "success_url": "https://a.test/s", "cancel_url": "https://a.test/c"}, 409, "conflict", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := f.do(t, "POST", "/checkout-sessions", c.body).Problem(t, c.status, c.code)
			if c.field != "" {
				assert.Contains(t, p["errors"], c.field, "%s", p)
			}
		})
	}
	assert.Empty(t, f.mock.Requests("POST /v1/checkout/sessions"))
	f.expectStock(t, pid, 1, 0)

	// A key without commerce:write cannot check out.
	ro := f.p.NewKey(false, "commerce:read")
	f.env.Do("POST", "/v1/checkout-sessions", ro, map[string]any{}).Problem(t, 403, "forbidden")
}

// A processor failure frees the reservation and leaves no order behind.
// A reused Idempotency-Key the processor saw with other parameters is a
// 409 idempotency_conflict; another refusal is a 502 carrying its message.
func TestCheckoutProcessorFailureReleasesStock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		status     int // the processor's error
		errType    string
		message    string
		qty        int
		wantStatus int
		wantCode   string
		wantDetail string // a part of the detail, if any
	}{
		{"refused", http.StatusPaymentRequired, "invalid_request_error", "Your account cannot currently make live charges.", 2,
			502, "upstream_unavailable", "cannot currently make live charges"},
		{"idempotency conflict", http.StatusBadRequest, "idempotency_error", "Keys for idempotent requests can only be used with the same parameters.", 1,
			409, "idempotency_conflict", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.connect(t)
			pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 2})
			f.mock.Fail("POST /v1/checkout/sessions", c.status, c.errType, c.message)

			p := f.checkout(t, item(pid, c.qty)).Problem(t, c.wantStatus, c.wantCode)
			if c.wantDetail != "" {
				assert.Contains(t, p["detail"], c.wantDetail)
			}
			f.expectStock(t, pid, 2, 0)
			assert.Equal(t, 0, queryOne[int](t, f, `SELECT count(*) FROM orders`), "no order is left behind")
		})
	}
}

// A server without a payment processor is no outage: every payment
// endpoint tells the project it cannot take payments (409
// connect_not_ready, retrying does not help), and the status endpoint
// answers the status. Only the processor's own webhook keeps a 503, so the
// processor retries its events until the secret is set.
func TestPaymentsUnconfigured(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	pid := f.product(t, nil)
	p := f.checkout(t, item(pid, 1)).Problem(t, 409, "connect_not_ready")
	assert.Contains(t, p["detail"], "no payment processor")
	assert.Equal(t, 0, queryOne[int](t, f, `SELECT count(*) FROM orders`))
	f.do(t, "POST", "/payments/connect/onboard", map[string]any{"return_url": "https://a.test/r", "refresh_url": "https://a.test/f"}).
		Problem(t, 409, "connect_not_ready")
	c := f.do(t, "GET", "/payments/connect", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, map[string]any{"account_id": nil, "charges_enabled": false, "payouts_enabled": false, "details_submitted": false}, c)

	// An account and a processor payment recorded while a processor was
	// configured: the status is the last known, a refund cannot be made.
	o := f.do(t, "POST", "/orders", map[string]any{"items": []any{item(pid, 1)}, "payment_status": "paid"}).Expect(t, 201).JSON(t)
	f.tx(t, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO payment_account (account_id, charges_enabled, payouts_enabled, details_submitted)
			VALUES ('acct_gone', true, false, true)`)
		if err == nil {
			_, err = tx.Exec(context.Background(), `UPDATE orders SET source = 'checkout', payment_intent_id = 'pi_gone'`)
		}
		return err
	})
	c = f.do(t, "GET", "/payments/connect", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, map[string]any{"account_id": "acct_gone", "charges_enabled": true, "payouts_enabled": false, "details_submitted": true}, c)
	f.action(t, num(o["id"]), "refund", nil).Problem(t, 409, "connect_not_ready")
	assert.Equal(t, "paid", f.order(t, num(o["id"]))["payment_status"])

	p = f.env.Send(apitest.Request{Method: "POST", Path: "/v1/payments/webhook", Body: `{}`,
		Header: map[string]string{"Stripe-Signature": "t=1,v1=00"}}).Problem(t, 503, "service_unavailable")
	assert.Contains(t, p["detail"], "STRIPE_WEBHOOK_SECRET")
}
