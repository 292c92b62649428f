package central_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/dashboard"
	"github.com/plinth-dev/plinth/internal/openapi"
)

var update = flag.Bool("update", false, "rewrite openapi.json from the parts' OpenAPI")

// TestOpenAPIDocumentIsCurrent keeps the embedded openapi.json equal to
// the assembled document; `go generate ./central` rewrites it.
func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	b, err := json.MarshalIndent(central.OpenAPIDocument(), "", "  ")
	require.NoError(t, err)
	want := append(b, '\n')
	if *update {
		require.NoError(t, os.WriteFile("openapi.json", want, 0o644))
		return
	}
	if !bytes.Equal(central.OpenAPIJSON, want) {
		t.Fatal("openapi.json is stale: run `go generate ./central`")
	}
}

// TestOpenAPIDocumentLint: request bodies are named schemas, no object is
// bare, unions have named members, every $ref resolves and every named
// schema is used.
func TestOpenAPIDocumentLint(t *testing.T) {
	t.Parallel()
	var doc openapi.M
	require.NoError(t, json.Unmarshal(central.OpenAPIJSON, &doc))
	require.Empty(t, openapi.Lint(doc))
}

// TestOpenAPICreateBodies: each create body of POST /v1/blog-posts and
// POST /v1/social-posts matches exactly one member of its oneOf (what a
// generated client's union relies on): a manual body with or without its
// type, an AI one; a mix of both, or an unknown type, matches none.
func TestOpenAPICreateBodies(t *testing.T) {
	t.Parallel()
	c, err := apitest.DefaultContract()
	require.NoError(t, err)
	for _, tc := range []struct {
		path, body string
		ok         bool
	}{
		{"/v1/blog-posts", `{"title":"Hello"}`, true},
		{"/v1/blog-posts", `{"type":"manual","title":"Hello","status":"published"}`, true},
		{"/v1/blog-posts", `{"type":"ai","topic":"Tea","target_languages":["fr"]}`, true},
		{"/v1/blog-posts", `{"type":"ai","title":"Hello"}`, false},
		{"/v1/blog-posts", `{"topic":"Tea"}`, false},
		{"/v1/blog-posts", `{"type":"ai","topic":"Tea","title":"Hello"}`, false},
		{"/v1/blog-posts", `{"type":"manual"}`, false},
		{"/v1/blog-posts", `{"type":"other","title":"Hello"}`, false},
		{"/v1/social-posts", `{"title":"Launch","platforms":["twitter"]}`, true},
		{"/v1/social-posts", `{"type":"ai","topic":"Launch","platforms":["linkedin"],"images":1}`, true},
		{"/v1/social-posts", `{"type":"manual","topic":"Launch","platforms":["twitter"]}`, false},
		{"/v1/social-posts", `{"type":"ai","title":"Launch","platforms":["twitter"]}`, false},
	} {
		ex := apitest.Exchange{Method: "POST", Path: tc.path, ReqBody: []byte(tc.body), Routed: true,
			ReqHeader: http.Header{"Authorization": {"Bearer pln_live_00000000000000000000000000000000"}, "Content-Type": {"application/json"}},
			Status:    202, RespHeader: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"},
				"X-Ratelimit-Limit": {"600"}, "X-Ratelimit-Remaining": {"599"}, "X-Ratelimit-Reset": {"1763800000"}},
			RespBody: []byte(`{"id":"job_000000000000000000000000","type":"x","status":"pending","progress":0,"message":"Queued","steps":[],` +
				`"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`)}
		msgs := c.Check(ex)
		if tc.ok {
			require.Empty(t, msgs, tc.body)
		} else {
			require.Contains(t, strings.Join(msgs, "\n"), "request", tc.body)
		}
	}
}

// TestServedDocument: GET /v1/openapi.json needs no key, carries the
// headers of every response, and parses as a valid OpenAPI 3.1 document of
// version 1.0.1.
func TestServedDocument(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	r := env.Do("GET", "/v1/openapi.json", "", nil).Expect(t, 200)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, "public, max-age=300", r.Header.Get("Cache-Control"))
	for _, h := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		require.NotEmpty(t, r.Header.Get(h), h)
	}
	require.Equal(t, central.OpenAPIJSON, r.Body)

	doc, err := libopenapi.NewDocument(r.Body)
	require.NoError(t, err)
	info := doc.GetSpecInfo()
	require.Equal(t, "3.1.0", info.Version)
	require.Equal(t, "3.1.0", doc.GetVersion())
	m, err := doc.BuildV3Model()
	require.NoError(t, err)
	require.Equal(t, "1.0.1", m.Model.Info.Version)
	require.NotNil(t, m.Model.Components.SecuritySchemes.GetOrZero("apiKey"))
	require.NotNil(t, m.Model.Components.SecuritySchemes.GetOrZero("dashboardJWT"))

	v, errs := validator.NewValidator(doc)
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	for _, e := range verrs {
		t.Errorf("document: %s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			t.Errorf("\t%s: %s", s.KeywordLocation, s.Reason)
		}
	}
	require.True(t, ok)
}

// Every public route has a CORS preflight (OPTIONS), answered by
// middleware before routing: in the document, not in the router.

var chiParam = regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)

