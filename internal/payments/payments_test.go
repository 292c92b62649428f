package payments_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/internal/payments/stripetest"
)

func TestNotConfigured(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{})
	assert.False(t, c.Enabled())
	ctx := context.Background()
	_, err := c.CreateAccount(ctx, "prj_x", "k")
	assert.ErrorIs(t, err, payments.ErrNotConfigured)
	_, err = c.CreateCheckout(ctx, payments.CheckoutParams{})
	assert.ErrorIs(t, err, payments.ErrNotConfigured)
	_, err = c.CreateRefund(ctx, "acct_1", "pi_1", 1, "")
	assert.ErrorIs(t, err, payments.ErrNotConfigured)
	ae := httpapi.AsError(err)
	assert.Equal(t, []any{409, "connect_not_ready"}, []any{ae.Status, ae.Code}, "no processor is no outage: 409, not 503")
	_, err = c.VerifyEvent([]byte(`{}`), "t=1,v1=00")
	assert.ErrorIs(t, err, payments.ErrWebhookNotConfigured)
	assert.Equal(t, 503, httpapi.AsError(err).Status)
}

// The client against stripe-mock, through a recording proxy; the base may
// be given with or without /v1.
func TestAgainstStripeMock(t *testing.T) {
	t.Parallel()
	mock := stripetest.New(t)
	c := payments.New(payments.Config{SecretKey: "sk_test_1", APIBase: mock.URL + "/v1/"})
	ctx := context.Background()

	a, err := c.CreateAccount(ctx, "prj_1", "connect-prj_1")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(a.ID, "acct_"))
	reqs := mock.Requests("POST /v1/accounts")
	require.Len(t, reqs, 1)
	assert.Equal(t, "Bearer sk_test_1", reqs[0].Header.Get("Authorization"))
	assert.Equal(t, "connect-prj_1", reqs[0].Header.Get("Idempotency-Key"))

	mock.Patch("/v1/accounts/"+a.ID, map[string]any{"charges_enabled": true})
	got, err := c.GetAccount(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, payments.Account{ID: a.ID, ChargesEnabled: true}, got)

	link, err := c.OnboardingLink(ctx, a.ID, "https://a.test/r", "https://a.test/f")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(link, "https://"))

	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	s, err := c.CreateCheckout(ctx, payments.CheckoutParams{Account: a.ID, IdempotencyKey: "idem-1", ProjectID: "prj_1", OrderID: 7,
		Currency: "usd", Items: []payments.LineItem{{Name: "Mug", UnitPrice: 500, Quantity: 2}},
		SuccessURL: "https://a.test/s?id={CHECKOUT_SESSION_ID}", CancelURL: "https://a.test/c", ExpiresAt: exp})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s.ID, "cs_"))
	assert.NotEmpty(t, s.URL)
	cs := mock.Requests("POST /v1/checkout/sessions")
	require.Len(t, cs, 1)
	assert.Equal(t, a.ID, cs[0].Header.Get("Stripe-Account"))
	assert.Equal(t, "idem-1", cs[0].Header.Get("Idempotency-Key"))
	assert.Equal(t, "7", cs[0].Form.Get("client_reference_id"))
	assert.Equal(t, "https://a.test/s?id={CHECKOUT_SESSION_ID}", cs[0].Form.Get("success_url"))

	st, err := c.GetCheckout(ctx, a.ID, s.ID)
	require.NoError(t, err)
	assert.Equal(t, s.ID, st.ID)
	require.NoError(t, c.ExpireCheckout(ctx, a.ID, s.ID))
	mock.Fail("POST /v1/checkout/sessions/"+s.ID+"/expire", 400, "invalid_request_error", "not open")
	assert.ErrorIs(t, c.ExpireCheckout(ctx, a.ID, s.ID), payments.ErrSessionClosed)

	r, err := c.CreateRefund(ctx, a.ID, "pi_1", 300, "")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(r.ID, "re_"))
	assert.Equal(t, int64(300), r.Amount)

	// Processor errors: 502 upstream_unavailable with the processor's
	// message; a reused idempotency key, 409 idempotency_conflict.
	mock.Fail("POST /v1/refunds", 400, "invalid_request_error", "Charge has already been refunded.")
	_, err = c.CreateRefund(ctx, a.ID, "pi_1", 300, "")
	ae := httpapi.AsError(err)
	assert.Equal(t, 502, ae.Status)
	assert.Equal(t, "upstream_unavailable", ae.Code)
	assert.Contains(t, ae.Detail, "already been refunded")
	mock.Fail("POST /v1/refunds", 400, "idempotency_error", "Keys for idempotent requests can only be used with the same parameters.")
	_, err = c.CreateRefund(ctx, a.ID, "pi_1", 300, "k")
	assert.Equal(t, "idempotency_conflict", httpapi.AsError(err).Code)

	// Unreachable: 502 too.
	down := payments.New(payments.Config{SecretKey: "sk_test_1", APIBase: "http://127.0.0.1:1", MaxRetries: new(int64)})
	_, err = down.GetAccount(ctx, "acct_1")
	assert.Equal(t, 502, httpapi.AsError(err).Status)
}

func TestVerifyEvent(t *testing.T) {
	t.Parallel()
	c := payments.New(payments.Config{WebhookSecret: "whsec_1"})
	payload := stripetest.Event("evt_1", "checkout.session.completed", "acct_1", map[string]any{"id": "cs_1"})
	ev, err := c.VerifyEvent(payload, stripetest.Sign(payload, "whsec_1", time.Time{}))
	require.NoError(t, err)
	assert.Equal(t, "evt_1", ev.ID)
	assert.Equal(t, "acct_1", ev.Account)
	assert.Equal(t, "checkout.session.completed", string(ev.Type))

	for name, hdr := range map[string]string{
		"wrong secret": stripetest.Sign(payload, "whsec_2", time.Time{}),
		"too old":      stripetest.Sign(payload, "whsec_1", time.Now().Add(-301*time.Second)),
		"empty":        "",
		"malformed":    "v1=abc",
	} {
		_, err := c.VerifyEvent(payload, hdr)
		var ae *httpapi.Error
		if assert.True(t, errors.As(err, &ae), name) {
			assert.Equal(t, 400, ae.Status, name)
		}
	}
}

// FuzzVerifyEvent: no header or payload makes verification panic or pass
// without the secret.
func FuzzVerifyEvent(f *testing.F) {
	c := payments.New(payments.Config{WebhookSecret: "whsec_fuzz"})
	f.Add([]byte(`{"id":"evt_1"}`), "t=1,v1=00")
	f.Add([]byte(`{}`), "t=,v1=,v0=")
	f.Fuzz(func(t *testing.T, payload []byte, header string) {
		if _, err := c.VerifyEvent(payload, header); err == nil {
			t.Fatalf("verified without the secret: %q %q", payload, header)
		}
	})
}
