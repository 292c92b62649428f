package commerce

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/tenant"
)

// The store of orders, the connected payment account and the processor's
// events. Every function runs in the caller's project transaction.

var errNoOrder = httpapi.NotFound("no such order")

const orderCols = `id, status, payment_status, items, subtotal, total, refunded_amount, refunds, charge_refunded, currency,
	customer_name, customer_email, source, reserved, payment_session_id, payment_intent_id, expires_at, created_at, updated_at`

// scanOrder reads an order row: the Order the API shows and the state
// only the server sees.
func scanOrder(row pgx.Row) (*orderRow, error) {
	o := &orderRow{}
	err := row.Scan(&o.ID, &o.Status, &o.PaymentStatus, &o.lines, &o.Subtotal, &o.Total, &o.RefundedAmount, &o.refunds, &o.chargeRefunded,
		&o.Currency, &o.Customer.Name, &o.Customer.Email, &o.source, &o.reserved, &o.PaymentSessionID, &o.intentID,
		&o.expiresAt, &o.CreatedAt, &o.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoOrder
	}
	if err != nil {
		return nil, err
	}
	o.Number = Number(o.ID)
	if o.refunds == nil {
		o.refunds = map[string]int64{}
	}
	o.Items = make([]Item, len(o.lines))
	for i, l := range o.lines {
		o.Items[i] = l.Item
	}
	o.CreatedAt, o.UpdatedAt = o.CreatedAt.UTC(), o.UpdatedAt.UTC()
	return o, nil
}

// getOrder reads order id.
func getOrder(ctx context.Context, tx tenant.Querier, id int64) (_ *orderRow, err error) {
	defer httpapi.Wrap(&err, "getOrder(%d)", id)
	return scanOrder(tx.QueryRow(ctx, `SELECT `+orderCols+` FROM orders WHERE id = $1`, id))
}

// lockOrder reads an order and locks it for the transaction.
func lockOrder(ctx context.Context, tx pgx.Tx, id int64) (_ *orderRow, err error) {
	defer httpapi.Wrap(&err, "lockOrder(%d)", id)
	return scanOrder(tx.QueryRow(ctx, `SELECT `+orderCols+` FROM orders WHERE id = $1 FOR UPDATE`, id))
}

// lockSessionOrder locks the order of checkout session id.
func lockSessionOrder(ctx context.Context, tx pgx.Tx, session string) (_ *orderRow, err error) {
	defer httpapi.Wrap(&err, "lockSessionOrder")
	return scanOrder(tx.QueryRow(ctx, `SELECT `+orderCols+` FROM orders WHERE payment_session_id = $1 FOR UPDATE`, session))
}

// lockIntentOrder locks the order paid by payment intent id.
func lockIntentOrder(ctx context.Context, tx pgx.Tx, intent string) (_ *orderRow, err error) {
	defer httpapi.Wrap(&err, "lockIntentOrder")
	return scanOrder(tx.QueryRow(ctx, `SELECT `+orderCols+` FROM orders WHERE payment_intent_id = $1 FOR UPDATE`, intent))
}

// orderAccount is an order with the project's connected account, read
// together before a processor call.
type orderAccount struct {
	order   *orderRow
	account payments.Account
}

// getOrderAccount reads order id and the project's connected account.
func getOrderAccount(ctx context.Context, tx pgx.Tx, id int64) (_ orderAccount, err error) {
	defer httpapi.Wrap(&err, "getOrderAccount(%d)", id)
	o, err := getOrder(ctx, tx, id)
	if err != nil {
		return orderAccount{}, err
	}
	a, err := loadAccount(ctx, tx)
	return orderAccount{order: o, account: a}, err
}

// listOrders returns up to limit orders with ids below after (0: from the
// newest), newest first, of the given status and payment status when set.
func listOrders(ctx context.Context, tx tenant.Querier, after int64, status, payment *string, limit int) (_ []Order, err error) {
	defer httpapi.Wrap(&err, "listOrders")
	rows, err := tx.Query(ctx, `SELECT `+orderCols+` FROM orders
		WHERE ($1::bigint = 0 OR id < $1) AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR payment_status = $3)
		ORDER BY id DESC LIMIT $4`, after, status, payment, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) {
		o, err := scanOrder(r)
		if err != nil {
			return Order{}, err
		}
		return o.Order, nil
	})
}

// insertOrder stores a new order.
func insertOrder(ctx context.Context, tx pgx.Tx, o *orderRow) (_ *orderRow, err error) {
	defer httpapi.Wrap(&err, "insertOrder")
	return scanOrder(tx.QueryRow(ctx, `INSERT INTO orders (status, payment_status, items, subtotal, total, currency,
			customer_name, customer_email, source, reserved, expires_at)
		VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9, $10) RETURNING `+orderCols,
		o.Status, o.PaymentStatus, o.lines, o.Subtotal, o.Currency, o.Customer.Name, o.Customer.Email, o.source, o.reserved, o.expiresAt))
}

