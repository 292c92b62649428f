package commerce_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/payments/stripetest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const webhookSecret = "whsec_test_commerce"

// fixture is a server wired to a stripe-mock proxy, with one project.
type fixture struct {
	env  *apitest.Env
	mock *stripetest.Mock
	p    *apitest.Project
}

// setup starts the server with payments configured against stripe-mock.
func setup(t *testing.T, opts ...apitest.Option) *fixture {
	t.Helper()
	mock := stripetest.New(t)
	opts = append([]apitest.Option{apitest.WithEnv("STRIPE_SECRET_KEY", "sk_test_plinth", "STRIPE_WEBHOOK_SECRET", webhookSecret,
		"STRIPE_API_BASE", mock.URL)}, opts...)
	env := apitest.New(t, opts...)
	return &fixture{env: env, mock: mock, p: env.NewProject("build")}
}

// setupCatalog starts a server without payments (catalogue tests).
func setupCatalog(t *testing.T) *fixture {
	t.Helper()
	env := apitest.New(t)
	return &fixture{env: env, p: env.NewProject("build")}
}

func (f *fixture) do(t *testing.T, method, path string, body any) *apitest.Resp {
	t.Helper()
	return f.env.Do(method, "/v1"+path, f.p.Key, body)
}

// tryDo is do returning transport errors instead of failing the test, for
// goroutines other than the test's.
func (f *fixture) tryDo(method, path string, body any) (*apitest.Resp, error) {
	return f.env.TrySend(apitest.Request{Method: method, Path: "/v1" + path, Key: f.p.Key, Body: body})
}

// product creates an active product and returns its id.
func (f *fixture) product(t *testing.T, fields map[string]any) int64 {
	t.Helper()
	body := map[string]any{"name": fmt.Sprintf("Product %d", seq.Add(1)), "price": 1500, "status": "active"}
	for k, v := range fields {
		body[k] = v
	}
	m := f.do(t, "POST", "/products", body).Expect(t, 201).JSON(t)
	return int64(m["id"].(float64))
}

var seq atomic.Int64

// connect onboards the project and enables charges the way the processor
// does: with a signed account.updated event. It returns the account id.
func (f *fixture) connect(t *testing.T) string {
	t.Helper()
	acct := f.onboard(t)
	f.event(t, fmt.Sprintf("evt_acct_%d", seq.Add(1)), "account.updated", acct, map[string]any{
		"id": acct, "object": "account", "charges_enabled": true, "payouts_enabled": true, "details_submitted": true,
	}).Expect(t, 200)
	return acct
}

// onboard creates the project's connected account, which cannot take
// charges yet, and returns its id.
func (f *fixture) onboard(t *testing.T) string {
	t.Helper()
	f.do(t, "POST", "/payments/connect/onboard", map[string]any{"return_url": "https://shop.test/back", "refresh_url": "https://shop.test/again"}).Expect(t, 200)
	return f.accountID(t)
}

// accountID reads the project's connected account id.
func (f *fixture) accountID(t *testing.T) string {
	t.Helper()
	return queryOne[string](t, f, `SELECT account_id FROM payment_account`)
}

// event posts a processor event signed with the test secret.
func (f *fixture) event(t *testing.T, id, typ, account string, obj map[string]any) *apitest.Resp {
	t.Helper()
	r, err := f.tryEvent(id, typ, account, obj)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryEvent is event returning transport errors instead of failing the
// test, for goroutines other than the test's.
func (f *fixture) tryEvent(id, typ, account string, obj map[string]any) (*apitest.Resp, error) {
	payload := stripetest.Event(id, typ, account, obj)
	return f.env.TrySend(apitest.Request{Method: "POST", Path: "/v1/payments/webhook", Body: payload,
		Header: map[string]string{"Stripe-Signature": stripetest.Sign(payload, webhookSecret, time.Time{})}})
}

// tx runs fn in the project's schema.
func (f *fixture) tx(t *testing.T, fn func(pgx.Tx) error) {
	t.Helper()
	if err := f.p.Scope.Tx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// queryOne reads the one value query selects in the project's schema.
func queryOne[T any](t *testing.T, f *fixture, query string, args ...any) T {
	t.Helper()
	var v T
	f.tx(t, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), query, args...).Scan(&v)
	})
	return v
}

// stock returns stock_quantity and reserved of a product.
func (f *fixture) stock(t *testing.T, productID int64) (stock, reserved int64) {
	t.Helper()
	f.tx(t, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT stock_quantity, reserved FROM products WHERE id = $1`, productID).Scan(&stock, &reserved)
	})
	return stock, reserved
}

// expectStock asserts stock_quantity and reserved of a product.
func (f *fixture) expectStock(t *testing.T, productID, stock, reserved int64) {
	t.Helper()
	s, r := f.stock(t, productID)
	assert.Equal(t, []int64{stock, reserved}, []int64{s, r}, "stock_quantity and reserved of product %d", productID)
}

// variantStock returns stock_quantity and reserved of a variant.
func (f *fixture) variantStock(t *testing.T, variantID int64) (stock, reserved int64) {
	t.Helper()
	f.tx(t, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT stock_quantity, reserved FROM product_variants WHERE id = $1`, variantID).Scan(&stock, &reserved)
	})
	return stock, reserved
}

// checkout creates a checkout session for items and returns the response.
func (f *fixture) checkout(t *testing.T, items ...map[string]any) *apitest.Resp {
	t.Helper()
	r, err := f.tryCheckout(items...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryCheckout is checkout returning transport errors instead of failing
// the test, for goroutines other than the test's.
func (f *fixture) tryCheckout(items ...map[string]any) (*apitest.Resp, error) {
	return f.tryDo("POST", "/checkout-sessions", map[string]any{
		"items":       items,
		"customer":    map[string]any{"name": "Ada Buyer", "email": "ada@example.com"},
		"success_url": "https://shop.test/thanks?session={CHECKOUT_SESSION_ID}",
		"cancel_url":  "https://shop.test/cart",
	})
}

// checkoutOrder checks items out and returns the id of the pending order.
func (f *fixture) checkoutOrder(t *testing.T, items ...map[string]any) int64 {
	t.Helper()
	return num(f.checkout(t, items...).Expect(t, 201).JSON(t)["order_id"])
}

func item(productID int64, qty int) map[string]any {
	return map[string]any{"product_id": productID, "quantity": qty}
}

func num(v any) int64 { return int64(v.(float64)) }

// order reads an order through the API.
func (f *fixture) order(t *testing.T, id int64) map[string]any {
	t.Helper()
	return f.do(t, "GET", fmt.Sprintf("/orders/%d", id), nil).Expect(t, 200).JSON(t)
}

// sessionObject is a checkout session as the processor's events carry it.
func (f *fixture) sessionObject(t *testing.T, orderID int64, status, paymentStatus string) map[string]any {
	t.Helper()
	o := f.order(t, orderID)
	return map[string]any{
		"id": o["payment_session_id"], "object": "checkout.session", "status": status, "payment_status": paymentStatus,
		"payment_intent": fmt.Sprintf("pi_test_%d_%d", orderID, seq.Add(1)), "client_reference_id": fmt.Sprint(orderID),
		"metadata": map[string]any{"project_id": f.p.ID, "order_id": fmt.Sprint(orderID)},
	}
}
