package commerce

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// Product is the Product resource.
type Product struct {
	ID               int64          `json:"id"`
	Name             string         `json:"name"`
	Slug             string         `json:"slug"`
	Price            int64          `json:"price"`
	Currency         string         `json:"currency"`
	Status           string         `json:"status"`
	Description      string         `json:"description"`
	ShortDescription string         `json:"short_description"`
	CompareAtPrice   *int64         `json:"compare_at_price"`
	Type             string         `json:"type"`
	SKU              string         `json:"sku"`
	StockQuantity    int64          `json:"stock_quantity"`
	TrackInventory   bool           `json:"track_inventory"`
	Weight           *float64       `json:"weight"`
	Images           []string       `json:"images"`
	Metadata         map[string]any `json:"metadata"`
	CategoryID       *int64         `json:"category_id"`
	Featured         bool           `json:"featured"`
	PublishedAt      *time.Time     `json:"published_at"`
	CreatedAt        time.Time      `json:"created_at"`
	UpdatedAt        time.Time      `json:"updated_at"`
	Variants         []*Variant     `json:"variants"`
}

// Variant is a variant of a product.
type Variant struct {
	ID            int64             `json:"id"`
	ProductID     int64             `json:"product_id"`
	Name          string            `json:"name"`
	Price         int64             `json:"price"`
	SKU           string            `json:"sku"`
	StockQuantity int64             `json:"stock_quantity"`
	Options       map[string]string `json:"options"`
	SortOrder     int               `json:"sort_order"`
	IsActive      bool              `json:"is_active"`
}

const productCols = `id, name, slug, price, currency, status, description, short_description, compare_at_price, type, sku,
	stock_quantity, track_inventory, weight, images, metadata, category_id, featured, published_at, created_at, updated_at`

func scanProduct(row pgx.Row) (*Product, error) {
	p := &Product{}
	err := row.Scan(&p.ID, &p.Name, &p.Slug, &p.Price, &p.Currency, &p.Status, &p.Description, &p.ShortDescription,
		&p.CompareAtPrice, &p.Type, &p.SKU, &p.StockQuantity, &p.TrackInventory, &p.Weight, &p.Images, &p.Metadata,
		&p.CategoryID, &p.Featured, &p.PublishedAt, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, httpapi.NotFound("no such product")
	}
	if err != nil {
		return nil, err
	}
	if p.Images == nil {
		p.Images = []string{}
	}
	if p.Metadata == nil {
		p.Metadata = map[string]any{}
	}
	if p.PublishedAt != nil {
		t := p.PublishedAt.UTC()
		p.PublishedAt = &t
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	p.Variants = []*Variant{}
	return p, nil
}

const variantCols = `id, product_id, name, price, sku, stock_quantity, options, sort_order, is_active`

func scanVariant(row pgx.Row) (*Variant, error) {
	v := &Variant{}
	err := row.Scan(&v.ID, &v.ProductID, &v.Name, &v.Price, &v.SKU, &v.StockQuantity, &v.Options, &v.SortOrder, &v.IsActive)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, httpapi.NotFound("no such variant")
	}
	if v.Options == nil {
		v.Options = map[string]string{}
	}
	return v, err
}

// withVariants fills the variants of products (active ones only when
// activeOnly), ordered by sort_order then id.
func withVariants(ctx context.Context, tx pgx.Tx, products []*Product, activeOnly bool) error {
	if len(products) == 0 {
		return nil
	}
	ids := make([]int64, len(products))
	byID := make(map[int64]*Product, len(products))
	for i, p := range products {
		ids[i], byID[p.ID] = p.ID, p
	}
	rows, err := tx.Query(ctx, `SELECT `+variantCols+` FROM product_variants WHERE product_id = ANY($1) AND (is_active OR NOT $2)
		ORDER BY sort_order, id`, ids, activeOnly)
	if err != nil {
		return err
	}
	vs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Variant, error) { return scanVariant(r) })
	if err != nil {
		return err
	}
	for _, v := range vs {
		byID[v.ProductID].Variants = append(byID[v.ProductID].Variants, v)
	}
	return nil
}

var (
	currencyRe = regexp.MustCompile(`^[a-z]{3}$`)
	statuses   = map[string]bool{"draft": true, "active": true, "archived": true}
	types      = map[string]bool{"physical": true, "digital": true, "service": true}
)

