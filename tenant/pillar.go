package tenant

import (
	"context"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// Pillar is one capability of a project: content, blog, commerce... Each
// is built by its package's New(Deps), with everything it needs passed
// in, and the control plane mounts every pillar the same way. A pillar's
// OpenAPI operations are its package's OpenAPI function (they describe
// routes, so they need no built pillar).
type Pillar interface {
	// Routes mounts the routes a project API key reaches; the router
	// already requires a key (scopes are the pillar's to check).
	Routes(r chi.Router)
	// PublicRoutes mounts the routes of /v1/public: no key, the project
	// named by the request (X-Service-Project-Key or ?project_id=).
	PublicRoutes(r chi.Router)
	// KeylessRoutes mounts routes of /v1 that authenticate themselves (an
	// OAuth callback's signed state, a processor's signature).
	KeylessRoutes(r chi.Router)
	// Workers adds the pillar's River workers to the process's one set.
	Workers(w *river.Workers)
}

// Emitter records a webhook event inside the caller's transaction, so a
// committed change always produces its event and a rolled-back one never
// does (tenant/outbox's Outbox).
type Emitter interface {
	Emit(ctx context.Context, tx pgx.Tx, s *Scope, topic string, data any) error
	// EmitLater is Emit for an event made from what statements kept for
	// the transaction's end (FinisherOf) answer: data is called once they
	// have, and returns the event's data, or false for no event.
	EmitLater(ctx context.Context, tx pgx.Tx, s *Scope, topic string, data func() (any, bool)) error
}

// Base is embedded by a pillar for the Pillar methods it has nothing to
// do in: no public routes, no keyless routes, no workers of its own.
type Base struct{}

// PublicRoutes mounts nothing.
func (Base) PublicRoutes(chi.Router) {}

// KeylessRoutes mounts nothing.
func (Base) KeylessRoutes(chi.Router) {}

// Workers adds nothing.
func (Base) Workers(*river.Workers) {}
