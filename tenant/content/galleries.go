package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// Gallery limits of the contract.
const (
	MaxGalleryItems = 200
	MaxNameLen      = 255
	maxURLLen       = 2048
	maxAltLen       = 1000
)

// Gallery is the Gallery resource.
type Gallery struct {
	Slug       string        `json:"slug"`
	Name       string        `json:"name"`
	Items      []GalleryItem `json:"items"`
	ItemsCount int           `json:"items_count"`
	CreatedAt  time.Time     `json:"created_at"`
	UpdatedAt  time.Time     `json:"updated_at"`
}

// GalleryItem is one ordered entry of a gallery.
type GalleryItem struct {
	URL string `json:"url"`
	Alt string `json:"alt,omitempty"`
}

// galleryItemIn is an item as a request sends it.
type galleryItemIn struct {
	URL *string `json:"url"`
	Alt *string `json:"alt"`
}

// GalleryRequest is the body of POST /galleries and PATCH /galleries/{slug}.
type GalleryRequest struct {
	Name  *string          `json:"name"`
	Slug  *string          `json:"slug"`
	Items *[]galleryItemIn `json:"items"`
}

// wrap is the {data: Gallery} envelope of every gallery response.
type wrap struct {
	Data Gallery `json:"data"`
}

// validURL reports whether s is an absolute http(s) URL or a path on this
// site ("/media/x.jpg").
func validURL(s string) bool {
	if s == "" || len(s) > maxURLLen || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func checkName(v *httpapi.Validator, name string) {
	v.Check(strings.TrimSpace(name) != "", "name", "must not be empty")
	v.Check(utf8.RuneCountInString(name) <= MaxNameLen, "name", fmt.Sprintf("must be at most %d characters", MaxNameLen))
}

func checkItems(v *httpapi.Validator, in []galleryItemIn) ([]GalleryItem, error) {
	v.Check(len(in) <= MaxGalleryItems, "items", fmt.Sprintf("must hold at most %d items", MaxGalleryItems))
	out := make([]GalleryItem, 0, len(in))
	for i, it := range in {
		if it.URL == nil {
			return nil, httpapi.BadRequest(fmt.Sprintf("missing required field \"url\" in items[%d]", i))
		}
		field := fmt.Sprintf("items[%d]", i)
		v.Check(validURL(*it.URL), field+".url", "must be an absolute http(s) URL or a path starting with /")
		g := GalleryItem{URL: *it.URL}
		if it.Alt != nil {
			v.Check(utf8.RuneCountInString(*it.Alt) <= maxAltLen, field+".alt", fmt.Sprintf("must be at most %d characters", maxAltLen))
			g.Alt = *it.Alt
		}
		out = append(out, g)
	}
	return out, nil
}

const galleryCols = `slug, name, items, created_at, updated_at`

func scanGallery(row pgx.Row) (Gallery, error) {
	var g Gallery
	var items []byte
	if err := row.Scan(&g.Slug, &g.Name, &items, &g.CreatedAt, &g.UpdatedAt); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return g, httpapi.NotFound("no such gallery")
		}
		return g, err
	}
	if err := json.Unmarshal(items, &g.Items); err != nil {
		return g, err
	}
	if g.Items == nil {
		g.Items = []GalleryItem{}
	}
	g.ItemsCount = len(g.Items)
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g, nil
}

// GetGallery reads the gallery of slug (404 when absent).
func GetGallery(ctx context.Context, tx pgx.Tx, s string) (Gallery, error) {
	if !slug.Valid(s) {
		return Gallery{}, httpapi.NotFound("no such gallery")
	}
	return scanGallery(tx.QueryRow(ctx, `SELECT `+galleryCols+` FROM galleries WHERE slug = $1`, s))
}

// taken returns a slug.Unique probe over one table's slug column; table is
// a constant of this package, never input.
func taken(tx pgx.Tx, table string) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, s string) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE slug = $1)`, s).Scan(&ok)
		return ok, err
	}
}

// pickSlug returns the explicit slug (422 when malformed), or one derived
// from name and made unique with -2, -3, … . An explicit slug that is
// taken fails on the unique constraint (409).
func pickSlug(ctx context.Context, tx pgx.Tx, table string, explicit *string, name string) (string, error) {
	if explicit != nil {
		return *explicit, nil
	}
	base := slug.Make(name)
	if len(base) > 200 {
		base = strings.TrimRight(base[:200], "-")
	}
	// Serialise derivations of one table's slugs in this project (advisory
	// locks are database-wide, hence the schema in the key), so two
	// concurrent creates of "Summer" get summer and summer-2, not a 409.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':slug:' || $1))`, table); err != nil {
		return "", err
	}
	return slug.Unique(ctx, base, taken(tx, table))
}

