package blog_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// blog_post.published fires once per publication, whatever the path, in
// the transaction of the change, with the post as GET shows it.
func TestPublishedEvents(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	count := func() int { return len(events(t, p, "blog_post.published")) }

	a := post(t, env, p.Key, map[string]any{"title": "Born live", "status": "published"})
	require.Equal(t, 1, count())
	ev := events(t, p, "blog_post.published")[0]
	checkPost(t, ev)
	require.Equal(t, a["id"], ev["id"])
	require.Equal(t, "published", ev["status"])
	require.Equal(t, a["published_at"], ev["published_at"])

	b := post(t, env, p.Key, map[string]any{"title": "Draft first"})
	env.Do("PATCH", "/v1/blog-posts/"+idOf(b), p.Key, map[string]any{"title": "Edited"}).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts/"+idOf(b)+"/schedule", p.Key, map[string]any{"scheduled_at": time.Now().Add(time.Hour).Format(time.RFC3339)}).Expect(t, 200)
	require.Equal(t, 1, count(), "drafts, edits and schedules are no publication")
	env.Do("POST", "/v1/blog-posts/"+idOf(b)+"/publish", p.Key, nil).Expect(t, 200)
	require.Equal(t, 2, count())
	require.Equal(t, "Edited", events(t, p, "blog_post.published")[1]["title"])
	env.Do("POST", "/v1/blog-posts/"+idOf(b)+"/publish", p.Key, nil).Expect(t, 200)
	env.Do("PATCH", "/v1/blog-posts/"+idOf(b), p.Key, map[string]any{"status": "published"}).Expect(t, 200)
	require.Equal(t, 2, count(), "publishing a published post fires nothing")
	env.Do("POST", "/v1/blog-posts/"+idOf(b)+"/archive", p.Key, nil).Expect(t, 200)
	env.Do("PATCH", "/v1/blog-posts/"+idOf(b), p.Key, map[string]any{"status": "published"}).Expect(t, 200)
	require.Equal(t, 3, count(), "a republication is a publication")

	// A refused write fires nothing.
	env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "x", "status": "published", "category_id": 999}).Problem(t, 422, "validation_failed")
	require.Equal(t, 3, count())
	require.Empty(t, events(t, p, "blog_post.translated"), "a manual translation is no translation job")
}

// Events of a translation: one blog_post.translated per language, with
// the post in that language.
func TestTranslatedEvents(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	m := post(t, env, p.Key, map[string]any{"title": "Hello", "language_code": "en"})
	env.Do("PUT", "/v1/blog-posts/"+idOf(m)+"/translations/it", p.Key, map[string]any{"title": "Ciao"}).Expect(t, 200)
	j := env.Do("POST", "/v1/blog-posts/"+idOf(m)+"/translate", p.Key, map[string]any{"languages": []string{"fr", "es"}}).Expect(t, 202).JSON(t)
	require.Equal(t, "completed", env.WaitJob(t, p.Key, j["id"].(string))["status"])
	evs := events(t, p, "blog_post.translated")
	require.Len(t, evs, 2)
	// One per language, in no promised order: events of one transaction
	// share their time, and their ids order them only by time.
	byLang := map[any]map[string]any{evs[0]["lang"]: evs[0], evs[1]["lang"]: evs[1]}
	for _, lang := range []string{"fr", "es"} {
		ev := byLang[lang]
		require.NotNil(t, ev, "no blog_post.translated for %s", lang)
		checkPost(t, ev)
		require.Equal(t, m["id"], ev["id"])
		require.Equal(t, "["+lang+"] Hello", ev["title"])
	}
	require.Empty(t, events(t, p, "blog_post.published"))

	// Generation: one per target language, and the post stays a draft.
	j = env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Ciabatta", "target_languages": []string{"de"}}).Expect(t, 202).JSON(t)
	job := env.WaitJob(t, p.Key, j["id"].(string))
	require.Equal(t, "completed", job["status"])
	evs = events(t, p, "blog_post.translated")
	require.Len(t, evs, 3)
	require.Equal(t, job["result"].(map[string]any)["post_id"], evs[2]["id"])
	require.Equal(t, "de", evs[2]["lang"])
	require.Empty(t, events(t, p, "blog_post.published"))
}

// The event's envelope data is exactly the GET resource.
func TestEventDataIsTheResource(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	m := post(t, env, p.Key, map[string]any{"title": "Same", "status": "published"})
	got := env.Do("GET", "/v1/blog-posts/"+idOf(m), p.Key, nil).Expect(t, 200)
	var resource map[string]any
	require.NoError(t, json.Unmarshal(got.Body, &resource))
	require.Equal(t, resource, events(t, p, "blog_post.published")[0])
}
