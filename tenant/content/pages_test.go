package content_test

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestComponentsAPI(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ro := p.NewKey(false, "content:read")
	other := p.NewKey(false, "galleries:*")

	run(t, env, p, []apiCase{
		{name: "create", method: "POST", path: "/v1/components", body: map[string]any{
			"name": "Hero Banner", "props": map[string]any{"heading": "Hello", "cta": map[string]any{"label": "Go", "href": "/start"}},
			"translations": map[string]any{"fr": map[string]any{"heading": "Bonjour"}},
		}, status: 201, golden: "component"},
		{name: "create derives -2", method: "POST", path: "/v1/components", body: map[string]any{"name": "Hero banner"}, status: 201,
			check: body("slug:hero-banner-2", "props:map[]", "translations:map[]")},
		{name: "create explicit slug", method: "POST", path: "/v1/components", body: map[string]any{"name": "Footer", "slug": "footer"}, status: 201},
		{name: "create slug taken", method: "POST", path: "/v1/components", body: map[string]any{"name": "Footer", "slug": "footer"}, status: 409},
		{name: "create without name", method: "POST", path: "/v1/components", body: map[string]any{"props": map[string]any{}}, status: 400},
		{name: "create bad json", method: "POST", path: "/v1/components", body: "{]", status: 400},
		{name: "create unknown field", method: "POST", path: "/v1/components", body: map[string]any{"name": "x", "body": 1}, status: 400},
		{name: "create props not object", method: "POST", path: "/v1/components", body: map[string]any{"name": "x", "props": []int{1}}, status: 422, check: field("props")},
		{name: "create bad translation lang", method: "POST", path: "/v1/components", body: map[string]any{"name": "x", "translations": map[string]any{"french": map[string]any{}}}, status: 422, check: field("translations")},
		{name: "create translation not object", method: "POST", path: "/v1/components", body: map[string]any{"name": "x", "translations": map[string]any{"fr": "salut"}}, status: 422, check: field("translations.fr")},
		{name: "create name too long", method: "POST", path: "/v1/components", body: map[string]any{"name": strings.Repeat("a", 256)}, status: 422, check: field("name")},
		{name: "create bad slug", method: "POST", path: "/v1/components", body: map[string]any{"name": "x", "slug": "A_B"}, status: 422, check: field("slug")},
		{name: "create without key", method: "POST", path: "/v1/components", key: noKey, body: map[string]any{"name": "x"}, status: 401},
		{name: "create read-only", method: "POST", path: "/v1/components", key: ro, body: map[string]any{"name": "x"}, status: 403, check: body("content:write")},

		{name: "get", method: "GET", path: "/v1/components/hero-banner", key: ro, status: 200, golden: "component"},
		{name: "get missing", method: "GET", path: "/v1/components/nope", status: 404},
		{name: "get without key", method: "GET", path: "/v1/components/hero-banner", key: noKey, status: 401},
		{name: "get other pillar", method: "GET", path: "/v1/components/hero-banner", key: other, status: 403},
		{name: "list", method: "GET", path: "/v1/components?limit=2", key: ro, status: 200, check: func(t *testing.T, r *apitest.Resp) {
			m := firstPage(t, r, 2, "slug", "footer")
			rest := env.Do("GET", "/v1/components?cursor="+m["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
			if d := rest["data"].([]any); len(d) != 1 || d[0].(map[string]any)["slug"] != "hero-banner" || rest["has_more"] != false {
				t.Fatalf("page 2: %v", rest)
			}
		}},
		{name: "list bad cursor", method: "GET", path: "/v1/components?cursor=!!", status: 422},
		{name: "list without key", method: "GET", path: "/v1/components", key: noKey, status: 401},
		{name: "list other pillar", method: "GET", path: "/v1/components", key: other, status: 403},

		{name: "patch props replaces", method: "PATCH", path: "/v1/components/hero-banner", body: map[string]any{"props": map[string]any{"heading": "Hi"}}, status: 200,
			check: body("props:map[heading:Hi]", "translations:map[fr:map[heading:Bonjour]]")},
		{name: "patch slug taken", method: "PATCH", path: "/v1/components/hero-banner", body: map[string]any{"slug": "footer"}, status: 409},
		{name: "patch bad props", method: "PATCH", path: "/v1/components/hero-banner", body: map[string]any{"props": "x"}, status: 422, check: field("props")},
		{name: "patch unknown field", method: "PATCH", path: "/v1/components/hero-banner", body: map[string]any{"x": 1}, status: 400},
		{name: "patch missing", method: "PATCH", path: "/v1/components/nope", body: map[string]any{"name": "x"}, status: 404},
		{name: "patch without key", method: "PATCH", path: "/v1/components/hero-banner", key: noKey, body: map[string]any{}, status: 401},
		{name: "patch read-only", method: "PATCH", path: "/v1/components/hero-banner", key: ro, body: map[string]any{}, status: 403},
		{name: "delete", method: "DELETE", path: "/v1/components/footer", status: 204},
		{name: "delete again", method: "DELETE", path: "/v1/components/footer", status: 404},
		{name: "delete without key", method: "DELETE", path: "/v1/components/hero-banner", key: noKey, status: 401},
		{name: "delete read-only", method: "DELETE", path: "/v1/components/hero-banner", key: ro, status: 403},
	})
}

func TestPagesAPI(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ro := p.NewKey(false, "content:read")
	other := p.NewKey(false, "galleries:*")
	poor := env.NewProject("free")
	drain(t, poor, 0)

	run(t, env, p, []apiCase{
		{name: "create", method: "POST", path: "/v1/pages", body: map[string]any{
			"title": "About Us", "sections": []any{map[string]any{"type": "hero", "heading": "Who we are"}, map[string]any{"type": "text", "body": "…"}},
			"seo":          map[string]any{"meta_title": "About", "meta_description": "Our story", "og_image": "https://cdn.example.com/og.png"},
			"translations": []any{map[string]any{"lang": "fr", "title": "À propos", "seo": map[string]any{"meta_title": "À propos"}}},
		}, status: 201, credits: 1, golden: "page"},
		{name: "create derives -2", method: "POST", path: "/v1/pages", body: map[string]any{"title": "About us", "path": "/about-2"}, status: 201, credits: 1,
			check: body("slug:about-us-2", "status:draft", "published_at:<nil>")},
		{name: "create published", method: "POST", path: "/v1/pages", body: map[string]any{"title": "Home", "slug": "home", "path": "/", "status": "published"},
			status: 201, credits: 1, check: func(t *testing.T, r *apitest.Resp) {
				if m := r.JSON(t); m["published_at"] == nil || m["path"] != "/" {
					t.Fatalf("published page: %v", m)
				}
			}},
		{name: "create slug taken", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "slug": "home", "path": "/x"}, status: 409},
		{name: "create path taken", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "path": "/"}, status: 409},
		{name: "create without title", method: "POST", path: "/v1/pages", body: map[string]any{"slug": "x"}, status: 400},
		{name: "create bad json", method: "POST", path: "/v1/pages", body: "{\"title\":", status: 400},
		{name: "create unknown field", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "layout": "wide"}, status: 400},
		{name: "create translation without lang", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "translations": []any{map[string]any{"title": "y"}}}, status: 400},
		{name: "create bad status", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "status": "live"}, status: 422, check: field("status")},
		{name: "create bad path", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "path": "about us"}, status: 422, check: field("path")},
		{name: "create bad section", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "sections": []any{"text"}}, status: 422, check: field("sections[0]")},
		{name: "create bad seo url", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "seo": map[string]any{"canonical_url": "ftp://x"}}, status: 422, check: field("seo.canonical_url")},
		{name: "create bad translation", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "translations": []any{map[string]any{"lang": "??"}}}, status: 422, check: field("translations[0].lang")},
		{name: "create empty title", method: "POST", path: "/v1/pages", body: map[string]any{"title": ""}, status: 422, check: field("title")},
		{name: "create wrong type", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x", "seo": map[string]any{"noindex": "yes"}}, status: 422},
		{name: "create without key", method: "POST", path: "/v1/pages", key: noKey, body: map[string]any{"title": "x"}, status: 401},
		{name: "create read-only", method: "POST", path: "/v1/pages", key: ro, body: map[string]any{"title": "x"}, status: 403, check: body("content:write")},
		{name: "create other pillar", method: "POST", path: "/v1/pages", key: other, body: map[string]any{"title": "x"}, status: 403},

		{name: "get by slug", method: "GET", path: "/v1/pages/about-us", key: ro, status: 200, golden: "page"},
		{name: "get by id", method: "GET", path: "/v1/pages/1", status: 200, check: body("slug:about-us")},
		{name: "get in french", method: "GET", path: "/v1/pages/about-us?lang=fr", status: 200, check: body("title:À propos", "meta_title:À propos", "meta_description:Our story")},
		{name: "get bad lang", method: "GET", path: "/v1/pages/about-us?lang=!", status: 422},
		{name: "get missing", method: "GET", path: "/v1/pages/999", status: 404},
		{name: "get missing slug", method: "GET", path: "/v1/pages/nope", status: 404},
		{name: "get without key", method: "GET", path: "/v1/pages/1", key: noKey, status: 401},
		{name: "get other pillar", method: "GET", path: "/v1/pages/1", key: other, status: 403},
		{name: "list", method: "GET", path: "/v1/pages?limit=2", key: ro, status: 200, check: func(t *testing.T, r *apitest.Resp) {
			firstPage(t, r, 2, "slug", "home")
		}},
		{name: "list published", method: "GET", path: "/v1/pages?status=published", status: 200, check: func(t *testing.T, r *apitest.Resp) {
			if d := r.JSON(t)["data"].([]any); len(d) != 1 {
				t.Fatalf("published: %v", d)
			}
		}},
		{name: "list bad status", method: "GET", path: "/v1/pages?status=live", status: 422},
		{name: "list without key", method: "GET", path: "/v1/pages", key: noKey, status: 401},
		{name: "list other pillar", method: "GET", path: "/v1/pages", key: other, status: 403},
		{name: "list bad limit", method: "GET", path: "/v1/pages?limit=101", status: 422, check: field("limit")},

		{name: "patch publish", method: "PATCH", path: "/v1/pages/about-us", body: map[string]any{"status": "published", "seo": map[string]any{"noindex": true}},
			status: 200, credits: 1, golden: "page_published"},
		{name: "patch by id keeps seo fields", method: "PATCH", path: "/v1/pages/1", body: map[string]any{"title": "About"}, status: 200, credits: 1,
			check: body("title:About", "meta_title:About", "noindex:true", "status:published")},
		{name: "patch unpublish", method: "PATCH", path: "/v1/pages/about-us-2", body: map[string]any{"status": "draft"}, status: 200, credits: 1, check: body("published_at:<nil>")},
		{name: "patch slug taken", method: "PATCH", path: "/v1/pages/about-us-2", body: map[string]any{"slug": "home"}, status: 409},
		{name: "patch bad status", method: "PATCH", path: "/v1/pages/1", body: map[string]any{"status": "x"}, status: 422},
		{name: "patch bad json", method: "PATCH", path: "/v1/pages/1", body: "x", status: 400},
		{name: "patch unknown field", method: "PATCH", path: "/v1/pages/1", body: map[string]any{"foo": 1}, status: 400},
		{name: "patch missing", method: "PATCH", path: "/v1/pages/999", body: map[string]any{"title": "x"}, status: 404},
		{name: "patch without key", method: "PATCH", path: "/v1/pages/1", key: noKey, body: map[string]any{}, status: 401},
		{name: "patch read-only", method: "PATCH", path: "/v1/pages/1", key: ro, body: map[string]any{}, status: 403},

		{name: "delete", method: "DELETE", path: "/v1/pages/about-us-2", status: 204},
		{name: "delete again", method: "DELETE", path: "/v1/pages/about-us-2", status: 404},
		{name: "delete without key", method: "DELETE", path: "/v1/pages/1", key: noKey, status: 401},
		{name: "delete read-only", method: "DELETE", path: "/v1/pages/1", key: ro, status: 403},
	})
	if n := ledgerOps(t, p, "page_update"); n != 6 {
		t.Fatalf("%d page_update charges, want 6 (3 creates, 3 updates)", n)
	}

	seedID := query[int64](t, poor, `INSERT INTO pages (slug, path, title) VALUES ('seed', '/seed', 'Seed') RETURNING id`)
	run(t, env, poor, []apiCase{
		{name: "create with no credits", method: "POST", path: "/v1/pages", body: map[string]any{"title": "x"}, status: 402, check: body("cost:1", "balance:0")},
		{name: "update with no credits", method: "PATCH", path: "/v1/pages/seed", body: map[string]any{"title": "Changed"}, status: 402},
		{name: "nothing written", method: "GET", path: "/v1/pages", status: 200, check: body("title:Seed")},
	})
	if n := query[int](t, poor, `SELECT count(*) FROM pages`); n != 1 || seedID == 0 {
		t.Fatalf("%d pages after refused writes", n)
	}
}