// productInput is the body of a product create (name and price required)
// or PATCH (variants only on create).
type productInput struct {
	Name             *string           `json:"name"`
	Slug             *string           `json:"slug"`
	Price            *int64            `json:"price"`
	Currency         *string           `json:"currency"`
	Status           *string           `json:"status"`
	Description      *string           `json:"description"`
	ShortDescription *string           `json:"short_description"`
	CompareAtPrice   Nullable[int64]   `json:"compare_at_price"`
	Type             *string           `json:"type"`
	SKU              *string           `json:"sku"`
	StockQuantity    *int64            `json:"stock_quantity"`
	TrackInventory   *bool             `json:"track_inventory"`
	Weight           Nullable[float64] `json:"weight"`
	Images           *[]string         `json:"images"`
	Metadata         *map[string]any   `json:"metadata"`
	CategoryID       Nullable[int64]   `json:"category_id"`
	Featured         *bool             `json:"featured"`
	Variants         *[]variantInput   `json:"variants"`
}

func (in *productInput) validate(create bool) error {
	if create {
		switch {
		case in.Name == nil:
			return httpapi.BadRequest(`missing required field "name"`)
		case in.Price == nil:
			return httpapi.BadRequest(`missing required field "price"`)
		}
	} else if in.Variants != nil {
		return httpapi.BadRequest(`unknown field "variants": manage variants under /products/{id}/variants`)
	}
	var v httpapi.Validator
	if in.Name != nil {
		checkName(&v, "name", in.Name)
	}
	if in.Slug != nil {
		v.Check(slug.Valid(*in.Slug), "slug", "must match ^[a-z0-9][a-z0-9-]{0,254}$")
	}
	if in.Price != nil {
		v.Check(*in.Price >= 0, "price", "must be a non-negative integer in the currency's minor unit")
	}
	if in.Currency != nil {
		v.Check(currencyRe.MatchString(*in.Currency), "currency", "must be a lowercase three-letter currency code")
	}
	if in.Status != nil {
		v.Check(statuses[*in.Status], "status", "must be one of draft, active, archived")
	}
	if in.ShortDescription != nil {
		v.Check(utf8.RuneCountInString(*in.ShortDescription) <= 500, "short_description", "must be at most 500 characters")
	}
	if in.Description != nil {
		v.Check(utf8.RuneCountInString(*in.Description) <= 100000, "description", "must be at most 100000 characters")
	}
	if in.CompareAtPrice.Value != nil {
		v.Check(*in.CompareAtPrice.Value >= 0, "compare_at_price", "must be a non-negative integer")
	}
	if in.Type != nil {
		v.Check(types[*in.Type], "type", "must be one of physical, digital, service")
	}
	if in.SKU != nil {
		v.Check(utf8.RuneCountInString(*in.SKU) <= 255, "sku", "must be at most 255 characters")
	}
	if in.StockQuantity != nil {
		v.Check(*in.StockQuantity >= 0 && *in.StockQuantity <= 1<<31-1, "stock_quantity", "must be a non-negative integer")
	}
	if in.Weight.Value != nil {
		v.Check(*in.Weight.Value >= 0, "weight", "must be a non-negative number")
	}
	if in.Images != nil {
		v.Check(len(*in.Images) <= 50, "images", "must have at most 50 entries")
		for _, u := range *in.Images {
			if !validURL(u) {
				v.Check(false, "images", "must be absolute http(s) URLs")
				break
			}
		}
	}
	if in.CategoryID.Value != nil {
		v.Check(*in.CategoryID.Value > 0, "category_id", "must be a category id")
	}
	if in.Variants != nil {
		v.Check(len(*in.Variants) <= 100, "variants", "must have at most 100 entries")
		for i := range *in.Variants {
			(*in.Variants)[i].check(&v, "variants["+strconv.Itoa(i)+"].", true)
		}
	}
	return v.Err()
}

