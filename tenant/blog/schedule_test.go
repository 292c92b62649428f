package blog_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// kindScheduled is the job kind that publishes a scheduled post.
const kindScheduled = "blog.publish_scheduled"

// ahead is a schedule time d from now, to the millisecond.
func ahead(d time.Duration) time.Time { return time.Now().Add(d).UTC().Truncate(time.Millisecond) }

func stamp(t time.Time) string { return t.Format(time.RFC3339Nano) }

// schedule schedules the post at path at at.
func schedule(t *testing.T, env *apitest.Env, key, path string, at time.Time) {
	t.Helper()
	env.Do("POST", path+"/schedule", key, map[string]any{"scheduled_at": stamp(at)}).Expect(t, 200)
}

// waitStatus polls the post at path until its status is want (at most
// 20 s: River makes a due job available within 5 s) and returns it.
func waitStatus(t *testing.T, env *apitest.Env, key, path, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := env.Do("GET", path, key, nil).Expect(t, 200).JSON(t)
		if got["status"] == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("post %s still %v: %v", path, got["status"], got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// publishedAt is the post's published_at.
func publishedAt(t *testing.T, m map[string]any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, m["published_at"].(string))
	require.NoError(t, err)
	return at
}

// postJobs waits for the scheduled-post jobs of post id to end and
// requires each completed, without a failed attempt.
func postJobs(t *testing.T, env *apitest.Env, p *apitest.Project, id any) []apitest.RiverJob {
	t.Helper()
	list := env.WaitRiverJobs(t, kindScheduled, map[string]any{"project_id": p.ID, "post_id": id})
	for _, j := range list {
		require.Equal(t, "completed", j.State, "job %+v", j)
		require.Zero(t, j.Errors, "job %+v", j)
	}
	return list
}

// A post scheduled 2 s ahead is published by its job, after its time,
// with one blog_post.published delivered, with two instances working jobs;
// scheduling it again for the same time (a double submit) adds no job.
func TestScheduledPostPublished(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	second := env.Instance(apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	p := env.NewProject("build")
	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "blog_post.published")
	rc.SetSecret(secret)
	start := time.Now()
	m := post(t, env, p.Key, map[string]any{"title": "On time"})
	path := "/v1/blog-posts/" + idOf(m)
	at := apitest.AheadOf(time.Since(start))
	schedule(t, env, p.Key, path, at)
	schedule(t, second, p.Key, path, at)
	require.Len(t, env.RiverJobs(t, kindScheduled, map[string]any{"post_id": m["id"]}), 1, "one job per post and time")

	got := waitStatus(t, second, p.Key, path, "published")
	require.False(t, publishedAt(t, got).Before(at), "published at %s, before its time %s", got["published_at"], at)
	require.Equal(t, stamp(at), got["scheduled_at"], "the scheduled time stays as a record")
	postJobs(t, env, p, m["id"])

	reqs := rc.WaitN(t, 10*time.Second, 1)
	require.NoError(t, reqs[0].Verified)
	require.Equal(t, "blog_post.published", reqs[0].Header.Get("X-Service-Event"))
	var envelope struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Body, &envelope))
	require.Equal(t, m["id"], envelope.Data["id"])
	require.Equal(t, "published", envelope.Data["status"])
	require.Len(t, events(t, p, "blog_post.published"), 1)
}

// A rescheduled post is published at its new time, not its old one: the
// old job finds the post scheduled for another time and does nothing.
func TestRescheduledPost(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	start := time.Now()
	m := post(t, env, p.Key, map[string]any{"title": "Moved"})
	path := "/v1/blog-posts/" + idOf(m)
	// The first time leaves room for the two requests below: the move
	// must come before it.
	first := apitest.AheadOf(time.Since(start))
	schedule(t, env, p.Key, path, first)
	// River makes due jobs available every 5 s: 6 s apart, the old job
	// runs before the new time comes, and would publish the post early.
	later := first.Add(6 * time.Second)
	schedule(t, env, p.Key, path, later)

	got := waitStatus(t, env, p.Key, path, "published")
	require.False(t, publishedAt(t, got).Before(later), "published at %s, before its new time %s", got["published_at"], later)
	require.Len(t, postJobs(t, env, p, m["id"]), 2)
	require.Len(t, events(t, p, "blog_post.published"), 1)
}

