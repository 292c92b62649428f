package central

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/idempotency"
	"github.com/plinth-dev/plinth/tenant"
)

// ProjectJSON is the Project resource.
type ProjectJSON struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	Slug            string    `json:"slug"`
	Industry        string    `json:"industry"`
	DefaultLanguage string    `json:"default_language"`
	TargetLanguages []string  `json:"target_languages"`
	Timezone        string    `json:"timezone"`
	Plan            string    `json:"plan"`
	CreatedAt       time.Time `json:"created_at"`
}

// ToProjectJSON converts a project to its API shape.
func ToProjectJSON(p *tenant.Project) ProjectJSON {
	tl := p.TargetLanguages
	if tl == nil {
		tl = []string{}
	}
	return ProjectJSON{ID: p.ID, Name: p.Name, Slug: p.Slug, Industry: p.Industry, DefaultLanguage: p.DefaultLanguage,
		TargetLanguages: tl, Timezone: p.Timezone, Plan: p.Plan, CreatedAt: p.CreatedAt.UTC()}
}

// ProjectRoutes mounts /projects/me and the key routes of the v1 API; the
// router is already behind Authenticate.
func (c *Central) ProjectRoutes(r chi.Router) {
	r.With(tenant.RequireScope("project:read")).Get("/projects/me", tenant.Handle(c.getMe))
	r.With(tenant.RequireScope("project:write")).Patch("/projects/me", tenant.Handle(c.patchMe))
	r.With(tenant.RequireScope("project:admin")).Get("/projects/me/api-keys", tenant.Handle(c.listKeys))
	r.With(tenant.RequireScope("project:admin")).Post("/projects/me/api-keys", tenant.Handle(c.createKey))
	r.With(tenant.RequireScope("project:admin")).Delete("/api-keys/{key_id}", tenant.Handle(c.revokeKey))
}

func (c *Central) getMe(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return httpapi.JSON(w, 200, ToProjectJSON(s.Project))
}

func (c *Central) patchMe(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var u ProjectUpdate
	if err := httpapi.Decode(r, &u); err != nil {
		return err
	}
	if u.Plan != nil {
		if err := s.Require("project:admin"); err != nil {
			return err
		}
	}
	p, err := c.UpdateProject(r.Context(), s.Project.ID, u)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, ToProjectJSON(p))
}

func (c *Central) listKeys(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	keys, err := c.ListKeys(r.Context(), s.Project.ID)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, httpapi.List[APIKey]{Data: keys})
}

// CreateKeyRequest is the body of a key creation.
type CreateKeyRequest struct {
	Name   string   `json:"name" required:"true"`
	Scopes []string `json:"scopes" required:"true"`
	Test   *bool    `json:"test"`
}

func (c *Central) createKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req CreateKeyRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	test := s.Key.Test
	if req.Test != nil {
		test = *req.Test
	}
	k, err := c.MintKey(r.Context(), s.Project.ID, req.Name, req.Scopes, s.Key.Scopes, test)
	if err != nil {
		return err
	}
	idempotency.OmitFromReplay(r.Context(), "secret") // shown once, never stored
	return httpapi.JSON(w, 201, k)
}

func (c *Central) revokeKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	if err := c.RevokeKey(r.Context(), s.Project.ID, chi.URLParam(r, "key_id")); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
