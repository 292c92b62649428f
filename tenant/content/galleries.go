package content

import (
	"cmp"
	"encoding/json"
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
	"github.com/plinth-dev/plinth/tenant/drafts"
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
	// HasDraft says whether the gallery has unpublished changes (a
	// draft); authenticated reads only, the public surface omits it.
	HasDraft *bool `json:"has_draft,omitempty"`
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
	// Draft and Autosave: as the query parameters of the same names
	// (drafts.Mode); PATCH only.
	Draft    *bool `json:"draft"`
	Autosave *bool `json:"autosave"`
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

func checkSlug(v *httpapi.Validator, s *string) {
	if s != nil {
		v.Check(slug.Valid(*s), "slug", "must match "+slug.Pattern.String())
	}
}

func (sv *Service) createGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req GalleryRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return httpapi.BadRequest(`missing required field "name"`)
	}
	if draft, _, err := drafts.Mode(r, req.Draft, req.Autosave); err != nil || draft {
		return cmp.Or(err, error(httpapi.Invalid("draft", "a new gallery is live at once; draft writes edit an existing gallery")))
	}
	var v httpapi.Validator
	checkName(&v, *req.Name)
	checkSlug(&v, req.Slug)
	items := []GalleryItem{}
	if req.Items != nil {
		var err error
		if items, err = checkItems(&v, *req.Items); err != nil {
			return err
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	raw, _ := json.Marshal(items)
	g, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Gallery, error) {
		g, err := insertGallery(r.Context(), tx, req.Slug, *req.Name, raw)
		g.HasDraft = new(bool)
		return g, err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, wrap{g})
}

func (sv *Service) listGalleries(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, decodeTimeCursor, func(after timeCursor, limit int) ([]Gallery, error) {
		list, err := listGalleries(r.Context(), s.Reader(), after, limit)
		if err != nil {
			return nil, err
		}
		return list, nil
	}, func(g Gallery) string { return timeText(g.CreatedAt, g.Slug) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// gallery reads the gallery the path names.
func (sv *Service) gallery(r *http.Request, s *tenant.Scope) (Gallery, error) {
	return GetGallery(r.Context(), s.Reader(), chi.URLParam(r, "slug"))
}

func (sv *Service) getGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	draft, err := drafts.ReadDraft(r)
	if err != nil {
		return err
	}
	g, err := sv.gallery(r, s)
	if err != nil {
		return err
	}
	if draft {
		g, err = draftGallery(r.Context(), s.Reader(), g)
	}
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, wrap{g})
}

func (sv *Service) publicGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pv, err := drafts.Preview(r, s)
	if err != nil {
		return err
	}
	g, err := sv.gallery(r, s)
	if err != nil {
		return err
	}
	if pv.Covers(drafts.Gallery, g.Slug) {
		if g, err = draftGallery(r.Context(), s.Reader(), g); err != nil {
			return err
		}
	}
	g.HasDraft = nil
	return httpapi.PublicJSON(w, r, wrap{g})
}

func (sv *Service) patchGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req GalleryRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
		return err
	}
	if draft && req.Slug != nil {
		return httpapi.Invalid("slug", "a gallery's slug is its address, changed by a live write only: drafts hold its name and items")
	}
	var v httpapi.Validator
	if req.Name != nil {
		checkName(&v, *req.Name)
	}
	checkSlug(&v, req.Slug)
	var items []GalleryItem // nil: keep the stored items
	if req.Items != nil {
		if items, err = checkItems(&v, *req.Items); err != nil {
			return err
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	g, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Gallery, error) {
		if draft {
			g, err := lockGallery(r.Context(), tx, chi.URLParam(r, "slug"))
			if err != nil {
				return g, err
			}
			return saveGalleryDraft(r.Context(), tx, s, g, req.Name, items, autosave)
		}
		var raw []byte
		if items != nil {
			raw, _ = json.Marshal(items)
		}
		g, err := updateGallery(r.Context(), tx, chi.URLParam(r, "slug"), req.Name, req.Slug, raw)
		if err != nil {
			return g, err
		}
		g.HasDraft, err = hasDraft(r.Context(), tx, drafts.Gallery, g.Slug)
		return g, err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, wrap{g})
}

func (sv *Service) deleteGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	err := s.Tx(r.Context(), func(tx pgx.Tx) error {
		return deleteGallery(r.Context(), tx, chi.URLParam(r, "slug"))
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
