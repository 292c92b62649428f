package commerce

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

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
	// Translations are the texts in other languages than the project's
	// default (the product's own fields), by language code.
	Translations map[string]ProductText `json:"translations"`
	// Fallback says, for a read in a language (?lang), which text came
	// from another language of its chain ({"description": "fr"});
	// omitted when none did.
	Fallback tenant.Provenance `json:"fallback,omitempty"`
}

// ProductText is a product's texts in one language; an absent or empty
// one falls back along the project's chain.
type ProductText struct {
	Name             string `json:"name,omitempty"`
	Description      string `json:"description,omitempty"`
	ShortDescription string `json:"short_description,omitempty"`
}

// maxTranslations is the most languages a product's translations name.
const maxTranslations = 50

// localize fills name, description and short description in the
// language of chain[0]: each from the first language of chain whose
// translation has it, the product's own fields being the default
// language's (def), and notes in Fallback each that came from
// another language. An empty chain (no ?lang) leaves p as stored.
func (p *Product) localize(chain []string, def string) {
	if len(chain) == 0 {
		return
	}
	l := tenant.Localizer{Chain: chain, Own: def, Fallback: &p.Fallback}
	l.Text("name", &p.Name, func(lang string) string { return p.Translations[lang].Name })
	l.Text("description", &p.Description, func(lang string) string { return p.Translations[lang].Description })
	l.Text("short_description", &p.ShortDescription, func(lang string) string { return p.Translations[lang].ShortDescription })
}

// langChain reads the optional ?lang of a product read: the chain of
// languages it follows (nil when absent; 422 when not a language code).
func langChain(r *http.Request, sc *tenant.Scope) ([]string, error) {
	lang := r.URL.Query().Get("lang")
	if lang != "" && !httpapi.ValidLanguage(lang) {
		return nil, httpapi.Invalid("lang", "must be a language code such as en or pt-BR")
	}
	return sc.Project.ChainFor(lang), nil
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
	// Translations replaces the stored ones whole.
	Translations *map[string]ProductText `json:"translations"`
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
		v.Check(validAmount(*in.Price), "price", amountMsg)
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
		v.Check(validAmount(*in.CompareAtPrice.Value), "compare_at_price", amountMsg)
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
	if in.Translations != nil {
		v.Check(len(*in.Translations) <= maxTranslations, "translations", fmt.Sprintf("must name at most %d languages", maxTranslations))
		for _, lang := range slices.Sorted(maps.Keys(*in.Translations)) {
			t := (*in.Translations)[lang]
			at := "translations." + lang
			v.Check(httpapi.ValidLanguage(lang), "translations", fmt.Sprintf("%q is not a language code such as en or pt-BR", lang))
			v.Check(utf8.RuneCountInString(t.Name) <= 255, at+".name", "must be at most 255 characters")
			v.Check(utf8.RuneCountInString(t.ShortDescription) <= 500, at+".short_description", "must be at most 500 characters")
			v.Check(utf8.RuneCountInString(t.Description) <= 100000, at+".description", "must be at most 100000 characters")
		}
	}
	if in.Variants != nil {
		v.Check(len(*in.Variants) <= 100, "variants", "must have at most 100 entries")
		for i := range *in.Variants {
			(*in.Variants)[i].check(&v, "variants["+strconv.Itoa(i)+"].", true)
		}
	}
	return v.Err()
}

func (s *Service) createProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var in productInput
	if err := decodeInput(r, &in, true); err != nil {
		return err
	}
	p, err := tenant.TxV(r.Context(), sc, func(tx pgx.Tx) (*Product, error) {
		return insertProduct(r.Context(), tx, in)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, p)
}

func (s *Service) updateProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	var in productInput
	if err := decodeInput(r, &in, false); err != nil {
		return err
	}
	p, err := tenant.TxV(r.Context(), sc, func(tx pgx.Tx) (*Product, error) {
		return updateProduct(r.Context(), tx, id, in)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, p)
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

func (s *Service) listProducts(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	return s.productList(w, r, sc, false)
}

func (s *Service) publicListProducts(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	return s.productList(w, r, sc, true)
}

// productList serves a page of products, newest first, with their
// variants; with public, active products and variants only.
func (s *Service) productList(w http.ResponseWriter, r *http.Request, sc *tenant.Scope, public bool) error {
	f, err := parseProductFilter(r, public)
	if err != nil {
		return err
	}
	chain, err := langChain(r, sc)
	if err != nil {
		return err
	}
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(after int64, limit int) ([]*Product, error) {
		list, err := listProducts(r.Context(), sc.Reader(), f, after, limit, public)
		for _, p := range list {
			p.localize(chain, sc.Project.DefaultLanguage)
		}
		return list, err
	}, func(p *Product) string { return httpapi.IDText(p.ID) })
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
	key := chi.URLParam(r, "id_or_slug")
	var id int64 // 0, no row, when key is not an id
	if n, err := strconv.ParseInt(key, 10, 64); err == nil {
		id = n
	}
	chain, err := langChain(r, sc)
	if err != nil {
		return err
	}
	p, err := publicProduct(r.Context(), sc.Reader(), key, id)
	if err != nil {
		return err
	}
	p.localize(chain, sc.Project.DefaultLanguage)
	return httpapi.PublicJSON(w, r, p)
}

// getProduct serves a product with its variants, in ?lang's language
// when it asks for one.
func (s *Service) getProduct(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	chain, err := langChain(r, sc)
	if err != nil {
		return err
	}
	p, err := loadProduct(r.Context(), sc.Reader(), id)
	if err != nil {
		return err
	}
	p.localize(chain, sc.Project.DefaultLanguage)
	return httpapi.JSON(w, 200, p)
}
