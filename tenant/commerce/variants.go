package commerce

import (
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
		v.Check(validAmount(*in.Price), prefix+"price", amountMsg)
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

// variantPath parses the product and variant ids of a variant route.
func variantPath(r *http.Request) (pid, vid int64, err error) {
	if pid, err = httpapi.PathID(r, "id", errNoResource); err != nil {
		return 0, 0, err
	}
	if vid, err = httpapi.PathID(r, "variant_id", errNoResource); err != nil {
		return 0, 0, err
	}
	return pid, vid, nil
}

func (s *Service) listVariants(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	pid, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	p, err := loadProduct(r.Context(), sc.Reader(), pid)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, httpapi.List[*Variant]{Data: p.Variants})
}

func (s *Service) createVariant(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var in variantInput
	if err := decodeInput(r, &in, true); err != nil {
		return err
	}
	pid, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	v, err := tenant.TxV(r.Context(), sc, func(tx pgx.Tx) (*Variant, error) {
		return addVariant(r.Context(), tx, pid, in)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, v)
}

func (s *Service) getVariant(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	pid, vid, err := variantPath(r)
	if err != nil {
		return err
	}
	v, err := getVariant(r.Context(), sc.Reader(), pid, vid)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, v)
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
	v, err := tenant.TxV(r.Context(), sc, func(tx pgx.Tx) (*Variant, error) {
		return updateVariant(r.Context(), tx, pid, vid, in)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, v)
}

func (s *Service) deleteVariant(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	pid, vid, err := variantPath(r)
	if err != nil {
		return err
	}
	if err := sc.Tx(r.Context(), func(tx pgx.Tx) error { return deleteVariant(r.Context(), tx, pid, vid) }); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
