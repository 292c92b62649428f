package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/mcp"
	"github.com/plinth-dev/plinth/internal/ratelimit"
)

// toolNames are the tools the issue names: the public interface.
var toolNames = []string{"get_project", "get_usage", "list_content", "get_content", "set_content", "set_content_bulk",
	"list_pages", "get_page", "upsert_page", "list_components", "upsert_component", "get_brand", "update_brand",
	"list_galleries", "upsert_gallery", "list_blog_posts", "get_blog_post", "create_blog_post", "generate_blog_post",
	"publish_blog_post", "generate_image", "generate_website", "get_job", "list_form_submissions", "list_products",
	"upsert_product", "list_orders", "get_availability", "list_bookings"}

// bearer adds the project key to every request of the MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// transports are the two ways to reach the server: Streamable HTTP at
// /v1/mcp, and stdio through the proxy of plinth mcp (over in-memory
// pipes here; cmd/plinth runs the command itself).
var transports = []string{"http", "stdio"}

// connect opens an MCP session with the Go SDK's client to env's server
// with key, over transport.
func connect(t *testing.T, env *apitest.Env, transport, key string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "plinth-test", Version: "1"}, opts)
	var tr sdk.Transport
	switch transport {
	case "http":
		hc := &http.Client{Transport: bearer{key: key, next: env.HTTP.Client().Transport}}
		tr = &sdk.StreamableClientTransport{Endpoint: env.URL + "/v1/mcp", HTTPClient: hc}
	case "stdio":
		local, remote := sdk.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- mcp.Proxy(ctx, mcp.ProxyConfig{URL: env.URL, Key: key, HTTP: env.HTTP.Client()}, remote)
		}()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		tr = local
	}
	cs, err := client.Connect(context.Background(), tr, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// eachTransport runs fn once over each transport.
func eachTransport(t *testing.T, fn func(t *testing.T, transport string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			fn(t, tr)
		})
	}
}

// callTool calls name and fails the test on a protocol error.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

// structured returns the structured content of a successful result.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, "tool error: %s", text(res))
	m, ok := res.StructuredContent.(map[string]any)
	require.True(t, ok, "structured content %T", res.StructuredContent)
	return m
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func query[T any](t testing.TB, p *apitest.Project, sql string, args ...any) T {
	t.Helper()
	var v T
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), sql, args...).Scan(&v)
	}))
	return v
}

// TestToolsList: the tools are the named ones, each with an object input
// and output schema taken from its route's operation, its scope, and
// truthful annotations.
func TestToolsList(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := env.NewProject("build")
		cs := connect(t, env, transport, p.Key, nil)
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		var names []string
		tools := map[string]*sdk.Tool{}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			tools[tool.Name] = tool
			in, _ := tool.InputSchema.(map[string]any)
			out, _ := tool.OutputSchema.(map[string]any)
			require.Equal(t, "object", in["type"], tool.Name)
			require.Equal(t, "object", out["type"], tool.Name)
			require.NotEmpty(t, out["properties"], tool.Name)
			require.NotNil(t, tool.Annotations, tool.Name)
			require.Regexp(t, `^[a-z_]+:(read|write)$`, tool.Meta["plinth/scope"], tool.Name)
		}
		require.ElementsMatch(t, toolNames, names)

		set := tools["set_content"]
		in := set.InputSchema.(map[string]any)
		props := in["properties"].(map[string]any)
		require.Equal(t, "^[a-z0-9][a-z0-9._-]{0,199}$", props["key"].(map[string]any)["pattern"], "the path parameter's schema")
		body := props["body"].(map[string]any)
		require.Contains(t, body["properties"], "value", "the request body's schema")
		require.ElementsMatch(t, []any{"key", "body"}, in["required"])
		require.Contains(t, props, "idempotency_key")
		require.Contains(t, set.OutputSchema.(map[string]any)["properties"], "all_locales", "the 200's ContentKey")
		require.Equal(t, "content:write", set.Meta["plinth/scope"])
		require.Contains(t, set.Description, "1 credit")
		require.False(t, set.Annotations.ReadOnlyHint)
		require.True(t, set.Annotations.IdempotentHint)
		require.True(t, *set.Annotations.DestructiveHint)

		get := tools["get_content"]
		require.True(t, get.Annotations.ReadOnlyHint)
		require.Equal(t, "content:read", get.Meta["plinth/scope"])

		gen := tools["generate_blog_post"]
		require.Contains(t, gen.Description, "60 credits")
		require.False(t, gen.Annotations.IdempotentHint)
		require.False(t, *gen.Annotations.DestructiveHint)
		genBody := gen.InputSchema.(map[string]any)["properties"].(map[string]any)["body"].(map[string]any)
		require.Contains(t, genBody["properties"], "topic")
		require.NotContains(t, genBody["properties"], "type", "the tool chooses the AI member")
		require.Contains(t, gen.OutputSchema.(map[string]any)["properties"], "progress", "the 202's Job")
		// A nested reference resolves inside the schema.
		require.Contains(t, gen.OutputSchema.(map[string]any)["$defs"], "JobStatus")
		require.Equal(t, "blog:write", gen.Meta["plinth/scope"])
	})
}

