package content_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

func items(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"url": fmt.Sprintf("https://cdn.example.com/%d.jpg", i)}
	}
	return out
}

func TestGalleriesAPI(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ro := p.NewKey(false, "galleries:read")
	other := p.NewKey(false, "content:*")
	name256 := strings.Repeat("n", 256)

	run(t, env, p, []apiCase{
		{name: "create", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "Summer Trip", "items": []map[string]any{
			{"url": "https://cdn.example.com/a.jpg", "alt": "Beach"}, {"url": "/v1/public/media/x/b"},
		}}, status: 201, golden: "gallery"},
		{name: "create derives -2", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "Summer trip!"}, status: 201,
			check: body("slug:summer-trip-2", "items:[]", "items_count:0")},
		{name: "create derives -3", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "summer TRIP"}, status: 201,
			check: body("slug:summer-trip-3")},
		{name: "create explicit slug", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "Team", "slug": "our-team", "items": items(200)},
			status: 201, check: body("slug:our-team", "items_count:200")},
		{name: "create explicit slug taken", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "Other", "slug": "our-team"}, status: 409},
		{name: "create without name", method: "POST", path: "/v1/galleries", body: map[string]any{"slug": "x"}, status: 400},
		{name: "create invalid json", method: "POST", path: "/v1/galleries", body: "[1,", status: 400},
		{name: "create unknown field", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "x", "title": "y"}, status: 400},
		{name: "create item without url", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "x", "items": []map[string]any{{"alt": "a"}}}, status: 400},
		{name: "create 201 items", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "x", "items": items(201)}, status: 422, check: field("items")},
		{name: "create name too long", method: "POST", path: "/v1/galleries", body: map[string]any{"name": name256}, status: 422, check: field("name")},
		{name: "create name 255", method: "POST", path: "/v1/galleries", body: map[string]any{"name": name256[:255], "slug": "long"}, status: 201},
		{name: "create empty name", method: "POST", path: "/v1/galleries", body: map[string]any{"name": " "}, status: 422, check: field("name")},
		{name: "create bad slug", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "x", "slug": "-Bad"}, status: 422, check: field("slug")},
		{name: "create slug too long", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "x", "slug": "a" + strings.Repeat("b", 255)}, status: 422, check: field("slug")},
		{name: "create bad item url", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "x", "items": []map[string]any{{"url": "javascript:alert(1)"}}}, status: 422, check: field("items[0].url")},
		{name: "create items not an array", method: "POST", path: "/v1/galleries", body: map[string]any{"name": "x", "items": "a"}, status: 422, check: field("items")},
		{name: "create without key", method: "POST", path: "/v1/galleries", key: noKey, body: map[string]any{"name": "x"}, status: 401},
		{name: "create read-only", method: "POST", path: "/v1/galleries", key: ro, body: map[string]any{"name": "x"}, status: 403, check: body("galleries:write")},
		{name: "create content key", method: "POST", path: "/v1/galleries", key: other, body: map[string]any{"name": "x"}, status: 403},

		{name: "get", method: "GET", path: "/v1/galleries/summer-trip", key: ro, status: 200, golden: "gallery"},
		{name: "get missing", method: "GET", path: "/v1/galleries/nope", status: 404},
		{name: "get malformed", method: "GET", path: "/v1/galleries/NOPE", status: 404},
		{name: "get without key", method: "GET", path: "/v1/galleries/summer-trip", key: noKey, status: 401},
		{name: "get content key", method: "GET", path: "/v1/galleries/summer-trip", key: other, status: 403, check: body("galleries:read")},

		{name: "list", method: "GET", path: "/v1/galleries?limit=2", key: ro, status: 200,
			check: func(t *testing.T, r *apitest.Resp) {
				m := firstPage(t, r, 2, "slug", "long")
				if _, ok := m["data"].([]any)[0].(map[string]any)["data"]; ok {
					t.Fatal("list items are galleries, not wrapped")
				}
				next := env.Do("GET", "/v1/galleries?limit=10&cursor="+m["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
				var slugs []string
				for _, g := range next["data"].([]any) {
					slugs = append(slugs, g.(map[string]any)["slug"].(string))
				}
				if strings.Join(slugs, ",") != "summer-trip-3,summer-trip-2,summer-trip" || next["has_more"] != false || next["next_cursor"] != nil {
					t.Fatalf("second page: %v", slugs)
				}
			}},
		{name: "list shape", method: "GET", path: "/v1/galleries?limit=1", status: 200, golden: "gallery_list"},
		{name: "list bad limit", method: "GET", path: "/v1/galleries?limit=0", status: 422, check: field("limit")},
		{name: "list bad cursor", method: "GET", path: "/v1/galleries?cursor=eHl6", status: 422, check: field("cursor")},
		{name: "list without key", method: "GET", path: "/v1/galleries", key: noKey, status: 401},
		{name: "list content key", method: "GET", path: "/v1/galleries", key: other, status: 403},

		{name: "patch replaces items", method: "PATCH", path: "/v1/galleries/summer-trip", body: map[string]any{"items": []map[string]any{
			{"url": "https://cdn.example.com/c.jpg"},
		}}, status: 200, golden: "gallery_patched"},
		{name: "patch name keeps items", method: "PATCH", path: "/v1/galleries/summer-trip", body: map[string]any{"name": "Summer 2025"}, status: 200,
			check: body("name:Summer 2025", "items_count:1", "c.jpg")},
		{name: "patch empties items", method: "PATCH", path: "/v1/galleries/summer-trip-3", body: map[string]any{"items": []any{}}, status: 200, check: body("items_count:0")},
		{name: "patch slug", method: "PATCH", path: "/v1/galleries/summer-trip-3", body: map[string]any{"slug": "autumn"}, status: 200, check: body("slug:autumn")},
		{name: "old slug gone", method: "GET", path: "/v1/galleries/summer-trip-3", status: 404},
		{name: "patch slug taken", method: "PATCH", path: "/v1/galleries/autumn", body: map[string]any{"slug": "summer-trip"}, status: 409},
		{name: "patch 201 items", method: "PATCH", path: "/v1/galleries/autumn", body: map[string]any{"items": items(201)}, status: 422, check: field("items")},
		{name: "patch name too long", method: "PATCH", path: "/v1/galleries/autumn", body: map[string]any{"name": name256}, status: 422, check: field("name")},
		{name: "patch bad json", method: "PATCH", path: "/v1/galleries/autumn", body: "nope", status: 400},
		{name: "patch unknown field", method: "PATCH", path: "/v1/galleries/autumn", body: map[string]any{"color": "red"}, status: 400},
		{name: "patch missing", method: "PATCH", path: "/v1/galleries/nope", body: map[string]any{"name": "x"}, status: 404},
		{name: "patch without key", method: "PATCH", path: "/v1/galleries/autumn", key: noKey, body: map[string]any{}, status: 401},
		{name: "patch read-only", method: "PATCH", path: "/v1/galleries/autumn", key: ro, body: map[string]any{}, status: 403},

		{name: "delete", method: "DELETE", path: "/v1/galleries/autumn", status: 204},
		{name: "delete again", method: "DELETE", path: "/v1/galleries/autumn", status: 404},
		{name: "delete without key", method: "DELETE", path: "/v1/galleries/summer-trip", key: noKey, status: 401},
		{name: "delete read-only", method: "DELETE", path: "/v1/galleries/summer-trip", key: ro, status: 403},
		{name: "wrong method", method: "PUT", path: "/v1/galleries/summer-trip", body: map[string]any{}, status: 400},
	})
	if n := ledgerOps(t, p, "content_update") + ledgerOps(t, p, "page_update") + ledgerOps(t, p, "image_register"); n != 0 {
		t.Fatalf("galleries cost nothing, %d charges", n)
	}
}

