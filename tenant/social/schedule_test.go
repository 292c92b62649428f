package social_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant/social"
	"github.com/plinth-dev/plinth/tenant/social/socialtest"
)

// Many schedulers claiming at once claim each due post exactly once:
// one status change and one publish job per post.
func TestClaimDueOnce(t *testing.T) {
	t.Parallel()
	env, _ := setup(t, nil)
	p := env.NewProject("build")
	ctx := context.Background()
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO social_posts (title, platforms, status, scheduled_at)
			SELECT 'due ' || i, '{twitter}', 'scheduled', now() - interval '1 minute' FROM generate_series(1, 60) AS i`)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO social_posts (title, platforms, status, scheduled_at) VALUES ('later', '{twitter}', 'scheduled', now() + interval '1 hour')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sv := social.New(social.Deps{Config: env.Config, Plane: env.Server.Central, Queue: env.Server.River, Logger: slog.New(slog.DiscardHandler)})
	var claimed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := sv.ClaimDue(ctx, p.Scope, 4)
				if err != nil {
					t.Error(err)
					return
				}
				claimed.Add(int64(n))
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if claimed.Load() != 60 {
		t.Fatalf("claimed %d posts, want 60", claimed.Load())
	}
	var publishing, scheduled int
	query(t, p, `SELECT count(*) FILTER (WHERE status = 'publishing'), count(*) FILTER (WHERE status = 'scheduled') FROM social_posts`, nil, &publishing, &scheduled)
	if publishing != 60 || scheduled != 1 {
		t.Fatalf("%d publishing, %d scheduled", publishing, scheduled)
	}
	var jobs, distinct int
	if err := env.DB.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT args->>'post_id') FROM river.river_job WHERE kind = 'social.publish' AND args->>'project_id' = $1`,
		p.ID).Scan(&jobs, &distinct); err != nil {
		t.Fatal(err)
	}
	if jobs != 60 || distinct != 60 {
		t.Fatalf("%d publish jobs for %d posts, want 60 for 60", jobs, distinct)
	}
}

// Scheduled posts of several projects are published once each when two
// server instances run workers and the scheduler on one database.
func TestScheduledPublishTwoInstances(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"}, apitest.WithWorkers(), apitest.WithEnv("PLINTH_SCHEDULER_INTERVAL", "100ms"))
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, env.DB.URL) // its own pool, as another process would have
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	second, err := central.NewServer(ctx, env.Config, pool, slog.New(slog.DiscardHandler), central.Options{Workers: true, Queue: queue.Options{TestOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(second.Handler)
	t.Cleanup(func() { hs.Close(); _ = second.Stop(context.Background()) })

	const perProject = 8
	type post struct {
		key string
		id  any
	}
	var posts []post
	var keys []string
	for range 3 {
		p := env.NewProject("build")
		socialtest.Connect(t, env, p.Key, fakes["twitter"])
		keys = append(keys, p.Key)
	}
	at := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	for j, key := range keys {
		for i := range perProject {
			created := env.Do("POST", "/v1/social-posts", key, map[string]any{"title": "t", "content": fmt.Sprintf("project %d #%d", j, i),
				"platforms": []string{"twitter"}, "scheduled_at": at}).Expect(t, 201).JSON(t)
			posts = append(posts, post{key, created["id"]})
		}
	}
	for _, ps := range posts {
		done := waitPost(t, env, ps.key, ps.id)
		if done["status"] != "published" || len(done["results"].([]any)) != 1 {
			t.Fatalf("post: %v", done)
		}
	}
	time.Sleep(500 * time.Millisecond) // further ticks of both schedulers find nothing more to do
	tweets := map[string]int{}
	for _, r := range fakes["twitter"].Posts() {
		tweets[r.JSON["text"].(string)]++
	}
	if len(tweets) != len(posts) {
		t.Fatalf("%d distinct tweets for %d posts", len(tweets), len(posts))
	}
	for text, n := range tweets {
		if n != 1 {
			t.Fatalf("%q was published %d times", text, n)
		}
	}
	var ticks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind = 'social.schedule'`).Scan(&ticks); err != nil || ticks < 3 {
		t.Fatalf("%d scheduler ticks (%v)", ticks, err)
	}
}
