package commerce_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/payments/stripetest"
)

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	payload := stripetest.Event("evt_sig_1", "account.updated", acct, map[string]any{"id": acct, "charges_enabled": false})
	send := func(sig string, body []byte) *apitest.Resp {
		h := map[string]string{}
		if sig != "" {
			h["Stripe-Signature"] = sig
		}
		return f.env.Send(apitest.Request{Method: "POST", Path: "/v1/payments/webhook", Body: body, Header: h})
	}
	cases := []struct {
		name string
		sig  string
		body []byte
	}{
		{"no header", "", payload},
		{"wrong secret", stripetest.Sign(payload, "whsec_other", time.Time{}), payload},
		{"tampered body", stripetest.Sign(payload, webhookSecret, time.Time{}), append([]byte(nil), append(payload[:len(payload)-1], []byte(`,"x":1}`)...)...)},
		{"timestamp too old", stripetest.Sign(payload, webhookSecret, time.Now().Add(-6*time.Minute)), payload},
		{"garbage header", "t=abc,v1=zz", payload},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := send(c.sig, c.body).Problem(t, 400, "bad_request")
			assert.Contains(t, p["detail"], "Stripe-Signature")
		})
	}
	// The route is not under the anonymous per-IP limit (free plan: burst
	// 60), which would refuse the processor's bursts.
	for range 70 {
		require.Equal(t, 400, send("t=1,v1=00", payload).Status)
	}
	// Nothing was applied: charges are still enabled and no event recorded.
	assert.True(t, queryOne[bool](t, f, `SELECT charges_enabled FROM payment_account`))
	assert.Zero(t, queryOne[int](t, f, `SELECT count(*) FROM payment_events WHERE id = 'evt_sig_1'`))
	// Within tolerance, a correctly signed event applies.
	send(stripetest.Sign(payload, webhookSecret, time.Now().Add(-4*time.Minute)), payload).Expect(t, 200)
	assert.False(t, queryOne[bool](t, f, `SELECT charges_enabled FROM payment_account`))
}

// checkout.session.completed marks the order paid and sells the reserved
// stock exactly once, even when the processor repeats the event, also
// concurrently.
func TestWebhookCheckoutCompletedOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 5})
	orderID := f.checkoutOrder(t, item(pid, 2))
	sess := f.sessionObject(t, orderID, "complete", "paid")
	rec := f.recordEvents(t)

	res := f.event(t, "evt_paid_1", "checkout.session.completed", acct, sess).Expect(t, 200).JSON(t)
	assert.Equal(t, true, res["received"])
	assert.Nil(t, res["duplicate"])
	o := f.order(t, orderID)
	assert.Equal(t, "paid", o["status"])
	assert.Equal(t, "paid", o["payment_status"])
	f.expectStock(t, pid, 3, 0)
	rec.expect(t, "order.paid", orderID, "paid", "paid")

	// The same event again, several times at once: nothing changes.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := f.tryEvent("evt_paid_1", "checkout.session.completed", acct, sess)
			if !assert.NoError(t, err) || !assert.Equal(t, 200, r.Status) {
				return
			}
			var m map[string]any
			assert.NoError(t, json.Unmarshal(r.Body, &m), "%s", r.Body)
			assert.Equal(t, true, m["duplicate"])
		}()
	}
	wg.Wait()
	// A different event for the same payment (the processor may send
	// async_payment_succeeded too) does not sell the stock twice either.
	f.event(t, "evt_paid_2", "checkout.session.async_payment_succeeded", acct, sess).Expect(t, 200)
	f.expectStock(t, pid, 3, 0)
	assert.Equal(t, o["updated_at"], f.order(t, orderID)["updated_at"])
	rec.none(t)
	assert.Equal(t, 2, queryOne[int](t, f, `SELECT count(*) FROM payment_events WHERE id IN ('evt_paid_1', 'evt_paid_2')`))
}