// TestContentRoundTrip: set_content then get_content; the write charges
// the credit and emits the event that the REST route does.
func TestContentRoundTrip(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := env.NewProject("build")
		env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": "https://127.0.0.1:9/hook", "events": []string{"content.changed"}}).Expect(t, 201)
		cs := connect(t, env, transport, p.Key, nil)

		before := p.Balance(t)
		got := structured(t, callTool(t, cs, "set_content", map[string]any{"key": "hero.title", "body": map[string]any{"value": "Fresh bread daily"}}))
		require.Equal(t, "hero.title", got["key"])
		require.Equal(t, "Fresh bread daily", got["value"])
		viaTool := before - p.Balance(t)

		got = structured(t, callTool(t, cs, "get_content", map[string]any{"key": "hero.title"}))
		require.Equal(t, "Fresh bread daily", got["value"])
		require.Equal(t, "en", got["lang"])

		before = p.Balance(t)
		env.Do("PUT", "/v1/content/hero.subtitle", p.Key, map[string]any{"value": "Since 1962"}).Expect(t, 200)
		viaREST := before - p.Balance(t)
		require.Equal(t, viaREST, viaTool, "the tool charges what the route does")
		require.Positive(t, viaTool)
		require.Equal(t, 2, query[int](t, p, `SELECT count(*) FROM webhook_events WHERE type = 'content.changed'`), "one event per write, as REST")

		// The same value again is no change: no event, as through REST.
		structured(t, callTool(t, cs, "set_content", map[string]any{"key": "hero.title", "body": map[string]any{"value": "Fresh bread daily"}}))
		require.Equal(t, 2, query[int](t, p, `SELECT count(*) FROM webhook_events WHERE type = 'content.changed'`))

		// The route's validation: a key outside the pattern is its 422.
		res := callTool(t, cs, "set_content", map[string]any{"key": "Hero Title", "body": map[string]any{"value": "x"}})
		require.True(t, res.IsError)
		require.Contains(t, text(res), "422")

		// A replayed Idempotency-Key answers the stored response, charging once.
		before = p.Balance(t)
		args := map[string]any{"key": "hero.cta", "body": map[string]any{"value": "Order"}, "idempotency_key": "cta-1"}
		structured(t, callTool(t, cs, "set_content", args))
		structured(t, callTool(t, cs, "set_content", args))
		require.Equal(t, viaREST, before-p.Balance(t))

		// Bulk and list.
		structured(t, callTool(t, cs, "set_content_bulk", map[string]any{"body": map[string]any{"updates": []any{
			map[string]any{"key": "footer.a", "value": "A"}, map[string]any{"key": "footer.b", "value": "B"}}}}))
		list := structured(t, callTool(t, cs, "list_content", map[string]any{"keys": "footer.a,footer.b,hero.title"}))
		require.Equal(t, map[string]any{"footer.a": "A", "footer.b": "B", "hero.title": "Fresh bread daily"}, list["data"])
	})
}

