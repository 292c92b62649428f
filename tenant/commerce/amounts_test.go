package commerce_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/tenant/commerce"
)

// expectInvalid asserts a 422 validation_failed naming field.
func expectInvalid(t *testing.T, p map[string]any, field string) {
	t.Helper()
	require.Contains(t, p["errors"], field, "the 422 names %s: %v", field, p["errors"])
}

// The price that, times 11, wrapped an order's total around to a
// negative number.
const wrapping = 922337203685477580

// Prices are bounded when written (products, their variants, compare-at
// prices) so that no order's total can wrap around.
func TestAmountBoundsOnCatalogue(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	for _, price := range []int64{wrapping, commerce.MaxAmount + 1, -1} {
		p := f.do(t, "POST", "/products", map[string]any{"name": "Too dear", "price": price}).Problem(t, 422, "validation_failed")
		expectInvalid(t, p, "price")
	}
	p := f.do(t, "POST", "/products", map[string]any{"name": "Too dear", "price": 100, "compare_at_price": wrapping}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "compare_at_price")
	p = f.do(t, "POST", "/products", map[string]any{"name": "Too dear", "price": 100,
		"variants": []any{map[string]any{"name": "Gold", "price": wrapping}}}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "variants[0].price")

	pid := f.product(t, map[string]any{"price": commerce.MaxAmount, "compare_at_price": commerce.MaxAmount})
	p = f.do(t, "PATCH", fmt.Sprintf("/products/%d", pid), map[string]any{"price": wrapping}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "price")
	p = f.do(t, "POST", fmt.Sprintf("/products/%d/variants", pid), map[string]any{"name": "Gold", "price": wrapping}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "price")
	v := f.do(t, "POST", fmt.Sprintf("/products/%d/variants", pid), map[string]any{"name": "Silver"}).Expect(t, 201).JSON(t)
	assert.Equal(t, float64(commerce.MaxAmount), v["price"], "the product's price, at the bound, is accepted")
	p = f.do(t, "PATCH", fmt.Sprintf("/products/%d/variants/%d", pid, num(v["id"])), map[string]any{"price": wrapping}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "price")
	assert.Equal(t, int64(commerce.MaxAmount), queryOne[int64](t, f, `SELECT max(price) FROM product_variants`))
}

// An order's lines and total are computed with overflow checks and
// bounded by MaxAmount: the reported case (a price stored before the
// bound, 11 units) is a 422 naming the line, never a negative total.
func TestAmountBoundsOnOrders(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acct := f.connect(t)
	legacy := f.product(t, map[string]any{"price": 1})
	f.tx(t, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE products SET price = $2 WHERE id = $1`, legacy, int64(wrapping))
		return err
	})
	p := f.do(t, "POST", "/orders", map[string]any{"items": []any{item(legacy, 11)}}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "items[0].quantity")

	// A line, then two lines together, above the bound.
	dear := f.product(t, map[string]any{"price": 60_000_000})
	p = f.do(t, "POST", "/orders", map[string]any{"items": []any{item(dear, 2)}}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "items[0].quantity")
	p = f.do(t, "POST", "/orders", map[string]any{"items": []any{item(dear, 1), item(dear, 1)}}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "items")
	p = f.checkout(t, item(dear, 1), item(dear, 1)).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "items")
	assert.Empty(t, f.mock.Requests("POST /v1/checkout/sessions"), "the processor is not asked for a charge above its maximum")
	p = f.do(t, "POST", "/orders", map[string]any{"items": []any{item(dear, commerce.MaxQuantity+1)}}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "items[0].quantity")
	assert.Equal(t, 0, queryOne[int](t, f, `SELECT count(*) FROM orders`), "no refused order is stored")

	// At the bound.
	bound := f.product(t, map[string]any{"price": commerce.MaxAmount / 9})
	o := f.do(t, "POST", "/orders", map[string]any{"items": []any{item(bound, 9)}, "payment_status": "paid"}).Expect(t, 201).JSON(t)
	assert.Equal(t, float64(commerce.MaxAmount), o["total"])
	p = f.action(t, num(o["id"]), "refund", map[string]any{"amount": wrapping}).Problem(t, 422, "validation_failed")
	expectInvalid(t, p, "amount")

	// Refund amounts the processor reports are summed without wrapping
	// around: two huge refunds leave the order refunded, not unpaid.
	orderID, pi := f.paidOrder(t, acct, dear, 1)
	for i := range 2 {
		f.event(t, fmt.Sprintf("evt_huge_%d", i), "refund.created", acct, map[string]any{"id": fmt.Sprintf("re_huge_%d", i),
			"object": "refund", "amount": int64(1) << 62, "status": "succeeded", "payment_intent": pi}).Expect(t, 200)
		o = f.order(t, orderID)
		assert.Equal(t, "refunded", o["payment_status"], "after refund %d", i)
		assert.Equal(t, float64(60_000_000), o["refunded_amount"], "after refund %d", i)
	}
}

// The database refuses negative amounts and more refunded than the
// total, whatever the code above it computes.
func TestAmountChecksInTheSchema(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	pid := f.product(t, map[string]any{"price": 500})
	o := f.do(t, "POST", "/orders", map[string]any{"items": []any{item(pid, 2)}, "payment_status": "paid"}).Expect(t, 201).JSON(t)
	for _, stmt := range []string{
		`UPDATE orders SET total = -1`,
		`UPDATE orders SET subtotal = -1`,
		`UPDATE orders SET refunded_amount = -1`,
		`UPDATE orders SET refunded_amount = total + 1`,
		`UPDATE orders SET charge_refunded = -1`,
		`UPDATE products SET compare_at_price = -1`,
	} {
		err := f.p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
			_, err := tx.Exec(context.Background(), stmt)
			return err
		})
		var pgErr *pgconn.PgError
		if assert.True(t, errors.As(err, &pgErr), "%s: %v", stmt, err) {
			assert.Equal(t, "23514", pgErr.Code, "%s: a check violation", stmt)
		}
	}
	assert.Equal(t, int64(1000), queryOne[int64](t, f, `SELECT total FROM orders WHERE id = $1`, num(o["id"])))
}
