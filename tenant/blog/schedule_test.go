package blog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/webhook/webhooktest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// makeDue schedules n posts of p and moves their time into the past, as
// if it had come; it returns their ids.
func makeDue(t *testing.T, env *apitest.Env, p *apitest.Project, n int) []int64 {
	t.Helper()
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var ids []int64
	for i := range n {
		m := post(t, env, p.Key, map[string]any{"title": fmt.Sprintf("Due %d", i), "status": "scheduled", "scheduled_at": at})
		ids = append(ids, int64(m["id"].(float64)))
	}
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE blog_posts SET scheduled_at = now() - interval '1 second' WHERE id = ANY($1)`, ids)
		return err
	})
	require.NoError(t, err)
	return ids
}

// Many schedulers claiming at once publish each due post exactly once.
func TestPublishDueOnce(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers: the test is the only scheduler
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	due := makeDue(t, env, p, 30)
	later := post(t, env, p.Key, map[string]any{"title": "Not yet", "status": "scheduled", "scheduled_at": time.Now().Add(time.Hour).Format(time.RFC3339)})
	draft := post(t, env, p.Key, map[string]any{"title": "Draft"})

	sv := scheduler(env, env.Server.Outbox)
	var mu sync.Mutex
	published := map[int64]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				posts, err := sv.PublishDue(context.Background(), p.Scope, 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, x := range posts {
					published[x.ID]++
					if x.Status != "published" || x.PublishedAt == nil {
						t.Errorf("claimed post: %+v", x)
					}
				}
				mu.Unlock()
				if len(posts) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, published, len(due))
	for _, id := range due {
		require.Equal(t, 1, published[id], "post %d published %d times", id, published[id])
	}
	announced := map[float64]int{}
	for _, e := range events(t, p, "blog_post.published") {
		announced[e["id"].(float64)]++
		require.Equal(t, "published", e["status"])
	}
	require.Len(t, announced, len(due))
	for _, id := range due {
		require.Equal(t, 1, announced[float64(id)], "post %d announced %d times", id, announced[float64(id)])
	}
	require.Equal(t, "scheduled", env.Do("GET", "/v1/blog-posts/"+idOf(later), p.Key, nil).Expect(t, 200).JSON(t)["status"])
	require.Equal(t, "draft", env.Do("GET", "/v1/blog-posts/"+idOf(draft), p.Key, nil).Expect(t, 200).JSON(t)["status"])
	got := env.Do("GET", "/v1/blog-posts/"+fmt.Sprint(due[0]), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "published", got["status"])
	require.NotNil(t, got["scheduled_at"], "the scheduled time stays as a record")
}

// One tick covers every project.
func TestPublishAllDue(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a, b, c := env.NewProject("build"), env.NewProject("build"), env.NewProject("build")
	makeDue(t, env, a, 2)
	makeDue(t, env, b, 1)
	post(t, env, c.Key, map[string]any{"title": "Later", "status": "scheduled", "scheduled_at": time.Now().Add(time.Hour).Format(time.RFC3339)})
	sv := scheduler(env, nil)
	n, err := sv.PublishAllDue(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, p := range []*apitest.Project{a, b} {
		require.Equal(t, int64(0), query[int64](t, p, `SELECT count(*) FROM blog_posts WHERE status <> 'published'`))
	}
	require.Equal(t, int64(1), query[int64](t, c, `SELECT count(*) FROM blog_posts WHERE status = 'scheduled'`))
	n, err = sv.PublishAllDue(context.Background())
	require.NoError(t, err)
	require.Equal(t, 0, n, "nothing is published twice")
}

// The scheduler, a River periodic job, publishes a post scheduled 2 s
// ahead within two intervals, once, with two instances working jobs over
// one database.
func TestSchedulerTwoInstances(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	rc := webhooktest.NewTLS(t, nil)
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()), apitest.WithEnv("PLINTH_SCHEDULER_INTERVAL", interval.String()))
	second := env.Instance(apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	p := env.NewProject("build")
	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "blog_post.published")
	rc.SetSecret(secret)
	at := time.Now().Add(2 * time.Second).UTC().Truncate(time.Millisecond)
	m := post(t, env, p.Key, map[string]any{"title": "On time", "status": "scheduled", "scheduled_at": at.Format(time.RFC3339Nano)})
	path := "/v1/blog-posts/" + idOf(m)

	var got map[string]any
	for deadline := at.Add(2*interval + time.Second); ; {
		got = second.Do("GET", path, p.Key, nil).Expect(t, 200).JSON(t)
		if got["status"] == "published" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, "published", got["status"], "not published within two intervals: %v", got)
	pubAt, err := time.Parse(time.RFC3339Nano, got["published_at"].(string))
	require.NoError(t, err)
	require.False(t, pubAt.Before(at), "published at %s, before its time %s", pubAt, at)
	require.LessOrEqual(t, pubAt.Sub(at), 2*interval, "published at %s, scheduled at %s", pubAt, at)

	// The receiver gets blog_post.published, signed, with the post.
	reqs := rc.WaitN(t, 10*time.Second, 1)
	require.NoError(t, reqs[0].Verified)
	require.Equal(t, "blog_post.published", reqs[0].Header.Get("X-Service-Event"))
	var envelope struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Body, &envelope))
	require.Equal(t, m["id"], envelope.Data["id"])
	require.Equal(t, "published", envelope.Data["status"])

	// Later ticks, on either instance, leave it alone: once.
	time.Sleep(2*interval + 500*time.Millisecond)
	again := env.Do("GET", path, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, got["published_at"], again["published_at"])
	require.Equal(t, got["updated_at"], again["updated_at"])
	require.Len(t, events(t, p, "blog_post.published"), 1)
	require.Len(t, rc.Requests(), 1)
}

// scheduler is a blog pillar of env's control plane, emitting to events
// (none when nil), whose scheduler the test drives itself.
func scheduler(env *apitest.Env, events tenant.Emitter) *blog.Service {
	return blog.New(blog.Deps{Plane: env.Server.Central, Events: events,
		Jobs: jobs.NewRunner(env.Server.Central, slog.New(slog.DiscardHandler))})
}
