package content

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// PageCost is the price of creating or updating a page (page_update).
const PageCost = 1 * credits.Unit

// Page limits.
const (
	maxSections     = 200
	maxMetaTitle    = 255
	maxMetaDesc     = 1000
	maxPathLen      = 255
	maxTranslations = 100
)

// Page statuses.
const (
	PageDraft     = "draft"
	PagePublished = "published"
)

// pathPattern: an absolute site path of URL path characters, no "//",
// no query or fragment.
var pathPattern = regexp.MustCompile(`^/([A-Za-z0-9._~!$&'()*+,;=:@%-]+(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*/?)?$`)

// Page is the page resource.
type Page struct {
	ID           int64             `json:"id"`
	Slug         string            `json:"slug"`
	Path         string            `json:"path"`
	Title        string            `json:"title"`
	Status       string            `json:"status"`
	Sections     []json.RawMessage `json:"sections"`
	SEO          SEO               `json:"seo"`
	Translations []PageTranslation `json:"translations"`
	CreatedAt    time.Time         `json:"created_at"`
	UpdatedAt    time.Time         `json:"updated_at"`
	PublishedAt  *time.Time        `json:"published_at"`
	// HasDraft says whether the page has unpublished changes (a draft);
	// authenticated reads only, the public surface omits it.
	HasDraft *bool `json:"has_draft,omitempty"`
	// Fallback says, for a read in a language (?lang), which flat field
	// came from another language of its chain ({"title": "fr",
	// "seo.meta_title": "en"}); omitted when none did.
	Fallback tenant.Provenance `json:"fallback,omitempty"`
}

// SEO is a page's search and sharing metadata.
type SEO struct {
	MetaTitle       string  `json:"meta_title"`
	MetaDescription string  `json:"meta_description"`
	OGImage         *string `json:"og_image"`
	CanonicalURL    *string `json:"canonical_url"`
	NoIndex         bool    `json:"noindex"`
}

// PageTranslation is a page's title and SEO in one more language.
type PageTranslation struct {
	Lang  string `json:"lang"`
	Title string `json:"title"`
	SEO   SEO    `json:"seo"`
}

// SEOIn is SEO as a request sends it: absent fields keep their value.
type SEOIn struct {
	MetaTitle       *string `json:"meta_title"`
	MetaDescription *string `json:"meta_description"`
	OGImage         *string `json:"og_image"`
	CanonicalURL    *string `json:"canonical_url"`
	NoIndex         *bool   `json:"noindex"`
}

// TranslationIn is a page's title and SEO in one more language, as a
// request sends it.
type TranslationIn struct {
	Lang  *string `json:"lang"`
	Title *string `json:"title"`
	SEO   *SEOIn  `json:"seo"`
}

// PageRequest is the body of POST /pages and PATCH /pages/{id_or_slug}.
// sections and translations replace the stored lists whole; seo fields
// sent replace those stored, the others are kept.
type PageRequest struct {
	Title        *string            `json:"title"`
	Slug         *string            `json:"slug"`
	Path         *string            `json:"path"`
	Status       *string            `json:"status"`
	Sections     *[]json.RawMessage `json:"sections"`
	SEO          *SEOIn             `json:"seo"`
	Translations *[]TranslationIn   `json:"translations"`
	// Draft and Autosave: as the query parameters of the same names
	// (drafts.Mode); PATCH only.
	Draft    *bool `json:"draft"`
	Autosave *bool `json:"autosave"`
}

