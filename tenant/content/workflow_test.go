package content_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestPageDraftsOverLive: while a published page's draft is edited, 100
// public reads (some revalidating with the ETag they were given) see only
// the published page; publishing makes the draft live in one step.
func TestPageDraftsOverLive(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home", "status": "published",
		"sections": []any{map[string]any{"type": "hero", "heading": "Live"}}}).Expect(t, 201).JSON(t)
	id := fmt.Sprint(page["id"])
	if page["has_draft"] != false {
		t.Fatalf("a new page has no draft: %v", page["has_draft"])
	}
	first := public(env, p, "/v1/public/pages/home").Expect(t, 200)
	etag := first.Header.Get("ETag")
	if _, ok := first.JSON(t)["has_draft"]; ok {
		t.Fatal("the public surface says nothing of drafts")
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	var leaks []string
	wg.Go(func() {
		for i := range 20 {
			res, err := env.TrySend(apitest.Request{Method: "PATCH", Path: "/v1/pages/" + id + "?draft=true", Key: p.Key,
				Body: map[string]any{"title": fmt.Sprint("Draft ", i), "sections": []any{map[string]any{"type": "hero", "heading": fmt.Sprint("Draft ", i)}}}})
			if err != nil || res.Status != 200 {
				mu.Lock()
				leaks = append(leaks, fmt.Sprintf("draft write %d: %v %v", i, res, err))
				mu.Unlock()
			}
		}
	})
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				h := map[string]string{"X-Service-Project-Key": p.ID}
				if i%2 == 1 {
					h["If-None-Match"] = etag
				}
				res, err := env.TrySend(apitest.Request{Method: "GET", Path: "/v1/public/pages/home", Header: h})
				mu.Lock()
				switch {
				case err != nil:
					leaks = append(leaks, err.Error())
				case res.Status == 304 && i%2 == 1:
				case res.Status != 200:
					leaks = append(leaks, fmt.Sprintf("reader %d: %d", w, res.Status))
				default:
					var got map[string]any
					if json.Unmarshal(res.Body, &got) != nil || got["title"] != "Home" || res.Header.Get("ETag") != etag {
						leaks = append(leaks, fmt.Sprintf("reader %d saw %s (ETag %s)", w, res.Body, res.Header.Get("ETag")))
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(leaks) > 0 {
		t.Fatalf("%d of 100 public reads saw the draft or failed: %v", len(leaks), leaks[:min(3, len(leaks))])
	}

	live := env.Do("GET", "/v1/pages/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	if live["title"] != "Home" || live["has_draft"] != true {
		t.Fatalf("the live page: %v %v", live["title"], live["has_draft"])
	}
	draft := env.Do("GET", "/v1/pages/"+id+"?draft=true", p.Key, nil).Expect(t, 200).JSON(t)
	if draft["title"] != "Draft 19" || draft["status"] != "published" {
		t.Fatalf("the draft view: %v %v", draft["title"], draft["status"])
	}
	pub := env.Do("POST", "/v1/pages/"+id+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	if pub["title"] != "Draft 19" || pub["has_draft"] != false {
		t.Fatalf("published: %v %v", pub["title"], pub["has_draft"])
	}
	if got := public(env, p, "/v1/public/pages/home").Expect(t, 200).JSON(t); got["title"] != "Draft 19" {
		t.Fatalf("the public page after the publish: %v", got["title"])
	}
	if public(env, p, "/v1/public/pages/home", "If-None-Match", etag).Status != 200 {
		t.Fatal("the old ETag still matches after the publish")
	}
	// Unpublish takes it off the public surface, with its content kept.
	env.Do("POST", "/v1/pages/"+id+"/unpublish", p.Key, nil).Expect(t, 200)
	public(env, p, "/v1/public/pages/home").Expect(t, 404)
	if got := env.Do("GET", "/v1/pages/"+id, p.Key, nil).Expect(t, 200).JSON(t); got["title"] != "Draft 19" || got["status"] != "draft" {
		t.Fatalf("unpublished: %v %v", got["title"], got["status"])
	}
}

// TestPagePublishOneLanguage: publishing fr publishes the draft's French
// translation only; the default language's fields stay as they are live.
func TestPagePublishOneLanguage(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Menu", "status": "published",
		"translations": []any{map[string]any{"lang": "fr", "title": "Carte"}, map[string]any{"lang": "de", "title": "Speisekarte"}}}).Expect(t, 201).JSON(t)
	id := fmt.Sprint(page["id"])
	env.Do("PATCH", "/v1/pages/"+id+"?draft=true", p.Key, map[string]any{"title": "Our menu",
		"translations": []any{map[string]any{"lang": "fr", "title": "Notre carte"}, map[string]any{"lang": "de", "title": "Unsere Karte"}}}).Expect(t, 200)
	pub := env.Do("POST", "/v1/pages/"+id+"/publish", p.Key, map[string]any{"languages": []string{"fr"}}).Expect(t, 200).JSON(t)
	if pub["title"] != "Menu" || pub["has_draft"] != true {
		t.Fatalf("the default language was published too, or the draft dropped: %v %v", pub["title"], pub["has_draft"])
	}
	tr := map[string]string{}
	for _, x := range pub["translations"].([]any) {
		m := x.(map[string]any)
		tr[m["lang"].(string)] = m["title"].(string)
	}
	if !reflect.DeepEqual(tr, map[string]string{"fr": "Notre carte", "de": "Speisekarte"}) {
		t.Fatalf("translations after publishing fr: %v", tr)
	}
	if got := public(env, p, "/v1/public/pages/menu?lang=de").Expect(t, 200).JSON(t); got["title"] != "Speisekarte" {
		t.Fatalf("de on the public surface: %v", got["title"])
	}
	// The rest of the draft, published: nothing is left to publish.
	pub = env.Do("POST", "/v1/pages/"+id+"/publish", p.Key, map[string]any{"languages": []string{"en", "de"}}).Expect(t, 200).JSON(t)
	if pub["title"] != "Our menu" || pub["has_draft"] != false {
		t.Fatalf("after publishing the rest: %v %v", pub["title"], pub["has_draft"])
	}
	vs := env.Do("GET", "/v1/pages/"+id+"/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	if len(vs) != 3 || vs[0].(map[string]any)["kind"] != "publish" || fmt.Sprint(vs[1].(map[string]any)["languages"]) != "[fr]" || vs[2].(map[string]any)["kind"] != "save" {
		t.Fatalf("versions: %v", vs)
	}
}

// TestPageVersionsRestore: restoring an earlier version brings back its
// exact content into the draft, and publishing it makes it live.
func TestPageVersionsRestore(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	v1 := map[string]any{"title": "About", "sections": []any{map[string]any{"type": "text", "body": "First", "n": 1.5, "list": []any{"a", nil, true}}},
		"seo": map[string]any{"meta_title": "About us", "og_image": "https://cdn.example.com/a.png"}}
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "x", "slug": "about"}).Expect(t, 201).JSON(t)
	id := fmt.Sprint(page["id"])
	env.Do("PATCH", "/v1/pages/"+id+"?draft=true", p.Key, v1).Expect(t, 200)
	first := env.Do("POST", "/v1/pages/"+id+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	env.Do("PATCH", "/v1/pages/"+id, p.Key, map[string]any{"draft": true, "title": "About (new)", "sections": []any{},
		"seo": map[string]any{"meta_title": "New", "og_image": ""}}).Expect(t, 200)
	env.Do("POST", "/v1/pages/"+id+"/publish", p.Key, nil).Expect(t, 200)

	vs := env.Do("GET", "/v1/pages/"+id+"/versions?limit=2", p.Key, nil).Expect(t, 200).JSON(t)
	if vs["has_more"] != true || len(vs["data"].([]any)) != 2 {
		t.Fatalf("versions page: %v", vs)
	}
	// Versions: 1 save, 2 publish, 3 save, 4 publish.
	v2 := env.Do("GET", "/v1/pages/"+id+"/versions/2", p.Key, nil).Expect(t, 200).JSON(t)
	if v2["kind"] != "publish" || v2["data"].(map[string]any)["title"] != "About" {
		t.Fatalf("version 2: %v", v2)
	}
	restored := env.Do("POST", "/v1/pages/"+id+"/versions/2/restore", p.Key, nil).Expect(t, 200).JSON(t)
	if restored["has_draft"] != true || restored["title"] != "About" {
		t.Fatalf("restored draft view: %v", restored)
	}
	if live := env.Do("GET", "/v1/pages/"+id, p.Key, nil).Expect(t, 200).JSON(t); live["title"] != "About (new)" {
		t.Fatalf("a restore changed what is live: %v", live["title"])
	}
	again := env.Do("POST", "/v1/pages/"+id+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	for _, f := range []string{"title", "slug", "path", "sections", "seo", "translations"} {
		if !reflect.DeepEqual(again[f], first[f]) {
			t.Errorf("%s after restoring version 2: %v, was %v", f, again[f], first[f])
		}
	}
	env.Do("GET", "/v1/pages/"+id+"/versions/99", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/pages/"+id+"/versions/99/restore", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/pages/"+id+"/versions/x/restore", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/pages/nope/versions", p.Key, nil).Problem(t, 404, "not_found")
}

// TestPageAutosaveAndCap: 100 autosaves leave one autosave version; an
// explicit save after them starts a new one; an item keeps 100 versions.
func TestPageAutosaveAndCap(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Blog"}).Expect(t, 201).JSON(t)
	id := fmt.Sprint(page["id"])
	for i := range 100 {
		path := "/v1/pages/" + id + "?autosave=true"
		var body map[string]any = map[string]any{"title": fmt.Sprint("Typing ", i)}
		if i%2 == 1 { // the body field says the same
			path, body["autosave"] = "/v1/pages/"+id, true
		}
		env.Do("PATCH", path, p.Key, body).Expect(t, 200)
	}
	vs := env.Do("GET", "/v1/pages/"+id+"/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	if len(vs) != 1 || vs[0].(map[string]any)["kind"] != "autosave" || vs[0].(map[string]any)["n"] != 1.0 {
		t.Fatalf("after 100 autosaves: %v", vs)
	}
	if v := env.Do("GET", "/v1/pages/"+id+"/versions/1", p.Key, nil).Expect(t, 200).JSON(t); v["data"].(map[string]any)["title"] != "Typing 99" {
		t.Fatalf("the autosave version holds %v", v["data"])
	}
	for i := range 104 {
		env.Do("PATCH", "/v1/pages/"+id+"?draft=true", p.Key, map[string]any{"title": fmt.Sprint("Save ", i)}).Expect(t, 200)
	}
	all := env.Do("GET", "/v1/pages/"+id+"/versions?limit=100", p.Key, nil).Expect(t, 200).JSON(t)
	data := all["data"].([]any)
	if len(data) != 100 || all["has_more"] != false || data[0].(map[string]any)["n"] != 105.0 || data[99].(map[string]any)["n"] != 6.0 {
		t.Fatalf("versions kept: %d, has_more %v, newest %v, oldest %v", len(data), all["has_more"], data[0], data[len(data)-1])
	}
	if spent(t, p) != 100 { // the page's creation; draft writes are free
		t.Fatalf("spent %d", spent(t, p))
	}
}

// TestPageWorkflowBadInput: bad workflow requests are clear 4xx and
// change nothing.
func TestPageWorkflowBadInput(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ro := p.NewKey(false, "content:read")
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Taken", "slug": "taken"}).Expect(t, 201)
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home", "status": "published"}).Expect(t, 201).JSON(t)
	id := fmt.Sprint(page["id"])
	env.Do("PATCH", "/v1/pages/"+id+"?draft=true", p.Key, map[string]any{"slug": "taken", "title": "New home"}).Expect(t, 200)
	env.Do("POST", "/v1/pages/"+id+"/publish", p.Key, nil).Problem(t, 409, "conflict")
	if live := env.Do("GET", "/v1/pages/"+id, p.Key, nil).Expect(t, 200).JSON(t); live["title"] != "Home" || live["slug"] != "home" || live["has_draft"] != true {
		t.Fatalf("a refused publish changed the page: %v", live)
	}
	if vs := env.Do("GET", "/v1/pages/"+id+"/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any); len(vs) != 1 {
		t.Fatalf("a refused publish recorded a version: %v", vs)
	}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"PATCH", "/v1/pages/" + id + "?draft=maybe", map[string]any{"title": "x"}, 422},
		{"PATCH", "/v1/pages/" + id + "?draft=true", map[string]any{"status": "published"}, 422},
		{"PATCH", "/v1/pages/" + id + "?draft=false", map[string]any{"draft": true, "title": "x"}, 422},
		{"PATCH", "/v1/pages/" + id + "?draft=true", map[string]any{"title": ""}, 422},
		{"POST", "/v1/pages?draft=true", map[string]any{"title": "x"}, 422},
		{"POST", "/v1/pages/" + id + "/publish", map[string]any{"languages": []string{}}, 422},
		{"POST", "/v1/pages/" + id + "/publish", map[string]any{"languages": []string{"french"}}, 422},
		{"POST", "/v1/pages/" + id + "/publish", map[string]any{"languages": []string{"fr", "fr"}}, 422},
		{"POST", "/v1/pages/" + id + "/publish", map[string]any{"langs": []string{"fr"}}, 400},
		{"POST", "/v1/pages/999999/publish", nil, 404},
		{"GET", "/v1/pages/" + id + "?draft=yes", nil, 422},
	} {
		if res := env.Do(c.method, c.path, p.Key, c.body); res.Status != c.status {
			t.Errorf("%s %s %v: %d %s, want %d", c.method, c.path, c.body, res.Status, res.Body, c.status)
		}
	}
	env.Do("POST", "/v1/pages/"+id+"/publish", ro, nil).Problem(t, 403, "forbidden")
	env.Do("POST", "/v1/pages/"+id+"/versions/1/restore", ro, nil).Problem(t, 403, "forbidden")
	env.Do("GET", "/v1/pages/"+id+"/versions", ro, nil).Expect(t, 200)
	if draft := env.Do("GET", "/v1/pages/"+id+"?draft=true", p.Key, nil).Expect(t, 200).JSON(t); draft["title"] != "New home" {
		t.Fatalf("bad draft writes changed the draft: %v", draft["title"])
	}
	// Deleting the page drops its draft and versions.
	env.Do("DELETE", "/v1/pages/"+id, p.Key, nil).Expect(t, 204)
	if n := query[int](t, p, `SELECT (SELECT count(*) FROM drafts) + (SELECT count(*) FROM versions)`); n != 0 {
		t.Fatalf("%d draft and version rows left after the delete", n)
	}
}

