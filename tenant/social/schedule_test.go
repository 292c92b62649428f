package social_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/socialtest"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant/social"
)

// kindScheduled is the job kind that starts publishing a scheduled post.
const kindScheduled = "social.publish_scheduled"

// ahead is a schedule time d from now, as the API takes it.
func ahead(d time.Duration) string {
	return time.Now().Add(d).UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
}

// aheadOf is apitest.AheadOf as the API writes it.
func aheadOf(took time.Duration) string { return apitest.AheadOf(took).Format(time.RFC3339Nano) }

// draft creates a post to schedule later.
func draft(t *testing.T, env *apitest.Env, key, content string) any {
	t.Helper()
	return env.Do("POST", "/v1/social-posts", key, map[string]any{"title": "t", "content": content,
		"platforms": []string{"twitter"}}).Expect(t, 201).JSON(t)["id"]
}

// schedule sets a post's scheduled_at.
func schedule(t *testing.T, env *apitest.Env, key string, id any, at string) {
	t.Helper()
	env.Do("PATCH", fmt.Sprintf("/v1/social-posts/%v", id), key, map[string]any{"scheduled_at": at}).Expect(t, 200)
}

// postJobs waits for the jobs of kind of post id to end and fails unless
// each completed without a failed attempt.
func postJobs(t *testing.T, env *apitest.Env, kind string, p *apitest.Project, id any) []apitest.RiverJob {
	t.Helper()
	list := env.WaitRiverJobs(t, kind, map[string]any{"project_id": p.ID, "post_id": id})
	for _, j := range list {
		if j.State != "completed" || j.Errors != 0 {
			t.Fatalf("%s job: %+v", kind, j)
		}
	}
	return list
}

// notBefore fails unless the post was published at or after at.
func notBefore(t *testing.T, post map[string]any, at string) {
	t.Helper()
	pub, err1 := time.Parse(time.RFC3339Nano, fmt.Sprint(post["published_at"]))
	want, err2 := time.Parse(time.RFC3339Nano, at)
	if err1 != nil || err2 != nil || pub.Before(want) {
		t.Fatalf("published at %v, before its time %s (%v, %v)", post["published_at"], at, err1, err2)
	}
}

// tweets counts the fake's tweets by text.
func tweets(f *socialtest.Platform) map[string]int {
	out := map[string]int{}
	for _, r := range f.Posts() {
		out[r.JSON["text"].(string)]++
	}
	return out
}

// Scheduled posts of several projects are published once each, after
// their time, when two server instances work jobs on one database; each
// post has one scheduled job, even when scheduled twice for the same time.
func TestScheduledPublishTwoInstances(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"}, apitest.WithWorkers())
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, env.DB.URL) // its own pool, as another process would have
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	second, err := central.NewServer(ctx, env.Config, pool, slog.New(slog.DiscardHandler), central.Options{Workers: true, Queue: queue.Options{TestOnly: true, FetchPoll: 100 * time.Millisecond}})
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
		p  *apitest.Project
		id any
	}
	var posts []post
	var projects []*apitest.Project
	for range 3 {
		p := env.NewProject("build")
		socialtest.Connect(t, env, p.Key, fakes["twitter"])
		projects = append(projects, p)
	}
	start := time.Now()
	for j, p := range projects {
		for i := range perProject {
			posts = append(posts, post{p, draft(t, env, p.Key, fmt.Sprintf("project %d #%d", j, i))})
		}
	}
	// A schedule writes its job too, so it takes longer than a create:
	// twice the creates' time is the margin (CI once ran out with once).
	at := aheadOf(2 * time.Since(start))
	for i, ps := range posts {
		schedule(t, env, ps.p.Key, ps.id, at)
		if i == 0 { // a double submit of the schedule finds the job already there
			schedule(t, env, ps.p.Key, ps.id, at)
		}
	}
	// Nothing is due before at; polling meanwhile would spend the
	// project's rate limit.
	due, _ := time.Parse(time.RFC3339Nano, at)
	time.Sleep(time.Until(due))
	for _, ps := range posts {
		done := waitPost(t, env, ps.p.Key, ps.id)
		if done["status"] != "published" || len(done["results"].([]any)) != 1 {
			t.Fatalf("post: %v", done)
		}
		notBefore(t, done, at)
		if n := len(postJobs(t, env, kindScheduled, ps.p, ps.id)); n != 1 {
			t.Fatalf("post %v has %d scheduled jobs, want 1", ps.id, n)
		}
		if n := len(postJobs(t, env, "social.publish", ps.p, ps.id)); n != 1 {
			t.Fatalf("post %v has %d publish jobs, want 1", ps.id, n)
		}
	}
	tw := tweets(fakes["twitter"])
	if len(tw) != len(posts) {
		t.Fatalf("%d distinct tweets for %d posts", len(tw), len(posts))
	}
	for text, n := range tw {
		if n != 1 {
			t.Fatalf("%q was published %d times", text, n)
		}
	}
}

