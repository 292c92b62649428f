package commerce

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Stock moves of tracked lines. Each is one statement per product or
// variant, taken in a fixed order (products by id, then variants by id) so
// that concurrent orders never deadlock. The table checks
// (0 <= reserved <= stock_quantity) are the last word: no statement here
// can oversell, whatever runs beside it.

type stockRow struct {
	variant bool
	id      int64
	name    string
	qty     int64
}

// stockRows sums the tracked lines per product or variant, in lock order.
func stockRows(lines []line) []stockRow {
	idx := map[[2]int64]int{}
	var out []stockRow
	for _, l := range lines {
		if !l.Tracked {
			continue
		}
		r := stockRow{id: l.ProductID, name: l.Name, qty: l.Quantity}
		if l.VariantID != nil {
			r.variant, r.id = true, *l.VariantID
		}
		k := [2]int64{0, r.id}
		if r.variant {
			k[0] = 1
		}
		if i, ok := idx[k]; ok {
			out[i].qty += r.qty
			continue
		}
		idx[k] = len(out)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].variant != out[j].variant {
			return !out[i].variant
		}
		return out[i].id < out[j].id
	})
	return out
}

func insufficient(r stockRow) error {
	return httpapi.Conflict(httpapi.CodeConflict, fmt.Sprintf("insufficient stock for %q: %d requested", r.name, r.qty))
}

// move runs the statement of each row; when guarded, a row that matches
// nothing means the stock is short.
func move(ctx context.Context, tx pgx.Tx, lines []line, productSQL, variantSQL string, guarded bool) error {
	for _, r := range stockRows(lines) {
		q := productSQL
		if r.variant {
			q = variantSQL
		}
		tag, err := tx.Exec(ctx, q, r.id, r.qty)
		if err != nil {
			return err
		}
		if guarded && tag.RowsAffected() == 0 {
			return insufficient(r)
		}
	}
	return nil
}

// reserve holds tracked stock for a pending order: 409 conflict
// "insufficient stock" when fewer units are available than asked.
func reserve(ctx context.Context, tx pgx.Tx, lines []line) (err error) {
	defer httpapi.Wrap(&err, "reserve")
	return move(ctx, tx, lines,
		`UPDATE products SET reserved = reserved + $2 WHERE id = $1 AND stock_quantity - reserved >= $2`,
		`UPDATE product_variants SET reserved = reserved + $2 WHERE id = $1 AND stock_quantity - reserved >= $2`, true)
}

// release gives a pending order's reservation back.
func release(ctx context.Context, tx pgx.Tx, lines []line) (err error) {
	defer httpapi.Wrap(&err, "release")
	return move(ctx, tx, lines,
		`UPDATE products SET reserved = GREATEST(reserved - $2, 0) WHERE id = $1`,
		`UPDATE product_variants SET reserved = GREATEST(reserved - $2, 0) WHERE id = $1`, false)
}

// consume turns a paid order's reservation into sold units.
func consume(ctx context.Context, tx pgx.Tx, lines []line) (err error) {
	defer httpapi.Wrap(&err, "consume")
	return move(ctx, tx, lines,
		`UPDATE products SET stock_quantity = GREATEST(stock_quantity - $2, 0), reserved = GREATEST(reserved - $2, 0) WHERE id = $1`,
		`UPDATE product_variants SET stock_quantity = GREATEST(stock_quantity - $2, 0), reserved = GREATEST(reserved - $2, 0) WHERE id = $1`, false)
}

// take sells available units at once (a manual order created paid).
func take(ctx context.Context, tx pgx.Tx, lines []line) (err error) {
	defer httpapi.Wrap(&err, "take")
	return move(ctx, tx, lines,
		`UPDATE products SET stock_quantity = stock_quantity - $2 WHERE id = $1 AND stock_quantity - reserved >= $2`,
		`UPDATE product_variants SET stock_quantity = stock_quantity - $2 WHERE id = $1 AND stock_quantity - reserved >= $2`, true)
}

// restock puts the units of a paid order that is cancelled back.
func restock(ctx context.Context, tx pgx.Tx, lines []line) (err error) {
	defer httpapi.Wrap(&err, "restock")
	return move(ctx, tx, lines,
		`UPDATE products SET stock_quantity = stock_quantity + $2 WHERE id = $1`,
		`UPDATE product_variants SET stock_quantity = stock_quantity + $2 WHERE id = $1`, false)
}
