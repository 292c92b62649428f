package blog_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestCreateManualPost(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cat := term(t, env, p.Key, "categories", "News")
	tagA := term(t, env, p.Key, "tags", "Go")
	tagB := term(t, env, p.Key, "tags", "Postgres")

	m := post(t, env, p.Key, map[string]any{
		"title": "Hello World", "content": "<p>Hi <strong>there</strong></p>", "language_code": "en",
		"excerpt": "A first post", "category_id": cat["id"], "tag_ids": []any{tagB["id"], tagA["id"], tagA["id"]},
		"featured_image": "https://cdn.example.com/a.png", "meta_title": "Hello", "meta_description": "The first post",
	})
	checkPost(t, m)
	require.Equal(t, "hello-world", m["slug"])
	require.Equal(t, "draft", m["status"])
	require.Nil(t, m["published_at"])
	require.Nil(t, m["scheduled_at"])
	require.Equal(t, "Hello World", m["title"])
	require.Equal(t, "<p>Hi <strong>there</strong></p>", m["content"])
	require.Equal(t, "A first post", m["excerpt"])
	require.Equal(t, "Hello", m["meta_title"])
	require.Equal(t, "The first post", m["meta_description"])
	require.Equal(t, "https://cdn.example.com/a.png", m["featured_image"])
	require.Equal(t, map[string]any{"id": cat["id"], "name": "News", "slug": "news"}, m["category"])
	require.Equal(t, []any{tagA, tagB}, m["tags"], "tags once each, by name")
	require.Equal(t, []string{"en"}, langs(m))
	// A manual post costs no credits.
	require.Equal(t, int64(0), query[int64](t, p, `SELECT count(*) FROM credit_ledger`))

	// Read by id and by slug.
	byID := env.Do("GET", "/v1/blog-posts/"+idOf(m), p.Key, nil).Expect(t, 200).JSON(t)
	bySlug := env.Do("GET", "/v1/blog-posts/hello-world", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, m, byID)
	require.Equal(t, m, bySlug)
	env.Do("GET", "/v1/blog-posts/999999", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/blog-posts/no-such-post", p.Key, nil).Problem(t, 404, "not_found")

	// Defaults: the project's language, no category, no tags, no image;
	// status published sets published_at.
	pub := post(t, env, p.Key, map[string]any{"type": "manual", "title": "Live", "status": "published"})
	checkPost(t, pub)
	require.Equal(t, "published", pub["status"])
	require.NotNil(t, pub["published_at"])
	require.Nil(t, pub["category"])
	require.Nil(t, pub["featured_image"])
	require.Equal(t, []any{}, pub["tags"])
	require.Equal(t, []string{p.DefaultLanguage}, langs(pub))
	require.Equal(t, p.DefaultLanguage, pub["language_code"])

	// Another project never sees the post.
	other := env.NewProject("build")
	env.Do("GET", "/v1/blog-posts/"+idOf(m), other.Key, nil).Problem(t, 404, "not_found")
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	post(t, env, p.Key, map[string]any{"title": "Taken", "slug": "taken"})
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	cases := []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"no title", map[string]any{"content": "x"}, 400, ""},
		{"unknown field", map[string]any{"title": "x", "colour": "red"}, 400, ""},
		{"ai field on manual", map[string]any{"title": "x", "topic": "y"}, 400, ""},
		{"manual field on ai", map[string]any{"type": "ai", "topic": "y", "title": "x"}, 400, ""},
		{"ai without topic", map[string]any{"type": "ai"}, 400, ""},
		{"not an object", []any{1}, 400, ""},
		{"bad type", map[string]any{"type": "robot", "title": "x"}, 422, "type"},
		{"empty title", map[string]any{"title": "  "}, 422, "title"},
		{"long title", map[string]any{"title": strings.Repeat("a", 301)}, 422, "title"},
		{"title not a string", map[string]any{"title": 5}, 422, "title"},
		{"title of markup only", map[string]any{"title": "<b></b><script>x</script>"}, 422, "title"},
		{"bad slug", map[string]any{"title": "x", "slug": "Not A Slug"}, 422, "slug"},
		{"numeric slug", map[string]any{"title": "x", "slug": "2024"}, 422, "slug"},
		{"bad language", map[string]any{"title": "x", "language_code": "english!"}, 422, "language_code"},
		{"bad status", map[string]any{"title": "x", "status": "live"}, 422, "status"},
		{"scheduled without time", map[string]any{"title": "x", "status": "scheduled"}, 422, "scheduled_at"},
		{"scheduled in the past", map[string]any{"title": "x", "status": "scheduled", "scheduled_at": past}, 422, "scheduled_at"},
		{"scheduled_at not a time", map[string]any{"title": "x", "scheduled_at": "tomorrow"}, 422, "scheduled_at"},
		{"scheduled_at with draft", map[string]any{"title": "x", "status": "draft", "scheduled_at": future}, 422, "scheduled_at"},
		{"unknown category", map[string]any{"title": "x", "category_id": 424242}, 422, "category_id"},
		{"unknown tag", map[string]any{"title": "x", "tag_ids": []int{424242}}, 422, "tag_ids"},
		{"tag ids not integers", map[string]any{"title": "x", "tag_ids": []string{"a"}}, 422, "tag_ids"},
		{"javascript image", map[string]any{"title": "x", "featured_image": "javascript:alert(1)"}, 422, "featured_image"},
		{"relative image", map[string]any{"title": "x", "featured_image": "/a.png"}, 422, "featured_image"},
		{"long meta title", map[string]any{"title": "x", "meta_title": strings.Repeat("m", 301)}, 422, "meta_title"},
		{"ai bad target", map[string]any{"type": "ai", "topic": "t", "target_languages": []string{"fr", "fr"}}, 422, "target_languages"},
		{"ai target is source", map[string]any{"type": "ai", "topic": "t", "language_code": "fr", "target_languages": []string{"fr"}}, 422, "target_languages"},
		{"ai empty topic", map[string]any{"type": "ai", "topic": " "}, 422, "topic"},
		{"ai too many keywords", map[string]any{"type": "ai", "topic": "t", "keywords": strings.Split(strings.Repeat("k,", 21), ",")}, 422, "keywords"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := "bad_request"
			if c.status == 422 {
				code = "validation_failed"
			}
			m := env.Do("POST", "/v1/blog-posts", p.Key, c.body).Problem(t, c.status, code)
			if c.field != "" {
				require.Contains(t, m["errors"], c.field, "errors must name %s: %v", c.field, m)
			}
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		env.Send(apitest.Request{Method: "POST", Path: "/v1/blog-posts", Key: p.Key, Body: `{"title":"x"}`,
			Header: map[string]string{"Content-Type": "text/plain"}}).Problem(t, 400, "bad_request")
	})
	t.Run("slug taken", func(t *testing.T) {
		m := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "x", "slug": "taken"}).Problem(t, 409, "conflict")
		require.Contains(t, m["detail"], "taken")
	})
	require.Equal(t, int64(1), query[int64](t, p, `SELECT count(*) FROM blog_posts`), "a refused create writes nothing")
}

