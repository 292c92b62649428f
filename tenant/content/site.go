package content

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// The writes another pillar's job makes in this pillar's data (the
// website.generate job of tenant/sites): each runs the checks of the
// route that makes the same change and emits its events, in the caller's
// transaction. They charge nothing: the job's own price covers them.
// The Lock reads hold their rows until the transaction ends, so a caller
// that compares what is stored with what it last wrote cannot lose an
// edit made between its read and its write.

// LockPage returns the page of slug, locked; nil when there is none.
func LockPage(ctx context.Context, tx pgx.Tx, pageSlug string) (*Page, error) {
	if !slug.Valid(pageSlug) {
		return nil, httpapi.Invalid("slug", "must match "+slug.Pattern.String())
	}
	p, err := lockPageBySlug(ctx, tx, pageSlug)
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil, nil
	}
	return &p, err
}

// SavePage creates the page req describes (cur nil), as POST /pages does,
// or applies req onto cur, as PATCH /pages/{id_or_slug} does.
func SavePage(ctx context.Context, tx pgx.Tx, cur *Page, req PageRequest) (Page, error) {
	if cur == nil {
		if req.Title == nil {
			return Page{}, httpapi.BadRequest(`missing required field "title"`)
		}
		p := Page{Status: PageDraft, Sections: []json.RawMessage{}, Translations: []PageTranslation{}}
		if err := req.merge(&p); err != nil {
			return Page{}, err
		}
		return insertPage(ctx, tx, p)
	}
	p := *cur
	if err := req.merge(&p); err != nil {
		return Page{}, err
	}
	return updatePage(ctx, tx, p)
}

// LockComponent returns the component of slug, locked; nil when there is
// none.
func LockComponent(ctx context.Context, tx pgx.Tx, componentSlug string) (*Component, error) {
	if !slug.Valid(componentSlug) {
		return nil, httpapi.Invalid("slug", "must match "+slug.Pattern.String())
	}
	c, err := lockComponentBySlug(ctx, tx, componentSlug)
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil, nil
	}
	return &c, err
}

// SaveComponent creates the component req describes (cur nil), as POST
// /components does, or applies req onto cur, as PATCH /components/{slug}.
func SaveComponent(ctx context.Context, tx pgx.Tx, cur *Component, req ComponentRequest) (Component, error) {
	if err := req.check(); err != nil {
		return Component{}, err
	}
	if cur == nil {
		if req.Name == nil {
			return Component{}, httpapi.BadRequest(`missing required field "name"`)
		}
		props, tr := req.encode([]byte("{}"))
		return insertComponent(ctx, tx, req.Slug, *req.Name, props, tr)
	}
	props, tr := req.encode(nil)
	return updateComponent(ctx, tx, cur.Slug, req.Name, req.Slug, props, tr)
}

// LockBrand returns the brand context, locked. The brand is one row per
// project, so holding it also serialises callers that rewrite a whole
// site.
func LockBrand(ctx context.Context, tx pgx.Tx) (Brand, error) {
	return lockBrand(ctx, tx)
}

// SaveBrand applies req as PATCH /brand does.
func SaveBrand(ctx context.Context, tx pgx.Tx, req BrandRequest) (Brand, error) {
	colors, fonts, err := req.check()
	if err != nil {
		return Brand{}, err
	}
	return updateBrand(ctx, tx, req, colors, fonts)
}

// LockValues returns the stored values of keys in langs, locked, by key
// and language.
func LockValues(ctx context.Context, tx pgx.Tx, keys, langs []string) (map[[2]string]string, error) {
	return lockValues(ctx, tx, keys, langs)
}

// SaveValue writes key's value in lang as PUT /content/{key} does,
// content.changed included.
func (sv *Service) SaveValue(ctx context.Context, tx pgx.Tx, s *tenant.Scope, key, lang, value string) error {
	var v httpapi.Validator
	checkKey(&v, "key", key)
	checkValue(&v, "", value, &lang, lang)
	if err := v.Err(); err != nil {
		return err
	}
	return sv.setValue(ctx, tx, s, key, lang, value)
}