// A rescheduled post is published at its new time, not its old one: the
// old job finds the post scheduled for another time and does nothing.
func TestRescheduledPost(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"}, apitest.WithWorkers())
	p := env.NewProject("build")
	socialtest.Connect(t, env, p.Key, fakes["twitter"])
	start := time.Now()
	id := draft(t, env, p.Key, "moved")
	// The first time leaves room for the two requests below: the move
	// must come before it.
	first := apitest.AheadOf(time.Since(start))
	schedule(t, env, p.Key, id, first.Format(time.RFC3339Nano))
	// River makes due jobs available every 5 s: 6 s apart, the old job
	// runs before the new time comes, and would publish the post early.
	later := first.Add(6 * time.Second).Format(time.RFC3339Nano)
	schedule(t, env, p.Key, id, later)

	done := waitPost(t, env, p.Key, id)
	if done["status"] != "published" {
		t.Fatalf("post: %v", done)
	}
	notBefore(t, done, later)
	if n := len(postJobs(t, env, kindScheduled, p, id)); n != 2 {
		t.Fatalf("%d scheduled jobs, want 2 (the old and the new)", n)
	}
	if tw := tweets(fakes["twitter"]); len(tw) != 1 || tw["moved"] != 1 {
		t.Fatalf("tweets: %v", tw)
	}
}

// A post unscheduled before its time (back to draft, deleted, published
// at once) is left as it is by its job, which completes; a job whose
// project is gone is cancelled by the job gate.
func TestUnscheduledPost(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"}, apitest.WithWorkers())
	p := env.NewProject("build")
	socialtest.Connect(t, env, p.Key, fakes["twitter"])
	// An hour ahead, made due once the six requests below are done, so
	// that none of the posts' jobs runs before its post is unscheduled,
	// however long the requests take.
	at := ahead(time.Hour)
	cases := []struct {
		name, method, action string
		body                 any
		status               int
		want                 string // the post's status after its time, "" when deleted
	}{
		{"draft", "PATCH", "", map[string]any{"scheduled_at": nil}, 200, "draft"},
		{"delete", "DELETE", "", nil, 204, ""},
		{"publish now", "POST", "/publish", nil, 202, "published"},
	}
	ids := make([]any, len(cases))
	for i, c := range cases {
		created := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": c.name, "content": c.name,
			"platforms": []string{"twitter"}, "scheduled_at": at}).Expect(t, 201).JSON(t)
		ids[i] = created["id"]
		env.Do(c.method, fmt.Sprintf("/v1/social-posts/%v%s", ids[i], c.action), p.Key, c.body).Expect(t, c.status)
	}
	gone := social.PublishScheduledArgs{ProjectID: "prj_gone", PostID: 1, ScheduledAt: time.Now()}
	if _, err := env.Server.River.Insert(context.Background(), gone, nil); err != nil {
		t.Fatal(err)
	}
	env.DueNow(t, kindScheduled, map[string]any{"project_id": p.ID})

	for i, c := range cases {
		postJobs(t, env, kindScheduled, p, ids[i])
		path := fmt.Sprintf("/v1/social-posts/%v", ids[i])
		if c.want == "" {
			env.Do("GET", path, p.Key, nil).Problem(t, 404, "not_found")
			continue
		}
		if got := waitPost(t, env, p.Key, ids[i]); got["status"] != c.want {
			t.Fatalf("%s: post %v", c.name, got)
		}
	}
	if tw := tweets(fakes["twitter"]); len(tw) != 1 || tw["publish now"] != 1 {
		t.Fatalf("tweets: %v (only the publish now goes out)", tw)
	}
	gj := env.WaitRiverJobs(t, kindScheduled, map[string]any{"project_id": "prj_gone"})
	if gj[0].State != "cancelled" { // by the job gate, before the worker runs
		t.Fatalf("job of a gone project: %+v", gj[0])
	}
}

