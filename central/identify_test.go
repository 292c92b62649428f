package central_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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

// countingBearer sends the key with every request of an MCP client and
// counts the requests.
type countingBearer struct {
	key  string
	sent *atomic.Int64
	next http.RoundTripper
}

func (b countingBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	b.sent.Add(1)
	return b.next.RoundTrip(r)
}

// TestKeyResolvedOnceMCP: an MCP session's key is resolved once per
// request it sends to /v1/mcp, however many REST routes its tool calls
// run there (an upsert that creates runs two): the routes act with the
// scope the /v1/mcp request was identified with.
func TestKeyResolvedOnceMCP(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	c := env.Server.Central
	var sent atomic.Int64
	hc := &http.Client{Transport: countingBearer{key: p.Key, sent: &sent, next: env.HTTP.Client().Transport}}
	client := sdk.NewClient(&sdk.Implementation{Name: "resolve-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: env.URL + "/v1/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	calls := []struct {
		tool   string
		args   map[string]any
		routes int
	}{
		{"set_content", map[string]any{"key": "home.title", "value": "Hi"}, 1},
		{"get_content", map[string]any{"key": "home.title"}, 1},
		{"upsert_component", map[string]any{"slug": "hero", "name": "Hero"}, 2}, // PATCH 404, then POST
		{"upsert_component", map[string]any{"slug": "hero", "name": "Hero banner"}, 1},
		{"list_components", nil, 1},
	}
	resolved, requests, routes := c.Resolves(), sent.Load(), 0
	for _, call := range calls {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: call.tool, Arguments: call.args})
		if err != nil {
			t.Fatalf("%s: %v", call.tool, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %v", call.tool, res.Content)
		}
		routes += call.routes
	}
	requests = sent.Load() - requests
	if requests < int64(len(calls)) {
		t.Fatalf("%d requests for %d tool calls", requests, len(calls))
	}
	if got := c.Resolves() - resolved; got != requests {
		t.Errorf("%d tool calls running %d routes in %d requests resolved the key %d times, want once a request", len(calls), routes, requests, got)
	}
}
