package releases_test

import (
	"fmt"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestPreviewLinks: a preview token shows the drafts it covers to the
// requests that carry it, privately and never cached, while every other
// request sees what is live; it stops at revocation and at expiry, and a
// forged token is a 401.
func TestPreviewLinks(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	other := env.NewProject("build")
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home", "status": "published"}).Expect(t, 201).JSON(t)
	env.Do("PATCH", fmt.Sprintf("/v1/pages/%v?draft=true", page["id"]), p.Key, map[string]any{"title": "New home"}).Expect(t, 200)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Soon", "slug": "soon"}).Expect(t, 201) // never published
	_, items := keysWithDrafts(t, env, p, 2)
	rel := env.Do("POST", "/v1/releases", p.Key, map[string]any{"name": "R", "items": append(items,
		map[string]any{"type": "page", "id": "home"}, map[string]any{"type": "page", "id": "soon"})}).Expect(t, 201).JSON(t)

	pv := env.Do("POST", "/v1/previews", p.Key, map[string]any{"release_id": rel["id"], "expires_in": 3600}).Expect(t, 201).JSON(t)
	token := pv["token"].(string)
	get := func(path string, h map[string]string) *apitest.Resp {
		if h == nil {
			h = map[string]string{}
		}
		h["X-Service-Project-Key"] = p.ID
		return env.Send(apitest.Request{Method: "GET", Path: path, Header: h})
	}
	withToken := map[string]string{"X-Preview-Token": token}

	res := get("/v1/public/pages/home", withToken).Expect(t, 200)
	if res.JSON(t)["title"] != "New home" || res.Header.Get("Cache-Control") != "private, no-store" || res.Header.Get("ETag") != "" {
		t.Fatalf("the preview: %s %v", res.Body, res.Header)
	}
	if _, ok := res.JSON(t)["has_draft"]; ok {
		t.Fatal("a preview says has_draft")
	}
	get("/v1/public/pages/soon?preview="+token, nil).Expect(t, 200)
	bulk := get("/v1/public/content/bulk?keys=rel.k00,rel.k01", withToken).Expect(t, 200).JSON(t)
	if fmt.Sprint(bulk["data"]) != "map[rel.k00:new rel.k01:new]" {
		t.Fatalf("bulk with the token: %v", bulk)
	}
	if k := get("/v1/public/content/rel.k01", withToken).Expect(t, 200).JSON(t); k["value"] != "new" {
		t.Fatalf("key with the token: %v", k)
	}
	// Without the token (before and after a preview read): what is live.
	for i := 0; i < 3; i++ {
		res := get("/v1/public/pages/home", nil).Expect(t, 200)
		if res.JSON(t)["title"] != "Home" || res.Header.Get("Cache-Control") != "public, max-age=60" {
			t.Fatalf("without the token: %s %v", res.Body, res.Header)
		}
		get("/v1/public/pages/soon", nil).Expect(t, 404)
		if b := get("/v1/public/content/bulk?keys=rel.k00", nil).Expect(t, 200).JSON(t); fmt.Sprint(b["data"]) != "map[rel.k00:old]" {
			t.Fatalf("bulk without the token: %v", b)
		}
	}
	// Another project's public surface does not take it.
	env.Send(apitest.Request{Method: "GET", Path: "/v1/public/pages/home", Header: map[string]string{"X-Service-Project-Key": other.ID, "X-Preview-Token": token}}).
		Problem(t, 401, "unauthorized")
	get("/v1/public/pages/home", map[string]string{"X-Preview-Token": "pvt_forged"}).Problem(t, 401, "unauthorized")
	get("/v1/public/pages/home?preview=", nil).Problem(t, 401, "unauthorized")

	// A link of its own items covers those only.
	own := env.Do("POST", "/v1/previews", p.Key, map[string]any{"items": []any{map[string]any{"type": "content_key", "id": "rel.k00"}}}).Expect(t, 201).JSON(t)
	b := get("/v1/public/content/bulk?keys=rel.k00,rel.k01", map[string]string{"X-Preview-Token": own["token"].(string)}).Expect(t, 200).JSON(t)
	if fmt.Sprint(b["data"]) != "map[rel.k00:new rel.k01:old]" {
		t.Fatalf("an items link: %v", b)
	}
	if page := get("/v1/public/pages/home", map[string]string{"X-Preview-Token": own["token"].(string)}).Expect(t, 200).JSON(t); page["title"] != "Home" {
		t.Fatalf("an items link showed a page it does not cover: %v", page["title"])
	}

	list := env.Do("GET", "/v1/previews", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["token"] != nil {
		t.Fatalf("the list: %v", list)
	}
	env.Do("DELETE", "/v1/previews/"+pv["id"].(string), p.Key, nil).Expect(t, 204)
	get("/v1/public/pages/home", withToken).Problem(t, 401, "unauthorized")
	env.Do("DELETE", "/v1/previews/pvw_nope", p.Key, nil).Problem(t, 404, "not_found")

	// Expiry: a link whose time has passed stops.
	query[int](t, p, `WITH e AS (UPDATE previews SET expires_at = now() - interval '1 second' WHERE id = $1 RETURNING 1) SELECT count(*) FROM e`, own["id"])
	get("/v1/public/content/rel.k00", map[string]string{"X-Preview-Token": own["token"].(string)}).Problem(t, 401, "unauthorized")

	for _, body := range []map[string]any{
		{"release_id": 999},
		{},
		{"release_id": rel["id"], "items": items},
		{"items": []any{map[string]any{"type": "page", "id": "nope"}}},
		{"items": items, "expires_in": 8 * 24 * 3600},
		{"items": items, "expires_in": 10},
		{"items": []any{map[string]any{"type": "content_key", "id": "rel.k00", "languages": []string{"fr"}}}},
	} {
		env.Do("POST", "/v1/previews", p.Key, body).Problem(t, 422, "validation_failed")
	}
	env.Do("POST", "/v1/previews", p.NewKey(false, "content:read"), map[string]any{"items": items}).Problem(t, 403, "forbidden")
}