// A post unscheduled before its time (back to draft, archived, deleted,
// published at once) is left as it is by its job, which completes; so is
// a job whose project is gone, which the job gate cancels.
func TestUnscheduledPost(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	// An hour ahead, made due once the eight requests below are done, so
	// that none of the posts' jobs runs before its post is unscheduled,
	// however long the requests take.
	at := ahead(time.Hour)
	cases := []struct {
		name, method, action string
		body                 any
		status               int
		want                 string // the post's status after its time, "" when deleted
	}{
		{"draft", "PATCH", "", map[string]any{"status": "draft"}, 200, "draft"},
		{"archive", "POST", "/archive", nil, 200, "archived"},
		{"delete", "DELETE", "", nil, 204, ""},
		{"publish now", "POST", "/publish", nil, 200, "published"},
	}
	posts := make([]map[string]any, len(cases))
	for i, c := range cases {
		posts[i] = post(t, env, p.Key, map[string]any{"title": c.name, "status": "scheduled", "scheduled_at": stamp(at)})
		env.Do(c.method, "/v1/blog-posts/"+idOf(posts[i])+c.action, p.Key, c.body).Expect(t, c.status)
	}
	gone := blog.PublishScheduledArgs{ProjectID: "prj_gone", PostID: 1, ScheduledAt: at}
	_, err := env.Server.River.Insert(context.Background(), gone, nil)
	require.NoError(t, err)
	env.DueNow(t, kindScheduled, map[string]any{"project_id": p.ID})

	for i, c := range cases {
		postJobs(t, env, p, posts[i]["id"])
		path := "/v1/blog-posts/" + idOf(posts[i])
		if c.want == "" {
			env.Do("GET", path, p.Key, nil).Problem(t, 404, "not_found")
			continue
		}
		require.Equal(t, c.want, env.Do("GET", path, p.Key, nil).Expect(t, 200).JSON(t)["status"], c.name)
	}
	published := events(t, p, "blog_post.published")
	require.Len(t, published, 1, "only the publish now is announced")
	require.Equal(t, posts[3]["id"], published[0]["id"])
	// The job gate cancels the job of a gone project before its worker runs.
	gj := env.WaitRiverJobs(t, kindScheduled, map[string]any{"project_id": "prj_gone"})
	require.Equal(t, "cancelled", gj[0].State)
}

// A post scheduled on an instance that stops before its time is published
// by the instance started after it, the schedule being a job in the
// database.
func TestScheduledPostSurvivesRestart(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	start := time.Now()
	m := post(t, env, p.Key, map[string]any{"title": "Across a restart"})
	// Room for the schedule and the stop, each taking about a request.
	at := apitest.AheadOf(2 * time.Since(start))
	schedule(t, env, p.Key, "/v1/blog-posts/"+idOf(m), at)
	require.NoError(t, env.Server.Stop(context.Background()))
	require.True(t, time.Now().Before(at), "the instance stopped after the post's time: nothing shows the post waited for an instance")

	// Down past the post's time: nothing publishes it meanwhile.
	time.Sleep(time.Until(at) + 500*time.Millisecond)
	require.Equal(t, "scheduled", query[string](t, p, `SELECT status FROM blog_posts WHERE id = $1`, m["id"]))

	next := env.Instance(apitest.WithWorkers())
	got := waitStatus(t, next, p.Key, "/v1/blog-posts/"+idOf(m), "published")
	require.False(t, publishedAt(t, got).Before(at))
	postJobs(t, next, p, m["id"])
	require.Len(t, events(t, p, "blog_post.published"), 1)
}

// EnqueueScheduled gives the posts scheduled before scheduling was done by
// jobs their job, once however often it runs: the due one is published,
// the later one waits for its time.
func TestEnqueueScheduled(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	ctx := context.Background()
	var due, later int64
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		const insert = `INSERT INTO blog_posts (slug, status, language, texts, scheduled_at)
			VALUES ($1, 'scheduled', 'en', jsonb_build_object('en', jsonb_build_object('title', $1::text)), now() + $2::interval) RETURNING id`
		if err := tx.QueryRow(ctx, insert, "due", "-1 minute").Scan(&due); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, insert, "later", "1 hour").Scan(&later); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO blog_posts (slug, language, texts) VALUES ('draft', 'en', '{"en": {"title": "Draft"}}')`)
		return err
	})
	require.NoError(t, err)

	sv := blog.New(blog.Deps{Queue: env.Server.River, Jobs: jobs.NewRunner(slog.New(slog.DiscardHandler))})
	n, err := sv.EnqueueScheduled(ctx, p.Scope)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = sv.EnqueueScheduled(ctx, p.Scope)
	require.NoError(t, err)
	require.Equal(t, 0, n, "a second run inserts nothing")

	waitStatus(t, env, p.Key, "/v1/blog-posts/due", "published")
	postJobs(t, env, p, due)
	published := events(t, p, "blog_post.published")
	require.Len(t, published, 1)
	require.Equal(t, float64(due), published[0]["id"])
	waiting := env.RiverJobs(t, kindScheduled, map[string]any{"post_id": later})
	require.Len(t, waiting, 1)
	require.Equal(t, "scheduled", waiting[0].State)
	require.Equal(t, "scheduled", query[string](t, p, `SELECT status FROM blog_posts WHERE id = $1`, later))
}
