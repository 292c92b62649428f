package blog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// public sends a keyless GET naming the project by header.
func public(env *apitest.Env, p *apitest.Project, path string, header ...string) *apitest.Resp {
	h := map[string]string{"X-Service-Project-Key": p.ID}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return env.Send(apitest.Request{Method: "GET", Path: path, Header: h})
}

func TestPublicReads(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cat := term(t, env, p.Key, "categories", "Guides")
	first := post(t, env, p.Key, map[string]any{"title": "First", "status": "published", "category_id": cat["id"]})
	post(t, env, p.Key, map[string]any{"title": "Draft"})
	sched := post(t, env, p.Key, map[string]any{"title": "Later", "status": "scheduled", "scheduled_at": "2099-01-01T00:00:00Z"})
	arch := post(t, env, p.Key, map[string]any{"title": "Old", "status": "published"})
	env.Do("POST", "/v1/blog-posts/"+idOf(arch)+"/archive", p.Key, nil).Expect(t, 200)
	second := post(t, env, p.Key, map[string]any{"title": "Second"})
	// Published after the first, though created later than the others:
	// the public list is by publication, newest first.
	env.Do("POST", "/v1/blog-posts/"+idOf(second)+"/publish", p.Key, nil).Expect(t, 200)
	env.Do("PUT", "/v1/blog-posts/first/translations/fr", p.Key, map[string]any{"title": "Premier"}).Expect(t, 200)

	r := public(env, p, "/v1/public/blog-posts").Expect(t, 200)
	require.Equal(t, "public, max-age=60", r.Header.Get("Cache-Control"))
	etag := r.Header.Get("ETag")
	require.NotEmpty(t, etag)
	l := r.JSON(t)
	var titles []any
	for _, x := range l["data"].([]any) {
		checkPost(t, x.(map[string]any))
		titles = append(titles, x.(map[string]any)["title"])
	}
	require.Equal(t, []any{"Second", "First"}, titles, "published posts only")
	require.Equal(t, false, l["has_more"])

	// Conditional GET: 304 with no body while nothing changed.
	nm := public(env, p, "/v1/public/blog-posts", "If-None-Match", etag)
	require.Equal(t, 304, nm.Status)
	require.Empty(t, nm.Body)
	require.Equal(t, etag, nm.Header.Get("ETag"))
	env.Do("PATCH", "/v1/blog-posts/second", p.Key, map[string]any{"title": "Second, edited"}).Expect(t, 200)
	changed := public(env, p, "/v1/public/blog-posts", "If-None-Match", etag).Expect(t, 200)
	require.NotEqual(t, etag, changed.Header.Get("ETag"))

	// Pages, filters and lang.
	p1 := public(env, p, "/v1/public/blog-posts?limit=1").Expect(t, 200).JSON(t)
	require.Equal(t, true, p1["has_more"])
	p2 := public(env, p, "/v1/public/blog-posts?limit=1&cursor="+p1["next_cursor"].(string)).Expect(t, 200).JSON(t)
	require.Equal(t, "First", p2["data"].([]any)[0].(map[string]any)["title"])
	require.Equal(t, false, p2["has_more"])
	byCat := public(env, p, "/v1/public/blog-posts?category=guides&lang=fr").Expect(t, 200).JSON(t)
	require.Len(t, byCat["data"], 1)
	require.Equal(t, "Premier", byCat["data"].([]any)[0].(map[string]any)["title"])
	drafts := public(env, p, "/v1/public/blog-posts?status=draft").Expect(t, 200).JSON(t)
	require.Len(t, drafts["data"], 2, "status is not a public filter")
	public(env, p, "/v1/public/blog-posts?cursor=eHg").Problem(t, 422, "validation_failed")

	// One post by slug: published only.
	one := public(env, p, "/v1/public/blog-posts/first?lang=fr").Expect(t, 200)
	require.Equal(t, "public, max-age=60", one.Header.Get("Cache-Control"))
	require.NotEmpty(t, one.Header.Get("ETag"))
	m := one.JSON(t)
	checkPost(t, m)
	require.Equal(t, "Premier", m["title"])
	require.Equal(t, first["id"], m["id"])
	require.Equal(t, 304, public(env, p, "/v1/public/blog-posts/first?lang=fr", "If-None-Match", one.Header.Get("ETag")).Status)
	for _, slug := range []string{"draft", sched["slug"].(string), arch["slug"].(string), "nope", idOf(first)} {
		public(env, p, "/v1/public/blog-posts/"+slug).Problem(t, 404, "not_found")
	}

	// The project by query parameter; an unknown project is 404, none 400.
	env.Do("GET", "/v1/public/blog-posts/first?project_id="+p.ID, "", nil).Expect(t, 200)
	env.Send(apitest.Request{Method: "GET", Path: "/v1/public/blog-posts", Header: map[string]string{"X-Service-Project-Key": "prj_000000000000000000000000"}}).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/public/blog-posts", "", nil).Problem(t, 400, "bad_request")
	// Another project's posts are not this one's.
	other := env.NewProject("build")
	require.Empty(t, public(env, other, "/v1/public/blog-posts").Expect(t, 200).JSON(t)["data"])
	public(env, other, "/v1/public/blog-posts/first").Problem(t, 404, "not_found")
}