// checkCategory refuses an unknown category_id (422).
func checkCategory(ctx context.Context, tx pgx.Tx, id *int64) error {
	if id == nil {
		return nil
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM product_categories WHERE id = $1)`, *id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return httpapi.Invalid("category_id", "no such product category")
	}
	return nil
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// stockBelowReserved turns the stock check into a 409: stock cannot go
// below what pending checkouts hold.
func stockBelowReserved(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" && (pe.ConstraintName == "products_stock" || pe.ConstraintName == "product_variants_stock") {
		return httpapi.Conflict(httpapi.CodeConflict, "stock_quantity cannot go below the units reserved by pending checkouts")
	}
	return err
}

func (s *Service) createProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var err error
	var in productInput
	if err := decodeInput(r, &in, true); err != nil {
		return err
	}
	ctx := r.Context()
	var p *Product
	err = sc.Tx(ctx, func(tx pgx.Tx) error {
		if err := checkCategory(ctx, tx, in.CategoryID.Value); err != nil {
			return err
		}
		sl := ""
		if in.Slug != nil {
			sl = *in.Slug
		} else if sl, err = slug.Unique(ctx, slug.Make(*in.Name), func(ctx context.Context, c string) (bool, error) {
			var taken bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM products WHERE slug = $1)`, c).Scan(&taken)
			return taken, err
		}); err != nil {
			return err
		}
		images := []string{}
		if in.Images != nil {
			images = *in.Images
		}
		meta := map[string]any{}
		if in.Metadata != nil && *in.Metadata != nil {
			meta = *in.Metadata
		}
		p, err = scanProduct(tx.QueryRow(ctx, `INSERT INTO products (name, slug, price, currency, status, description, short_description,
				compare_at_price, type, sku, stock_quantity, track_inventory, weight, images, metadata, category_id, featured, published_at)
			VALUES ($1, $2, $3, COALESCE($4, 'usd'), COALESCE($5, 'draft'), COALESCE($6, ''), COALESCE($7, ''), $8, COALESCE($9, 'physical'),
				COALESCE($10, ''), COALESCE($11, 0), COALESCE($12, false), $13, $14, $15, $16, COALESCE($17, false),
				CASE WHEN $5 = 'active' THEN now() END)
			RETURNING `+productCols,
			*in.Name, sl, *in.Price, in.Currency, in.Status, in.Description, in.ShortDescription, in.CompareAtPrice.Value, in.Type,
			in.SKU, in.StockQuantity, in.TrackInventory, in.Weight.Value, images, meta, in.CategoryID.Value, in.Featured))
		if err != nil {
			return slugTaken(err, "product")
		}
		if in.Variants != nil {
			for _, vi := range *in.Variants {
				v, err := insertVariant(ctx, tx, p, vi)
				if err != nil {
					return err
				}
				p.Variants = append(p.Variants, v)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, p)
}

func (s *Service) getProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var p *Product
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		p, err = loadProduct(r.Context(), tx, id)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, p)
}

func loadProduct(ctx context.Context, tx pgx.Tx, id int64) (*Product, error) {
	p, err := scanProduct(tx.QueryRow(ctx, `SELECT `+productCols+` FROM products WHERE id = $1`, id))
	if err != nil {
		return nil, err
	}
	return p, withVariants(ctx, tx, []*Product{p}, false)
}

func (s *Service) updateProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in productInput
	if err := decodeInput(r, &in, false); err != nil {
		return err
	}
	ctx := r.Context()
	var p *Product
	err = sc.Tx(ctx, func(tx pgx.Tx) error {
		if err := checkCategory(ctx, tx, in.CategoryID.Value); err != nil {
			return err
		}
		p, err = scanProduct(tx.QueryRow(ctx, `UPDATE products SET
				name = COALESCE($2, name), slug = COALESCE($3, slug), price = COALESCE($4, price), currency = COALESCE($5, currency),
				status = COALESCE($6, status), description = COALESCE($7, description), short_description = COALESCE($8, short_description),
				compare_at_price = CASE WHEN $9 THEN $10 ELSE compare_at_price END, type = COALESCE($11, type), sku = COALESCE($12, sku),
				stock_quantity = COALESCE($13, stock_quantity), track_inventory = COALESCE($14, track_inventory),
				weight = CASE WHEN $15 THEN $16 ELSE weight END, images = COALESCE($17, images), metadata = COALESCE($18, metadata),
				category_id = CASE WHEN $19 THEN $20 ELSE category_id END, featured = COALESCE($21, featured),
				published_at = CASE WHEN COALESCE($6, status) = 'active' THEN COALESCE(published_at, now()) ELSE published_at END,
				updated_at = now()
			WHERE id = $1 RETURNING `+productCols,
			id, in.Name, in.Slug, in.Price, in.Currency, in.Status, in.Description, in.ShortDescription,
			in.CompareAtPrice.Set, in.CompareAtPrice.Value, in.Type, in.SKU, in.StockQuantity, in.TrackInventory,
			in.Weight.Set, in.Weight.Value, in.Images, in.Metadata, in.CategoryID.Set, in.CategoryID.Value, in.Featured))
		if err != nil {
			return stockBelowReserved(slugTaken(err, "product"))
		}
		return withVariants(ctx, tx, []*Product{p}, false)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, p)
}

// deleteProduct removes a product and its variants. Orders keep their
// frozen lines.
func (s *Service) deleteProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	return deleteRow(w, r, sc, "no such product", `DELETE FROM products WHERE id = $1`, id)
}

