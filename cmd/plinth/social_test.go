package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/socialtest"
)

// Two worker processes (real plinth processes on one database, each
// working the scheduled posts' jobs) publish every scheduled post exactly
// once.
func TestScheduledPublishTwoWorkerProcesses(t *testing.T) {
	t.Parallel()
	tw := socialtest.New(t, "twitter")
	env := apitest.New(t, apitest.WithEnv(tw.Env()...)) // the API, without workers
	vars := map[string]string{
		"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage,
		"PLINTH_DEV": "1",
	}
	kv := tw.Env()
	for i := 0; i+1 < len(kv); i += 2 {
		vars[kv[i]] = kv[i+1]
	}
	type post struct {
		key string
		id  any
	}
	var posts []post
	var keys []string
	for range 2 {
		p := env.NewProject("build")
		socialtest.Connect(t, env, p.Key, tw)
		keys = append(keys, p.Key)
	}
	// An hour ahead, made due once every post is scheduled: the twenty
	// requests may take longer than any fixed margin on a loaded machine.
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	for j, key := range keys {
		for i := range 10 {
			created := env.Do("POST", "/v1/social-posts", key, map[string]any{"title": "t", "content": fmt.Sprintf("project %d #%d", j, i),
				"platforms": []string{"twitter"}, "scheduled_at": at}).Expect(t, 201).JSON(t)
			posts = append(posts, post{key, created["id"]})
		}
	}
	env.DueNow(t, "social.publish_scheduled", map[string]any{})
	_, out1 := plinthProcess(t, vars, "worker")
	_, out2 := plinthProcess(t, vars, "worker")
	for _, ps := range posts {
		var got map[string]any
		waitFor(t, "the scheduled post to be published", 60*time.Second, func() bool {
			got = env.Do("GET", fmt.Sprintf("/v1/social-posts/%v", ps.id), ps.key, nil).Expect(t, 200).JSON(t)
			return got["status"] != "scheduled" && got["status"] != "publishing"
		})
		if got["status"] != "published" || len(got["results"].([]any)) != 1 {
			t.Fatalf("post: %v\n%s\n%s", got, out1, out2)
		}
	}
	// Every job that could publish has ended: a second publish of a post
	// would have reached the platform by then.
	for _, kind := range []string{"social.publish_scheduled", "social.publish"} {
		env.WaitRiverJobs(t, kind, map[string]any{})
	}
	seen := map[string]int{}
	for _, r := range tw.Posts() {
		seen[r.JSON["text"].(string)]++
	}
	if len(seen) != len(posts) {
		t.Fatalf("%d distinct tweets for %d posts", len(seen), len(posts))
	}
	for text, n := range seen {
		if n != 1 {
			t.Fatalf("%q was published %d times", text, n)
		}
	}
	var clients int
	if err := env.DB.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT attempted_by[1]) FROM river.river_job WHERE kind IN ('social.publish', 'social.publish_scheduled')`).Scan(&clients); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d worker processes ran social jobs", clients)
}
