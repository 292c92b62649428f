// Package usage serves the credit usage report of a project.
package usage

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// Service is the usage report; it needs nothing but the project's scope.
type Service struct{ tenant.Base }

// New builds the pillar.
func New() *Service { return &Service{} }

// Routes mounts GET /projects/me/usage.
func (*Service) Routes(r chi.Router) {
	r.With(tenant.RequireScope("project:read")).Get("/projects/me/usage", tenant.Handle(Get))
}

// Get answers ?period=current (the default) or ?period=previous with the
// usage of the scope's pool: GET /v1/projects/me/usage for a key, and the
// dashboard's project usage (central) for a workspace user.
func Get(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var previous bool
	switch r.URL.Query().Get("period") {
	case "", "current":
	case "previous":
		previous = true
	default:
		return httpapi.Invalid("period", "must be current or previous")
	}
	u, err := credits.Report(r.Context(), s, previous, time.Now())
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, u)
}
