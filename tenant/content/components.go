package content

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// Component is the component resource: a named, reusable block of props
// with per-language overrides.
type Component struct {
	ID           int64                      `json:"id"`
	Slug         string                     `json:"slug"`
	Name         string                     `json:"name"`
	Props        json.RawMessage            `json:"props"`
	Translations map[string]json.RawMessage `json:"translations"`
	CreatedAt    time.Time                  `json:"created_at"`
	UpdatedAt    time.Time                  `json:"updated_at"`
}

// ComponentRequest is the body of POST /components and PATCH
// /components/{slug}; a field sent replaces the stored one whole.
type ComponentRequest struct {
	Name         *string                     `json:"name"`
	Slug         *string                     `json:"slug"`
	Props        *json.RawMessage            `json:"props"`
	Translations *map[string]json.RawMessage `json:"translations"`
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// check validates the fields sent (422 naming each invalid one).
func (req *ComponentRequest) check() error {
	var v httpapi.Validator
	if req.Name != nil {
		checkName(&v, *req.Name)
	}
	checkSlug(&v, req.Slug)
	if req.Props != nil {
		v.Check(isObject(*req.Props), "props", "must be an object")
	}
	if req.Translations != nil {
		for lang, obj := range *req.Translations {
			v.Check(httpapi.ValidLanguage(lang), "translations", fmt.Sprintf("%q is not a language code", lang))
			v.Check(isObject(obj), "translations."+lang, "must be an object")
		}
	}
	return v.Err()
}

// encode returns the props and translations to store: those sent, else def.
func (req *ComponentRequest) encode(def []byte) (props, tr []byte) {
	props, tr = def, def
	if req.Props != nil {
		props = *req.Props
	}
	if req.Translations != nil {
		tr, _ = json.Marshal(*req.Translations)
	}
	return props, tr
}

const componentCols = `id, slug, name, props, translations, created_at, updated_at`

func scanComponent(row pgx.Row) (Component, error) {
	var c Component
	var tr []byte
	if err := row.Scan(&c.ID, &c.Slug, &c.Name, &c.Props, &tr, &c.CreatedAt, &c.UpdatedAt); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return c, httpapi.NotFound("no such component")
		}
		return c, err
	}
	if err := json.Unmarshal(tr, &c.Translations); err != nil {
		return c, err
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

func (sv *Service) createComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	var req ComponentRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return httpapi.BadRequest(`missing required field "name"`)
	}
	if err := req.check(); err != nil {
		return err
	}
	props, tr := req.encode([]byte("{}"))
	var c Component
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		sl, err := pickSlug(r.Context(), tx, "components", req.Slug, *req.Name)
		if err != nil {
			return err
		}
		c, err = scanComponent(tx.QueryRow(r.Context(), `INSERT INTO components (slug, name, props, translations) VALUES ($1, $2, $3, $4)
			RETURNING `+componentCols, sl, *req.Name, props, tr))
		return err
	})
	if err != nil {
		return slugConflict(err)
	}
	return httpapi.JSON(w, http.StatusCreated, c)
}

func (sv *Service) listComponents(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Component, error) {
		return tenant.TxV(r.Context(), s, func(tx pgx.Tx) ([]Component, error) {
			return queryAll(r.Context(), tx, scanComponent, `SELECT `+componentCols+` FROM components WHERE $1 = 0 OR id < $1 ORDER BY id DESC LIMIT $2`,
				before, limit)
		})
	}, func(c Component) string { return httpapi.IDText(c.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// idPage reads the page asked of a list ordered by id, newest first, and
// the id its cursor names (0: the first page).
func idPage(r *http.Request) (httpapi.Page, int64, error) {
	page, err := httpapi.ParsePage(r)
	if err != nil || page.Cursor == "" {
		return page, 0, err
	}
	n, err := httpapi.CursorID(page.Cursor)
	return page, n, err
}

func getComponent(ctx context.Context, tx pgx.Tx, s string) (Component, error) {
	if !slug.Valid(s) {
		return Component{}, httpapi.NotFound("no such component")
	}
	return scanComponent(tx.QueryRow(ctx, `SELECT `+componentCols+` FROM components WHERE slug = $1`, s))
}

func (sv *Service) getComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	var c Component
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		c, err = getComponent(r.Context(), tx, chi.URLParam(r, "slug"))
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, c)
}

func (sv *Service) patchComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	cur := chi.URLParam(r, "slug")
	var req ComponentRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	props, tr := req.encode(nil) // nil: keep the stored value
	var c Component
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		if !slug.Valid(cur) {
			return httpapi.NotFound("no such component")
		}
		c, err = scanComponent(tx.QueryRow(r.Context(), `UPDATE components SET
				name = COALESCE($2, name), slug = COALESCE($3, slug), props = COALESCE($4, props),
				translations = COALESCE($5, translations), updated_at = now()
			WHERE slug = $1 RETURNING `+componentCols, cur, req.Name, req.Slug, props, tr))
		return err
	})
	if err != nil {
		return slugConflict(err)
	}
	return httpapi.JSON(w, http.StatusOK, c)
}

func (sv *Service) deleteComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		return execFound(r.Context(), tx, httpapi.NotFound("no such component"), `DELETE FROM components WHERE slug = $1`, chi.URLParam(r, "slug"))
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
