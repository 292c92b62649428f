package central_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// TestLoginRateLimitPerIP: each client IP has a bucket per login endpoint
// (PLINTH_LOGIN_RATE), answered like the API's limits: 429 rate_limited
// with Retry-After and the X-RateLimit-* headers. Before, /central/api was
// outside every limit, and each login bought an argon2id verification.
func TestLoginRateLimitPerIP(t *testing.T) {
	t.Parallel()
	// 1 per minute, bursts of 3: nothing refills within the test.
	env := apitest.New(t, apitest.WithEnv("PLINTH_LOGIN_RATE", "1/3"))
	n := 0
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	// Distinct unknown emails, so the per-email failure limit plays no part.
	loginFrom := func(env *apitest.Env, header map[string]string) *apitest.Resp {
		n++
		return env.Send(apitest.Request{Method: "POST", Path: "/central/api/login", Header: header,
			Body: map[string]any{"email": fmt.Sprintf("nobody%d@example.com", n), "password": "a-wrong-password"}})
	}
	lookupFrom := func(header map[string]string) *apitest.Resp {
		return env.Send(apitest.Request{Method: "GET", Path: "/central/api/tenants-for-email?email=" + url.QueryEscape("x@example.com"), Header: header})
	}
	checkLimited := func(r *apitest.Resp) {
		t.Helper()
		r.Problem(t, 429, "rate_limited")
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		if r.Header.Get("X-RateLimit-Limit") != "1" || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("rate-limit headers of a 429: %v", r.Header)
		}
	}

	a := from("203.0.113.1")
	for i := 0; i < 3; i++ {
		r := loginFrom(env, a)
		r.Problem(t, 422, "validation_failed")
		if got, want := r.Header.Get("X-RateLimit-Remaining"), strconv.Itoa(2-i); got != want || r.Header.Get("X-RateLimit-Limit") != "1" {
			t.Fatalf("login %d: X-RateLimit-Remaining %q, want %s (%v)", i, got, want, r.Header)
		}
	}
	checkLimited(loginFrom(env, a))
	// The other endpoint has a bucket of its own.
	for i := 0; i < 3; i++ {
		lookupFrom(a).Expect(t, 200)
	}
	checkLimited(lookupFrom(a))
	// Another client is not affected.
	loginFrom(env, from("203.0.113.2")).Problem(t, 422, "validation_failed")
	lookupFrom(from("203.0.113.2")).Expect(t, 200)

	// X-Forwarded-For counts only from a trusted proxy: from any other
	// peer, changing it does not give a fresh bucket.
	untrusted := env.Instance(apitest.WithEnv("PLINTH_TRUSTED_PROXIES", "10.0.0.0/8"))
	for i := 0; i < 3; i++ {
		loginFrom(untrusted, from(fmt.Sprintf("198.51.100.%d", i))).Problem(t, 422, "validation_failed")
	}
	checkLimited(loginFrom(untrusted, from("198.51.100.99")))
}

// TestLoginVerificationSlots: with every argon2id slot taken, a login
// waits LoginSlotWait for one, then is 503 with Retry-After, and counts as
// no failed attempt; once a slot is free, logins verify again. Before,
// concurrent logins each ran argon2id (19 MiB) with no bound.
func TestLoginVerificationSlots(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ws := newWorkspace(t, env, "Slots", "slots@example.com", "right-password")
	c := env.Server.Central

	release := c.HoldLoginSlots()
	start := time.Now()
	r := login(env, map[string]any{"email": "slots@example.com", "password": "right-password"})
	waited := time.Since(start)
	r.Problem(t, 503, "service_unavailable")
	if r.Header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.Header.Get("Retry-After"))
	}
	if waited < central.LoginSlotWait {
		t.Fatalf("refused after %v, want a wait of %v for a slot first", waited, central.LoginSlotWait)
	}
	var failures int
	if err := env.Server.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.login_failures WHERE email = 'slots@example.com'`).Scan(&failures); err != nil || failures != 0 {
		t.Fatalf("a refused login recorded %d failures (%v)", failures, err)
	}

	// Slots freed while a login waits (most likely; or before it asks)
	// let it verify.
	done := make(chan *apitest.Resp, 1)
	go func() {
		r, err := env.TrySend(apitest.Request{Method: "POST", Path: "/central/api/login", Body: map[string]any{"email": "slots@example.com", "password": "right-password"}})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(central.LoginSlotWait / 4)
	release()
	r = <-done
	if r == nil {
		t.FailNow()
	}
	m := r.Expect(t, 200).JSON(t)
	if m["user"].(map[string]any)["id"] != float64(ws.User.ID) {
		t.Fatalf("login after the wait: %v", m)
	}
}