// apply merges in onto seo, validating under field.
func (in *SEOIn) apply(v *httpapi.Validator, field string, seo *SEO) {
	if in == nil {
		return
	}
	if in.MetaTitle != nil {
		v.Check(utf8.RuneCountInString(*in.MetaTitle) <= maxMetaTitle, field+".meta_title", fmt.Sprintf("must be at most %d characters", maxMetaTitle))
		seo.MetaTitle = *in.MetaTitle
	}
	if in.MetaDescription != nil {
		v.Check(utf8.RuneCountInString(*in.MetaDescription) <= maxMetaDesc, field+".meta_description", fmt.Sprintf("must be at most %d characters", maxMetaDesc))
		seo.MetaDescription = *in.MetaDescription
	}
	if in.OGImage != nil {
		v.Check(*in.OGImage == "" || validURL(*in.OGImage), field+".og_image", "must be an absolute http(s) URL or a path starting with /")
		seo.OGImage = nilIfEmpty(*in.OGImage)
	}
	if in.CanonicalURL != nil {
		v.Check(*in.CanonicalURL == "" || validURL(*in.CanonicalURL), field+".canonical_url", "must be an absolute http(s) URL or a path starting with /")
		seo.CanonicalURL = nilIfEmpty(*in.CanonicalURL)
	}
	if in.NoIndex != nil {
		seo.NoIndex = *in.NoIndex
	}
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func checkTitle(v *httpapi.Validator, field, title string) {
	v.Check(strings.TrimSpace(title) != "", field, "must not be empty")
	v.Check(utf8.RuneCountInString(title) <= MaxNameLen, field, fmt.Sprintf("must be at most %d characters", MaxNameLen))
}

// merge applies req onto p (a new page's defaults or the stored page),
// validating every field sent: a missing nested required field is a 400,
// else every invalid field is named in one 422.
func (req *PageRequest) merge(p *Page) error {
	var v httpapi.Validator
	if req.Title != nil {
		checkTitle(&v, "title", *req.Title)
		p.Title = *req.Title
	}
	if req.Slug != nil {
		checkSlug(&v, req.Slug)
		p.Slug = *req.Slug
	}
	if req.Path != nil {
		v.Check(len(*req.Path) <= maxPathLen && pathPattern.MatchString(*req.Path), "path", "must be a site path such as / or /about/team")
		p.Path = *req.Path
	}
	if req.Status != nil {
		v.Check(*req.Status == PageDraft || *req.Status == PagePublished, "status", "must be draft or published")
		p.Status = *req.Status
	}
	if req.Sections != nil {
		v.Check(len(*req.Sections) <= maxSections, "sections", fmt.Sprintf("must hold at most %d sections", maxSections))
		for i, sec := range *req.Sections {
			v.Check(isObject(sec), fmt.Sprintf("sections[%d]", i), "must be an object")
		}
		p.Sections = *req.Sections
	}
	req.SEO.apply(&v, "seo", &p.SEO)
	if req.Translations != nil {
		v.Check(len(*req.Translations) <= maxTranslations, "translations", fmt.Sprintf("must hold at most %d languages", maxTranslations))
		seen := map[string]bool{}
		p.Translations = make([]PageTranslation, 0, len(*req.Translations))
		for i, in := range *req.Translations {
			field := fmt.Sprintf("translations[%d]", i)
			if in.Lang == nil {
				return httpapi.BadRequest(fmt.Sprintf("missing required field \"lang\" in %s", field))
			}
			v.Check(httpapi.ValidLanguage(*in.Lang), field+".lang", "must be a language code such as en or pt-BR")
			v.Check(!seen[*in.Lang], field+".lang", fmt.Sprintf("%q is listed twice", *in.Lang))
			seen[*in.Lang] = true
			t := PageTranslation{Lang: *in.Lang}
			if in.Title != nil {
				v.Check(utf8.RuneCountInString(*in.Title) <= MaxNameLen, field+".title", fmt.Sprintf("must be at most %d characters", MaxNameLen))
				t.Title = *in.Title
			}
			in.SEO.apply(&v, field+".seo", &t.SEO)
			p.Translations = append(p.Translations, t)
		}
	}
	return v.Err()
}

// localize fills the flat title and SEO fields in the language of
// chain[0]: each from the first language of the chain whose translation
// has it, the page's own fields being the default language's (def),
// and notes in Fallback each that came from another language.
// noindex is the asked language's own. An empty chain (no ?lang) leaves
// the page as stored.
func (p *Page) localize(chain []string, def string) {
	if len(chain) == 0 {
		return
	}
	in := make(map[string]PageTranslation, len(p.Translations)) // a language without one: the zero value
	for _, t := range p.Translations {
		in[t.Lang] = t
	}
	l := tenant.Localizer{Chain: chain, Own: def, Fallback: &p.Fallback}
	l.Text("title", &p.Title, func(lang string) string { return in[lang].Title })
	l.Text("seo.meta_title", &p.SEO.MetaTitle, func(lang string) string { return in[lang].SEO.MetaTitle })
	l.Text("seo.meta_description", &p.SEO.MetaDescription, func(lang string) string { return in[lang].SEO.MetaDescription })
	l.Optional("seo.og_image", &p.SEO.OGImage, func(lang string) *string { return in[lang].SEO.OGImage })
	l.Optional("seo.canonical_url", &p.SEO.CanonicalURL, func(lang string) *string { return in[lang].SEO.CanonicalURL })
	if in[chain[0]].SEO.NoIndex {
		p.SEO.NoIndex = true
	}
}

// chargePage charges the creation or an update of the page id (page_update).
func chargePage(ctx context.Context, tx pgx.Tx, s *tenant.Scope, id int64) error {
	return credits.Charge(ctx, tx, s, "page_update", PageCost, "page:"+strconv.FormatInt(id, 10))
}

func (sv *Service) createPage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req PageRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Title == nil {
		return httpapi.BadRequest(`missing required field "title"`)
	}
	if draft, _, err := drafts.Mode(r, req.Draft, req.Autosave); err != nil || draft {
		return cmp.Or(err, error(httpapi.Invalid("draft", "a new page is a draft (status draft) until published; draft writes edit an existing page")))
	}
	p := Page{Status: PageDraft, Sections: []json.RawMessage{}, Translations: []PageTranslation{}}
	if err := req.merge(&p); err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Page, error) {
		out, err := insertPage(r.Context(), tx, p)
		if err != nil {
			return out, err
		}
		out.HasDraft = new(bool)
		return out, chargePage(r.Context(), tx, s, out.ID)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, out)
}

