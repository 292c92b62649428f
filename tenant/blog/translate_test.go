package blog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestTranslatePost(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{"title": "Hello", "content": "<p>Body</p>", "excerpt": "Ex",
		"meta_title": "MT", "meta_description": "MD", "language_code": "en"})
	id := idOf(m)
	j := env.Do("POST", "/v1/blog-posts/"+id+"/translate", p.Key, map[string]any{"languages": []string{"fr", "es"}}).Expect(t, 202).JSON(t)
	require.Equal(t, "translation.batch", j["type"])
	require.Equal(t, "pending", j["status"])
	require.Equal(t, map[string]int64{"translate_language": 1400}, ledger(t, p, j["id"].(string)), "7 credits per language")

	env.JobSteps(t, p.Key, j["id"].(string), []string{"fr", "es"})
	job := env.WaitJob(t, p.Key, j["id"].(string))
	require.Equal(t, "completed", job["status"], "job: %v", job)
	require.Equal(t, map[string]any{"keys_translated": float64(5), "locales": []any{"fr", "es"}, "post_id": m["id"]}, job["result"])

	got := env.Do("GET", "/v1/blog-posts/"+id+"?lang=es", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, []string{"en", "es", "fr"}, langs(got))
	require.Equal(t, "[es] Hello", got["title"])
	require.Equal(t, "[es] Ex", got["excerpt"])
	require.Equal(t, "[es] <p>Body</p>", got["content"])
	require.Equal(t, "[es] MT", got["meta_title"])
	require.Equal(t, "[es] MD", got["meta_description"])
	require.Equal(t, "[fr] Hello", env.Do("GET", "/v1/blog-posts/"+id+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)["title"])
	require.Equal(t, map[string]int64{"translate_language": 1400}, ledger(t, p, j["id"].(string)), "charged once")

	// Translating again replaces the language's text.
	env.Do("PATCH", "/v1/blog-posts/"+id, p.Key, map[string]any{"title": "Hello v2"}).Expect(t, 200)
	j = env.Do("POST", "/v1/blog-posts/hello/translate", p.Key, map[string]any{"languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	require.Equal(t, "completed", env.WaitJob(t, p.Key, j["id"].(string))["status"])
	require.Equal(t, "[fr] Hello v2", env.Do("GET", "/v1/blog-posts/"+id+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)["title"])
}

func TestTranslateValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{"title": "Hello", "language_code": "en"})
	path := "/v1/blog-posts/" + idOf(m) + "/translate"
	for name, c := range map[string]struct {
		body   any
		status int
	}{
		"no languages":  {map[string]any{}, 400},
		"unknown field": {map[string]any{"languages": []string{"fr"}, "keys": []string{"a"}}, 400},
		"empty":         {map[string]any{"languages": []string{}}, 422},
		"own language":  {map[string]any{"languages": []string{"en"}}, 422},
		"twice":         {map[string]any{"languages": []string{"fr", "fr"}}, 422},
		"bad code":      {map[string]any{"languages": []string{"french!"}}, 422},
		"not an array":  {map[string]any{"languages": "fr"}, 422},
		"too many":      {map[string]any{"languages": strings.Fields("fr de es it pt nl sv da fi no pl cs sk hu ro bg el hr sl lt lv")}, 422},
	} {
		t.Run(name, func(t *testing.T) {
			code := "bad_request"
			if c.status == 422 {
				code = "validation_failed"
			}
			e := env.Do("POST", path, p.Key, c.body).Problem(t, c.status, code)
			if c.status == 422 {
				require.Contains(t, e["errors"], "languages")
			}
		})
	}
	env.Do("POST", "/v1/blog-posts/424242/translate", p.Key, map[string]any{"languages": []string{"fr"}}).Problem(t, 404, "not_found")

	poor := env.NewProject("free") // 100 credits: 15 languages cost 105
	pm := post(t, env, poor.Key, map[string]any{"title": "Hello", "language_code": "en"})
	e := env.Do("POST", "/v1/blog-posts/"+idOf(pm)+"/translate", poor.Key,
		map[string]any{"languages": strings.Fields("fr de es it pt nl sv da fi no pl cs sk hu ro")}).Problem(t, 402, "insufficient_credits")
	require.Equal(t, float64(105), e["cost"])
	require.Equal(t, int64(0), query[int64](t, poor, `SELECT count(*) FROM jobs`))
	require.Equal(t, int64(0), query[int64](t, p, `SELECT count(*) FROM jobs`))
}

// A post deleted before its translation runs ends the job failed with
// not_found, refunded.
func TestTranslateDeletedPost(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers yet: the job waits
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{"title": "Gone soon"})
	j := env.Do("POST", "/v1/blog-posts/"+idOf(m)+"/translate", p.Key, map[string]any{"languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	env.Do("DELETE", "/v1/blog-posts/"+idOf(m), p.Key, nil).Expect(t, 204)
	env.Instance(apitest.WithWorkers())
	job := env.WaitJob(t, p.Key, j["id"].(string))
	require.Equal(t, "failed", job["status"])
	require.Equal(t, "not_found", job["error"].(map[string]any)["code"])
	require.Equal(t, int64(0), ledger(t, p, j["id"].(string))["translate_language"], "refunded")
}
