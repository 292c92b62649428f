package central_test

import (
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestKeyResolvedOnce: the identify step resolves a request's key once,
// for the rate limiter, the authentication and the handler alike; a
// public request's bearer header is not resolved at all.
func TestKeyResolvedOnce(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	c := env.Server.Central
	for _, tc := range []struct {
		name, method, path, key string
		status                  int
		resolves                int64
	}{
		{"a keyed read", "GET", "/v1/projects/me", p.Key, 200, 1},
		{"a keyed write", "PUT", "/v1/content/home.title", p.Key, 200, 1},
		{"an unknown route", "GET", "/v1/nothing-here", p.Key, 404, 1},
		{"a malformed key", "GET", "/v1/projects/me", "pln_live_nope", 401, 1},
		{"no key", "GET", "/v1/projects/me", "", 401, 0},
		{"the public surface", "GET", "/v1/public/content/home.title?project_id=" + p.ID, p.Key, 200, 0},
	} {
		before := c.Resolves()
		var body any
		if tc.method == "PUT" {
			body = map[string]any{"value": "Welcome"}
		}
		env.Do(tc.method, tc.path, tc.key, body).Expect(t, tc.status)
		if got := c.Resolves() - before; got != tc.resolves {
			t.Errorf("%s: the key was resolved %d times, want %d", tc.name, got, tc.resolves)
		}
	}
}