// setOrder writes the mutable state of o and returns the row as stored.
func setOrder(ctx context.Context, tx pgx.Tx, o *orderRow) (_ *orderRow, err error) {
	defer httpapi.Wrap(&err, "setOrder(%d)", o.ID)
	return scanOrder(tx.QueryRow(ctx, `UPDATE orders SET status = $2, payment_status = $3, refunded_amount = $4, charge_refunded = $5,
			reserved = $6, payment_session_id = $7, payment_intent_id = $8, refunds = $9, updated_at = now()
		WHERE id = $1 RETURNING `+orderCols,
		o.ID, o.Status, o.PaymentStatus, o.RefundedAmount, o.chargeRefunded, o.reserved, o.PaymentSessionID, o.intentID, o.refunds))
}

// setOrderExpiry records when the checkout of order id expires.
func setOrderExpiry(ctx context.Context, tx pgx.Tx, id int64, at time.Time) (err error) {
	defer httpapi.Wrap(&err, "setOrderExpiry(%d)", id)
	_, err = tx.Exec(ctx, `UPDATE orders SET expires_at = $2 WHERE id = $1`, id, at)
	return err
}

// deleteOrder removes order id.
func deleteOrder(ctx context.Context, tx pgx.Tx, id int64) (err error) {
	defer httpapi.Wrap(&err, "deleteOrder(%d)", id)
	_, err = tx.Exec(ctx, `DELETE FROM orders WHERE id = $1`, id)
	return err
}

// saleProduct is what a line needs of a product.
type saleProduct struct {
	name, sku, status, currency string
	price                       int64
	tracked                     bool
}

// getSaleProduct reads what a line needs of product id (httpapi.ErrNotFound
// when absent).
func getSaleProduct(ctx context.Context, tx pgx.Tx, id int64) (_ saleProduct, err error) {
	defer httpapi.Wrap(&err, "getSaleProduct(%d)", id)
	var p saleProduct
	err = tx.QueryRow(ctx, `SELECT name, sku, status, price, currency, track_inventory FROM products WHERE id = $1`, id).
		Scan(&p.name, &p.sku, &p.status, &p.price, &p.currency, &p.tracked)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, httpapi.ErrNotFound
	}
	return p, err
}

// saleVariant is what a line needs of a variant.
type saleVariant struct {
	name, sku string
	price     int64
	active    bool
}

// getSaleVariant reads what a line needs of variant vid of product pid
// (httpapi.ErrNotFound when absent).
func getSaleVariant(ctx context.Context, tx pgx.Tx, pid, vid int64) (_ saleVariant, err error) {
	defer httpapi.Wrap(&err, "getSaleVariant")
	var v saleVariant
	err = tx.QueryRow(ctx, `SELECT name, sku, price, is_active FROM product_variants WHERE id = $1 AND product_id = $2`, vid, pid).
		Scan(&v.name, &v.sku, &v.price, &v.active)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, httpapi.ErrNotFound
	}
	return v, err
}

// ---- the connected account

const accountCols = `account_id, charges_enabled, payouts_enabled, details_submitted`

// loadAccount reads the project's connected account (ID empty when the
// project has none).
func loadAccount(ctx context.Context, tx tenant.Querier) (_ payments.Account, err error) {
	defer httpapi.Wrap(&err, "loadAccount")
	return readAccount(ctx, tx, `SELECT `+accountCols+` FROM payment_account`)
}

// lockAccount is loadAccount locking the account's row.
func lockAccount(ctx context.Context, tx pgx.Tx) (_ payments.Account, err error) {
	defer httpapi.Wrap(&err, "lockAccount")
	return readAccount(ctx, tx, `SELECT `+accountCols+` FROM payment_account FOR UPDATE`)
}

func readAccount(ctx context.Context, tx tenant.Querier, query string) (payments.Account, error) {
	var a payments.Account
	var id *string
	err := tx.QueryRow(ctx, query).
		Scan(&id, &a.ChargesEnabled, &a.PayoutsEnabled, &a.DetailsSubmitted)
	if errors.Is(err, pgx.ErrNoRows) {
		return payments.Account{}, nil
	}
	if id != nil {
		a.ID = *id
	}
	return a, err
}

// lockNewAccount makes the project's account row if it has none yet and
// locks it, so that one request at a time creates the account.
func lockNewAccount(ctx context.Context, tx pgx.Tx) (_ payments.Account, err error) {
	defer httpapi.Wrap(&err, "lockNewAccount")
	if _, err := tx.Exec(ctx, `INSERT INTO payment_account DEFAULT VALUES ON CONFLICT DO NOTHING`); err != nil {
		return payments.Account{}, err
	}
	return lockAccount(ctx, tx)
}

// saveAccount records the connected account a and its status.
func saveAccount(ctx context.Context, tx pgx.Tx, a payments.Account) (err error) {
	defer httpapi.Wrap(&err, "saveAccount")
	_, err = tx.Exec(ctx, `UPDATE payment_account SET account_id = $1, charges_enabled = $2, payouts_enabled = $3, details_submitted = $4,
		updated_at = now()`, a.ID, a.ChargesEnabled, a.PayoutsEnabled, a.DetailsSubmitted)
	return err
}

// ---- the processor's events

// recordEvent records that event id was received; false when it already
// was.
func recordEvent(ctx context.Context, tx pgx.Tx, id, typ string) (_ bool, err error) {
	defer httpapi.Wrap(&err, "recordEvent(%s)", id)
	tag, err := tx.Exec(ctx, `INSERT INTO payment_events (id, type) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, id, typ)
	return err == nil && tag.RowsAffected() == 1, err
}
