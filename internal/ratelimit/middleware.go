package ratelimit

import (
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// ForProject returns the limit of p (its plan's, or its own).
func ForProject(p *tenant.Project) Limit {
	l := p.Limits()
	return Limit{RPM: l.RPM, Burst: l.Burst}
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
// the caller's bucket without charging it.
type Guard struct {
	Store        Store
	Anonymous    Limit
	Public       Limit
	PublicPrefix string
	Peek         []string
	// Skip lists path prefixes with limits of their own (the dashboard).
	Skip    []string
	Trusted []netip.Prefix
	Clock   func() time.Time
	Logger  *slog.Logger
}

// Handler wraps next.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		for _, p := range g.Skip {
			if strings.HasPrefix(path, p) {
				next.ServeHTTP(w, r)
				return
			}
		}
		var key string
		var l Limit
		n := 1
		if path == g.PublicPrefix || strings.HasPrefix(path, g.PublicPrefix+"/") {
			key, l = "pub:"+ClientIP(r, g.Trusted), g.Public
		} else {
			for _, p := range g.Peek {
				if path == p {
					n = 0
				}
			}
			if s := tenant.FromContext(r.Context()); s != nil && s.Key != nil {
				key, l = "prj:"+s.Project.ID, ForProject(s.Project)
			} else {
				key, l = "ip:"+ClientIP(r, g.Trusted), g.Anonymous
			}
		}
		res, err := g.Store.Take(r.Context(), key, l, n)
		if err != nil {
			g.Logger.WarnContext(r.Context(), "rate limit decision failed; request let through", "err", err)
			next.ServeHTTP(w, r)
			return
		}
		now := g.Clock()
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(l.RPM))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(now.Add(res.ResetAfter)), 10))
		if !res.Allowed {
			httpapi.WriteError(w, r, httpapi.RateLimited(CeilSeconds(res.RetryAfter),
				"the rate limit of "+strconv.Itoa(l.RPM)+" requests per minute is exceeded"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CeilSeconds rounds d up to whole seconds, for Retry-After.
func CeilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// ClientIP returns the address a request is attributed to: the direct
// peer, or, when the peer is a trusted proxy, the rightmost address of
// X-Forwarded-For that is not itself a trusted proxy (the left part of the
// header is client-supplied and cannot be trusted).
func ClientIP(r *http.Request, trusted []netip.Prefix) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	client := ap.Addr().Unmap()
	if !inAny(client, trusted) {
		return client.String()
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return client.String()
			}
			client = a.Unmap()
			if !inAny(client, trusted) {
				return client.String()
			}
		}
	}
	return client.String()
}

func inAny(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
