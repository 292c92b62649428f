package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
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

func (sv *Service) createComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
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
	c, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Component, error) {
		return insertComponent(r.Context(), tx, req.Slug, *req.Name, props, tr)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, c)
}

func (sv *Service) listComponents(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Component, error) {
		return listComponents(r.Context(), s.Reader(), before, limit)
	}, func(c Component) string { return httpapi.IDText(c.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

func (sv *Service) getComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	c, err := getComponent(r.Context(), s.Reader(), chi.URLParam(r, "slug"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, c)
}

func (sv *Service) patchComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req ComponentRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	props, tr := req.encode(nil) // nil: keep the stored value
	c, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Component, error) {
		return updateComponent(r.Context(), tx, chi.URLParam(r, "slug"), req.Name, req.Slug, props, tr)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, c)
}

func (sv *Service) deleteComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	err := s.Tx(r.Context(), func(tx pgx.Tx) error {
		return deleteComponent(r.Context(), tx, chi.URLParam(r, "slug"))
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