// A post scheduled on an instance that stops before its time is published
// by the instance started after it, the schedule being a job in the
// database.
func TestScheduledPostSurvivesRestart(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"}, apitest.WithWorkers())
	p := env.NewProject("build")
	socialtest.Connect(t, env, p.Key, fakes["twitter"])
	start := time.Now()
	created := map[string]any{"id": draft(t, env, p.Key, "across a restart")}
	// Room for the schedule and the stop, each taking about a request.
	at := aheadOf(2 * time.Since(start))
	schedule(t, env, p.Key, created["id"], at)
	if err := env.Server.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	due, _ := time.Parse(time.RFC3339Nano, at)
	if late := time.Since(due); late >= 0 {
		t.Fatalf("the instance stopped %s after the post's time: nothing shows the post waited for an instance", late)
	}

	// Down past the post's time: nothing publishes it meanwhile.
	time.Sleep(time.Until(due) + 500*time.Millisecond)
	var status string
	query(t, p, `SELECT status FROM social_posts WHERE id = $1`, []any{created["id"]}, &status)
	if status != "scheduled" {
		t.Fatalf("post %s while no instance ran", status)
	}

	next := env.Instance(apitest.WithWorkers())
	done := waitPost(t, next, p.Key, created["id"])
	if done["status"] != "published" {
		t.Fatalf("post: %v", done)
	}
	notBefore(t, done, at)
	postJobs(t, next, kindScheduled, p, created["id"])
	if tw := tweets(fakes["twitter"]); len(tw) != 1 || tw["across a restart"] != 1 {
		t.Fatalf("tweets: %v", tw)
	}
}

// EnqueueScheduled gives the posts scheduled before scheduling was done by
// jobs their job, once however often it runs: the due one is published,
// the later one waits for its time.
func TestEnqueueScheduled(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"}, apitest.WithWorkers())
	p := env.NewProject("build")
	socialtest.Connect(t, env, p.Key, fakes["twitter"])
	ctx := context.Background()
	var due, later int64
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		const insert = `INSERT INTO social_posts (title, content, platforms, status, scheduled_at)
			VALUES ($1, $1, '{twitter}', 'scheduled', now() + $2::interval) RETURNING id`
		if err := tx.QueryRow(ctx, insert, "due", "-1 minute").Scan(&due); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, insert, "later", "1 hour").Scan(&later); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO social_posts (title, platforms) VALUES ('draft', '{twitter}')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	sv := social.New(social.Deps{Config: env.Config, Plane: env.Server.Central, Queue: env.Server.River, Logger: slog.New(slog.DiscardHandler)})
	for i, want := range []int{2, 0} {
		n, err := sv.EnqueueScheduled(ctx, p.Scope)
		if err != nil || n != want {
			t.Fatalf("run %d inserted %d jobs (%v), want %d", i+1, n, err, want)
		}
	}

	if done := waitPost(t, env, p.Key, due); done["status"] != "published" {
		t.Fatalf("due post: %v", done)
	}
	postJobs(t, env, kindScheduled, p, due)
	if tw := tweets(fakes["twitter"]); len(tw) != 1 || tw["due"] != 1 {
		t.Fatalf("tweets: %v", tw)
	}
	waiting := env.RiverJobs(t, kindScheduled, map[string]any{"post_id": later})
	if len(waiting) != 1 || waiting[0].State != "scheduled" {
		t.Fatalf("jobs of the later post: %+v", waiting)
	}
	var status string
	query(t, p, `SELECT status FROM social_posts WHERE id = $1`, []any{later}, &status)
	if status != "scheduled" {
		t.Fatalf("later post %s", status)
	}
}
