package tenant

import (
	"context"
	"errors"
	"net/http"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

type ctxKey int

const (
	scopeKey ctxKey = iota
	authErrKey
	gateKey
)

// WithScope returns ctx carrying s: the caller's key and project (set by
// the control plane's identify step), or the project a public request
// names.
func WithScope(ctx context.Context, s *Scope) context.Context {
	return context.WithValue(ctx, scopeKey, s)
}

// FromContext returns the scope of the request, or nil.
func FromContext(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey).(*Scope)
	return s
}

// WithAuthError returns ctx recording why the credentials a request
// presented were refused (malformed, unknown, revoked): the identify step
// records it, and Authenticated answers with it where a key is required.
func WithAuthError(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, authErrKey, err)
}

// ErrNoScope is returned when a tenant route runs without a resolved project.
var ErrNoScope = errors.New("tenant: no project scope on the request")

// Authenticated is middleware letting through only requests whose key the
// identify step resolved; the others get the reason it recorded, or 401.
func Authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := FromContext(r.Context()); s != nil && s.Key != nil {
			next.ServeHTTP(w, r)
			return
		}
		err, _ := r.Context().Value(authErrKey).(error)
		if err == nil {
			err = httpapi.Unauthorized("a valid API key is required: Authorization: Bearer <key>")
		}
		httpapi.WriteError(w, r, err)
	})
}

// HandlerFunc is a handler of a route that runs in a project: it gets the
// request's scope and returns its error to one place.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, s *Scope) error

// A Gate is the last step of a request before its route's handler. It is
// armed by middleware in front of the router (WithGate) and fired by
// Handle, that is after the route's own middleware, its scope checks,
// let the request through; it calls next to run the handler or answers
// itself. Idempotency is the gate: a key that may not call a route must
// get its 403, never a stored answer (docs/decisions.md section 6).
type Gate func(w http.ResponseWriter, r *http.Request, next http.Handler)

// WithGate returns ctx carrying g, to run before the route's handler.
func WithGate(ctx context.Context, g Gate) context.Context {
	return context.WithValue(ctx, gateKey, g)
}

// Handle adapts h to net/http: it hands h the request's scope and writes
// a returned error as problem+json. A gate the request carries runs
// first, once.
func Handle(h HandlerFunc) http.HandlerFunc {
	run := func(w http.ResponseWriter, r *http.Request) {
		withScope(w, r, func(s *Scope) error { return h(w, r, s) })
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if g, _ := r.Context().Value(gateKey).(Gate); g != nil {
			g(w, r.WithContext(context.WithValue(r.Context(), gateKey, Gate(nil))), http.HandlerFunc(run))
			return
		}
		run(w, r)
	}
}

// withScope runs fn with the request's scope and writes its error.
func withScope(w http.ResponseWriter, r *http.Request, fn func(*Scope) error) {
	s := FromContext(r.Context())
	if s == nil {
		httpapi.WriteError(w, r, ErrNoScope)
		return
	}
	if err := fn(s); err != nil {
		httpapi.WriteError(w, r, err)
	}
}

// Need returns middleware requiring the scope need(r) of the request's
// key (403 naming it otherwise). It leaves the gate to the handler.
func Need(need func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			withScope(w, r, func(s *Scope) error {
				if err := s.Require(need(r)); err != nil {
					return err
				}
				next.ServeHTTP(w, r)
				return nil
			})
		})
	}
}

// RequireScope returns middleware requiring one fixed scope.
func RequireScope(scope string) func(http.Handler) http.Handler {
	return Need(func(*http.Request) string { return scope })
}

// ReadWrite returns middleware requiring pillar:read for GET and HEAD and
// pillar:write for every other method (docs/decisions.md, section 3).
func ReadWrite(pillar string) func(http.Handler) http.Handler {
	return Need(func(r *http.Request) string {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return pillar + ":read"
		}
		return pillar + ":write"
	})
}
