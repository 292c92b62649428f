package blog_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// texts maps each translation of a post to its title.
func texts(m map[string]any) map[string]string {
	out := map[string]string{}
	for _, x := range m["translations"].([]any) {
		t := x.(map[string]any)
		out[t["lang"].(string)] = t["title"].(string)
	}
	return out
}

// TestPostDraftsOverLive: while a published post's draft is edited, 100
// public reads (half revalidating with the ETag they were given) see
// only the live post; publishing makes the draft live in one step.
func TestPostDraftsOverLive(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{"title": "Live", "slug": "hello", "content": "<p>Live</p>", "status": "published"})
	id := idOf(m)
	require.Equal(t, false, m["has_draft"], "a new post has no draft")
	first := public(env, p, "/v1/public/blog-posts/hello").Expect(t, 200)
	etag := first.Header.Get("ETag")
	_, ok := first.JSON(t)["has_draft"]
	require.False(t, ok, "the public surface says nothing of drafts")

	var wg sync.WaitGroup
	var mu sync.Mutex
	var leaks []string
	wg.Go(func() {
		for i := range 20 {
			res, err := env.TrySend(apitest.Request{Method: "PATCH", Path: "/v1/blog-posts/" + id + "?draft=true", Key: p.Key,
				Body: map[string]any{"title": fmt.Sprint("Draft ", i), "content": fmt.Sprint("<p>Draft ", i, "</p>")}})
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
				res, err := env.TrySend(apitest.Request{Method: "GET", Path: "/v1/public/blog-posts/hello", Header: h})
				mu.Lock()
				switch {
				case err != nil:
					leaks = append(leaks, err.Error())
				case res.Status == 304 && i%2 == 1:
				case res.Status != 200:
					leaks = append(leaks, fmt.Sprintf("reader %d: %d", w, res.Status))
				default:
					var got map[string]any
					if json.Unmarshal(res.Body, &got) != nil || got["title"] != "Live" || got["content"] != "<p>Live</p>" || res.Header.Get("ETag") != etag {
						leaks = append(leaks, fmt.Sprintf("reader %d saw %s (ETag %s)", w, res.Body, res.Header.Get("ETag")))
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, leaks, "public reads that saw the draft or failed")
	list := public(env, p, "/v1/public/blog-posts").Expect(t, 200).JSON(t)["data"].([]any)
	require.Equal(t, "Live", list[0].(map[string]any)["title"])

	live := env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Live", live["title"])
	require.Equal(t, true, live["has_draft"])
	admin := env.Do("GET", "/v1/blog-posts", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Equal(t, true, admin[0].(map[string]any)["has_draft"])
	draft := env.Do("GET", "/v1/blog-posts/"+id+"?draft=true", p.Key, nil).Expect(t, 200).JSON(t)
	checkPost(t, draft)
	require.Equal(t, "Draft 19", draft["title"])
	require.Equal(t, "published", draft["status"])

	subscribe(t, env, p, "")
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": "https://127.0.0.1:9/hook2", "events": []string{"content.published"}}).Expect(t, 201)
	pub := env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Draft 19", pub["title"])
	require.Equal(t, false, pub["has_draft"])
	require.Equal(t, []map[string]any{{"type": "blog_post", "id": id, "languages": nil, "release_id": nil}}, events(t, p, "content.published"))
	require.Empty(t, events(t, p, "blog_post.published"), "the post was published already")
	got := public(env, p, "/v1/public/blog-posts/hello").Expect(t, 200).JSON(t)
	require.Equal(t, "<p>Draft 19</p>", got["content"])
	require.Equal(t, 200, public(env, p, "/v1/public/blog-posts/hello", "If-None-Match", etag).Status, "the old ETag matches after the publish")

	// Publishing again without a draft changes nothing and emits nothing.
	env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, nil).Expect(t, 200)
	require.Len(t, events(t, p, "content.published"), 1)
	// Unpublish takes it off the public surface, with its content kept;
	// publishing it again fires blog_post.published.
	env.Do("POST", "/v1/blog-posts/"+id+"/unpublish", p.Key, nil).Expect(t, 200)
	public(env, p, "/v1/public/blog-posts/hello").Expect(t, 404)
	un := env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Draft 19", un["title"])
	require.Equal(t, "draft", un["status"])
	env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, nil).Expect(t, 200)
	require.Len(t, events(t, p, "blog_post.published"), 1)
	require.Len(t, events(t, p, "content.published"), 2)
}

// TestPostPublishOneLanguage: publishing fr publishes the draft's French
// text only; the post's own language (texts, slug, tags) and German stay
// as they are live.
func TestPostPublishOneLanguage(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	tag := term(t, env, p.Key, "tags", "Food")
	m := post(t, env, p.Key, map[string]any{"title": "Menu", "slug": "menu", "language_code": "en", "status": "published"})
	id := idOf(m)
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/fr", p.Key, map[string]any{"title": "Carte"}).Expect(t, 200)
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/de", p.Key, map[string]any{"title": "Speisekarte"}).Expect(t, 200)
	d := env.Do("PATCH", "/v1/blog-posts/"+id, p.Key, map[string]any{"draft": true, "title": "Our menu", "slug": "our-menu",
		"tag_ids": []any{tag["id"]}}).Expect(t, 200).JSON(t)
	require.Equal(t, true, d["has_draft"])
	require.Equal(t, "our-menu", d["slug"])
	require.Len(t, d["tags"], 1)
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/fr?draft=true", p.Key, map[string]any{"title": "Notre carte"}).Expect(t, 200)
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/de?autosave=true", p.Key, map[string]any{"title": "Unsere Karte"}).Expect(t, 200)
	require.Equal(t, map[string]string{"en": "Menu", "fr": "Carte", "de": "Speisekarte"},
		texts(env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)), "draft writes changed the live post")

	pub := env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, map[string]any{"languages": []string{"fr"}}).Expect(t, 200).JSON(t)
	require.Equal(t, "Menu", pub["title"])
	require.Equal(t, "menu", pub["slug"])
	require.Empty(t, pub["tags"])
	require.Equal(t, true, pub["has_draft"], "the rest of the draft is still to publish")
	require.Equal(t, map[string]string{"en": "Menu", "fr": "Notre carte", "de": "Speisekarte"}, texts(pub))
	require.Equal(t, "Speisekarte", public(env, p, "/v1/public/blog-posts/menu?lang=de").Expect(t, 200).JSON(t)["title"])
	require.Equal(t, "Notre carte", public(env, p, "/v1/public/blog-posts/menu?lang=fr").Expect(t, 200).JSON(t)["title"])

	// The rest of the draft: nothing is left to publish.
	pub = env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, map[string]any{"languages": []string{"en", "de"}}).Expect(t, 200).JSON(t)
	require.Equal(t, "Our menu", pub["title"])
	require.Equal(t, "our-menu", pub["slug"])
	require.Equal(t, false, pub["has_draft"])
	require.Equal(t, map[string]string{"en": "Our menu", "fr": "Notre carte", "de": "Unsere Karte"}, texts(pub))
	public(env, p, "/v1/public/blog-posts/menu").Expect(t, 404)
	public(env, p, "/v1/public/blog-posts/our-menu").Expect(t, 200)

	vs := env.Do("GET", "/v1/blog-posts/"+id+"/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	var kinds, langs []string
	for _, v := range vs {
		kinds = append(kinds, v.(map[string]any)["kind"].(string))
		langs = append(langs, fmt.Sprint(v.(map[string]any)["languages"]))
	}
	require.Equal(t, []string{"publish", "publish", "autosave", "save", "save"}, kinds)
	require.Equal(t, []string{"[en de]", "[fr]", "[de]", "[fr]", "[en]"}, langs)
}

