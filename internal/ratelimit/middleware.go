package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

type chargedKey struct{}

// Charged returns ctx marking a request as already charged: one the
// server makes to itself on behalf of a request that passed the limiter
// (an MCP tool call served through the REST routes). The caller's one
// request is not charged again for each route it runs (the guard of
// tenant/ratelimit lets it through: IsCharged). Only code in the process
// can set it; no header or client input does.
func Charged(ctx context.Context) context.Context {
	return context.WithValue(ctx, chargedKey{}, true)
}

// IsCharged reports whether ctx was marked by Charged.
func IsCharged(ctx context.Context) bool {
	charged, _ := ctx.Value(chargedKey{}).(bool)
	return charged
}

type bundleKey struct{}

// bundle records the buckets the requests of one Bundle were charged to.
type bundle struct {
	mu      sync.Mutex
	charged map[string]bool
}

// Bundle returns ctx marking the requests made with it as parts of one
// client request: a dashboard page, which reads the dashboard API several
// times in process (a project list costs two reads a row). A PerKey limit
// charges its bucket for the first part and shows it to the rest without
// charging it, so a page costs one request, whatever it shows. Only code
// in the process can set it; no header or client input does.
func Bundle(ctx context.Context) context.Context {
	return context.WithValue(ctx, bundleKey{}, &bundle{charged: map[string]bool{}})
}

// firstOf reports whether this is the first charge of bucket in the
// Bundle of ctx, and notes it; outside a bundle every charge is a first.
func firstOf(ctx context.Context, bucket string) bool {
	b, _ := ctx.Value(bundleKey{}).(*bundle)
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.charged[bucket] {
		return false
	}
	b.charged[bucket] = true
	return true
}

// Charge takes n requests from bucket key under l, sets the rate-limit
// headers and, when the bucket is empty, writes the 429. It reports
// whether the request may go on; a store that fails lets it through.
func Charge(w http.ResponseWriter, r *http.Request, store Store, key string, l Limit, n int, clock func() time.Time, logger *slog.Logger) bool {
	res, err := store.Take(r.Context(), key, l, n)
	if err != nil {
		logger.WarnContext(r.Context(), "rate limit decision failed; request let through", "err", err)
		return true
	}
	now := clock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(l.RPM))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(now.Add(res.ResetAfter)), 10))
	if !res.Allowed {
		httpapi.WriteError(w, r, httpapi.RateLimited(CeilSeconds(res.RetryAfter),
			"the rate limit of "+strconv.Itoa(l.RPM)+" requests per minute is exceeded"))
		return false
	}
	return true
}

// PerIP limits each client IP on the routes it wraps, in buckets of their
// own: the routes Guard skips that still need a limit (the dashboard's
// login endpoints, whose argon2id work is what an attacker would buy).
type PerIP struct {
	Store   Store
	Limit   Limit
	Trusted []netip.Prefix
	Clock   func() time.Time
	Logger  *slog.Logger
	// Rejected, when set, is told of every 429 (as the limit "login").
	Rejected func(limit string)
}

// Handler returns the middleware of one endpoint: name keeps its buckets
// apart from those of the other endpoints and of Guard.
func (p *PerIP) Handler(name string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if Charge(w, r, p.Store, name+":"+ClientIP(r, p.Trusted), p.Limit, 1, p.Clock, p.Logger) {
				next.ServeHTTP(w, r)
			} else if p.Rejected != nil {
				p.Rejected("login")
			}
		})
	}
}

// PerKey limits the routes it wraps per bucket Key(r) (the admin API:
// per admin token; the dashboard API: per user and per client IP), in
// buckets of their own. Of the requests of one Bundle, only the first
// is charged to a bucket.
type PerKey struct {
	Store  Store
	Limit  Limit
	Key    func(*http.Request) string
	Clock  func() time.Time
	Logger *slog.Logger
	// Rejected, when set, is told of every 429 (as the limit Name).
	Rejected func(limit string)
	Name     string
}

// Handler wraps next.
func (p *PerKey) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bucket, n := p.Name+":"+p.Key(r), 1
		if !firstOf(r.Context(), bucket) {
			n = 0 // shown, not charged: the bundle paid once
		}
		if Charge(w, r, p.Store, bucket, p.Limit, n, p.Clock, p.Logger) {
			next.ServeHTTP(w, r)
		} else if p.Rejected != nil {
			p.Rejected(p.Name)
		}
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
