package central_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// varies reports whether h's Vary lists every one of names, and no name
// twice (a cache gains nothing from a repeat, and a second Origin tells
// of two layers each adding its own).
func varies(h http.Header, names ...string) bool {
	got := map[string]int{}
	for _, v := range h.Values("Vary") {
		for _, n := range strings.Split(v, ",") {
			k := http.CanonicalHeaderKey(strings.TrimSpace(n))
			if got[k]++; got[k] > 1 {
				return false
			}
		}
	}
	for _, n := range names {
		if got[http.CanonicalHeaderKey(n)] == 0 {
			return false
		}
	}
	return true
}

// TestPublicAnswersVary: every answer of the public surface, successes,
// revalidations and errors alike, names X-Service-Project-Key and Origin
// in Vary, each once, so that a shared cache keyed on the URL never serves one
// project's answer to a request naming another. Keyed routes do not vary.
func TestPublicAnswersVary(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_PUBLIC_RATE", "1/3"))
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Welcome"}).Expect(t, 200)

	// Each request comes from its own visitor (the test client is a
	// trusted proxy), so only the last case meets the per-IP limit.
	visitor := 0
	send := func(method, path string, header map[string]string, body any) *apitest.Resp {
		visitor++
		h := map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", visitor)}
		for k, v := range header {
			h[k] = v
		}
		return env.Send(apitest.Request{Method: method, Path: path, Header: h, Body: body})
	}
	named := map[string]string{"X-Service-Project-Key": p.ID}
	ok := send("GET", "/v1/public/content/home.title", named, nil).Expect(t, 200)
	cases := []struct {
		name   string
		resp   *apitest.Resp
		status int
	}{
		{"read", ok, 200},
		{"revalidation", send("GET", "/v1/public/content/home.title", map[string]string{"X-Service-Project-Key": p.ID, "If-None-Match": ok.Header.Get("ETag")}, nil), 304},
		{"no such key", send("GET", "/v1/public/content/nope", named, nil), 404},
		{"unknown project", send("GET", "/v1/public/content/home.title", map[string]string{"X-Service-Project-Key": "prj_000000000000000000000000"}, nil), 404},
		{"malformed project", send("GET", "/v1/public/content/home.title", map[string]string{"X-Service-Project-Key": "nope"}, nil), 404},
		{"no project named", send("GET", "/v1/public/content/home.title", nil, nil), 400},
		{"by query parameter", send("GET", "/v1/public/content/home.title?project_id="+p.ID, nil, nil), 200},
		{"validation error", send("GET", "/v1/public/content/home.title?lang=!", named, nil), 422},
		{"form", send("POST", "/v1/public/forms/newsletter", map[string]string{"X-Service-Project-Key": p.ID, "Origin": "https://site.example"},
			map[string]any{"email": "ann@example.com"}), 201},
		{"preflight", send("OPTIONS", "/v1/public/forms/newsletter", map[string]string{"Origin": "https://site.example",
			"Access-Control-Request-Method": "POST"}, nil), 204},
		{"media", send("GET", "/v1/public/media/"+p.ID+"/nope", nil, nil), 404},
	}
	// The limiter answers before the project is resolved.
	h := map[string]string{"X-Service-Project-Key": p.ID, "X-Forwarded-For": "198.51.100.1"}
	var limited *apitest.Resp
	for range 4 {
		limited = env.Send(apitest.Request{Method: "GET", Path: "/v1/public/content/home.title", Header: h})
	}
	cases = append(cases, struct {
		name   string
		resp   *apitest.Resp
		status int
	}{"rate limited", limited, 429})

	for _, c := range cases {
		if c.resp.Status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, c.resp.Status, c.status, c.resp.Body)
		}
		if !varies(c.resp.Header, "X-Service-Project-Key", "Origin") {
			t.Errorf("%s (%d): Vary %q, want X-Service-Project-Key and Origin, each once", c.name, c.resp.Status, c.resp.Header.Values("Vary"))
		}
	}
	if r := env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200); len(r.Header.Values("Vary")) != 0 {
		t.Errorf("a keyed read varies: %q", r.Header.Values("Vary"))
	}
}