// TestPostVersionsRestore: restoring an earlier version brings back its
// exact content into the draft, and publishing it makes it live.
func TestPostVersionsRestore(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cat := term(t, env, p.Key, "categories", "Guides")
	tag := term(t, env, p.Key, "tags", "Go")
	m := post(t, env, p.Key, map[string]any{"title": "x", "slug": "about", "language_code": "en"})
	id := idOf(m)
	env.Do("PATCH", "/v1/blog-posts/"+id+"?draft=true", p.Key, map[string]any{"title": "About", "content": "<p>First <em>one</em></p>",
		"excerpt": "Short", "meta_title": "About us", "meta_description": "All about us", "category_id": cat["id"], "tag_ids": []any{tag["id"]},
		"featured_image": "https://cdn.example.com/a.png"}).Expect(t, 200)
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/fr?draft=true", p.Key, map[string]any{"title": "À propos", "content": "<p>Premier</p>"}).Expect(t, 200)
	first := env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	env.Do("PATCH", "/v1/blog-posts/"+id+"?draft=true", p.Key, map[string]any{"title": "About (new)", "content": "", "slug": "about-new",
		"category_id": nil, "tag_ids": []any{}, "featured_image": nil}).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, nil).Expect(t, 200)

	// Versions: 1 save, 2 save (fr), 3 publish, 4 save, 5 publish.
	vs := env.Do("GET", "/v1/blog-posts/"+id+"/versions?limit=2", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, true, vs["has_more"])
	require.Len(t, vs["data"], 2)
	v3 := env.Do("GET", "/v1/blog-posts/about-new/versions/3", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "publish", v3["kind"])
	require.Equal(t, "about", v3["data"].(map[string]any)["slug"])
	restored := env.Do("POST", "/v1/blog-posts/"+id+"/versions/3/restore", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, true, restored["has_draft"])
	require.Equal(t, "About", restored["title"])
	require.Equal(t, "about-new", env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)["slug"], "a restore changed what is live")
	again := env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, false, again["has_draft"])
	for _, f := range []string{"title", "slug", "content", "excerpt", "meta_title", "meta_description", "category", "tags", "featured_image", "translations"} {
		if !reflect.DeepEqual(again[f], first[f]) {
			t.Errorf("%s after restoring version 3: %v, was %v", f, again[f], first[f])
		}
	}
	env.Do("GET", "/v1/blog-posts/"+id+"/versions/99", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/blog-posts/nope/versions", p.Key, nil).Problem(t, 404, "not_found")
}

