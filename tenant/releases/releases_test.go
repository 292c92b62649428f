package releases_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
)

// query runs one scalar query in the project's schema.
func query[T any](t testing.TB, p *apitest.Project, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), sql, args...).Scan(&v)
	}); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// subscribe makes p's content.published events recorded (the outbox
// stores nothing without an endpoint that wants them).
func subscribe(t *testing.T, env *apitest.Env, p *apitest.Project) {
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": "https://127.0.0.1:9/hook",
		"events": []string{"content.published"}}).Expect(t, 201)
}

// releaseEvents counts p's content.published events naming release id.
func releaseEvents(t *testing.T, p *apitest.Project, id any) int {
	return query[int](t, p, `SELECT count(*) FROM webhook_events WHERE type = 'content.published' AND payload::jsonb->'data'->>'release_id' = $1`, fmt.Sprint(id))
}

// keysWithDrafts gives p n content keys valued "old" and drafted "new",
// and the items of a release of them.
func keysWithDrafts(t *testing.T, env *apitest.Env, p *apitest.Project, n int) ([]string, []any) {
	var keys []string
	var old, drafted, items []any
	for i := range n {
		k := fmt.Sprintf("rel.k%02d", i)
		keys = append(keys, k)
		old = append(old, map[string]any{"key": k, "value": "old"})
		drafted = append(drafted, map[string]any{"key": k, "value": "new"})
		items = append(items, map[string]any{"type": "content_key", "id": k})
	}
	env.Do("PUT", "/v1/content", p.Key, map[string]any{"updates": old}).Expect(t, 200)
	env.Do("PUT", "/v1/content?draft=true", p.Key, map[string]any{"updates": drafted}).Expect(t, 200)
	return keys, items
}

// TestReleaseSeenWhole: a 50-item release is published in one
// transaction: among 1,000 public reads of the 50 values made while it
// publishes, none sees some old and some new.
func TestReleaseSeenWhole(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_PUBLIC_RATE", "1000000/1000000"))
	p := env.NewProject("build")
	subscribe(t, env, p)
	keys, items := keysWithDrafts(t, env, p, 50)
	rel := env.Do("POST", "/v1/releases", p.Key, map[string]any{"name": "Spring", "items": items}).Expect(t, 201).JSON(t)
	if rel["status"] != "pending" || len(rel["items"].([]any)) != 50 {
		t.Fatalf("release: %v", rel)
	}
	id := fmt.Sprint(rel["id"])

	path := "/v1/public/content/bulk?keys=" + strings.Join(keys, ",")
	var polls, mixed, sawNew atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			for polls.Add(1) <= 1000 {
				res, err := env.TrySend(apitest.Request{Method: "GET", Path: path, Header: map[string]string{"X-Service-Project-Key": p.ID}})
				if err != nil || res.Status != 200 {
					mixed.Add(1)
					continue
				}
				var b struct{ Data map[string]string }
				if json.Unmarshal(res.Body, &b) != nil || len(b.Data) != 50 {
					mixed.Add(1)
					continue
				}
				n := 0
				for _, v := range b.Data {
					if v == "new" {
						n++
					}
				}
				switch n {
				case 0:
				case 50:
					sawNew.Add(1)
				default:
					mixed.Add(1)
				}
			}
		})
	}
	close(start)
	time.Sleep(50 * time.Millisecond)
	pub := env.Do("POST", "/v1/releases/"+id+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	wg.Wait()
	if mixed.Load() != 0 {
		t.Fatalf("%d of 1,000 reads saw the release half-published (or failed)", mixed.Load())
	}
	if pub["status"] != "published" || pub["published_at"] == nil {
		t.Fatalf("published: %v", pub)
	}
	if sawNew.Load() == 0 {
		t.Log("every read came before the publish; the check still held for each")
	}
	if n := releaseEvents(t, p, id); n != 50 {
		t.Fatalf("%d content.published events name the release, want 50", n)
	}
	env.Do("POST", "/v1/releases/"+id+"/publish", p.Key, nil).Problem(t, 409, "conflict")
	env.Do("POST", "/v1/releases/"+id+"/cancel", p.Key, nil).Problem(t, 409, "conflict")
}

