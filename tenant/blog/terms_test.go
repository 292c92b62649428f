package blog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestCategories(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	a := term(t, env, p.Key, "categories", "Travel Tips")
	require.Equal(t, "travel-tips", a["slug"])
	require.Len(t, a, 3, "a category is {id, name, slug}: %v", a)
	b := term(t, env, p.Key, "categories", "Travel tips")
	require.Equal(t, "travel-tips-2", b["slug"])
	c := env.Do("POST", "/v1/categories", p.Key, map[string]any{"name": "Food", "slug": "eat"}).Expect(t, 201).JSON(t)
	require.Equal(t, "eat", c["slug"])
	env.Do("POST", "/v1/categories", p.Key, map[string]any{"name": "X", "slug": "eat"}).Problem(t, 409, "conflict")
	env.Do("POST", "/v1/categories", p.Key, map[string]any{"slug": "x"}).Problem(t, 400, "bad_request")
	env.Do("POST", "/v1/categories", p.Key, map[string]any{"name": ""}).Problem(t, 422, "validation_failed")
	env.Do("POST", "/v1/categories", p.Key, map[string]any{"name": "x", "slug": "Bad Slug"}).Problem(t, 422, "validation_failed")

	// The list is paginated, newest first.
	l := env.Do("GET", "/v1/categories?limit=2", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, []any{c, b}, l["data"])
	require.Equal(t, true, l["has_more"])
	l = env.Do("GET", "/v1/categories?limit=2&cursor="+l["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, []any{a}, l["data"])
	require.Equal(t, false, l["has_more"])

	// PATCH renames; the slug changes only when given.
	up := env.Do("PATCH", "/v1/categories/"+idOf(a), p.Key, map[string]any{"name": "Trips"}).Expect(t, 200).JSON(t)
	require.Equal(t, map[string]any{"id": a["id"], "name": "Trips", "slug": "travel-tips"}, up)
	up = env.Do("PATCH", "/v1/categories/"+idOf(a), p.Key, map[string]any{"slug": "trips"}).Expect(t, 200).JSON(t)
	require.Equal(t, "trips", up["slug"])
	env.Do("PATCH", "/v1/categories/"+idOf(a), p.Key, map[string]any{"slug": "eat"}).Problem(t, 409, "conflict")
	env.Do("PATCH", "/v1/categories/"+idOf(a), p.Key, map[string]any{"name": 3}).Problem(t, 422, "validation_failed")
	env.Do("PATCH", "/v1/categories/424242", p.Key, map[string]any{"name": "x"}).Problem(t, 404, "not_found")
	env.Do("PATCH", "/v1/categories/abc", p.Key, map[string]any{"name": "x"}).Problem(t, 404, "not_found")

	// Deleting a category leaves its posts without one.
	m := post(t, env, p.Key, map[string]any{"title": "In a category", "category_id": a["id"]})
	require.NotNil(t, m["category"])
	require.Empty(t, env.Do("DELETE", "/v1/categories/"+idOf(a), p.Key, nil).Expect(t, 204).Body)
	env.Do("DELETE", "/v1/categories/"+idOf(a), p.Key, nil).Problem(t, 404, "not_found")
	require.Nil(t, env.Do("GET", "/v1/blog-posts/"+idOf(m), p.Key, nil).Expect(t, 200).JSON(t)["category"])
}

func TestTags(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	empty := env.Do("GET", "/v1/tags", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, map[string]any{"data": []any{}}, empty)

	a := term(t, env, p.Key, "tags", "Go")
	require.Equal(t, map[string]any{"id": a["id"], "name": "Go", "slug": "go"}, a)
	b := term(t, env, p.Key, "tags", "GO!")
	require.Equal(t, "go-2", b["slug"])
	env.Do("POST", "/v1/tags", p.Key, map[string]any{"name": "x", "slug": "go"}).Problem(t, 409, "conflict")
	env.Do("POST", "/v1/tags", p.Key, map[string]any{}).Problem(t, 400, "bad_request")
	env.Do("POST", "/v1/tags", p.Key, map[string]any{"name": "x", "color": "red"}).Problem(t, 400, "bad_request")

	l := env.Do("GET", "/v1/tags", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, map[string]any{"data": []any{b, a}}, l, "wrapped in {data}, newest first")

	// Deleting a tag takes it off its posts.
	m := post(t, env, p.Key, map[string]any{"title": "Tagged", "tag_ids": []any{a["id"], b["id"]}})
	require.Len(t, m["tags"], 2)
	require.Empty(t, env.Do("DELETE", "/v1/tags/"+idOf(a), p.Key, nil).Expect(t, 204).Body)
	env.Do("DELETE", "/v1/tags/"+idOf(a), p.Key, nil).Problem(t, 404, "not_found")
	env.Do("DELETE", "/v1/tags/x", p.Key, nil).Problem(t, 404, "not_found")
	require.Equal(t, []any{b}, env.Do("GET", "/v1/blog-posts/"+idOf(m), p.Key, nil).Expect(t, 200).JSON(t)["tags"])
}

// A tag deleted while posts are being tagged with it is off every post
// afterwards: no post keeps the id of a tag that no longer exists.
func TestTagDeleteRace(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	for i := range 8 {
		tag := term(t, env, p.Key, "tags", "t")
		done := make(chan int, 1)
		go func() {
			r, err := env.TrySend(apitest.Request{Method: "POST", Path: "/v1/blog-posts", Key: p.Key, Body: map[string]any{"title": "p", "tag_ids": []any{tag["id"]}}})
			if err != nil {
				t.Error(err)
				done <- 0
				return
			}
			done <- r.Status
		}()
		if i%2 == 0 {
			env.Do("DELETE", "/v1/tags/"+idOf(tag), p.Key, nil).Expect(t, 204)
		} else {
			env.Do("PATCH", "/v1/blog-posts/p", p.Key, map[string]any{"tag_ids": []any{tag["id"]}}) // may be 404 or 422
			env.Do("DELETE", "/v1/tags/"+idOf(tag), p.Key, nil).Expect(t, 204)
		}
		status := <-done
		require.Contains(t, []int{201, 422}, status)
	}
	dangling := query[int64](t, p, `SELECT count(*) FROM blog_posts p, unnest(p.tag_ids) AS t (id)
		WHERE NOT EXISTS (SELECT 1 FROM blog_terms WHERE id = t.id)`)
	require.Equal(t, int64(0), dangling)
}