func TestSlugCollisions(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	var slugs []any
	for range 3 {
		slugs = append(slugs, post(t, env, p.Key, map[string]any{"title": "Café Crème!"})["slug"])
	}
	require.Equal(t, []any{"cafe-creme", "cafe-creme-2", "cafe-creme-3"}, slugs)
	// A numeric title never gives a numeric slug: /blog-posts/2024 is an id.
	require.Equal(t, "post-2024", post(t, env, p.Key, map[string]any{"title": "2024"})["slug"])
	// A given slug that is free is kept; taken, it is a conflict.
	own := post(t, env, p.Key, map[string]any{"title": "Other", "slug": "my-own"})
	require.Equal(t, "my-own", own["slug"])
	env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Else", "slug": "cafe-creme"}).Problem(t, 409, "conflict")
	env.Do("PATCH", "/v1/blog-posts/my-own", p.Key, map[string]any{"slug": "cafe-creme-2"}).Problem(t, 409, "conflict")
	env.Do("PATCH", "/v1/blog-posts/my-own", p.Key, map[string]any{"slug": "my-own"}).Expect(t, 200) // its own slug
	require.Equal(t, "renamed", env.Do("PATCH", "/v1/blog-posts/my-own", p.Key, map[string]any{"slug": "renamed"}).Expect(t, 200).JSON(t)["slug"])
	env.Do("GET", "/v1/blog-posts/renamed", p.Key, nil).Expect(t, 200)

	// Concurrent creates of one title get distinct slugs, none a 409.
	var wg sync.WaitGroup
	got := make([]string, 6)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// No fatal helper off the test goroutine: a failure lands in
			// got and fails the checks below.
			r, err := env.TrySend(apitest.Request{Method: "POST", Path: "/v1/blog-posts", Key: p.Key, Body: map[string]any{"title": "Race"}})
			if err != nil {
				got[i] = err.Error()
				return
			}
			var m struct {
				Slug string `json:"slug"`
			}
			if err := json.Unmarshal(r.Body, &m); r.Status != 201 || err != nil {
				got[i] = fmt.Sprintf("status %d: %s", r.Status, r.Body)
				return
			}
			got[i] = m.Slug
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, s := range got {
		require.True(t, s == "race" || strings.HasPrefix(s, "race-"), "slug %q", s)
		require.False(t, seen[s], "slug %s given twice", s)
		seen[s] = true
	}
}

