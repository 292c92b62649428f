package central_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// publicRoutes lists every route of the public surface as method and a
// path to call (parameters filled in; the media URL names p).
func publicRoutes(t *testing.T, env *apitest.Env, p *apitest.Project) [][2]string {
	t.Helper()
	param := regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)
	var out [][2]string
	err := chi.Walk(env.Server.Router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, central.PublicPath+"/") {
			return nil
		}
		path := strings.Replace(route, "{project}", p.ID, 1)
		out = append(out, [2]string{method, param.ReplaceAllString(path, "x")})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(out), 15)
	return out
}

// allowsHeaders asserts that a preflight answer allows every header a
// page sends to the surface.
func allowsHeaders(t *testing.T, r *apitest.Resp, what string) {
	t.Helper()
	got := strings.ToLower(strings.Join(r.Header.Values("Access-Control-Allow-Headers"), ","))
	for _, h := range []string{"X-Service-Project-Key", "Content-Type", "If-None-Match", "Idempotency-Key"} {
		require.Contains(t, got, strings.ToLower(h), what)
	}
}

// preflight sends a browser's preflight of method on path from origin.
func preflight(env *apitest.Env, method, path, origin string) *apitest.Resp {
	return env.Send(apitest.Request{Method: "OPTIONS", Path: path, Header: map[string]string{
		"Origin": origin, "Access-Control-Request-Method": method,
		"Access-Control-Request-Headers": "content-type,idempotency-key,if-none-match,x-service-project-key",
	}})
}

// exposes asserts the headers a page may read of an answer.
func exposes(t *testing.T, r *apitest.Resp, what string) {
	t.Helper()
	got := r.Header.Get("Access-Control-Expose-Headers")
	for _, h := range []string{"ETag", "X-Request-Id", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After", "Idempotent-Replayed"} {
		require.Contains(t, strings.ToLower(got), strings.ToLower(h), what)
	}
}

// TestPublicPreflights: every route of the public surface answers a
// browser's preflight with 204, allowing the headers a page sends, with
// the limiter's headers like any answer.
func TestPublicPreflights(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	families := map[string]bool{}
	for _, rt := range publicRoutes(t, env, p) {
		method, path := rt[0], rt[1]
		what := method + " " + path
		r := preflight(env, method, path, "https://bakery.example").Expect(t, 204)
		require.Empty(t, r.Body, what)
		require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"), what)
		require.Equal(t, method, r.Header.Get("Access-Control-Allow-Methods"), what)
		allowsHeaders(t, r, what)
		require.NotEmpty(t, r.Header.Get("Access-Control-Max-Age"), what)
		require.NotEmpty(t, r.Header.Get("X-RateLimit-Remaining"), what)
		require.NotEmpty(t, r.Header.Get("X-Request-Id"), what)
		require.True(t, varies(r.Header, "Origin", "X-Service-Project-Key", "Access-Control-Request-Method", "Access-Control-Request-Headers"), what)
		families[strings.Split(path, "/")[3]] = true
	}
	for _, f := range []string{"content", "pages", "galleries", "components", "brand", "sitemap.xml", "media", "blog-posts", "products",
		"product-categories", "booking", "bookings", "forms"} {
		require.True(t, families[f], "no public route of %s", f)
	}
	// A method the surface does not take gets its 204 but nothing allowed.
	r := preflight(env, "DELETE", "/v1/public/bookings", "https://bakery.example").Expect(t, 204)
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, r.Header.Get("Access-Control-Allow-Methods"))
}

