package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
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
var toolNames = []string{"get_project", "update_project", "get_usage", "list_content", "get_content", "set_content", "set_content_bulk",
	"list_pages", "get_page", "upsert_page", "list_components", "upsert_component", "get_brand", "update_brand",
	"list_galleries", "upsert_gallery", "list_blog_posts", "get_blog_post", "create_blog_post", "generate_blog_post",
	"publish_blog_post", "generate_image", "generate_website", "get_job", "list_form_submissions", "list_products",
	"upsert_product", "list_orders", "get_availability", "list_bookings", "create_release", "publish_release", "create_preview",
	"save_draft", "publish", "list_versions", "restore_version"}

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
		require.Equal(t, "string", props["value"].(map[string]any)["type"], "the body's field, beside the parameter")
		require.Contains(t, props, "lang")
		require.NotContains(t, props, "body")
		require.ElementsMatch(t, []any{"key", "value"}, in["required"], "the path parameter's and the body's")
		require.Equal(t, false, in["additionalProperties"])
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
		genProps := gen.InputSchema.(map[string]any)["properties"].(map[string]any)
		require.Contains(t, genProps, "topic")
		require.NotContains(t, genProps, "type", "the tool chooses the AI member")
		require.Equal(t, []any{"topic"}, gen.InputSchema.(map[string]any)["required"])

		// An upsert's path parameter keeps its name; the body's field of
		// that name is body_slug. Required to create only, name is not
		// required by the schema.
		up := tools["upsert_component"].InputSchema.(map[string]any)
		upProps := up["properties"].(map[string]any)
		require.Contains(t, upProps["slug"].(map[string]any)["description"], "An existing one to update")
		require.Contains(t, upProps["body_slug"].(map[string]any)["description"], "The body's field slug")
		require.Contains(t, upProps["name"].(map[string]any)["description"], "Required when creating")
		require.Nil(t, up["required"])
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
		got := structured(t, callTool(t, cs, "set_content", map[string]any{"key": "hero.title", "value": "Fresh bread daily"}))
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
		structured(t, callTool(t, cs, "set_content", map[string]any{"key": "hero.title", "value": "Fresh bread daily"}))
		require.Equal(t, 2, query[int](t, p, `SELECT count(*) FROM webhook_events WHERE type = 'content.changed'`))

		// The route's pattern is the input schema's: a key outside it is
		// refused before the route runs, naming the argument.
		res := callTool(t, cs, "set_content", map[string]any{"key": "Hero Title", "value": "x"})
		require.True(t, res.IsError)
		require.Contains(t, text(res), "key: 'Hero Title' does not match pattern")
		// What only the route checks is its 422: a key and language twice.
		twice := map[string]any{"key": "hero.x", "value": "x"}
		res = callTool(t, cs, "set_content_bulk", map[string]any{"updates": []any{twice, twice}})
		require.True(t, res.IsError)
		require.Contains(t, text(res), "HTTP 422 validation_failed")

		// A replayed Idempotency-Key answers the stored response, charging once.
		before = p.Balance(t)
		args := map[string]any{"key": "hero.cta", "value": "Order", "idempotency_key": "cta-1"}
		structured(t, callTool(t, cs, "set_content", args))
		structured(t, callTool(t, cs, "set_content", args))
		require.Equal(t, viaREST, before-p.Balance(t))

		// Bulk and list.
		structured(t, callTool(t, cs, "set_content_bulk", map[string]any{"updates": []any{
			map[string]any{"key": "footer.a", "value": "A"}, map[string]any{"key": "footer.b", "value": "B"}}}))
		list := structured(t, callTool(t, cs, "list_content", map[string]any{"keys": "footer.a,footer.b,hero.title"}))
		require.Equal(t, map[string]any{"footer.a": "A", "footer.b": "B", "hero.title": "Fresh bread daily"}, list["data"])
	})
}