// TestPostAutosave: 100 autosaves leave one autosave version holding the
// last; an explicit save after them is a version of its own; draft
// writes are free.
func TestPostAutosave(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	id := idOf(post(t, env, p.Key, map[string]any{"title": "Typing"}))
	for i := range 100 {
		path, body := "/v1/blog-posts/"+id+"?autosave=true", map[string]any{"title": fmt.Sprint("Typing ", i)}
		if i%2 == 1 { // the body field says the same
			path, body["autosave"] = "/v1/blog-posts/"+id, true
		}
		env.Do("PATCH", path, p.Key, body).Expect(t, 200)
	}
	vs := env.Do("GET", "/v1/blog-posts/"+id+"/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Len(t, vs, 1)
	require.Equal(t, "autosave", vs[0].(map[string]any)["kind"])
	v := env.Do("GET", "/v1/blog-posts/"+id+"/versions/1", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Typing 99", texts(v["data"].(map[string]any))["en"])
	env.Do("PATCH", "/v1/blog-posts/"+id+"?draft=true", p.Key, map[string]any{"title": "Saved"}).Expect(t, 200)
	require.Len(t, env.Do("GET", "/v1/blog-posts/"+id+"/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"], 2)
	require.Equal(t, "Typing", env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)["title"])
	require.Empty(t, ledger(t, p, id))
}

// TestPostWorkflowBadInput: bad workflow requests are clear 4xx and
// change nothing.
func TestPostWorkflowBadInput(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ro := p.NewKey(false, "blog:read")
	post(t, env, p.Key, map[string]any{"title": "Taken", "slug": "taken"})
	id := idOf(post(t, env, p.Key, map[string]any{"title": "Home", "slug": "home", "status": "published"}))
	env.Do("PATCH", "/v1/blog-posts/"+id+"?draft=true", p.Key, map[string]any{"slug": "taken", "title": "New home"}).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts/"+id+"/publish", p.Key, nil).Problem(t, 409, "conflict")
	live := env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Home", live["title"])
	require.Equal(t, "home", live["slug"])
	require.Equal(t, true, live["has_draft"])
	versions := func() int {
		return len(env.Do("GET", "/v1/blog-posts/"+id+"/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any))
	}
	require.Equal(t, 1, versions(), "a refused publish recorded a version")
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"PATCH", "/v1/blog-posts/" + id + "?draft=maybe", map[string]any{"title": "x"}, 422},
		{"PATCH", "/v1/blog-posts/" + id + "?draft=true", map[string]any{"status": "published"}, 422},
		{"PATCH", "/v1/blog-posts/" + id + "?draft=true", map[string]any{"status": "scheduled", "scheduled_at": "2099-01-01T00:00:00Z"}, 422},
		{"PATCH", "/v1/blog-posts/" + id, map[string]any{"draft": true, "scheduled_at": "2099-01-01T00:00:00Z"}, 422},
		{"PATCH", "/v1/blog-posts/" + id + "?draft=false", map[string]any{"draft": true, "title": "x"}, 422},
		{"PATCH", "/v1/blog-posts/" + id + "?draft=true", map[string]any{"title": ""}, 422},
		{"PATCH", "/v1/blog-posts/" + id + "?draft=true", map[string]any{"category_id": 999999}, 422},
		{"PATCH", "/v1/blog-posts/" + id + "?draft=true", map[string]any{"titel": "x"}, 400},
		{"PUT", "/v1/blog-posts/" + id + "/translations/fr?draft=true", map[string]any{"title": "x", "body": "y"}, 400},
		{"PUT", "/v1/blog-posts/" + id + "/translations/french?draft=true", map[string]any{"title": "x"}, 422},
		{"POST", "/v1/blog-posts?draft=true", map[string]any{"title": "x"}, 422},
		{"POST", "/v1/blog-posts/" + id + "/publish", map[string]any{"languages": []string{}}, 422},
		{"POST", "/v1/blog-posts/" + id + "/publish", map[string]any{"languages": []string{"french"}}, 422},
		{"POST", "/v1/blog-posts/" + id + "/publish", map[string]any{"languages": []string{"fr", "fr"}}, 422},
		{"POST", "/v1/blog-posts/" + id + "/publish", map[string]any{"langs": []string{"fr"}}, 400},
		{"POST", "/v1/blog-posts/999999/publish", nil, 404},
		{"POST", "/v1/blog-posts/999999/unpublish", nil, 404},
		{"POST", "/v1/blog-posts/" + id + "/versions/99/restore", nil, 404},
		{"POST", "/v1/blog-posts/" + id + "/versions/x/restore", nil, 404},
		{"GET", "/v1/blog-posts/" + id + "?draft=yes", nil, 422},
	} {
		if res := env.Do(c.method, c.path, p.Key, c.body); res.Status != c.status {
			t.Errorf("%s %s %v: %d %s, want %d", c.method, c.path, c.body, res.Status, res.Body, c.status)
		}
	}
	env.Do("POST", "/v1/blog-posts/"+id+"/publish", ro, nil).Problem(t, 403, "forbidden")
	env.Do("POST", "/v1/blog-posts/"+id+"/unpublish", ro, nil).Problem(t, 403, "forbidden")
	env.Do("PATCH", "/v1/blog-posts/"+id+"?draft=true", ro, map[string]any{"title": "x"}).Problem(t, 403, "forbidden")
	env.Do("POST", "/v1/blog-posts/"+id+"/versions/1/restore", ro, nil).Problem(t, 403, "forbidden")
	env.Do("GET", "/v1/blog-posts/"+id+"/versions", ro, nil).Expect(t, 200)

	// Nothing changed: the draft, the live post, the versions.
	draft := env.Do("GET", "/v1/blog-posts/"+id+"?draft=true", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "New home", draft["title"])
	require.Equal(t, map[string]string{"en": "New home"}, texts(draft))
	live = env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Home", live["title"])
	require.Equal(t, "published", live["status"])
	require.Equal(t, 1, versions())

	// Deleting the post drops its draft and versions.
	env.Do("DELETE", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 204)
	require.Equal(t, 0, query[int](t, p, `SELECT (SELECT count(*) FROM drafts) + (SELECT count(*) FROM versions)`))
}