func TestWebhookCheckoutExpiredReleasesStock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 3})
	orderID := f.checkoutOrder(t, item(pid, 3))
	f.checkout(t, item(pid, 1)).Problem(t, 409, "conflict")
	rec := f.recordEvents(t)

	f.event(t, "evt_exp_1", "checkout.session.expired", acct, f.sessionObject(t, orderID, "expired", "unpaid")).Expect(t, 200)
	rec.expect(t, "order.cancelled", orderID, "cancelled", "unpaid")
	f.event(t, "evt_exp_1", "checkout.session.expired", acct, f.sessionObject(t, orderID, "expired", "unpaid")).Expect(t, 200)
	rec.none(t)
	o := f.order(t, orderID)
	assert.Equal(t, "cancelled", o["status"])
	assert.Equal(t, "unpaid", o["payment_status"])
	f.expectStock(t, pid, 3, 0)
	// The units are for sale again.
	f.checkout(t, item(pid, 3)).Expect(t, 201)

	// An expiry of an order already paid changes nothing.
	paid := num(f.do(t, "POST", "/products", map[string]any{"name": "Other", "price": 100, "status": "active"}).Expect(t, 201).JSON(t)["id"])
	paidOrder := f.checkoutOrder(t, item(paid, 1))
	f.event(t, "evt_exp_paid", "checkout.session.completed", acct, f.sessionObject(t, paidOrder, "complete", "paid")).Expect(t, 200)
	f.event(t, "evt_exp_2", "checkout.session.expired", acct, f.sessionObject(t, paidOrder, "expired", "unpaid")).Expect(t, 200)
	assert.Equal(t, "paid", f.order(t, paidOrder)["status"])
}

// A delayed payment method completes the session unpaid: the order stays
// pending until the payment succeeds or fails.
func TestWebhookAsyncPayment(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 4})
	ok := f.checkoutOrder(t, item(pid, 1))
	bad := f.checkoutOrder(t, item(pid, 1))

	rec := f.recordEvents(t)
	sess := f.sessionObject(t, ok, "complete", "unpaid")
	f.event(t, "evt_async_1", "checkout.session.completed", acct, sess).Expect(t, 200)
	assert.Equal(t, "pending", f.order(t, ok)["status"])
	rec.none(t)
	sess["payment_status"] = "paid"
	f.event(t, "evt_async_2", "checkout.session.async_payment_succeeded", acct, sess).Expect(t, 200)
	assert.Equal(t, "paid", f.order(t, ok)["status"])
	rec.expect(t, "order.paid", ok, "paid", "paid")

	f.event(t, "evt_async_3", "checkout.session.async_payment_failed", acct, f.sessionObject(t, bad, "complete", "unpaid")).Expect(t, 200)
	assert.Equal(t, "cancelled", f.order(t, bad)["status"])
	rec.expect(t, "order.cancelled", bad, "cancelled", "unpaid")
	f.expectStock(t, pid, 3, 0)
}

// An event is applied only to the project its connected account belongs
// to; one naming another project in its metadata, or an unknown account,
// is acknowledged and ignored.
func TestWebhookProjectResolution(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 2})
	orderID := f.checkoutOrder(t, item(pid, 1))

	other := f.env.NewProject("build")
	sess := f.sessionObject(t, orderID, "complete", "paid")
	sess["metadata"] = map[string]any{"project_id": other.ID, "order_id": fmt.Sprint(orderID)}
	res := f.event(t, "evt_res_1", "checkout.session.completed", acct, sess).Expect(t, 200).JSON(t)
	assert.NotEmpty(t, res["ignored"])
	res = f.event(t, "evt_res_2", "checkout.session.completed", "acct_unknown", f.sessionObject(t, orderID, "complete", "paid")).Expect(t, 200).JSON(t)
	assert.Equal(t, "unknown connected account", res["ignored"])
	res = f.event(t, "evt_res_3", "customer.created", acct, map[string]any{"id": "cus_1"}).Expect(t, 200).JSON(t)
	assert.NotEmpty(t, res["ignored"])
	assert.Equal(t, "pending", f.order(t, orderID)["status"])

	// Without an account on the event, the metadata places it.
	f.event(t, "evt_res_4", "checkout.session.completed", "", f.sessionObject(t, orderID, "complete", "paid")).Expect(t, 200)
	assert.Equal(t, "paid", f.order(t, orderID)["status"])
}

