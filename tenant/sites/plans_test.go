package sites_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// A content plan is generated, stored, listed and read, and its items
// become blog posts.
func TestContentPlan(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	j := env.Do("POST", "/v1/content-plans", p.Key, map[string]any{
		"topic": "Sourdough for beginners", "count": 5, "keywords": []string{"starter", "flour"}, "language_code": "en",
	}).Expect(t, 202).JSON(t)
	require.Equal(t, "content_plan.generate", j["type"])
	id := str(j, "id")
	require.Equal(t, map[string]int64{"content_plan": 2000}, ledger(t, p, id), "20 credits at submit")

	job := env.WaitJob(t, p.Key, id)
	require.Equal(t, "completed", job["status"], "job: %v", job)
	res := job["result"].(map[string]any)
	require.ElementsMatch(t, []string{"items"}, keysOf(res))
	items := res["items"].([]any)
	require.Len(t, items, 5)
	slugs := map[string]bool{}
	for _, x := range items {
		it := x.(map[string]any)
		require.ElementsMatch(t, []string{"title", "slug", "summary", "keywords"}, keysOf(it))
		require.NotEmpty(t, it["title"])
		require.NotEmpty(t, it["summary"])
		require.Regexp(t, `^[a-z0-9][a-z0-9-]*$`, it["slug"])
		require.False(t, slugs[str(it, "slug")], "slugs are unique within the plan")
		slugs[str(it, "slug")] = true
	}
	require.Equal(t, map[string]int64{"content_plan": 2000}, ledger(t, p, id), "charged once")

	list := env.Do("GET", "/v1/content-plans", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, false, list["has_more"])
	require.Len(t, list["data"], 1)
	plan := list["data"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"id", "topic", "language_code", "items", "job_id", "created_at"}, keysOf(plan))
	require.Equal(t, "Sourdough for beginners", plan["topic"])
	require.Equal(t, "en", plan["language_code"])
	require.Equal(t, id, plan["job_id"])
	require.Equal(t, items, plan["items"])
	got := env.Do("GET", "/v1/content-plans/"+idOf(plan["id"]), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, plan, got)
	require.Len(t, env.Do("GET", "/v1/content-plans?job_id="+id, p.Key, nil).Expect(t, 200).JSON(t)["data"], 1)
	require.Empty(t, env.Do("GET", "/v1/content-plans?job_id=job_other", p.Key, nil).Expect(t, 200).JSON(t)["data"])

	// Item 1 becomes a blog post, charged as POST /blog-posts type ai.
	base := "/v1/content-plans/" + idOf(plan["id"]) + "/items/"
	bj := env.Do("POST", base+"1/generate", p.Key, nil).Expect(t, 202).JSON(t)
	require.Equal(t, "blog_post.generate", bj["type"])
	require.Equal(t, map[string]int64{"blog_post": 6000}, ledger(t, p, str(bj, "id")))
	done := env.WaitJob(t, p.Key, str(bj, "id"))
	require.Equal(t, "completed", done["status"], "job: %v", done)
	post := env.Do("GET", "/v1/blog-posts/"+idOf(done["result"].(map[string]any)["post_id"]), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "draft", post["status"])
	require.Equal(t, "en", post["language_code"])
	// With a body: target languages are charged too.
	tj := env.Do("POST", base+"0/generate", p.Key, map[string]any{"target_languages": []string{"fr"}, "tone": "friendly"}).Expect(t, 202).JSON(t)
	require.Equal(t, map[string]int64{"blog_post": 6000, "translate_language": 700}, ledger(t, p, str(tj, "id")))

	// No such item or plan: 404; a bad body: 422.
	for _, path := range []string{base + "5/generate", base + "-1/generate", base + "x/generate", base + "+1/generate",
		"/v1/content-plans/999/items/0/generate", "/v1/content-plans/x/items/0/generate"} {
		env.Do("POST", path, p.Key, nil).Problem(t, 404, "not_found")
	}
	env.Do("POST", base+"0/generate", p.Key, map[string]any{"target_languages": []string{"en"}}).Problem(t, 422, "validation_failed")
	env.Do("GET", "/v1/content-plans/999", p.Key, nil).Problem(t, 404, "not_found")
}

func TestContentPlanValidationAndScopes(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	for _, tc := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"count": 3}, 400},
		{map[string]any{"topic": "t"}, 400},
		{map[string]any{"topic": "t", "count": 0}, 422},
		{map[string]any{"topic": "t", "count": 51}, 422},
		{map[string]any{"topic": " ", "count": 1}, 422},
		{map[string]any{"topic": "t", "count": 1, "language_code": "english"}, 422},
		{map[string]any{"topic": "t", "count": 1, "keywords": []string{""}}, 422},
	} {
		r := env.Do("POST", "/v1/content-plans", p.Key, tc.body)
		require.Equal(t, tc.status, r.Status, fmt.Sprint(tc.body, string(r.Body)))
	}
	contentOnly := p.NewKey(false, "content:*")
	env.Do("POST", "/v1/content-plans", contentOnly, map[string]any{"topic": "t", "count": 1}).Problem(t, 403, "forbidden")
	env.Do("GET", "/v1/content-plans", contentOnly, nil).Problem(t, 403, "forbidden")
	reader := p.NewKey(false, "blog:read")
	env.Do("GET", "/v1/content-plans", reader, nil).Expect(t, 200)
	env.Do("POST", "/v1/content-plans", reader, map[string]any{"topic": "t", "count": 1}).Problem(t, 403, "forbidden")
	require.Equal(t, int64(0), spent(t, p))
}
