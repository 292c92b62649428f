// Package ratelimit is the scope-aware part of the request limits: Guard,
// the middleware in front of every /v1 route that charges a request to
// its project's bucket (the scope the identify step put on its context)
// or to its client IP's, and ForProject, the limit of a project. The
// limiter it runs on (GCRA, the in-process and Redis stores, the headers
// and the 429, the client IP) knows no project and stays in
// internal/ratelimit.
//
// Both packages are named ratelimit, after what they are parts of, so
// that each reads well alone (ratelimit.Guard, ratelimit.PerIP). Here the
// limiter is imported as limiter; a file that needs both (the
// composition root, central/server.go) imports this one as projectlimit.
package ratelimit

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	limiter "github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/tenant"
)

// ForProject returns the limit of p (its plan's, or its own).
func ForProject(p *tenant.Project) limiter.Limit {
	l := p.Limits()
	return limiter.Limit{RPM: l.RPM, Burst: l.Burst}
}

// Guard is the HTTP middleware that charges every request to its bucket
// and sets X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
// before the rest of the chain runs, so every response carries them: those
// of handlers, of other middleware (401, 403) and of unknown routes.
//
// A request whose key the identify step resolved (tenant.FromContext) is
// charged to its project; one without
// (a 401, an anonymous unknown route, an OAuth callback) to its client IP
// at the Anonymous limit; one under PublicPrefix to its client IP at the
// Public limit, before the public project is resolved, so probes of
// unknown projects are limited too. Paths in Peek (GET /v1/health) show
// the caller's bucket without charging it. A request the server makes to
// itself for one already charged (limiter.Charged) passes uncharged.
type Guard struct {
	Store        limiter.Store
	Anonymous    limiter.Limit
	Public       limiter.Limit
	PublicPrefix string
	Peek         []string
	// Skip lists path prefixes with limits of their own (the dashboard).
	Skip    []string
	Trusted []netip.Prefix
	Clock   func() time.Time
	Logger  *slog.Logger
	// Rejected, when set, is told of every 429 with the kind of limit
	// that refused it (project, ip, public), for the metrics.
	Rejected func(limit string)
}

// Handler wraps next.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limiter.IsCharged(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		path := r.URL.Path
		for _, p := range g.Skip {
			if strings.HasPrefix(path, p) {
				next.ServeHTTP(w, r)
				return
			}
		}
		var key, kind string
		var l limiter.Limit
		n := 1
		if path == g.PublicPrefix || strings.HasPrefix(path, g.PublicPrefix+"/") {
			key, l, kind = "pub:"+limiter.ClientIP(r, g.Trusted), g.Public, "public"
		} else {
			for _, p := range g.Peek {
				if path == p {
					n = 0
				}
			}
			if s := tenant.FromContext(r.Context()); s != nil && s.Key != nil {
				key, l, kind = "prj:"+s.Project.ID, ForProject(s.Project), "project"
			} else {
				key, l, kind = "ip:"+limiter.ClientIP(r, g.Trusted), g.Anonymous, "ip"
			}
		}
		if limiter.Charge(w, r, g.Store, key, l, n, g.Clock, g.Logger) {
			next.ServeHTTP(w, r)
		} else if g.Rejected != nil {
			g.Rejected(kind)
		}
	})
}