// Refunds made at the processor (dashboard) reach the order through
// charge.refunded and refund events, counted once each.
func TestWebhookRefundEvents(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	pid := f.product(t, map[string]any{"price": 1000})
	orderID := f.checkoutOrder(t, item(pid, 2))
	sess := f.sessionObject(t, orderID, "complete", "paid")
	pi := sess["payment_intent"].(string)
	f.event(t, "evt_rf_0", "checkout.session.completed", acct, sess).Expect(t, 200)
	rec := f.recordEvents(t)

	refund := map[string]any{"id": "re_dash_1", "object": "refund", "amount": 500, "status": "succeeded", "payment_intent": pi}
	f.event(t, "evt_rf_1", "refund.created", acct, refund).Expect(t, 200)
	o := f.order(t, orderID)
	assert.Equal(t, float64(500), o["refunded_amount"])
	assert.Equal(t, "partially_refunded", o["payment_status"])
	assert.Equal(t, "paid", o["status"], "a refund leaves the status alone")
	rec.expect(t, "order.refunded", orderID, "paid", "partially_refunded")

	// The charge's running total names the same refund: still 500.
	charge := map[string]any{"id": "ch_1", "object": "charge", "payment_intent": pi, "amount_refunded": 500, "refunded": false}
	f.event(t, "evt_rf_2", "charge.refunded", acct, charge).Expect(t, 200)
	f.event(t, "evt_rf_2", "charge.refunded", acct, charge).Expect(t, 200)
	assert.Equal(t, float64(500), f.order(t, orderID)["refunded_amount"])
	rec.none(t)

	// A second refund, known first by the charge total, then by itself.
	charge["amount_refunded"], charge["refunded"] = 2000, true
	f.event(t, "evt_rf_3", "charge.refunded", acct, charge).Expect(t, 200)
	o = f.order(t, orderID)
	assert.Equal(t, float64(2000), o["refunded_amount"])
	assert.Equal(t, "refunded", o["payment_status"])
	rec.expect(t, "order.refunded", orderID, "paid", "refunded")
	f.event(t, "evt_rf_4", "refund.updated", acct, map[string]any{"id": "re_dash_2", "amount": 1500, "status": "succeeded", "payment_intent": pi}).Expect(t, 200)
	assert.Equal(t, float64(2000), f.order(t, orderID)["refunded_amount"])
	rec.none(t)

	// A refund that fails is taken back out of the sum (the charge's
	// total, here still 2000, keeps the amount until it drops too).
	f.event(t, "evt_rf_5", "refund.updated", acct, map[string]any{"id": "re_dash_2", "amount": 1500, "status": "failed", "payment_intent": pi}).Expect(t, 200)
	assert.Equal(t, map[string]int64{"re_dash_1": 500}, queryOne[map[string]int64](t, f, `SELECT refunds FROM orders WHERE id = $1`, orderID))
}

func TestWebhookAccountUpdated(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.onboard(t)
	f.event(t, "evt_au_1", "account.updated", acct, map[string]any{"id": acct, "charges_enabled": false, "payouts_enabled": false, "details_submitted": true}).Expect(t, 200)
	f.mock.Patch("/v1/accounts/"+acct, map[string]any{"charges_enabled": false, "payouts_enabled": false, "details_submitted": true})
	c := f.do(t, "GET", "/payments/connect", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, map[string]any{"account_id": acct, "charges_enabled": false, "payouts_enabled": false, "details_submitted": true}, c)
}
