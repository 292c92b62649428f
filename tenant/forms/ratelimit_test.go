package forms_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// postFrom posts a newsletter subscription as if relayed with the given
// X-Forwarded-For (empty: none).
func postFrom(env *apitest.Env, p *apitest.Project, xff string, i int) *apitest.Resp {
	env.T.Helper()
	h := map[string]string{"X-Service-Project-Key": p.ID, "Origin": "https://site.example"}
	if xff != "" {
		h["X-Forwarded-For"] = xff
	}
	return env.Send(apitest.Request{Method: "POST", Path: newsletterPath, Header: h,
		Body: map[string]any{"email": fmt.Sprintf("v%d@example.com", i)}})
}

// limited asserts a 429 of the per-IP limit that a browser page can read.
func limited(t *testing.T, r *apitest.Resp) {
	t.Helper()
	r.Problem(t, 429, "rate_limited")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, "0", r.Header.Get("X-RateLimit-Remaining"))
	require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
}

// TestPerIPLimitBehindTrustedProxy: the test client connects from
// 127.0.0.1, a trusted proxy by default, so X-Forwarded-For names the
// visitor and each visitor has a bucket of its own.
func TestPerIPLimitBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	// burst 3, one more per minute: the test never sees a refill
	env := apitest.New(t, apitest.WithEnv("PLINTH_PUBLIC_RATE", "1/3"))
	p := env.NewProject("")
	i := 0
	for ; i < 3; i++ {
		r := postFrom(env, p, "203.0.113.7", i).Expect(t, 201)
		require.Equal(t, fmt.Sprint(2-i), r.Header.Get("X-RateLimit-Remaining"))
	}
	limited(t, postFrom(env, p, "203.0.113.7", i))
	// a client-supplied left part does not escape: the rightmost untrusted
	// address is the visitor
	limited(t, postFrom(env, p, "198.51.100.99, 203.0.113.7", i))
	// another visitor behind the same proxy has its own bucket
	postFrom(env, p, "203.0.113.8", i).Expect(t, 201)
	// and so has the proxy itself, speaking for nobody
	postFrom(env, p, "", i+1).Expect(t, 201)
	require.Equal(t, 5, count(t, p, "true"), "a refused submission stores nothing")
}

// TestPerIPLimitFromUntrustedPeer: with 127.0.0.1 not in
// PLINTH_TRUSTED_PROXIES, X-Forwarded-For is ignored and every request is
// the peer's, whatever address it claims.
func TestPerIPLimitFromUntrustedPeer(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_PUBLIC_RATE", "1/3", "PLINTH_TRUSTED_PROXIES", "10.0.0.0/8"))
	p := env.NewProject("")
	for i := 0; i < 3; i++ {
		postFrom(env, p, fmt.Sprintf("203.0.113.%d", i+1), i).Expect(t, 201)
	}
	limited(t, postFrom(env, p, "203.0.113.50", 3))
	limited(t, postFrom(env, p, "", 4))
	require.Equal(t, 3, count(t, p, "true"))
}