// TestPreflightHeaderNames: a preflight naming If-None-Match (a site
// revalidating with an ETag from script) is allowed however it writes
// the names: any case, any order, spaces, repeats, several header
// lines; for the open surface and a project listing the origin alike.
// A name the surface does not take is still refused.
func TestPreflightHeaderNames(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"allowed_origins": []string{"https://bakery.example"}}).Expect(t, 200)
	send := func(path string, names ...string) *apitest.Resp {
		req, err := http.NewRequest("OPTIONS", env.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "https://bakery.example")
		req.Header.Set("Access-Control-Request-Method", "GET")
		for _, n := range names {
			req.Header.Add("Access-Control-Request-Headers", n)
		}
		res, err := env.HTTP.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, 204, res.StatusCode)
		return &apitest.Resp{Status: res.StatusCode, Header: res.Header}
	}
	for _, path := range []string{"/v1/public/content/home.title", "/v1/public/content/home.title?project_id=" + p.ID} {
		for _, names := range [][]string{
			{"if-none-match"},
			{"If-None-Match"},
			{"X-Service-Project-Key, If-None-Match"},
			{"x-service-project-key,if-none-match"},
			{" If-None-Match ,X-SERVICE-PROJECT-KEY,if-none-match"},
			{"If-None-Match", "X-Service-Project-Key"},
		} {
			r := send(path, names...)
			what := fmt.Sprintf("%s %q", path, names)
			require.Equal(t, map[bool]string{true: "https://bakery.example", false: "*"}[strings.Contains(path, p.ID)],
				r.Header.Get("Access-Control-Allow-Origin"), what)
			require.Contains(t, strings.ToLower(r.Header.Get("Access-Control-Allow-Headers")), "if-none-match", what)
		}
		for _, names := range [][]string{{"If-None-Match, Authorization"}, {"if-none-match", "cookie"}} {
			r := send(path, names...)
			require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"), "%s %q", path, names)
		}
	}
}

// TestPublicCORSOnEveryAnswer: successes and errors of the surface, those
// answered before the project is known included (no project, unknown
// project, the per-IP limit), allow any origin and expose the headers a
// page reads, so a page can tell what happened.
func TestPublicCORSOnEveryAnswer(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_PUBLIC_RATE", "1/3"))
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Welcome"}).Expect(t, 200)

	visitor := 0
	send := func(method, path string, header map[string]string, body any) *apitest.Resp {
		visitor++
		h := map[string]string{"Origin": "https://bakery.example", "X-Forwarded-For": fmt.Sprintf("203.0.113.%d", visitor)}
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
		{"no project named", send("GET", "/v1/public/content/home.title", nil, nil), 400},
		{"unknown project", send("GET", "/v1/public/content/home.title", map[string]string{"X-Service-Project-Key": "prj_000000000000000000000000"}, nil), 404},
		{"no such key", send("GET", "/v1/public/content/nope", named, nil), 404},
		{"unknown route", send("GET", "/v1/public/nope", named, nil), 404},
		{"validation", send("POST", "/v1/public/forms/newsletter", named, map[string]any{"email": "nope"}), 422},
		{"submit", send("POST", "/v1/public/forms/newsletter", named, map[string]any{"email": "ann@example.com"}), 201},
	}
	h := map[string]string{"X-Service-Project-Key": p.ID, "X-Forwarded-For": "198.51.100.1", "Origin": "https://bakery.example"}
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
		require.Equal(t, c.status, c.resp.Status, "%s: %s", c.name, c.resp.Body)
		require.Equal(t, "*", c.resp.Header.Get("Access-Control-Allow-Origin"), c.name)
		exposes(t, c.resp, c.name)
		require.True(t, varies(c.resp.Header, "Origin", "X-Service-Project-Key"), c.name)
	}
	require.NotEmpty(t, limited.Header.Get("Retry-After"))
	// Without Origin (not a browser) there is nothing to allow.
	r := env.Send(apitest.Request{Method: "GET", Path: "/v1/public/content/home.title", Header: map[string]string{"X-Service-Project-Key": p.ID}}).Expect(t, 200)
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
}

