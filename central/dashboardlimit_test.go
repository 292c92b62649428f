package central_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ratelimit"
)

// TestDashboardRateLimits: the dashboard API limits each user
// (PLINTH_DASHBOARD_RATE) and each client IP, signed in or not
// (PLINTH_DASHBOARD_IP_RATE), as the API's limits answer: 429
// rate_limited with Retry-After and the X-RateLimit-* headers. Before,
// /central/api had no limit but the login's.
func TestDashboardRateLimits(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return start } // frozen: nothing refills
	env := apitest.New(t, apitest.WithRateLimits(ratelimit.NewMemory(clock), clock),
		apitest.WithEnv("PLINTH_DASHBOARD_RATE", "1/3", "PLINTH_DASHBOARD_IP_RATE", "2/5"))
	newWorkspace(t, env, "Ann", "ann@example.com", "ann-password")
	newWorkspace(t, env, "Bob", "bob@example.com", "bob-password")
	ann := loginToken(t, env, "ann@example.com", "ann-password")
	bob := loginToken(t, env, "bob@example.com", "bob-password")
	from := func(ip, tok, method, path string, body any) *apitest.Resp {
		h := map[string]string{"X-Forwarded-For": ip}
		if tok != "" {
			h["Authorization"] = "Bearer " + tok
		}
		return env.Send(apitest.Request{Method: method, Path: path, Header: h, Body: body})
	}
	limited := func(r *apitest.Resp, limit string) {
		t.Helper()
		r.Problem(t, 429, "rate_limited")
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		if r.Header.Get("X-RateLimit-Limit") != limit || r.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("headers of the 429: %v", r.Header)
		}
	}

	// Ann's bucket: 3, whatever the route; its headers on each answer.
	for i, path := range []string{"/central/api/me", "/central/api/projects", "/central/api/me"} {
		r := from("203.0.113.1", ann, "GET", path, nil).Expect(t, 200)
		if got := r.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(2-i) || r.Header.Get("X-RateLimit-Limit") != "1" {
			t.Fatalf("request %d: %v", i, r.Header)
		}
	}
	limited(from("203.0.113.1", ann, "POST", "/central/api/projects", map[string]any{"name": "Spam"}), "1")
	limited(from("203.0.113.9", ann, "GET", "/central/api/me", nil), "1") // from anywhere
	if list := from("203.0.113.1", bob, "GET", "/central/api/projects", nil).Expect(t, 200).JSON(t); len(list["data"].([]any)) != 0 {
		t.Fatalf("bob's projects: %v", list)
	}
	// 203.0.113.1 has now sent 5: its bucket is empty, for Bob too.
	limited(from("203.0.113.1", bob, "GET", "/central/api/me", nil), "2")
	from("203.0.113.2", bob, "GET", "/central/api/me", nil).Expect(t, 200)

	// Requests without a valid token count per IP before the token is
	// checked: guessing is limited too.
	for range 5 {
		r := from("203.0.113.3", "not-a-token", "GET", "/central/api/me", nil)
		r.Problem(t, 401, "unauthorized")
		if r.Header.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("a 401 without the per-IP headers: %v", r.Header)
		}
	}
	limited(from("203.0.113.3", "not-a-token", "GET", "/central/api/me", nil), "2")
	limited(from("203.0.113.3", "", "POST", "/central/api/logout", nil), "2")
}