// TestScopeRefused: a read-only key may read but set_content is a tool
// error naming content:write, and nothing is written.
func TestScopeRefused(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := env.NewProject("build")
		env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
		cs := connect(t, env, transport, p.NewKey(false, "content:read"), nil)

		res := callTool(t, cs, "set_content", map[string]any{"key": "hero.title", "body": map[string]any{"value": "Changed"}})
		require.True(t, res.IsError)
		require.Contains(t, text(res), "content:write")
		require.Contains(t, text(res), "403")

		got := structured(t, callTool(t, cs, "get_content", map[string]any{"key": "hero.title"}))
		require.Equal(t, "Hello", got["value"])

		res = callTool(t, cs, "list_products", nil)
		require.True(t, res.IsError)
		require.Contains(t, text(res), "commerce:read")
	})
}

// TestEveryToolNeedsItsScope: a key with no scope is refused by every
// tool with the scope its declaration names, before anything runs.
func TestEveryToolNeedsItsScope(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cs := connect(t, env, "http", p.NewKey(false, "project:read"), nil)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	args := map[string]any{"key": "a", "id_or_slug": "a", "slug": "a", "ref": "a", "id": "job_000000000000000000000000",
		"body": map[string]any{}}
	for _, tool := range tools.Tools {
		scope := tool.Meta["plinth/scope"].(string)
		if scope == "project:read" {
			continue
		}
		in := map[string]any{}
		for k := range tool.InputSchema.(map[string]any)["properties"].(map[string]any) {
			if v, ok := args[k]; ok {
				in[k] = v
			}
		}
		if tool.Name == "get_availability" {
			in["service_id"], in["date"] = "svc_1", "2030-01-01"
		}
		res := callTool(t, cs, tool.Name, in)
		require.True(t, res.IsError, tool.Name)
		require.Contains(t, text(res), "lacks the scope "+scope, tool.Name)
	}
}

// TestGenerateBlogPostFollowed: generate_blog_post with a progress token
// reports the job's progress and answers with the completed job; the
// credits are those of the REST route.
func TestGenerateBlogPostFollowed(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	eachTransport(t, func(t *testing.T, transport string) {
		p := env.NewProject("build")
		var mu sync.Mutex
		var progress []float64
		cs := connect(t, env, transport, p.Key, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			if req.Params.ProgressToken == "gen-1" {
				progress = append(progress, req.Params.Progress)
			}
		}})

		before := p.Balance(t)
		params := &sdk.CallToolParams{Name: "generate_blog_post", Arguments: map[string]any{"body": map[string]any{"topic": "Sourdough at home", "language_code": "en"}}}
		params.SetProgressToken("gen-1")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, params)
		require.NoError(t, err)
		job := structured(t, res)
		require.Equal(t, "completed", job["status"], "%v", job)
		require.EqualValues(t, 100, job["progress"])
		viaTool := before - p.Balance(t)
		// Notifications are asynchronous: through the stdio proxy the
		// last may arrive after the answer.
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(progress) > 0 && progress[len(progress)-1] == 100
		}, 10*time.Second, 20*time.Millisecond)
		mu.Lock()
		require.True(t, slices.IsSorted(progress), "%v", progress)
		require.Greater(t, len(progress), 1, "progress before the end: %v", progress)
		mu.Unlock()

		postID := job["result"].(map[string]any)["post_id"]
		if postID == nil {
			postID = job["result"].(map[string]any)["id"]
		}
		require.NotNil(t, postID, "%v", job["result"])
		post := structured(t, callTool(t, cs, "get_blog_post", map[string]any{"ref": postID}))
		require.Equal(t, postID, post["id"])

		// Without a token the tool answers the pending job; get_job follows it.
		started := structured(t, callTool(t, cs, "generate_blog_post", map[string]any{"body": map[string]any{"topic": "Rye"}}))
		require.Contains(t, []any{"pending", "processing"}, started["status"])
		env.WaitJob(t, p.Key, started["id"].(string))
		got := structured(t, callTool(t, cs, "get_job", map[string]any{"id": started["id"]}))
		require.Equal(t, "completed", got["status"])

		before = p.Balance(t)
		j := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Spelt", "language_code": "en"}).Expect(t, 202).JSON(t)
		env.WaitJob(t, p.Key, j["id"].(string))
		require.Equal(t, before-p.Balance(t), viaTool, "the tool charges what the route does")
		require.Positive(t, viaTool)
	})
}

