package mcp_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ratelimit"
)

// setContentCall is the JSON-RPC request of a set_content tool call.
func setContentCall(id int, key, value string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "set_content", "arguments": map[string]any{"key": key, "value": value}}}
}

// postMCP sends body to /v1/mcp as a Streamable HTTP client does, with
// the extra headers.
func postMCP(env *apitest.Env, key, body string, header map[string]string) *apitest.Resp {
	h := map[string]string{"Accept": "application/json, text/event-stream"}
	for k, v := range header {
		h[k] = v
	}
	return env.Send(apitest.Request{Method: "POST", Path: "/v1/mcp", Key: key, Body: body, Header: h})
}

// TestBatchRefused: a JSON-RPC batch on /v1/mcp is 400 bad_request,
// whatever protocol version the request names or leaves out, and none
// of its calls runs: without this, thousands of tool calls would ride on
// one request of the rate limit. One message per request still works.
func TestBatchRefused(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now } // frozen: nothing refills
	env := apitest.New(t, apitest.WithRateLimits(ratelimit.NewMemory(clock), clock))
	p := env.NewProject("free") // 30 a minute, a burst of 60
	remaining := func(r *apitest.Resp) int {
		n, err := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining"))
		require.NoError(t, err)
		return n
	}

	const calls = 500 // far beyond the key's burst
	batch := make([]any, calls)
	for i := range batch {
		batch[i] = setContentCall(i+1, fmt.Sprintf("batch.k%d", i), "written by a batch")
	}
	many, err := json.Marshal(batch)
	require.NoError(t, err)
	one, err := json.Marshal(batch[:1])
	require.NoError(t, err)
	before := p.Balance(t)
	start := remaining(env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200))
	cases := []struct {
		name, body string
		header     map[string]string
	}{
		{"no protocol version", string(many), nil},
		{"an old protocol version", string(many), map[string]string{"MCP-Protocol-Version": "2025-03-26"}},
		{"the current protocol version", string(many), map[string]string{"MCP-Protocol-Version": "2025-06-18"}},
		{"a batch of one", string(one), nil},
		{"after whitespace", " \r\n\t" + string(many), nil},
	}
	for _, c := range cases {
		r := postMCP(env, p.Key, c.body, c.header)
		m := r.Problem(t, 400, "bad_request")
		require.Contains(t, m["detail"], "batch", c.name)
	}
	probes := []int{0, calls - 1}
	for _, i := range probes {
		env.Do("GET", fmt.Sprintf("/v1/content/batch.k%d", i), p.Key, nil).Problem(t, 404, "not_found")
	}
	require.Equal(t, before, p.Balance(t), "no call of a batch charged credits")
	// Each refused batch was one request, and none of its calls another:
	// the batches, the probes and this read.
	require.Equal(t, start-len(cases)-len(probes)-1, remaining(env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)))

	// One message per request is served, leading whitespace and all.
	single, err := json.Marshal(setContentCall(1, "single.k", "one call"))
	require.NoError(t, err)
	r := postMCP(env, p.Key, "\n  "+string(single), nil).Expect(t, 200)
	require.Contains(t, string(r.Body), `"one call"`)
	require.Equal(t, "one call", env.Do("GET", "/v1/content/single.k", p.Key, nil).Expect(t, 200).JSON(t)["value"])
}

// TestCrossOriginRefused: a browser page of another origin cannot drive
// /v1/mcp, whatever it sends (403 forbidden, nothing runs); a client
// that sends no Origin, as agents do, and the API's own origin are
// served.
func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	for _, h := range []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": "null"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site", "Origin": "https://sub.127.0.0.1.example"},
		{"Sec-Fetch-Site": "cross-site", "Origin": env.URL},
	} {
		body, err := json.Marshal(setContentCall(1, "cross.k", "from a page"))
		require.NoError(t, err)
		r := postMCP(env, p.Key, string(body), h)
		m := r.Problem(t, 403, "forbidden")
		require.Contains(t, m["detail"], "cross-origin", "%v", h)
	}
	env.Do("GET", "/v1/content/cross.k", p.Key, nil).Problem(t, 404, "not_found")

	for i, h := range []map[string]string{nil, {"Origin": env.URL}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}} {
		key := fmt.Sprintf("allowed.k%d", i)
		body, err := json.Marshal(setContentCall(1, key, "served"))
		require.NoError(t, err)
		r := postMCP(env, p.Key, string(body), h).Expect(t, 200)
		require.True(t, strings.Contains(string(r.Body), `"served"`), "%v: %s", h, r.Body)
		env.Do("GET", "/v1/content/"+key, p.Key, nil).Expect(t, 200)
	}
}

// TestGetStreamRefused: GET /v1/mcp, which a Streamable HTTP client sends
// to open a stream of server messages, is 405 with Allow: POST (as the
// transport asks of a server without one), a problem with the contract's
// code for a wrong method; without a key it is 401 like any /v1 route.
func TestGetStreamRefused(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	r := env.Send(apitest.Request{Method: "GET", Path: "/v1/mcp", Key: p.Key, Header: map[string]string{"Accept": "text/event-stream"}})
	r.Expect(t, 405)
	require.Equal(t, "POST", r.Header.Get("Allow"))
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
	require.Equal(t, "bad_request", r.JSON(t)["code"])
	require.NotEmpty(t, r.Header.Get("X-Request-Id"))
	env.Send(apitest.Request{Method: "GET", Path: "/v1/mcp", Header: map[string]string{"Accept": "text/event-stream"}}).Expect(t, 401)
}