// TestKeyedRoutesAnswerNoCORS: the routes that take a key never answer a
// browser's cross-origin request: keys are secrets that a page must not
// hold.
func TestKeyedRoutesAnswerNoCORS(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	origin := map[string]string{"Origin": "https://bakery.example"}
	for _, r := range []*apitest.Resp{
		env.Send(apitest.Request{Method: "GET", Path: "/v1/projects/me", Key: p.Key, Header: origin}).Expect(t, 200),
		env.Send(apitest.Request{Method: "GET", Path: "/v1/content/nope", Key: p.Key, Header: origin}).Expect(t, 404),
		env.Send(apitest.Request{Method: "GET", Path: "/v1/health", Header: origin}).Expect(t, 200),
		env.Send(apitest.Request{Method: "OPTIONS", Path: "/v1/content/home.title", Header: map[string]string{"Origin": "https://bakery.example",
			"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}}),
	} {
		require.NotEqual(t, 204, r.Status)
		for k := range r.Header {
			require.False(t, strings.HasPrefix(k, "Access-Control-"), "%s: %v", k, r.Header)
		}
	}
}

// TestAllowedOrigins: a project that lists its origins is readable from
// those only; errors before the project is known, and preflights that do
// not name it, stay open. Setting and clearing the list takes effect at
// once (the cached project is dropped).
func TestAllowedOrigins(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p, open := env.NewProject("build"), env.NewProject("build")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Welcome"}).Expect(t, 200)
	read := func(pid, origin string) *apitest.Resp {
		return env.Send(apitest.Request{Method: "GET", Path: "/v1/public/content/home.title",
			Header: map[string]string{"X-Service-Project-Key": pid, "Origin": origin}})
	}
	require.Equal(t, "*", read(p.ID, "https://evil.example").Header.Get("Access-Control-Allow-Origin"))

	me := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"allowed_origins": []string{"https://bakery.example", "http://localhost:5173"}}).Expect(t, 200).JSON(t)
	require.Equal(t, []any{"https://bakery.example", "http://localhost:5173"}, me["allowed_origins"])
	require.Equal(t, me["allowed_origins"], env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).JSON(t)["allowed_origins"])
	require.Equal(t, []any{}, env.Do("GET", "/v1/projects/me", open.Key, nil).Expect(t, 200).JSON(t)["allowed_origins"])

	for _, origin := range []string{"https://bakery.example", "http://localhost:5173"} {
		r := read(p.ID, origin).Expect(t, 200)
		require.Equal(t, origin, r.Header.Get("Access-Control-Allow-Origin"))
		require.True(t, varies(r.Header, "Origin"))
		exposes(t, r, origin)
	}
	for _, origin := range []string{"https://evil.example", "https://bakery.example:8443", "http://bakery.example", "https://BAKERY.example.evil"} {
		r := read(p.ID, origin).Expect(t, 200) // answered, but not readable by the page
		require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"), origin)
		require.Empty(t, r.Header.Get("Access-Control-Expose-Headers"), origin)
		require.True(t, varies(r.Header, "Origin"))
	}
	// Errors of the project's routes are narrowed too.
	r := env.Send(apitest.Request{Method: "GET", Path: "/v1/public/content/nope", Header: map[string]string{"X-Service-Project-Key": p.ID, "Origin": "https://evil.example"}})
	r.Problem(t, 404, "not_found")
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
	// Another project is not affected, nor an answer given before a
	// project is known.
	require.Equal(t, "*", read(open.ID, "https://evil.example").Header.Get("Access-Control-Allow-Origin"))
	unknown := read("prj_000000000000000000000000", "https://evil.example")
	unknown.Problem(t, 404, "not_found")
	require.Equal(t, "*", unknown.Header.Get("Access-Control-Allow-Origin"))

	// Preflights: open unless the URL names the project.
	require.Equal(t, "*", preflight(env, "GET", "/v1/public/content/home.title", "https://evil.example").Expect(t, 204).Header.Get("Access-Control-Allow-Origin"))
	named := "/v1/public/content/home.title?project_id=" + p.ID
	require.Empty(t, preflight(env, "GET", named, "https://evil.example").Expect(t, 204).Header.Get("Access-Control-Allow-Origin"))
	pf := preflight(env, "GET", named, "https://bakery.example").Expect(t, 204)
	require.Equal(t, "https://bakery.example", pf.Header.Get("Access-Control-Allow-Origin"))
	allowsHeaders(t, pf, "listed origin")
	// The query parameter names the project of the actual request too.
	r = env.Send(apitest.Request{Method: "GET", Path: named, Header: map[string]string{"Origin": "https://bakery.example"}}).Expect(t, 200)
	require.Equal(t, "https://bakery.example", r.Header.Get("Access-Control-Allow-Origin"))

	// A replayed submission answers the replaying origin, not the first.
	submit := func(origin string) *apitest.Resp {
		return env.Send(apitest.Request{Method: "POST", Path: "/v1/public/forms/newsletter", Body: map[string]any{"email": "ann@example.com"},
			Header: map[string]string{"X-Service-Project-Key": p.ID, "Origin": origin, "Idempotency-Key": "k1"}})
	}
	require.Equal(t, "http://localhost:5173", submit("http://localhost:5173").Expect(t, 201).Header.Get("Access-Control-Allow-Origin"))
	replay := submit("https://bakery.example").Expect(t, 201)
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	require.Equal(t, "https://bakery.example", replay.Header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, submit("https://evil.example").Expect(t, 201).Header.Get("Access-Control-Allow-Origin"))

	// Clearing the list opens the surface again.
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"allowed_origins": []string{}}).Expect(t, 200)
	require.Equal(t, "*", read(p.ID, "https://evil.example").Header.Get("Access-Control-Allow-Origin"))
}

