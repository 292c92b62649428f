package content_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/content"
)

func TestBrandAPI(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ro := p.NewKey(false, "brand:read")
	other := p.NewKey(false, "content:*")
	logo := pngOf(200, 50)
	up := func(filename string, data []byte, fields ...string) *apitest.Request {
		r := form(filename, data, fields...)
		return &r
	}
	run(t, env, p, []apiCase{
		{name: "get the empty brand", method: "GET", path: "/v1/brand", key: ro, status: 200, golden: "brand_empty"},
		{name: "patch", method: "PATCH", path: "/v1/brand", body: map[string]any{
			"name": "Acme", "tagline": "Tools that last", "voice": "warm, plain", "audience": "makers",
			"colors": map[string]any{"primary": "#112233", "accent": "#ffcc00"}, "fonts": map[string]any{"heading": "Inter"},
		}, status: 200, golden: "brand"},
		{name: "patch keeps the rest", method: "PATCH", path: "/v1/brand", body: map[string]any{"description": "Since 1999"}, status: 200,
			check: body("name:Acme", "description:Since 1999", "primary:#112233")},
		{name: "patch colors replaces them", method: "PATCH", path: "/v1/brand", body: map[string]any{"colors": map[string]any{"primary": "#000"}}, status: 200,
			check: func(t *testing.T, r *apitest.Resp) {
				if c := r.JSON(t)["colors"].(map[string]any); len(c) != 1 {
					t.Fatalf("colors: %v", c)
				}
			}},
		{name: "patch bad json", method: "PATCH", path: "/v1/brand", body: "{", status: 400},
		{name: "patch unknown field", method: "PATCH", path: "/v1/brand", body: map[string]any{"logo": "x"}, status: 400},
		{name: "patch name too long", method: "PATCH", path: "/v1/brand", body: map[string]any{"name": strings.Repeat("a", 256)}, status: 422, check: field("name")},
		{name: "patch colors wrong type", method: "PATCH", path: "/v1/brand", body: map[string]any{"colors": map[string]any{"primary": 1}}, status: 422},
		{name: "patch without key", method: "PATCH", path: "/v1/brand", key: noKey, body: map[string]any{}, status: 401},
		{name: "patch read-only", method: "PATCH", path: "/v1/brand", key: ro, body: map[string]any{}, status: 403, check: body("brand:write")},
		{name: "get without key", method: "GET", path: "/v1/brand", key: noKey, status: 401},
		{name: "get other pillar", method: "GET", path: "/v1/brand", key: other, status: 403, check: body("brand:read")},

		{name: "logo", method: "POST", path: "/v1/brand/logo", req: up("logo.png", logo), status: 200, credits: 1, check: func(t *testing.T, r *apitest.Resp) {
			u, _ := r.JSON(t)["logo_url"].(string)
			if !strings.HasSuffix(u, "/v1/public/media/"+p.ID+"/_logo") {
				t.Fatalf("logo_url %q", u)
			}
			status, h, b := media(t, env, u, nil)
			if status != 200 || !bytes.Equal(b, logo) || h.Get("Content-Type") != "image/png" {
				t.Fatalf("logo media: %d %v", status, h)
			}
		}},
		{name: "logo replaced", method: "POST", path: "/v1/brand/logo", req: up("logo.gif", gifOf(2, 2)), status: 200, credits: 1, check: func(t *testing.T, r *apitest.Resp) {
			_, h, _ := media(t, env, r.JSON(t)["logo_url"].(string), nil)
			if h.Get("Content-Type") != "image/gif" {
				t.Fatalf("replaced logo: %v", h)
			}
		}},
		{name: "logo not an image", method: "POST", path: "/v1/brand/logo", req: up("x.txt", []byte("plain text")), status: 422, check: field("file")},
		{name: "logo without file", method: "POST", path: "/v1/brand/logo", req: up("", nil), status: 400},
		{name: "logo unknown field", method: "POST", path: "/v1/brand/logo", req: up("l.png", logo, "key", "x"), status: 400},
		{name: "logo as json", method: "POST", path: "/v1/brand/logo", body: map[string]any{"url": "x"}, status: 400},
		{name: "logo without key", method: "POST", path: "/v1/brand/logo", key: noKey, req: up("l.png", logo), status: 401},
		{name: "logo read-only", method: "POST", path: "/v1/brand/logo", key: ro, req: up("l.png", logo), status: 403},
	})
	poor := env.NewProject("free")
	drain(t, poor, 0)
	run(t, env, poor, []apiCase{
		{name: "logo with no credits", method: "POST", path: "/v1/brand/logo", req: up("l.png", logo), status: 402},
		{name: "no logo set", method: "GET", path: "/v1/brand", status: 200, check: body("logo_url:<nil>")},
	})
}

// public sends a keyless public request naming the project by header.
func public(env *apitest.Env, p *apitest.Project, path string, header ...string) *apitest.Resp {
	h := map[string]string{"X-Service-Project-Key": p.ID}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return env.Send(apitest.Request{Method: "GET", Path: path, Header: h})
}

