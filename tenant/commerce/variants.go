package commerce

import (
	"context"
	"net/http"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// variantInput is the body of a variant create (name required; price
// defaults to the product's) or PATCH.
type variantInput struct {
	Name          *string            `json:"name"`
	Price         *int64             `json:"price"`
	SKU           *string            `json:"sku"`
	StockQuantity *int64             `json:"stock_quantity"`
	Options       *map[string]string `json:"options"`
	SortOrder     *int               `json:"sort_order"`
	IsActive      *bool              `json:"is_active"`
}

// validate checks the body of a variant route.
func (in *variantInput) validate(create bool) error {
	if create && in.Name == nil {
		return httpapi.BadRequest(`missing required field "name"`)
	}
	var v httpapi.Validator
	in.check(&v, "", create)
	return v.Err()
}

// check records the errors of a variant, whose fields are named with
// prefix (a product create checks its variants as variants[i].).
func (in *variantInput) check(v *httpapi.Validator, prefix string, create bool) {
	if in.Name != nil {
		checkName(v, prefix+"name", in.Name)
	} else if create {
		v.Check(false, prefix+"name", "is required")
	}
	if in.Price != nil {
		v.Check(*in.Price >= 0, prefix+"price", "must be a non-negative integer in the currency's minor unit")
	}
	if in.SKU != nil {
		v.Check(utf8.RuneCountInString(*in.SKU) <= 255, prefix+"sku", "must be at most 255 characters")
	}
	if in.StockQuantity != nil {
		v.Check(*in.StockQuantity >= 0 && *in.StockQuantity <= 1<<31-1, prefix+"stock_quantity", "must be a non-negative integer")
	}
	if in.Options != nil {
		v.Check(len(*in.Options) <= 20, prefix+"options", "must have at most 20 entries")
	}
	if in.SortOrder != nil {
		v.Check(validSortOrder(*in.SortOrder), prefix+"sort_order", sortOrderMsg)
	}
}

func insertVariant(ctx context.Context, tx pgx.Tx, p *Product, in variantInput) (*Variant, error) {
	opts := map[string]string{}
	if in.Options != nil && *in.Options != nil {
		opts = *in.Options
	}
	return scanVariant(tx.QueryRow(ctx, `INSERT INTO product_variants (product_id, name, price, sku, stock_quantity, options, sort_order, is_active)
		VALUES ($1, $2, COALESCE($3::bigint, $4::bigint), COALESCE($5, ''), COALESCE($6, 0), $7, COALESCE($8, 0), COALESCE($9, true))
		RETURNING `+variantCols, p.ID, *in.Name, in.Price, p.Price, in.SKU, in.StockQuantity, opts, in.SortOrder, in.IsActive))
}

// variantPath parses the product and variant ids of a variant route.
func variantPath(r *http.Request) (pid, vid int64, err error) {
	if pid, err = pathID(r, "id"); err != nil {
		return 0, 0, err
	}
	if vid, err = pathID(r, "variant_id"); err != nil {
		return 0, 0, err
	}
	return pid, vid, nil
}

// productOf loads the product of a variant route (404 when absent).
func productOf(ctx context.Context, tx pgx.Tx, r *http.Request) (*Product, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	return scanProduct(tx.QueryRow(ctx, `SELECT `+productCols+` FROM products WHERE id = $1`, id))
}

func (s *Service) listVariants(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var err error
	var p *Product
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		if p, err = productOf(r.Context(), tx, r); err != nil {
			return err
		}
		return withVariants(r.Context(), tx, []*Product{p}, false)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, httpapi.List[*Variant]{Data: p.Variants})
}

func (s *Service) createVariant(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var err error
	var in variantInput
	if err := decodeInput(r, &in, true); err != nil {
		return err
	}
	var out *Variant
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		p, err := productOf(r.Context(), tx, r)
		if err != nil {
			return err
		}
		out, err = insertVariant(r.Context(), tx, p, in)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, out)
}

func (s *Service) getVariant(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	pid, vid, err := variantPath(r)
	if err != nil {
		return err
	}
	var out *Variant
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		out, err = scanVariant(tx.QueryRow(r.Context(), `SELECT `+variantCols+` FROM product_variants WHERE id = $1 AND product_id = $2`, vid, pid))
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, out)
}

func (s *Service) updateVariant(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	pid, vid, err := variantPath(r)
	if err != nil {
		return err
	}
	var in variantInput
	if err := decodeInput(r, &in, false); err != nil {
		return err
	}
	var out *Variant
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		out, err = scanVariant(tx.QueryRow(r.Context(), `UPDATE product_variants SET
				name = COALESCE($3, name), price = COALESCE($4, price), sku = COALESCE($5, sku),
				stock_quantity = COALESCE($6, stock_quantity), options = COALESCE($7, options),
				sort_order = COALESCE($8, sort_order), is_active = COALESCE($9, is_active)
			WHERE id = $1 AND product_id = $2 RETURNING `+variantCols,
			vid, pid, in.Name, in.Price, in.SKU, in.StockQuantity, in.Options, in.SortOrder, in.IsActive))
		if err != nil {
			return stockBelowReserved(err)
		}
		_, err = tx.Exec(r.Context(), `UPDATE products SET updated_at = now() WHERE id = $1`, pid)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, out)
}

func (s *Service) deleteVariant(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	pid, vid, err := variantPath(r)
	if err != nil {
		return err
	}
	return deleteRow(w, r, sc, "no such variant", `DELETE FROM product_variants WHERE id = $1 AND product_id = $2`, vid, pid)
}