// TestProjectSiteFields: allowed_origins and site_url are validated
// strictly (422 naming the field) and kept as sent; other fields of the
// body are then not applied either.
func TestProjectSiteFields(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	me := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, []any{}, me["allowed_origins"])
	require.Nil(t, me["site_url"])

	many := make([]string, central.MaxAllowedOrigins+1)
	for i := range many {
		many[i] = fmt.Sprintf("https://s%d.example", i)
	}
	for _, bad := range [][]string{
		{"*"}, {"https://*.example"}, {"bakery.example"}, {"https://bakery.example/"}, {"https://bakery.example/shop"},
		{"https://bakery.example?x=1"}, {"https://bakery.example#x"}, {"ftp://bakery.example"}, {"https://"}, {"https://Bakery.example"},
		{"https://user@bakery.example"}, {"https://bakery.example:443"}, {"http://bakery.example:80"}, {"https://bakery.example:x"},
		{""}, {"null"}, {"https://ok.example", "nope"}, many,
	} {
		r := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"allowed_origins": bad, "name": "Renamed"})
		m := r.Problem(t, 422, "validation_failed")
		require.Contains(t, m["errors"], "allowed_origins", "%q", bad)
	}
	for _, bad := range []string{"bakery.example", "/shop", "ftp://bakery.example", "https://", "https://bakery.example/?q=1",
		"https://bakery.example/#top", "https://u:p@bakery.example", "javascript:alert(1)", "https://" + strings.Repeat("a", 2048) + ".example"} {
		m := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"site_url": bad}).Problem(t, 422, "validation_failed")
		require.Contains(t, m["errors"], "site_url", bad)
	}
	require.Equal(t, "Project build", env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).JSON(t)["name"])

	ok := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"allowed_origins": many[:central.MaxAllowedOrigins],
		"site_url": "https://bakery.example/shop"}).Expect(t, 200).JSON(t)
	require.Len(t, ok["allowed_origins"], central.MaxAllowedOrigins)
	require.Equal(t, "https://bakery.example/shop", ok["site_url"])
	// Fields not sent are kept; null changes nothing.
	ok = env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"name": "Bakery", "site_url": nil, "allowed_origins": nil}).Expect(t, 200).JSON(t)
	require.Equal(t, "https://bakery.example/shop", ok["site_url"])
	require.Len(t, ok["allowed_origins"], central.MaxAllowedOrigins)
	// A key that may only read the project may not set them.
	ro := p.NewKey(false, "project:read")
	env.Do("PATCH", "/v1/projects/me", ro, map[string]any{"allowed_origins": []string{}}).Problem(t, 403, "forbidden")
	ok = env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"site_url": "", "allowed_origins": []string{"http://127.0.0.1:8080"}}).Expect(t, 200).JSON(t)
	require.Nil(t, ok["site_url"])
	require.Equal(t, []any{"http://127.0.0.1:8080"}, ok["allowed_origins"])
}