// cached asserts the public caching headers and a 304 on revalidation.
func cached(t *testing.T, env *apitest.Env, p *apitest.Project, path string) *apitest.Resp {
	t.Helper()
	r := public(env, p, path).Expect(t, 200)
	etag := r.Header.Get("ETag")
	if r.Header.Get("Cache-Control") != "public, max-age=60" || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("%s: caching headers %v", path, r.Header)
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		nm := public(env, p, path, "If-None-Match", inm)
		if nm.Status != 304 || len(nm.Body) != 0 || nm.Header.Get("ETag") != etag {
			t.Fatalf("%s with If-None-Match %s: %d %s", path, inm, nm.Status, nm.Body)
		}
	}
	if public(env, p, path, "If-None-Match", `"stale"`).Status != 200 {
		t.Fatalf("%s: a stale tag gets the body", path)
	}
	return r
}

func TestPublicSurface(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content", p.Key, map[string]any{"updates": []map[string]any{
		{"key": "home.title", "value": "Welcome"}, {"key": "home.title", "value": "Bienvenue", "lang": "fr"}, {"key": "nav.home", "value": "Home"},
	}}).Expect(t, 200)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "About", "status": "published", "translations": []any{map[string]any{"lang": "fr", "title": "À propos"}}}).Expect(t, 201)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Draft"}).Expect(t, 201)
	env.Do("POST", "/v1/galleries", p.Key, map[string]any{"name": "Work", "items": items(3)}).Expect(t, 201)
	before := spent(t, p)

	b := cached(t, env, p, "/v1/public/content/bulk?keys=home.title,nav.home,nope&lang=fr")
	golden(t, "public_content_bulk", b.Body)
	k := cached(t, env, p, "/v1/public/content/home.title?lang=fr")
	if m := k.JSON(t); m["value"] != "Bienvenue" || m["lang"] != "fr" {
		t.Fatalf("public key: %v", m)
	}
	pg := cached(t, env, p, "/v1/public/pages/about?lang=fr")
	if m := pg.JSON(t); m["title"] != "À propos" || m["status"] != "published" {
		t.Fatalf("public page: %v", m)
	}
	g := cached(t, env, p, "/v1/public/galleries/work")
	golden(t, "public_gallery", g.Body)

	// The query parameter names the project as well as the header.
	if r := env.Do("GET", "/v1/public/galleries/work?project_id="+p.ID, "", nil); r.Status != 200 || r.Header.Get("ETag") != g.Header.Get("ETag") {
		t.Fatalf("project_id: %d", r.Status)
	}
	// A change changes the tag.
	env.Do("PATCH", "/v1/galleries/work", p.Key, map[string]any{"items": items(2)}).Expect(t, 200)
	if r := public(env, p, "/v1/public/galleries/work", "If-None-Match", g.Header.Get("ETag")); r.Status != 200 || !strings.Contains(string(r.Body), `"items_count":2`) {
		t.Fatalf("after a change: %d %s", r.Status, r.Body)
	}

	for _, c := range []struct {
		path   string
		status int
	}{
		{"/v1/public/pages/draft", 404}, // drafts are not public
		{"/v1/public/pages/nope", 404},
		{"/v1/public/galleries/nope", 404},
		{"/v1/public/content/nope", 404},
		{"/v1/public/content/bulk?keys=Bad%20Key", 422},
		{"/v1/public/content/home.title?lang=!", 422},
	} {
		r := public(env, p, c.path)
		r.Problem(t, c.status, defaultCode[c.status])
	}
	env.Do("GET", "/v1/public/content/bulk", "", nil).Problem(t, 400, "bad_request")
	env.Send(apitest.Request{Method: "GET", Path: "/v1/public/content/bulk", Header: map[string]string{"X-Service-Project-Key": "prj_000000000000000000000000"}}).Problem(t, 404, "not_found")
	if spent(t, p) != before {
		t.Fatal("public reads cost nothing")
	}
}

// TestPublicBulkNeedsKeys: the anonymous bulk read lists what it reads
// (400 without keys, whatever the project holds) and lists at most
// content.MaxPublicBulkKeys of them (422 beyond).
func TestPublicBulkNeedsKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Welcome"}).Expect(t, 200)

	for _, path := range []string{"/v1/public/content/bulk", "/v1/public/content/bulk?lang=en", "/v1/public/content/bulk?cursor=aG9tZQ"} {
		m := public(env, p, path).Problem(t, 400, "bad_request")
		if !strings.Contains(fmt.Sprint(m["detail"]), "keys") {
			t.Fatalf("%s: the detail names keys: %v", path, m["detail"])
		}
	}
	m := public(env, p, "/v1/public/content/bulk?keys="+manyKeys(content.MaxPublicBulkKeys+1)).Problem(t, 422, "validation_failed")
	if errs, _ := m["errors"].(map[string]any); errs["keys"] == nil {
		t.Fatalf("errors must name keys: %v", m)
	}
	public(env, p, "/v1/public/content/bulk?keys=home.title&cursor=aG9tZQ").Problem(t, 422, "validation_failed")
	r := public(env, p, "/v1/public/content/bulk?keys=home.title,"+manyKeys(content.MaxPublicBulkKeys-1)).Expect(t, 200)
	if b := r.JSON(t); b["data"].(map[string]any)["home.title"] != "Welcome" || len(b["missing"].([]any)) != content.MaxPublicBulkKeys-1 {
		t.Fatalf("at the limit: %s", r.Body)
	}
}