func (sv *Service) patchPage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req PageRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
		return err
	}
	if draft && req.Status != nil {
		return httpapi.Invalid("status", "a draft has no status of its own: publish and unpublish set it")
	}
	// Validate the body alone first, so a bad request is a 422 whether or
	// not the page exists.
	if err := req.merge(&Page{}); err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Page, error) {
		p, err := findPage(r.Context(), tx, chi.URLParam(r, "id_or_slug"), true)
		if err != nil {
			return p, err
		}
		if draft {
			return savePageDraft(r.Context(), tx, s, p, &req, autosave)
		}
		if err := req.merge(&p); err != nil {
			return p, err
		}
		if p, err = updatePage(r.Context(), tx, p); err != nil {
			return p, err
		}
		return p, chargePage(r.Context(), tx, s, p.ID)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

func (sv *Service) getPage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	draft, err := drafts.ReadDraft(r)
	if err != nil {
		return err
	}
	p, err := localPage(r, s, "id_or_slug", func(ctx context.Context, q tenant.Querier, ref string) (Page, error) {
		p, err := findPage(ctx, q, ref, false)
		if err != nil {
			return p, err
		}
		if draft {
			return draftPage(ctx, q, p)
		}
		return p, nil
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, p)
}

// localPage reads the page the path parameter param names with read, in
// the language the lang query parameter asks for.
func localPage(r *http.Request, s *tenant.Scope, param string, read func(context.Context, tenant.Querier, string) (Page, error)) (Page, error) {
	lang, err := optionalLang(r)
	if err != nil {
		return Page{}, err
	}
	p, err := read(r.Context(), s.Reader(), chi.URLParam(r, param))
	if err != nil {
		return p, err
	}
	p.localize(s.Project.ChainFor(lang), s.Project.DefaultLanguage)
	return p, nil
}

// optionalLang returns the lang query parameter ("" when absent; 422 when
// it is not a language code).
func optionalLang(r *http.Request) (string, error) {
	lang := r.URL.Query().Get("lang")
	if lang != "" && !httpapi.ValidLanguage(lang) {
		return "", httpapi.Invalid("lang", "must be a language code such as en or pt-BR")
	}
	return lang, nil
}

func (sv *Service) publicPage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pv, err := drafts.Preview(r, s)
	if err != nil {
		return err
	}
	p, err := localPage(r, s, "slug", func(ctx context.Context, q tenant.Querier, slug string) (Page, error) {
		if pv != nil {
			return previewPage(ctx, q, pv, slug)
		}
		return publishedPage(ctx, q, slug)
	})
	if err != nil {
		return err
	}
	p.HasDraft = nil // the public surface says nothing of drafts
	return httpapi.PublicJSON(w, r, p)
}

func (sv *Service) listPages(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	status := r.URL.Query().Get("status")
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Page, error) {
		// Checked once the page is read, so a bad limit or cursor is
		// reported first.
		if status != "" && status != PageDraft && status != PagePublished {
			return nil, httpapi.Invalid("status", "must be draft or published")
		}
		return listPages(r.Context(), s.Reader(), before, status, limit)
	}, func(p Page) string { return httpapi.IDText(p.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

func (sv *Service) deletePage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	err := s.Tx(r.Context(), func(tx pgx.Tx) error {
		return deletePage(r.Context(), tx, chi.URLParam(r, "id_or_slug"))
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