// TestReleaseScheduled: a release with publish_at is published by its job
// within 2 s of that time, and exactly once with two worker processes.
func TestReleaseScheduled(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	env.Instance(apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p)
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Sale", "slug": "sale", "status": "published"}).Expect(t, 201).JSON(t)
	env.Do("PATCH", fmt.Sprintf("/v1/pages/%v?draft=true", page["id"]), p.Key, map[string]any{"title": "Big sale"}).Expect(t, 200)
	_, items := keysWithDrafts(t, env, p, 3)
	items = append(items, map[string]any{"type": "page", "id": "sale"})
	at := time.Now().Add(8 * time.Second).Truncate(time.Millisecond)
	rel := env.Do("POST", "/v1/releases", p.Key, map[string]any{"name": "Sale", "items": items, "publish_at": at.Format(time.RFC3339Nano)}).Expect(t, 201).JSON(t)
	if rel["status"] != "scheduled" {
		t.Fatalf("release: %v", rel)
	}
	id := fmt.Sprint(rel["id"])
	var got map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got = env.Do("GET", "/v1/releases/"+id, p.Key, nil).Expect(t, 200).JSON(t)
		if got["status"] != "scheduled" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got["status"] != "published" {
		t.Fatalf("the scheduled release: %v", got)
	}
	published, err := time.Parse(time.RFC3339Nano, got["published_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if d := published.Sub(at); d < 0 || d > 2*time.Second {
		t.Fatalf("published %v after publish_at", d)
	}
	if live := env.Do("GET", fmt.Sprintf("/v1/pages/%v", page["id"]), p.Key, nil).Expect(t, 200).JSON(t); live["title"] != "Big sale" {
		t.Fatalf("the page after the release: %v", live["title"])
	}
	// Exactly once: one publish version per item, one event each.
	time.Sleep(time.Second) // a second job, if any, would have run by now
	if n := query[int](t, p, `SELECT count(*) FROM versions WHERE kind = 'publish'`); n != 4 {
		t.Fatalf("%d publish versions, want 4", n)
	}
	if n := releaseEvents(t, p, id); n != 4 {
		t.Fatalf("%d content.published events, want 4", n)
	}
}

// TestReleaseBadInput: a release of an unknown type, a missing or another
// project's item, a past time, or a key without the item's scope is a
// clear 4xx; a release that cannot publish publishes nothing and says
// why.
func TestReleaseBadInput(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	other := env.NewProject("build")
	theirs := env.Do("POST", "/v1/pages", other.Key, map[string]any{"title": "Theirs", "slug": "theirs"}).Expect(t, 201).JSON(t)
	ro := p.NewKey(false, "content:read")
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Taken", "slug": "taken"}).Expect(t, 201)
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home", "status": "published"}).Expect(t, 201).JSON(t)
	_, items := keysWithDrafts(t, env, p, 2)

	for _, c := range []struct {
		body   map[string]any
		status int
		field  string
	}{
		{map[string]any{"name": "x", "items": []any{map[string]any{"type": "widget", "id": "a"}}}, 422, "items[0].type"},
		{map[string]any{"name": "x", "items": []any{map[string]any{"type": "page", "id": "nope"}}}, 422, "items[0].id"},
		{map[string]any{"name": "x", "items": []any{map[string]any{"type": "page", "id": theirs["slug"]}}}, 422, "items[0].id"},
		{map[string]any{"name": "x", "items": []any{items[0], items[0]}}, 422, "items[1]"},
		{map[string]any{"name": "x", "items": []any{}}, 422, "items"},
		{map[string]any{"name": "", "items": items}, 422, "name"},
		{map[string]any{"name": "x", "items": items, "publish_at": "2020-01-01T00:00:00Z"}, 422, "publish_at"},
		{map[string]any{"name": "x", "items": []any{map[string]any{"type": "content_key", "id": "rel.k00", "languages": []string{"xx-"}}}}, 422, "items[0].languages[0]"},
		{map[string]any{"name": "x", "items": []any{map[string]any{"id": "a"}}}, 400, ""},
		{map[string]any{"name": "x"}, 400, ""},
	} {
		res := env.Do("POST", "/v1/releases", p.Key, c.body)
		if res.Status != c.status || (c.field != "" && !strings.Contains(string(res.Body), `"`+c.field+`"`)) {
			t.Errorf("%v: %d %s, want %d naming %s", c.body, res.Status, res.Body, c.status, c.field)
		}
	}
	env.Do("POST", "/v1/releases", ro, map[string]any{"name": "x", "items": items}).Problem(t, 403, "forbidden")
	if n := query[int](t, p, `SELECT count(*) FROM releases`); n != 0 {
		t.Fatalf("%d releases made by bad requests", n)
	}

	// A page whose draft takes another page's slug fails the release:
	// the content keys listed before it are not published either.
	env.Do("PATCH", fmt.Sprintf("/v1/pages/%v?draft=true", page["id"]), p.Key, map[string]any{"slug": "taken"}).Expect(t, 200)
	rel := env.Do("POST", "/v1/releases", p.Key, map[string]any{"name": "Bad", "items": append(items, map[string]any{"type": "page", "id": "home"})}).Expect(t, 201).JSON(t)
	id := fmt.Sprint(rel["id"])
	res := env.Do("POST", "/v1/releases/"+id+"/publish", p.Key, nil).Problem(t, 409, "conflict")
	if !strings.Contains(res["detail"].(string), "items[2] (page") {
		t.Fatalf("the failure does not name the item: %v", res["detail"])
	}
	if got := env.Do("GET", "/v1/content/rel.k00", p.Key, nil).Expect(t, 200).JSON(t); got["value"] != "old" {
		t.Fatalf("a failed release published an item: %v", got["value"])
	}
	got := env.Do("GET", "/v1/releases/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	if got["status"] != "pending" || got["error"] == nil {
		t.Fatalf("the failed release: %v", got)
	}
	// An item deleted since: 409 naming it, nothing published.
	env.Do("DELETE", fmt.Sprintf("/v1/pages/%v", page["id"]), p.Key, nil).Expect(t, 204)
	res = env.Do("POST", "/v1/releases/"+id+"/publish", p.Key, nil).Problem(t, 409, "conflict")
	if !strings.Contains(res["detail"].(string), "no such page") {
		t.Fatalf("an item deleted since: %v", res["detail"])
	}
	env.Do("POST", "/v1/releases/"+id+"/publish", ro, nil).Problem(t, 403, "forbidden")
	env.Do("POST", "/v1/releases/"+id+"/cancel", p.Key, nil).Expect(t, 200)
	env.Do("POST", "/v1/releases/"+id+"/publish", p.Key, nil).Problem(t, 409, "conflict")
	env.Do("GET", "/v1/releases/999", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/releases/"+id, other.Key, nil).Problem(t, 404, "not_found")
	list := env.Do("GET", "/v1/releases?status=cancelled", ro, nil).Expect(t, 200).JSON(t)
	if len(list["data"].([]any)) != 1 {
		t.Fatalf("cancelled releases: %v", list)
	}
	env.Do("GET", "/v1/releases?status=gone", p.Key, nil).Problem(t, 422, "validation_failed")
}

// TestReleaseEveryType: one release publishes a draft of each type of
// item: page, component, content key, gallery, the brand and a blog post.
func TestReleaseEveryType(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	do := func(method, path string, body any, status int) map[string]any {
		return env.Do(method, path, p.Key, body).Expect(t, status).JSON(t)
	}
	do("POST", "/v1/pages", map[string]any{"title": "Home", "slug": "home", "status": "published"}, 201)
	do("PATCH", "/v1/pages/home?draft=true", map[string]any{"title": "Home v2"}, 200)
	do("POST", "/v1/components", map[string]any{"name": "Hero", "slug": "hero"}, 201)
	do("PATCH", "/v1/components/hero?draft=true", map[string]any{"name": "Hero v2"}, 200)
	do("PUT", "/v1/content/k", map[string]any{"value": "v1"}, 200)
	do("PUT", "/v1/content/k?draft=true", map[string]any{"value": "v2"}, 200)
	do("POST", "/v1/galleries", map[string]any{"name": "Work", "slug": "work"}, 201)
	do("PATCH", "/v1/galleries/work?draft=true", map[string]any{"name": "Work v2"}, 200)
	do("PATCH", "/v1/brand?draft=true", map[string]any{"name": "Bakery v2"}, 200)
	post := do("POST", "/v1/blog-posts", map[string]any{"title": "Bread", "content": "Flour.", "language_code": "en", "status": "published"}, 201)
	do("PATCH", fmt.Sprintf("/v1/blog-posts/%v?draft=true", post["id"]), map[string]any{"title": "Bread v2"}, 200)
	rel := do("POST", "/v1/releases", map[string]any{"name": "All", "items": []any{
		map[string]any{"type": "page", "id": "home"}, map[string]any{"type": "component", "id": "hero"},
		map[string]any{"type": "content_key", "id": "k"}, map[string]any{"type": "gallery", "id": "work"},
		map[string]any{"type": "brand"}, map[string]any{"type": "blog_post", "id": post["slug"]},
	}}, 201)
	do("POST", fmt.Sprintf("/v1/releases/%v/publish", rel["id"]), nil, 200)
	for path, want := range map[string]string{"/v1/pages/home": "Home v2", "/v1/components/hero": "Hero v2", "/v1/brand": "Bakery v2",
		fmt.Sprintf("/v1/blog-posts/%v", post["id"]): "Bread v2"} {
		got := do("GET", path, nil, 200)
		if got["title"] != want && got["name"] != want {
			t.Errorf("%s after the release: %v", path, got)
		}
		if got["has_draft"] != false {
			t.Errorf("%s still has a draft", path)
		}
	}
	if g := do("GET", "/v1/galleries/work", nil, 200)["data"].(map[string]any); g["name"] != "Work v2" {
		t.Errorf("the gallery after the release: %v", g)
	}
	if k := do("GET", "/v1/content/k", nil, 200); k["value"] != "v2" {
		t.Errorf("the key after the release: %v", k)
	}
}