// productFilter is the query of a product list.
type productFilter struct {
	status     *string
	categoryID *int64
	featured   *bool
	typ        *string
	q          *string
	ids        []int64
}

func parseProductFilter(r *http.Request, public bool) (productFilter, error) {
	var f productFilter
	var v httpapi.Validator
	q := r.URL.Query()
	if s := q.Get("status"); s != "" && !public {
		v.Check(statuses[s], "status", "must be one of draft, active, archived")
		f.status = &s
	}
	if public {
		active := "active"
		f.status = &active
	}
	if s := q.Get("category_id"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		v.Check(err == nil && n > 0, "category_id", "must be a category id")
		f.categoryID = &n
	}
	if s := q.Get("featured"); s != "" {
		b, err := strconv.ParseBool(s)
		v.Check(err == nil, "featured", "must be true or false")
		f.featured = &b
	}
	if s := q.Get("type"); s != "" {
		v.Check(types[s], "type", "must be one of physical, digital, service")
		f.typ = &s
	}
	if s := strings.TrimSpace(q.Get("q")); s != "" {
		esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
		f.q = &esc
	}
	if s := q.Get("ids"); s != "" {
		for _, part := range strings.Split(s, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
			if err != nil || n < 1 {
				v.Check(false, "ids", "must be a comma-separated list of product ids")
				break
			}
			f.ids = append(f.ids, n)
		}
		v.Check(len(f.ids) <= 100, "ids", "must name at most 100 products")
	}
	return f, v.Err()
}

// listProductRows returns a page of products, newest first, with variants.
func listProductRows(ctx context.Context, tx pgx.Tx, f productFilter, page httpapi.Page, public bool) (httpapi.List[*Product], error) {
	after, err := httpapi.CursorID(page.Cursor)
	if err != nil {
		return httpapi.List[*Product]{}, err
	}
	rows, err := tx.Query(ctx, `SELECT `+productCols+` FROM products
		WHERE ($1::bigint = 0 OR id < $1)
		  AND ($2::text IS NULL OR status = $2)
		  AND ($3::bigint IS NULL OR category_id IN (WITH RECURSIVE d AS (
				SELECT id FROM product_categories WHERE id = $3
				UNION SELECT c.id FROM product_categories c JOIN d ON c.parent_id = d.id) SELECT id FROM d))
		  AND ($4::boolean IS NULL OR featured = $4)
		  AND ($5::text IS NULL OR type = $5)
		  AND ($6::text IS NULL OR name ILIKE '%' || $6 || '%')
		  AND ($7::bigint[] IS NULL OR id = ANY($7))
		ORDER BY id DESC LIMIT $8`,
		after, f.status, f.categoryID, f.featured, f.typ, f.q, f.ids, page.Limit+1)
	if err != nil {
		return httpapi.List[*Product]{}, err
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Product, error) { return scanProduct(r) })
	if err != nil {
		return httpapi.List[*Product]{}, err
	}
	list := httpapi.NewList(ps, page.Limit, func(p *Product) string { return strconv.FormatInt(p.ID, 10) })
	return list, withVariants(ctx, tx, list.Data, public)
}

func (s *Service) listProducts(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	return s.productList(w, r, sc, false)
}

func (s *Service) publicListProducts(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	return s.productList(w, r, sc, true)
}

func (s *Service) productList(w http.ResponseWriter, r *http.Request, sc *tenant.Scope, public bool) error {
	page, err := httpapi.ParsePage(r)
	if err != nil {
		return err
	}
	f, err := parseProductFilter(r, public)
	if err != nil {
		return err
	}
	var list httpapi.List[*Product]
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		list, err = listProductRows(r.Context(), tx, f, page, public)
		return err
	})
	if err != nil {
		return err
	}
	if public {
		return httpapi.PublicJSON(w, r, list)
	}
	return httpapi.JSON(w, 200, list)
}

// publicGetProduct serves an active product by numeric id or slug, with
// its active variants.
func (s *Service) publicGetProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var err error
	key := chi.URLParam(r, "id_or_slug")
	var id int64
	if n, err := strconv.ParseInt(key, 10, 64); err == nil {
		id = n
	}
	var p *Product
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		p, err = scanProduct(tx.QueryRow(r.Context(), `SELECT `+productCols+` FROM products
			WHERE status = 'active' AND (id = $1 OR slug = $2) ORDER BY id = $1 DESC LIMIT 1`, id, key))
		if err != nil {
			return err
		}
		return withVariants(r.Context(), tx, []*Product{p}, true)
	})
	if err != nil {
		return err
	}
	return httpapi.PublicJSON(w, r, p)
}