// TestIsolation: two projects hold galleries, pages, components, content
// and images under identical slugs and keys; each key sees only its own,
// and the other project's ids answer 404.
func TestIsolation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a, b := env.NewProject("build"), env.NewProject("build")
	ids := map[*apitest.Project]string{}
	for _, p := range []*apitest.Project{a, b} {
		tag := p.ID
		env.Do("POST", "/v1/galleries", p.Key, map[string]any{"name": "Shared", "items": []map[string]any{{"url": "https://x.example/" + tag}}}).Expect(t, 201)
		page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Shared " + tag, "slug": "shared", "status": "published"}).Expect(t, 201).JSON(t)
		ids[p] = fmt.Sprint(page["id"])
		env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Shared", "props": map[string]any{"owner": tag}}).Expect(t, 201)
		env.Do("PUT", "/v1/content/shared", p.Key, map[string]any{"value": tag}).Expect(t, 200)
		r := form("shared.png", pngOf(4, 4), "alt", tag)
		env.Send(apitest.Request{Method: "POST", Path: "/v1/images", Key: p.Key, Body: r.Body, Header: r.Header}).Expect(t, 201)
	}
	// b's page gets an id a does not have.
	extra := env.Do("POST", "/v1/pages", b.Key, map[string]any{"title": "Only b"}).Expect(t, 201).JSON(t)

	for _, p := range []*apitest.Project{a, b} {
		tag := p.ID
		for _, path := range []string{"/v1/galleries/shared", "/v1/pages/shared", "/v1/pages/" + ids[p], "/v1/components/shared", "/v1/content/shared", "/v1/images/shared"} {
			r := env.Do("GET", path, p.Key, nil).Expect(t, 200)
			if !strings.Contains(string(r.Body), tag) {
				t.Fatalf("%s of %s: %s", path, tag, r.Body)
			}
		}
		for _, path := range []string{"/v1/public/galleries/shared", "/v1/public/pages/shared", "/v1/public/content/shared", "/v1/public/content/bulk?keys=shared"} {
			if r := public(env, p, path).Expect(t, 200); !strings.Contains(string(r.Body), tag) {
				t.Fatalf("%s of %s: %s", path, tag, r.Body)
			}
		}
		for _, list := range []string{"/v1/galleries", "/v1/pages", "/v1/components", "/v1/images"} {
			r := env.Do("GET", list, p.Key, nil).Expect(t, 200)
			other := a.ID
			if p == a {
				other = b.ID
			}
			if strings.Contains(string(r.Body), other) {
				t.Fatalf("%s of %s shows the other project: %s", list, tag, r.Body)
			}
		}
	}
	// a cannot reach b's own page id, by key or on the public surface, nor
	// b's media through its own project path.
	env.Do("GET", "/v1/pages/"+fmt.Sprint(extra["id"]), a.Key, nil).Problem(t, 404, "not_found")
	env.Do("PATCH", "/v1/pages/"+fmt.Sprint(extra["id"]), a.Key, map[string]any{"title": "x"}).Problem(t, 404, "not_found")
	env.Do("DELETE", "/v1/pages/"+fmt.Sprint(extra["id"]), a.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/galleries", b.Key, map[string]any{"name": "Only b", "slug": "only-b"}).Expect(t, 201)
	env.Do("GET", "/v1/galleries/only-b", a.Key, nil).Problem(t, 404, "not_found")
	env.Do("PATCH", "/v1/galleries/only-b", a.Key, map[string]any{"name": "x"}).Problem(t, 404, "not_found")
	env.Do("DELETE", "/v1/galleries/only-b", a.Key, nil).Problem(t, 404, "not_found")
	public(env, a, "/v1/public/galleries/only-b").Problem(t, 404, "not_found")
	env.Do("GET", "/v1/galleries/only-b", b.Key, nil).Expect(t, 200)
	// A media URL names its project: a's image is not b's.
	if st, _, _ := media(t, env, "/v1/public/media/"+b.ID+"/shared", nil); st != 200 {
		t.Fatalf("b's own media: %d", st)
	}
	ra := form("a-only.png", pngOf(4, 4), "key", "a-only")
	env.Send(apitest.Request{Method: "POST", Path: "/v1/images", Key: a.Key, Body: ra.Body, Header: ra.Header}).Expect(t, 201)
	if st, _, _ := media(t, env, "/v1/public/media/"+b.ID+"/a-only", nil); st != 404 {
		t.Fatalf("a's image under b's project: %d", st)
	}
}
