package social_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/socialtest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
)

// A partial publish sends one social_post.published; a publish where
// every platform fails sends one social_post.failed; each carries the
// post as GET shows it.
func TestPublishEvents(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	platforms := []string{"facebook", "twitter", "linkedin"}
	env, fakes := setup(t, platforms, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	p := env.NewProject("build")
	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "social_post.published", "social_post.failed")
	rc.SetSecret(secret)
	for _, name := range platforms {
		socialtest.Connect(t, env, p.Key, fakes[name])
	}
	fakes["twitter"].FailPublish(func(socialtest.Request) (int, string) { return 403, "duplicate content" })

	publish := func(title string) map[string]any {
		post := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": title, "content": title, "platforms": platforms}).Expect(t, 201).JSON(t)
		env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", post["id"]), p.Key, nil).Expect(t, 202)
		return waitPost(t, env, p.Key, post["id"])
	}
	type envelope struct {
		ID      string         `json:"id"`
		Type    string         `json:"type"`
		Created int64          `json:"created"`
		Data    map[string]any `json:"data"`
	}
	event := func(r webhooktest.Request) envelope {
		t.Helper()
		var e envelope
		if err := json.Unmarshal(r.Body, &e); err != nil {
			t.Fatal(err)
		}
		if r.Verified != nil || r.Header.Get("X-Service-Event") != e.Type {
			t.Fatalf("delivery: %v %v", r.Verified, r.Header)
		}
		return e
	}

	partial := publish("partial")
	if partial["status"] != "partially_published" {
		t.Fatalf("post: %v", partial)
	}
	reqs := rc.WaitN(t, 30*time.Second, 1)
	e := event(reqs[0])
	if e.Type != "social_post.published" || e.Data["id"] != partial["id"] || e.Data["status"] != "partially_published" ||
		len(e.Data["results"].([]any)) != 3 || jsonString(e.Data) != jsonString(partial) {
		t.Fatalf("event: %+v\npost: %v", e, partial)
	}

	for _, f := range fakes {
		f.FailPublish(func(socialtest.Request) (int, string) { return 503, "over capacity" })
	}
	down := publish("down")
	if down["status"] != "failed" {
		t.Fatalf("post: %v", down)
	}
	reqs = rc.WaitN(t, 30*time.Second, 2)
	e = event(reqs[1])
	if e.Type != "social_post.failed" || e.Data["id"] != down["id"] || e.Data["status"] != "failed" {
		t.Fatalf("event: %+v", e)
	}

	// Exactly one event per publish: nothing more arrives, and the
	// project's outbox holds one of each.
	time.Sleep(500 * time.Millisecond)
	if n := len(rc.Requests()); n != 2 {
		t.Fatalf("%d deliveries, want 2", n)
	}
	var published, failed int
	query(t, p, `SELECT count(*) FILTER (WHERE type = 'social_post.published'), count(*) FILTER (WHERE type = 'social_post.failed') FROM webhook_events`,
		nil, &published, &failed)
	if published != 1 || failed != 1 {
		t.Fatalf("outbox: %d published, %d failed", published, failed)
	}
}