// TestRoutesMatchDocument: every route of the router is in the document
// and every operation of the document is a route.
func TestRoutesMatchDocument(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	var routes []string
	err := chi.Walk(env.Server.Router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, dashboard.Prefix+"/") {
			return nil // the dashboard's HTML pages are not the API (their browser tests cover them)
		}
		route = chiParam.ReplaceAllString(route, "{$1}") // {id:[0-9]+} is {id} in OpenAPI
		if len(route) > 1 {
			route = strings.TrimSuffix(route, "/") // r.Route("/jobs") + Get("/") serves /v1/jobs
		}
		routes = append(routes, method+" "+route)
		return nil
	})
	require.NoError(t, err)
	for _, r := range slices.Clone(routes) {
		if _, path, _ := strings.Cut(r, " "); strings.HasPrefix(path, central.PublicPath+"/") {
			routes = append(routes, "OPTIONS "+path)
		}
	}
	slices.Sort(routes)
	routes = slices.Compact(routes)

	var doc openapi.M
	require.NoError(t, json.Unmarshal(central.OpenAPIJSON, &doc))
	documented := openapi.Operations(doc)

	var missing, extra []string
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			missing = append(missing, r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			extra = append(extra, d)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Fatalf("router and OpenAPI document differ\nrouted but not documented:\n\t%s\ndocumented but not routed:\n\t%s",
			strings.Join(missing, "\n\t"), strings.Join(extra, "\n\t"))
	}
	require.Greater(t, len(routes), 20)
}

// projectWrongShape is a project as the document does not allow it: slug
// missing, target_languages a string, plan unknown, created_at a number,
// and a field the schema lacks.
const projectWrongShape = `{
  "id": "prj_0000000000000000000000aa",
  "name": "Shop",
  "industry": "",
  "default_language": "en",
  "target_languages": "fr",
  "timezone": "UTC",
  "plan": "gold",
  "allowed_origins": [],
  "site_url": null,
  "fallback_languages": {},
  "created_at": 1763800000,
  "owner": "someone"
}`

// TestContractCatchesWrongShape proves the check itself: a response shape
// that the document does not allow fails, the real one passes; so does an
// undocumented route; and a request is checked when the server accepted it.
func TestContractCatchesWrongShape(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	real := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	c, err := apitest.DefaultContract()
	require.NoError(t, err)
	ex := apitest.Exchange{Method: "GET", Path: "/v1/projects/me", ReqHeader: http.Header{"Authorization": {"Bearer " + p.Key}},
		Status: 200, RespHeader: real.Header, RespBody: real.Body, Routed: true}
	require.Empty(t, c.Check(ex), "the real response is what the document says")

	ex.RespBody = []byte(projectWrongShape)
	msgs := strings.Join(c.Check(ex), "\n")
	for _, want := range []string{"missing property 'slug'", "created_at", "target_languages", "plan", "owner"} {
		require.Contains(t, msgs, want)
	}

	// A response without the headers every response carries.
	ex.RespBody = real.Body
	ex.RespHeader = real.Header.Clone()
	ex.RespHeader.Del("X-RateLimit-Remaining")
	require.Contains(t, strings.Join(c.Check(ex), "\n"), "X-RateLimit-Remaining")

	// A status the document does not list for the route.
	ex.RespHeader, ex.Status = real.Header, 418
	require.NotEmpty(t, c.Check(ex))

	// A routed path the document lacks.
	und := apitest.Exchange{Method: "GET", Path: "/v1/not-documented", Status: 200, RespHeader: real.Header, RespBody: []byte(`{}`), Routed: true}
	require.Contains(t, strings.Join(c.Check(und), "\n"), "does not describe it")

	// A request with an unknown field is checked when the server took it
	// (2xx), not when it refused it on purpose (4xx: a negative test).
	body := []byte(`{"name":"x","scopes":["content:read"],"colour":"red"}`)
	post := apitest.Exchange{Method: "POST", Path: "/v1/projects/me/api-keys",
		ReqHeader: http.Header{"Authorization": {"Bearer " + p.Key}, "Content-Type": {"application/json"}}, ReqBody: body,
		Status: 400, RespHeader: real.Header.Clone(), Routed: true}
	post.RespHeader.Set("Content-Type", "application/problem+json")
	post.RespBody = []byte(`{"type":"https://plinth.dev/errors/bad_request","title":"Bad request","status":400,"code":"bad_request","instance":"` + real.Header.Get("X-Request-Id") + `"}`)
	require.Empty(t, c.Check(post))
	post.Status, post.RespHeader = 201, real.Header
	post.RespBody = []byte(`{"id":"key_000000000000000000000000","name":"x","prefix":"pln_live_","masked":"pln_live_…abcd","secret":"pln_live_00000000000000000000000000000000","scopes":["content:read"],"last_used_at":null,"created_at":"2026-01-01T00:00:00Z"}`)
	require.Contains(t, strings.Join(c.Check(post), "\n"), "request")
}

// recorder is a testing.TB that records Errorf instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

// TestSendFailsOnMismatch proves the hook: Env.Send fails the test that
// made a request whose response the document does not allow. The
// document here says a project's slug is an integer; the server sends a
// string.
func TestSendFailsOnMismatch(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")

	var doc openapi.M
	require.NoError(t, json.Unmarshal(central.OpenAPIJSON, &doc))
	project := doc["components"].(openapi.M)["schemas"].(openapi.M)["Project"].(openapi.M)
	project["properties"].(openapi.M)["slug"] = openapi.M{"type": "integer"}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	strict, err := apitest.NewContract(b)
	require.NoError(t, err)

	rec := &recorder{TB: t}
	e := *env
	e.T, e.Contract = rec, strict
	e.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	require.Len(t, rec.errs, 1, "Send must report the mismatch")

	rec.errs = nil
	e.Contract, _ = apitest.DefaultContract()
	e.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	require.Empty(t, rec.errs)
}