func checkSlug(v *httpapi.Validator, s *string) {
	if s != nil {
		v.Check(slug.Valid(*s), "slug", "must match "+slug.Pattern.String())
	}
}

func (sv *Service) createGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	var req GalleryRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return httpapi.BadRequest(`missing required field "name"`)
	}
	var v httpapi.Validator
	checkName(&v, *req.Name)
	checkSlug(&v, req.Slug)
	items := []GalleryItem{}
	if req.Items != nil {
		if items, err = checkItems(&v, *req.Items); err != nil {
			return err
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	raw, _ := json.Marshal(items)
	var g Gallery
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		sl, err := pickSlug(r.Context(), tx, "galleries", req.Slug, *req.Name)
		if err != nil {
			return err
		}
		g, err = scanGallery(tx.QueryRow(r.Context(), `INSERT INTO galleries (slug, name, items) VALUES ($1, $2, $3) RETURNING `+galleryCols,
			sl, *req.Name, raw))
		return err
	})
	if err != nil {
		return slugConflict(err)
	}
	return httpapi.JSON(w, http.StatusCreated, wrap{g})
}

// slugConflict names the slug in a unique violation's 409.
func slugConflict(err error) error {
	if ae := httpapi.AsError(err); ae.Status == http.StatusConflict && ae.Code == httpapi.CodeConflict {
		return httpapi.Conflict(httpapi.CodeConflict, "the slug is taken")
	}
	return err
}

func (sv *Service) listGalleries(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	page, after, slugAfter, err := timePage(r)
	if err != nil {
		return err
	}
	var out []Gallery
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		out, err = queryAll(r.Context(), tx, scanGallery, `SELECT `+galleryCols+` FROM galleries
			WHERE $1::timestamptz IS NULL OR (created_at, slug) < ($1, $2)
			ORDER BY created_at DESC, slug DESC LIMIT $3`, after, slugAfter, page.Limit+1)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, httpapi.NewList(out, page.Limit, func(g Gallery) string {
		return makeTimeCursor(g.CreatedAt, g.Slug)
	}))
}

// makeTimeCursor and timePage encode and decode a (created_at, name)
// position of a list ordered by both, newest first.
func makeTimeCursor(t time.Time, name string) string {
	return t.UTC().Format(time.RFC3339Nano) + "|" + name
}

// timePage reads the page asked of such a list and the position its cursor
// names (nil: the first page).
func timePage(r *http.Request) (httpapi.Page, *time.Time, string, error) {
	page, err := httpapi.ParsePage(r)
	if err != nil || page.Cursor == "" {
		return page, nil, "", err
	}
	ts, name, ok := strings.Cut(page.Cursor, "|")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil {
		return page, nil, "", httpapi.BadCursor()
	}
	return page, &t, name, nil
}

func (sv *Service) gallery(r *http.Request, s *tenant.Scope) (Gallery, error) {
	var g Gallery
	var err error
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		g, err = GetGallery(r.Context(), tx, chi.URLParam(r, "slug"))
		return err
	})
	return g, err
}

func (sv *Service) getGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	g, err := sv.gallery(r, s)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, wrap{g})
}

func (sv *Service) publicGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	g, err := sv.gallery(r, s)
	if err != nil {
		return err
	}
	return httpapi.PublicJSON(w, r, wrap{g})
}

func (sv *Service) patchGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	cur := chi.URLParam(r, "slug")
	var req GalleryRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	if req.Name != nil {
		checkName(&v, *req.Name)
	}
	checkSlug(&v, req.Slug)
	var raw []byte
	if req.Items != nil {
		items, err := checkItems(&v, *req.Items)
		if err != nil {
			return err
		}
		raw, _ = json.Marshal(items)
	}
	if err := v.Err(); err != nil {
		return err
	}
	var g Gallery
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		if !slug.Valid(cur) {
			return httpapi.NotFound("no such gallery")
		}
		g, err = scanGallery(tx.QueryRow(r.Context(), `UPDATE galleries SET
				name = COALESCE($2, name), slug = COALESCE($3, slug), items = COALESCE($4, items), updated_at = now()
			WHERE slug = $1 RETURNING `+galleryCols, cur, req.Name, req.Slug, raw))
		return err
	})
	if err != nil {
		return slugConflict(err)
	}
	return httpapi.JSON(w, http.StatusOK, wrap{g})
}

func (sv *Service) deleteGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		return execFound(r.Context(), tx, httpapi.NotFound("no such gallery"), `DELETE FROM galleries WHERE slug = $1`, chi.URLParam(r, "slug"))
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
