package central

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/idempotency"
)

// ProjectJSON is the Project resource.
type ProjectJSON struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Slug            string   `json:"slug"`
	Industry        string   `json:"industry"`
	DefaultLanguage string   `json:"default_language"`
	TargetLanguages []string `json:"target_languages"`
	Timezone        string   `json:"timezone"`
	Plan            string   `json:"plan"`
	AllowedOrigins  []string `json:"allowed_origins"`
	SiteURL         *string  `json:"site_url"`
	// FallbackLanguages: {} when the project has none.
	FallbackLanguages tenant.Fallbacks `json:"fallback_languages"`
	CreatedAt         time.Time        `json:"created_at"`
}

// ToProjectJSON converts a project to its API shape.
func ToProjectJSON(p *tenant.Project) ProjectJSON {
	tl := p.TargetLanguages
	if tl == nil {
		tl = []string{}
	}
	origins := p.AllowedOrigins
	if origins == nil {
		origins = []string{}
	}
	var site *string
	if p.SiteURL != "" {
		site = &p.SiteURL
	}
	fallbacks := p.FallbackLanguages
	if fallbacks == nil {
		fallbacks = tenant.Fallbacks{}
	}
	return ProjectJSON{ID: p.ID, Name: p.Name, Slug: p.Slug, Industry: p.Industry, DefaultLanguage: p.DefaultLanguage,
		TargetLanguages: tl, Timezone: p.Timezone, Plan: p.Plan, AllowedOrigins: origins, SiteURL: site,
		FallbackLanguages: fallbacks, CreatedAt: p.CreatedAt.UTC()}
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

// updateProjectRequest is the body of PATCH /projects/me: the fields a key
// may change, and the operator's (the plan and the limits, which set what
// the project is allowed and billed), named so that a body with one is
// refused for what it is rather than as an unknown field.
type updateProjectRequest struct {
	Name            *string   `json:"name"`
	Industry        *string   `json:"industry"`
	DefaultLanguage *string   `json:"default_language"`
	TargetLanguages *[]string `json:"target_languages"`
	Timezone        *string   `json:"timezone"`
	AllowedOrigins  *[]string `json:"allowed_origins"`
	SiteURL         *string   `json:"site_url"`
	// FallbackLanguages replaces the chains whole.
	FallbackLanguages *tenant.Fallbacks `json:"fallback_languages"`

	Plan         any `json:"plan"`
	PlanCredits  any `json:"plan_credits"`
	TopupCredits any `json:"topup_credits"`
	RateRPM      any `json:"rate_rpm"`
	RateBurst    any `json:"rate_burst"`
}

func (c *Central) patchMe(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req updateProjectRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	// Whatever its scopes, a project key never changes what the project
	// is allowed: a "*" key could otherwise move a free project to scale.
	for _, f := range []struct {
		name  string
		value any
	}{{"plan", req.Plan}, {"plan_credits", req.PlanCredits}, {"topup_credits", req.TopupCredits}, {"rate_rpm", req.RateRPM}, {"rate_burst", req.RateBurst}} {
		if f.value != nil {
			return httpapi.Fail(httpapi.ErrForbidden, "the "+f.name+" of a project is changed by the platform operator, not with an API key")
		}
	}
	p, err := c.UpdateProject(r.Context(), s.Project.ID, ProjectUpdate{Name: req.Name, Industry: req.Industry,
		DefaultLanguage: req.DefaultLanguage, TargetLanguages: req.TargetLanguages, Timezone: req.Timezone,
		AllowedOrigins: req.AllowedOrigins, SiteURL: req.SiteURL, FallbackLanguages: req.FallbackLanguages})
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
	// A test key is for development: it must not be a way to a live key,
	// which bills and reaches production data.
	if s.Key.Test && !test {
		return httpapi.Fail(httpapi.ErrForbidden, "a test key mints only test keys; a live key is minted with a live key or from the dashboard")
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