// TestFlatArguments: a tool takes its route's parameters and its body's
// fields side by side (set_content: key, value, lang), and arguments that
// do not match its input schema are a tool error naming the argument,
// before anything runs: nothing is written, no credit charged.
func TestFlatArguments(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	eachTransport(t, func(t *testing.T, transport string) {
		p := env.NewProject("build")
		cs := connect(t, env, transport, p.Key, nil)
		got := structured(t, callTool(t, cs, "set_content", map[string]any{"key": "home.title", "value": "Hi", "lang": "en"}))
		require.Equal(t, "home.title", got["key"])
		require.Equal(t, "Hi", got["value"])
		require.Equal(t, "Hi", structured(t, callTool(t, cs, "get_content", map[string]any{"key": "home.title", "lang": "en"}))["value"])
		require.Equal(t, "Hi", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])

		before := p.Balance(t)
		for _, c := range []struct {
			name string
			args map[string]any
			// names is what the error names; says the failure
			names, says string
		}{
			{"value missing", map[string]any{"key": "home.title", "lang": "en"}, "'value'", "missing"},
			{"value a number", map[string]any{"key": "home.title", "value": 5}, "value: ", "want string"},
			{"an unknown argument", map[string]any{"key": "home.title", "value": "Bye", "colour": "red"}, "'colour'", "not allowed"},
			{"the body nested", map[string]any{"key": "home.title", "body": map[string]any{"value": "Bye"}}, "'body'", "not allowed"},
			{"no arguments", nil, "'key'", "missing"},
			{"a nested field", nil, "updates/0/value: ", "want string"},
		} {
			tool := "set_content"
			if c.name == "a nested field" {
				tool, c.args = "set_content_bulk", map[string]any{"updates": []any{map[string]any{"key": "home.title", "value": 7}}}
			}
			res := callTool(t, cs, tool, c.args)
			require.True(t, res.IsError, c.name)
			require.Contains(t, text(res), "invalid arguments", c.name)
			require.Contains(t, text(res), c.names, c.name)
			require.Contains(t, text(res), c.says, c.name)
		}
		require.Equal(t, before, p.Balance(t), "no route ran")
		require.Equal(t, "Hi", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])

		// An upsert: its create needs the create body's required fields;
		// the body's field named as the parameter is body_slug.
		res := callTool(t, cs, "upsert_component", map[string]any{"props": map[string]any{"a": 1}})
		require.True(t, res.IsError)
		require.Contains(t, text(res), "missing property 'name'")
		require.Empty(t, structured(t, callTool(t, cs, "list_components", nil))["data"], "nothing created")
		created := structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "hero", "name": "Hero"}))
		renamed := structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "hero", "body_slug": "banner"}))
		require.Equal(t, created["id"], renamed["id"])
		require.Equal(t, "banner", renamed["slug"])
		require.Equal(t, "Hero", renamed["name"])
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

		res := callTool(t, cs, "set_content", map[string]any{"key": "hero.title", "value": "Changed"})
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
// tool with the scope its declaration names, before anything runs. The
// arguments are valid ones (the route's required parameters and fields,
// the upserts' resource), so the refusal is the route's.
func TestEveryToolNeedsItsScope(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cs := connect(t, env, "http", p.NewKey(false, "project:read"), nil)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	args := map[string]any{"key": "a", "value": "v", "updates": []any{map[string]any{"key": "a", "value": "v"}},
		"id_or_slug": "a", "slug": "a", "ref": "a", "title": "T", "topic": "T", "prompt": "P", "brief": "A bakery", "service_id": 1,
		"name": "R", "fields": map[string]any{"title": "T"}, "n": 1}
	for _, tool := range tools.Tools {
		scope := tool.Meta["plinth/scope"].(string)
		if scope == "project:read" {
			continue
		}
		schema := tool.InputSchema.(map[string]any)
		props := schema["properties"].(map[string]any)
		in := map[string]any{}
		for k := range props {
			if v, ok := args[k]; ok {
				in[k] = v
			}
		}
		if id, ok := props["id"].(map[string]any); ok {
			in["id"] = "job_000000000000000000000000"
			if id["type"] == "integer" {
				in["id"] = 1 // upsert_product's
			}
		}
		if t, ok := props["type"].(map[string]any); ok && slices.Contains(asAny(t["enum"]), any("page")) {
			in["type"] = "page" // the workflow tools' item type
		}
		if tool.Name == "create_release" {
			in["items"] = []any{map[string]any{"type": "page", "id": "a"}}
		}
		for _, r := range asStrings(schema["required"]) {
			require.Contains(t, in, r, "%s: the test gives every required argument", tool.Name)
		}
		res := callTool(t, cs, tool.Name, in)
		require.True(t, res.IsError, tool.Name)
		require.Contains(t, text(res), "lacks the scope "+scope, tool.Name)
	}
}

func asStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		out = append(out, e.(string))
	}
	return out
}

// TestGenerateBlogPostFollowed: generate_blog_post with a progress token
// reports the job's progress and answers with the completed job; the
// credits are those of the REST route. The token is a string or a number
// (the TypeScript SDK's are numbers, which JSON gives the proxy as
// float64).
func TestGenerateBlogPostFollowed(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	eachTransport(t, func(t *testing.T, transport string) {
		for _, token := range []any{"gen-1", 7} {
			followBlogPost(t, env, transport, token)
		}
	})
}

func followBlogPost(t *testing.T, env *apitest.Env, transport string, token any) {
	t.Helper()
	p := env.NewProject("build")
	var mu sync.Mutex
	var progress []float64
	cs := connect(t, env, transport, p.Key, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(req.Params.ProgressToken) == fmt.Sprint(token) {
			progress = append(progress, req.Params.Progress)
		}
	}})

	before := p.Balance(t)
	params := &sdk.CallToolParams{Name: "generate_blog_post", Arguments: map[string]any{"topic": "Sourdough at home", "language_code": "en"}}
	params.SetProgressToken(token)
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
	started := structured(t, callTool(t, cs, "generate_blog_post", map[string]any{"topic": "Rye"}))
	require.Contains(t, []any{"pending", "processing"}, started["status"])
	env.WaitJob(t, p.Key, started["id"].(string))
	got := structured(t, callTool(t, cs, "get_job", map[string]any{"id": started["id"]}))
	require.Equal(t, "completed", got["status"])

	before = p.Balance(t)
	j := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Spelt", "language_code": "en"}).Expect(t, 202).JSON(t)
	env.WaitJob(t, p.Key, j["id"].(string))
	require.Equal(t, before-p.Balance(t), viaTool, "the tool charges what the route does")
	require.Positive(t, viaTool)
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
	created := structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "hero", "name": "Hero", "props": map[string]any{"a": 1}}))
	require.Equal(t, "hero", created["slug"])
	updated := structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "hero", "name": "Hero banner"}))
	require.Equal(t, created["id"], updated["id"])
	require.Equal(t, "Hero banner", updated["name"])
	list := structured(t, callTool(t, cs, "list_components", nil))
	require.Len(t, list["data"], 1)

	page := structured(t, callTool(t, cs, "upsert_page", map[string]any{"title": "About", "slug": "about"}))
	require.Equal(t, "about", page["slug"])
	page = structured(t, callTool(t, cs, "upsert_page", map[string]any{"id_or_slug": "about", "title": "About us"}))
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
	structured(t, callTool(t, cs, "upsert_component", map[string]any{"slug": "nav", "name": "Nav"})) // PATCH 404, then POST
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