// TestConcurrentSlugs: concurrent creates of one name all succeed, each
// with its own derived slug.
func TestConcurrentSlugs(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	const n = 6
	slugs := make(chan string, 2*n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(2)
		// No fatal helper off the test goroutine: a failure lands in
		// slugs and fails the check below.
		go func() {
			defer wg.Done()
			r, err := env.TrySend(apitest.Request{Method: "POST", Path: "/v1/galleries", Key: p.Key, Body: map[string]any{"name": "Same Name"}})
			if err != nil {
				slugs <- err.Error()
				return
			}
			var g struct{ Data struct{ Slug string } }
			if err := json.Unmarshal(r.Body, &g); r.Status != 201 || err != nil {
				slugs <- fmt.Sprintf("status %d: %s", r.Status, r.Body)
				return
			}
			slugs <- g.Data.Slug
		}()
		go func() {
			defer wg.Done()
			r, err := env.TrySend(apitest.Request{Method: "POST", Path: "/v1/pages", Key: p.Key, Body: map[string]any{"title": "Same Name"}})
			if err != nil {
				slugs <- "page: " + err.Error()
				return
			}
			var pg struct{ Slug string }
			if err := json.Unmarshal(r.Body, &pg); r.Status != 201 || err != nil {
				slugs <- fmt.Sprintf("page status %d: %s", r.Status, r.Body)
				return
			}
			slugs <- "page:" + pg.Slug
		}()
	}
	wg.Wait()
	close(slugs)
	var got []string
	for s := range slugs {
		got = append(got, s)
	}
	sort.Strings(got)
	want := []string{"page:same-name", "page:same-name-2", "page:same-name-3", "page:same-name-4", "page:same-name-5", "page:same-name-6",
		"same-name", "same-name-2", "same-name-3", "same-name-4", "same-name-5", "same-name-6"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("slugs: %v", got)
	}
}