// TestOtherProjectInvisible: another project's key sees none of this
// project's content, posts or jobs through the tools.
func TestOtherProjectInvisible(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	eachTransport(t, func(t *testing.T, transport string) {
		a, b := env.NewProject("build"), env.NewProject("build")
		env.Do("PUT", "/v1/content/secret.note", a.Key, map[string]any{"value": "only A"}).Expect(t, 200)
		post := env.Do("POST", "/v1/blog-posts", a.Key, map[string]any{"title": "A's post", "content": "Hi", "language_code": "en"}).Expect(t, 201).JSON(t)
		job := env.Do("POST", "/v1/blog-posts", a.Key, map[string]any{"type": "ai", "topic": "A's topic"}).Expect(t, 202).JSON(t)

		cs := connect(t, env, transport, b.Key, nil)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"get_content", map[string]any{"key": "secret.note"}},
			{"get_blog_post", map[string]any{"ref": post["id"]}},
			{"get_job", map[string]any{"id": job["id"]}},
			{"publish_blog_post", map[string]any{"ref": post["id"]}},
		} {
			res := callTool(t, cs, c.tool, c.args)
			require.True(t, res.IsError, c.tool)
			require.Contains(t, text(res), "404", c.tool)
		}
		list := structured(t, callTool(t, cs, "list_blog_posts", nil))
		require.Empty(t, list["data"])
		bulk := structured(t, callTool(t, cs, "list_content", nil))
		require.Empty(t, bulk["data"])
		require.Equal(t, b.ID, structured(t, callTool(t, cs, "get_project", nil))["id"])
	})
}

// TestUpsert: upsert_component with a slug that names nothing creates it
// under that slug; again, it updates it.
func TestUpsert(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cs := connect(t, env, "http", p.Key, nil)
	created := structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "hero", "body": map[string]any{"name": "Hero", "props": map[string]any{"a": 1}}}))
	require.Equal(t, "hero", created["slug"])
	updated := structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "hero", "body": map[string]any{"name": "Hero banner"}}))
	require.Equal(t, created["id"], updated["id"])
	require.Equal(t, "Hero banner", updated["name"])
	list := structured(t, callTool(t, cs, "list_components", nil))
	require.Len(t, list["data"], 1)

	page := structured(t, callTool(t, cs, "upsert_page", map[string]any{"body": map[string]any{"title": "About", "slug": "about"}}))
	require.Equal(t, "about", page["slug"])
	page = structured(t, callTool(t, cs, "upsert_page", map[string]any{"id_or_slug": "about", "body": map[string]any{"title": "About us"}}))
	require.Equal(t, "About us", page["title"])
	require.Equal(t, "About us", structured(t, callTool(t, cs, "get_page", map[string]any{"id_or_slug": "about"}))["title"])
}

// TestToolCallIsOneRequest: a tool call is charged once to the project's
// rate limit however many routes it runs (an upsert runs two).
func TestToolCallIsOneRequest(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now } // frozen: nothing refills
	env := apitest.New(t, apitest.WithRateLimits(ratelimit.NewMemory(clock), clock))
	p := env.NewProject("build")
	cs := connect(t, env, "http", p.Key, nil)
	remaining := func() int {
		r := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
		n, err := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining"))
		require.NoError(t, err)
		return n
	}
	r0 := remaining()
	structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "nav", "body": map[string]any{"name": "Nav"}})) // PATCH 404, then POST
	r1 := remaining()
	require.Equal(t, 2, r0-r1, "the tool call's one POST and the probe")
}

// TestToolsEncodeJSON: the structured content of a tool is the route's
// JSON answer as is.
func TestToolsEncodeJSON(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cs := connect(t, env, "http", p.Key, nil)
	res := callTool(t, cs, "get_usage", nil)
	rest := env.Do("GET", "/v1/projects/me/usage", p.Key, nil).Expect(t, 200)
	var want map[string]any
	require.NoError(t, json.Unmarshal(rest.Body, &want))
	require.Equal(t, want, structured(t, res))
}
