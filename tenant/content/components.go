package content

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
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
	// HasDraft says whether the component has unpublished changes (a
	// draft); authenticated reads only, the public surface omits it.
	HasDraft *bool `json:"has_draft,omitempty"`
	// Fallback says, for a read in a language (?lang), which prop came
	// from another language of its chain ({"props.heading": "fr"});
	// omitted when none did.
	Fallback tenant.Provenance `json:"fallback,omitempty"`
}

// localize makes props those of the language of chain[0]: each top-level
// prop from the first language of the chain whose translation has it
// (neither "" nor null), the component's own props being the default
// language's (def), noting in Fallback each that came from
// another language. An empty chain (no ?lang) leaves c as stored.
func (c *Component) localize(chain []string, def string) error {
	if len(chain) == 0 {
		return nil
	}
	asked := chain[0]
	var own map[string]json.RawMessage
	if err := json.Unmarshal(c.Props, &own); err != nil {
		return fmt.Errorf("component %s: props: %w", c.Slug, err)
	}
	byLang := map[string]map[string]json.RawMessage{}
	names := maps.Clone(own)
	for _, l := range chain {
		var tr map[string]json.RawMessage
		if raw, ok := c.Translations[l]; ok {
			if err := json.Unmarshal(raw, &tr); err != nil {
				return fmt.Errorf("component %s: translation %s: %w", c.Slug, l, err)
			}
		}
		byLang[l] = tr
		for name := range tr {
			names[name] = nil
		}
	}
	props := make(map[string]json.RawMessage, len(names))
	for name := range names {
		v, from := tenant.Pick(chain, func(l string) (json.RawMessage, bool) {
			if v, ok := byLang[l][name]; ok && hasValue(v) {
				return v, true
			}
			v, ok := own[name]
			return v, ok && l == def && hasValue(v)
		})
		if from == "" { // no language has it: as stored, if it is
			v, ok := own[name]
			if !ok {
				continue
			}
			props[name] = v
			continue
		}
		props[name] = v
		c.Fallback.Note("props."+name, from, asked)
	}
	b, err := json.Marshal(props)
	c.Props = b
	return err
}

// hasValue reports whether a prop's JSON is a value a reader can show:
// neither null nor "".
func hasValue(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return !bytes.Equal(v, []byte("null")) && !bytes.Equal(v, []byte(`""`))
}

// ComponentRequest is the body of POST /components and PATCH
// /components/{slug}; a field sent replaces the stored one whole.
type ComponentRequest struct {
	Name         *string                     `json:"name"`
	Slug         *string                     `json:"slug"`
	Props        *json.RawMessage            `json:"props"`
	Translations *map[string]json.RawMessage `json:"translations"`
	// Draft and Autosave: as the query parameters of the same names
	// (drafts.Mode); PATCH only.
	Draft    *bool `json:"draft"`
	Autosave *bool `json:"autosave"`
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
	if draft, _, err := drafts.Mode(r, req.Draft, req.Autosave); err != nil || draft {
		return cmp.Or(err, error(httpapi.Invalid("draft", "a new component is live at once; draft writes edit an existing component")))
	}
	if err := req.check(); err != nil {
		return err
	}
	props, tr := req.encode([]byte("{}"))
	c, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Component, error) {
		c, err := insertComponent(r.Context(), tx, req.Slug, *req.Name, props, tr)
		c.HasDraft = new(bool)
		return c, err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, c)
}

func (sv *Service) listComponents(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Component, error) {
		list, err := listComponents(r.Context(), s.Reader(), before, limit)
		if err != nil {
			return nil, err
		}
		return list, nil
	}, func(c Component) string { return httpapi.IDText(c.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

func (sv *Service) getComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	draft, err := drafts.ReadDraft(r)
	if err != nil {
		return err
	}
	lang, err := optionalLang(r)
	if err != nil {
		return err
	}
	c, err := getComponent(r.Context(), s.Reader(), chi.URLParam(r, "slug"), false)
	if err != nil {
		return err
	}
	if draft {
		c, err = draftComponent(r.Context(), s.Reader(), c)
	}
	if err == nil {
		err = c.localize(s.Project.ChainFor(lang), s.Project.DefaultLanguage)
	}
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
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	props, tr := req.encode(nil) // nil: keep the stored value
	c, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Component, error) {
		if draft {
			c, err := getComponent(r.Context(), tx, chi.URLParam(r, "slug"), true)
			if err != nil {
				return c, err
			}
			return saveComponentDraft(r.Context(), tx, s, c, &req, autosave)
		}
		c, err := updateComponent(r.Context(), tx, chi.URLParam(r, "slug"), req.Name, req.Slug, props, tr)
		if err != nil {
			return c, err
		}
		c.HasDraft, err = hasDraft(r.Context(), tx, drafts.Component, componentRef(c.ID))
		return c, err
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