// TestContentKeyDrafts: a key's draft values stay off the public surface
// until published; publishing one language writes that value only, as a
// live write does (1 credit); the batch writes drafts too; a key that
// exists only as a draft reads 404 until published.
func TestContentKeyDrafts(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Salut", "lang": "fr"}).Expect(t, 200)
	before := spent(t, p)

	d := env.Do("PUT", "/v1/content/home.title?draft=true", p.Key, map[string]any{"value": "Bonjour", "lang": "fr"}).Expect(t, 200).JSON(t)
	if d["value"] != "Bonjour" || d["has_draft"] != true || d["all_locales"].(map[string]any)["en"] != "Hello" {
		t.Fatalf("draft write: %v", d)
	}
	env.Do("PUT", "/v1/content", p.Key, map[string]any{"draft": true, "updates": []any{
		map[string]any{"key": "home.title", "value": "Welcome"},
		map[string]any{"key": "home.new", "value": "Brand new"},
	}}).Expect(t, 200)
	if spent(t, p) != before {
		t.Fatalf("draft writes cost %d", spent(t, p)-before)
	}
	bulk := public(env, p, "/v1/public/content/bulk?keys=home.title,home.new&lang=fr").Expect(t, 200).JSON(t)
	if bulk["data"].(map[string]any)["home.title"] != "Salut" || fmt.Sprint(bulk["missing"]) != "[home.new]" {
		t.Fatalf("the public bulk read sees drafts: %v", bulk)
	}
	if got := env.Do("GET", "/v1/content/home.title?lang=fr", p.Key, nil).Expect(t, 200).JSON(t); got["value"] != "Salut" || got["has_draft"] != true {
		t.Fatalf("live read: %v", got)
	}
	if _, ok := public(env, p, "/v1/public/content/home.title").Expect(t, 200).JSON(t)["has_draft"]; ok {
		t.Fatal("the public surface says has_draft")
	}
	if got := env.Do("GET", "/v1/content/home.title?draft=true", p.Key, nil).Expect(t, 200).JSON(t); got["value"] != "Welcome" {
		t.Fatalf("draft view: %v", got)
	}
	env.Do("GET", "/v1/content/home.new", p.Key, nil).Expect(t, 404)
	env.Do("GET", "/v1/content/home.new?draft=true", p.Key, nil).Expect(t, 200)

	pub := env.Do("POST", "/v1/content/home.title/publish?lang=fr", p.Key, map[string]any{"languages": []string{"fr"}}).Expect(t, 200).JSON(t)
	if pub["value"] != "Bonjour" || pub["has_draft"] != true || pub["all_locales"].(map[string]any)["en"] != "Hello" {
		t.Fatalf("published fr: %v", pub)
	}
	if spent(t, p) != before+100 {
		t.Fatalf("publishing one value cost %d", spent(t, p)-before)
	}
	if got := public(env, p, "/v1/public/content/home.title").Expect(t, 200).JSON(t); got["value"] != "Hello" {
		t.Fatalf("en after publishing fr: %v", got["value"])
	}
	pub = env.Do("POST", "/v1/content/home.title/publish", p.Key, nil).Expect(t, 200).JSON(t)
	if pub["value"] != "Welcome" || pub["has_draft"] != false {
		t.Fatalf("published the rest: %v", pub)
	}
	env.Do("POST", "/v1/content/home.new/publish", p.Key, nil).Expect(t, 200)
	if got := public(env, p, "/v1/public/content/home.new").Expect(t, 200).JSON(t); got["value"] != "Brand new" {
		t.Fatalf("a draft-only key, published: %v", got)
	}
	// Versions: the fr save, the batch save, the fr publish, the publish.
	vs := env.Do("GET", "/v1/content/home.title/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	if len(vs) != 4 {
		t.Fatalf("versions: %v", vs)
	}
	r := env.Do("POST", "/v1/content/home.title/versions/3/restore", p.Key, nil).Expect(t, 200).JSON(t)
	if r["has_draft"] != true || r["value"] != "Hello" || r["all_locales"].(map[string]any)["fr"] != "Bonjour" {
		t.Fatalf("restored version 3: %v", r)
	}
	env.Do("POST", "/v1/content/home.title/publish", p.Key, nil).Expect(t, 200)
	if got := public(env, p, "/v1/public/content/home.title").Expect(t, 200).JSON(t); got["value"] != "Hello" {
		t.Fatalf("after restoring and publishing: %v", got["value"])
	}
	env.Do("POST", "/v1/content/nothing.here/publish", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/content/home.title/versions/77/restore", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("PUT", "/v1/content/home.title?autosave=nope", p.Key, map[string]any{"value": "x"}).Problem(t, 422, "validation_failed")
	// Deleting the key in every language drops its draft and versions.
	env.Do("PUT", "/v1/content/home.title?draft=true", p.Key, map[string]any{"value": "pending"}).Expect(t, 200)
	env.Do("DELETE", "/v1/content/home.title", p.Key, nil).Expect(t, 204)
	if n := query[int](t, p, `SELECT (SELECT count(*) FROM drafts WHERE ref = 'home.title') + (SELECT count(*) FROM versions WHERE ref = 'home.title')`); n != 0 {
		t.Fatalf("%d draft and version rows left", n)
	}
}