// TestReleaseTools: an agent drafts content values, gathers them in a
// release, makes a preview link of it and publishes it, through the
// tools; the live value changes only with the publish.
func TestReleaseTools(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	cs := connect(t, env, "http", p.Key, nil)
	d := structured(t, callTool(t, cs, "set_content", map[string]any{"key": "home.title", "value": "Welcome", "draft": true}))
	require.Equal(t, true, d["has_draft"])
	require.Equal(t, "Hello", structured(t, callTool(t, cs, "get_content", map[string]any{"key": "home.title"}))["value"])
	rel := structured(t, callTool(t, cs, "create_release", map[string]any{"name": "Launch",
		"items": []any{map[string]any{"type": "content_key", "id": "home.title"}}}))
	require.Equal(t, "pending", rel["status"])
	pv := structured(t, callTool(t, cs, "create_preview", map[string]any{"release_id": rel["id"]}))
	require.NotEmpty(t, pv["token"])
	pub := structured(t, callTool(t, cs, "publish_release", map[string]any{"id": rel["id"]}))
	require.Equal(t, "published", pub["status"])
	require.Equal(t, "Welcome", structured(t, callTool(t, cs, "get_content", map[string]any{"key": "home.title"}))["value"])
	res := callTool(t, cs, "publish_release", map[string]any{"id": rel["id"]})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "409")
}

// TestWorkflowTools: save_draft, publish (one language), list_versions
// and restore_version act on a page by its type and id, the public page
// changing only with the publish; a content key and the brand too.
func TestWorkflowTools(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home", "status": "published",
		"translations": []any{map[string]any{"lang": "fr", "title": "Accueil"}}}).Expect(t, 201)
	cs := connect(t, env, "http", p.Key, nil)
	d := structured(t, callTool(t, cs, "save_draft", map[string]any{"type": "page", "id": "home",
		"fields": map[string]any{"title": "Welcome", "translations": []any{map[string]any{"lang": "fr", "title": "Bienvenue"}}}}))
	require.Equal(t, true, d["has_draft"])
	require.Equal(t, "Home", env.Do("GET", "/v1/pages/home", p.Key, nil).Expect(t, 200).JSON(t)["title"])
	pub := structured(t, callTool(t, cs, "publish", map[string]any{"type": "page", "id": "home", "languages": []any{"fr"}}))
	require.Equal(t, "Home", pub["title"])
	require.Equal(t, true, pub["has_draft"])
	vs := structured(t, callTool(t, cs, "list_versions", map[string]any{"type": "page", "id": "home"}))
	require.Len(t, vs["data"], 2)
	structured(t, callTool(t, cs, "publish", map[string]any{"type": "page", "id": "home"}))
	require.Equal(t, "Welcome", env.Do("GET", "/v1/pages/home", p.Key, nil).Expect(t, 200).JSON(t)["title"])
	r := structured(t, callTool(t, cs, "restore_version", map[string]any{"type": "page", "id": "home", "n": 1}))
	require.Equal(t, "Welcome", r["title"]) // version 1: the save
	structured(t, callTool(t, cs, "save_draft", map[string]any{"type": "content_key", "id": "home.title", "fields": map[string]any{"value": "Hi"}, "autosave": true}))
	structured(t, callTool(t, cs, "publish", map[string]any{"type": "content_key", "id": "home.title"}))
	require.Equal(t, "Hi", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
	structured(t, callTool(t, cs, "save_draft", map[string]any{"type": "brand", "fields": map[string]any{"name": "Bakery"}}))
	require.Equal(t, "Bakery", structured(t, callTool(t, cs, "publish", map[string]any{"type": "brand"}))["name"])
	for _, bad := range []map[string]any{
		{"type": "widget", "id": "x", "fields": map[string]any{}},
		{"type": "page", "fields": map[string]any{"title": "x"}},
		{"type": "brand", "id": "x", "fields": map[string]any{}},
		{"type": "page", "id": "home"},
	} {
		res := callTool(t, cs, "save_draft", bad)
		require.True(t, res.IsError, "%v", bad)
	}
	res := callTool(t, cs, "restore_version", map[string]any{"type": "page", "id": "home", "n": 99})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "404")
}

// asAny is v as a list (nil when it is none).
func asAny(v any) []any {
	l, _ := v.([]any)
	return l
}