func TestLanguages(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{"title": "Hello", "content": "<p>Hi</p>", "excerpt": "Ex", "language_code": "en"})
	id := idOf(m)

	fr := env.Do("PUT", "/v1/blog-posts/"+id+"/translations/fr", p.Key, map[string]any{
		"title": "Bonjour", "content": "<p>Salut</p>", "excerpt": "Ré", "meta_title": "MT", "meta_description": "MD",
	}).Expect(t, 200).JSON(t)
	checkPost(t, fr)
	require.Equal(t, "Bonjour", fr["title"], "the answer is in the language written")
	require.Equal(t, "fr", fr["lang"])
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/de", p.Key, map[string]any{"title": "Hallo"}).Expect(t, 200)

	got := env.Do("GET", "/v1/blog-posts/"+id+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Bonjour", got["title"])
	require.Equal(t, "<p>Salut</p>", got["content"])
	require.Equal(t, "Ré", got["excerpt"])
	require.Equal(t, "MT", got["meta_title"])
	require.Equal(t, "MD", got["meta_description"])
	require.Equal(t, []string{"en", "de", "fr"}, langs(got), "every locale, the original first")

	// A language the post lacks falls back to the original.
	es := env.Do("GET", "/v1/blog-posts/"+id+"?lang=es", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Hello", es["title"])
	require.Equal(t, "en", es["lang"])
	plain := env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Hello", plain["title"])
	env.Do("GET", "/v1/blog-posts/"+id+"?lang=not%20a%20lang", p.Key, nil).Problem(t, 422, "validation_failed")

	// The list fills the flat fields the same way.
	l := env.Do("GET", "/v1/blog-posts?lang=de", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Hallo", l["data"].([]any)[0].(map[string]any)["title"])

	// PATCH writes the original language; PUT of the original language too.
	env.Do("PATCH", "/v1/blog-posts/"+id, p.Key, map[string]any{"title": "Hello again"}).Expect(t, 200)
	require.Equal(t, "Bonjour", env.Do("GET", "/v1/blog-posts/"+id+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)["title"])
	en := env.Do("PUT", "/v1/blog-posts/"+id+"/translations/en", p.Key, map[string]any{"title": "Hi"}).Expect(t, 200).JSON(t)
	require.Equal(t, "Hi", en["title"])
	require.Equal(t, "", en["content"], "PUT replaces the whole text of the language")

	// Errors of PUT translations.
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/xx_!", p.Key, map[string]any{"title": "x"}).Problem(t, 422, "validation_failed")
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/it", p.Key, map[string]any{"content": "x"}).Problem(t, 400, "bad_request")
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/it", p.Key, map[string]any{"title": ""}).Problem(t, 422, "validation_failed")
	env.Do("PUT", "/v1/blog-posts/424242/translations/it", p.Key, map[string]any{"title": "x"}).Problem(t, 404, "not_found")
}

func TestPatchPost(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cat := term(t, env, p.Key, "categories", "A")
	tag1 := term(t, env, p.Key, "tags", "one")
	tag2 := term(t, env, p.Key, "tags", "two")
	m := post(t, env, p.Key, map[string]any{"title": "T", "category_id": cat["id"], "tag_ids": []any{tag1["id"]},
		"featured_image": "https://example.com/i.png", "meta_title": "keep"})
	path := "/v1/blog-posts/" + idOf(m)

	up := env.Do("PATCH", path, p.Key, map[string]any{"content": "<p>new</p>", "tag_ids": []any{tag2["id"]}}).Expect(t, 200).JSON(t)
	checkPost(t, up)
	require.Equal(t, "<p>new</p>", up["content"])
	require.Equal(t, "T", up["title"], "absent fields stay")
	require.Equal(t, "keep", up["meta_title"])
	require.Equal(t, []any{tag2}, up["tags"])
	require.NotNil(t, up["category"])

	// null removes the category and the image.
	up = env.Do("PATCH", path, p.Key, map[string]any{"category_id": nil, "featured_image": nil, "tag_ids": []any{}}).Expect(t, 200).JSON(t)
	require.Nil(t, up["category"])
	require.Nil(t, up["featured_image"])
	require.Equal(t, []any{}, up["tags"])
	up = env.Do("PATCH", path, p.Key, map[string]any{"category_id": cat["id"]}).Expect(t, 200).JSON(t)
	require.Equal(t, cat["id"], up["category"].(map[string]any)["id"])

	// Status through PATCH, with the same rules as the actions.
	up = env.Do("PATCH", path, p.Key, map[string]any{"status": "published"}).Expect(t, 200).JSON(t)
	require.Equal(t, "published", up["status"])
	require.NotNil(t, up["published_at"])
	up = env.Do("PATCH", path, p.Key, map[string]any{"status": "draft"}).Expect(t, 200).JSON(t)
	require.Equal(t, "draft", up["status"])
	require.Nil(t, up["published_at"])

	for name, c := range map[string]struct {
		body   any
		status int
		field  string
	}{
		"empty title":        {map[string]any{"title": ""}, 422, "title"},
		"content not text":   {map[string]any{"content": 5}, 422, "content"},
		"bad status":         {map[string]any{"status": "gone"}, 422, "status"},
		"scheduled no time":  {map[string]any{"status": "scheduled"}, 422, "scheduled_at"},
		"time without state": {map[string]any{"scheduled_at": time.Now().Add(time.Hour).Format(time.RFC3339)}, 422, "scheduled_at"},
		"category not int":   {map[string]any{"category_id": "a"}, 422, "category_id"},
		"unknown category":   {map[string]any{"category_id": 999}, 422, "category_id"},
		"unknown tag":        {map[string]any{"tag_ids": []int{999}}, 422, "tag_ids"},
		"bad image":          {map[string]any{"featured_image": "ftp://x/y"}, 422, "featured_image"},
		"unknown field":      {map[string]any{"language_code": "fr"}, 400, ""},
		"invalid json":       {"{", 400, ""},
	} {
		t.Run(name, func(t *testing.T) {
			code := "bad_request"
			if c.status == 422 {
				code = "validation_failed"
			}
			e := env.Do("PATCH", path, p.Key, c.body).Problem(t, c.status, code)
			if c.field != "" {
				require.Contains(t, e["errors"], c.field)
			}
		})
	}
	env.Do("PATCH", "/v1/blog-posts/nope", p.Key, map[string]any{"title": "x"}).Problem(t, 404, "not_found")
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{"title": "Flow"})
	path := "/v1/blog-posts/" + idOf(m)

	pub := env.Do("POST", path+"/publish", p.Key, nil).Expect(t, 200).JSON(t)
	checkPost(t, pub)
	require.Equal(t, "published", pub["status"])
	require.NotNil(t, pub["published_at"])
	again := env.Do("POST", "/v1/blog-posts/flow/publish", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, pub["published_at"], again["published_at"], "publishing a published post changes nothing")

	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	sch := env.Do("POST", path+"/schedule", p.Key, map[string]any{"scheduled_at": at.Format(time.RFC3339)}).Expect(t, 200).JSON(t)
	require.Equal(t, "scheduled", sch["status"])
	require.Equal(t, at.Format(time.RFC3339), sch["scheduled_at"])
	require.Nil(t, sch["published_at"])

	env.Do("POST", path+"/schedule", p.Key, map[string]any{"scheduled_at": time.Now().Add(-time.Second).Format(time.RFC3339)}).Problem(t, 422, "validation_failed")
	env.Do("POST", path+"/schedule", p.Key, map[string]any{"scheduled_at": "soon"}).Problem(t, 422, "validation_failed")
	env.Do("POST", path+"/schedule", p.Key, map[string]any{}).Problem(t, 400, "bad_request")
	env.Do("POST", path+"/schedule", p.Key, nil).Problem(t, 400, "bad_request")

	arc := env.Do("POST", path+"/archive", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "archived", arc["status"])
	require.Nil(t, arc["scheduled_at"])
	require.Equal(t, "published", env.Do("POST", path+"/publish", p.Key, nil).Expect(t, 200).JSON(t)["status"])

	for _, action := range []string{"publish", "archive"} {
		env.Do("POST", "/v1/blog-posts/424242/"+action, p.Key, nil).Problem(t, 404, "not_found")
	}
	env.Do("POST", "/v1/blog-posts/424242/schedule", p.Key, map[string]any{"scheduled_at": at.Format(time.RFC3339)}).Problem(t, 404, "not_found")
	r := env.Do("GET", path+"/publish", p.Key, nil)
	r.Problem(t, 400, "bad_request") // known route, wrong method
}

func TestListPosts(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cat := term(t, env, p.Key, "categories", "Recipes")
	tag := term(t, env, p.Key, "tags", "Vegan")
	var ids []string
	for i := range 5 {
		body := map[string]any{"title": fmt.Sprintf("Post %d", i)}
		if i%2 == 0 {
			body["category_id"], body["tag_ids"], body["status"] = cat["id"], []any{tag["id"]}, "published"
		}
		ids = append(ids, idOf(post(t, env, p.Key, body)))
	}
	titles := func(l map[string]any) []string {
		var out []string
		for _, x := range l["data"].([]any) {
			checkPost(t, x.(map[string]any))
			out = append(out, x.(map[string]any)["title"].(string))
		}
		return out
	}
	all := env.Do("GET", "/v1/blog-posts", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, []string{"Post 4", "Post 3", "Post 2", "Post 1", "Post 0"}, titles(all), "newest first")
	require.Equal(t, false, all["has_more"])
	require.Nil(t, all["next_cursor"])

	// Pages.
	p1 := env.Do("GET", "/v1/blog-posts?limit=2", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, []string{"Post 4", "Post 3"}, titles(p1))
	require.Equal(t, true, p1["has_more"])
	p2 := env.Do("GET", "/v1/blog-posts?limit=2&cursor="+p1["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, []string{"Post 2", "Post 1"}, titles(p2))

	// Filters.
	for q, want := range map[string][]string{
		"status=published":              {"Post 4", "Post 2", "Post 0"},
		"status=draft":                  {"Post 3", "Post 1"},
		"status=archived":               nil,
		"category=" + idOf(cat):         {"Post 4", "Post 2", "Post 0"},
		"category=recipes":              {"Post 4", "Post 2", "Post 0"},
		"category=nope":                 nil,
		"tag=" + idOf(tag):              {"Post 4", "Post 2", "Post 0"},
		"tag=vegan":                     {"Post 4", "Post 2", "Post 0"},
		"ids=" + ids[1] + "," + ids[3]:  {"Post 3", "Post 1"},
		"ids=" + ids[0] + "&tag=vegan":  {"Post 0"},
		"status=draft&category=recipes": nil,
	} {
		l := env.Do("GET", "/v1/blog-posts?"+q, p.Key, nil).Expect(t, 200).JSON(t)
		require.Equal(t, want, titles(l), q)
	}
	for _, q := range []string{"status=live", "ids=a,b", "ids=-1", "limit=0", "limit=101", "cursor=!!", "lang=???"} {
		env.Do("GET", "/v1/blog-posts?"+q, p.Key, nil).Problem(t, 422, "validation_failed")
	}
}

func TestDeletePost(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	tag := term(t, env, p.Key, "tags", "x")
	m := post(t, env, p.Key, map[string]any{"title": "Bye", "tag_ids": []any{tag["id"]}})
	env.Do("PUT", "/v1/blog-posts/bye/translations/fr", p.Key, map[string]any{"title": "Salut"}).Expect(t, 200)
	r := env.Do("DELETE", "/v1/blog-posts/bye", p.Key, nil).Expect(t, 204)
	require.Empty(t, r.Body)
	env.Do("GET", "/v1/blog-posts/"+idOf(m), p.Key, nil).Problem(t, 404, "not_found")
	env.Do("DELETE", "/v1/blog-posts/"+idOf(m), p.Key, nil).Problem(t, 404, "not_found")
	require.Equal(t, int64(0), query[int64](t, p, `SELECT count(*) FROM blog_posts`))
	require.Equal(t, int64(1), query[int64](t, p, `SELECT count(*) FROM blog_terms WHERE kind = 'tag'`), "the tag itself stays")
}

func TestScopes(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{"title": "Scoped"})
	path := "/v1/blog-posts/" + idOf(m)
	read := p.NewKey(false, "blog:read")
	write := p.NewKey(false, "blog:write")
	none := p.NewKey(false, "content:read")

	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/blog-posts"}, {"GET", path}, {"GET", "/v1/categories"}, {"GET", "/v1/tags"},
	} {
		env.Do(r.method, r.path, read, nil).Expect(t, 200)
		e := env.Do(r.method, r.path, none, nil).Problem(t, 403, "forbidden")
		require.Contains(t, e["detail"], "blog:read")
		env.Do(r.method, r.path, "", nil).Problem(t, 401, "unauthorized")
	}
	writes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/blog-posts", map[string]any{"title": "x"}},
		{"PATCH", path, map[string]any{"title": "y"}},
		{"POST", path + "/publish", nil},
		{"POST", path + "/schedule", map[string]any{"scheduled_at": time.Now().Add(time.Hour).Format(time.RFC3339)}},
		{"POST", path + "/archive", nil},
		{"PUT", path + "/translations/fr", map[string]any{"title": "x"}},
		{"POST", path + "/translate", map[string]any{"languages": []string{"fr"}}},
		{"POST", "/v1/categories", map[string]any{"name": "c"}},
		{"POST", "/v1/tags", map[string]any{"name": "t"}},
		{"DELETE", path, nil},
	}
	for _, w := range writes {
		e := env.Do(w.method, w.path, read, w.body).Problem(t, 403, "forbidden")
		require.Equal(t, "this key lacks the scope blog:write", e["detail"], w.path)
	}
	require.Equal(t, "Scoped", query[string](t, p, `SELECT texts->'en'->>'title' FROM blog_posts`), "a refused write changes nothing")
	env.Do("POST", path+"/publish", write, nil).Expect(t, 200)
	env.Do("GET", path, write, nil).Problem(t, 403, "forbidden")
}

// A create retried with the same Idempotency-Key makes one post.
func TestCreateIdempotent(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	req := apitest.Request{Method: "POST", Path: "/v1/blog-posts", Key: p.Key, Body: map[string]any{"title": "Once"},
		Header: map[string]string{"Idempotency-Key": "create-once"}}
	first := env.Send(req).Expect(t, 201)
	again := env.Send(req).Expect(t, 201)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.Body, again.Body)
	require.Equal(t, int64(1), query[int64](t, p, `SELECT count(*) FROM blog_posts`))
	req.Body = map[string]any{"title": "Other"}
	env.Send(req).Problem(t, 409, "idempotency_conflict")
}
