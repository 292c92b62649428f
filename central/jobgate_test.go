package central_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/tenant"
)

// execution is one run of a project's job, as the counting middleware saw
// it: its kind, how many times its project was bound, and the scope the
// args asked for (test: true).
type execution struct {
	kind   string
	scopes int64
	test   bool
}

// scopeCounter is River middleware, outside the job gate, that counts the
// ScopeFor calls of each run of a job of one project.
type scopeCounter struct {
	project string
	mu      sync.Mutex
	runs    []execution
}

func (sc *scopeCounter) option() apitest.Option {
	return func(_ *config.Config, o *central.Options) {
		o.Queue.Middleware = append(o.Queue.Middleware, river.WorkerMiddlewareFunc(sc.work))
	}
}

func (sc *scopeCounter) work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var a tenant.JobProject
	sc.mu.Lock()
	project := sc.project
	sc.mu.Unlock()
	if json.Unmarshal(job.EncodedArgs, &a) != nil || a.ProjectID != project {
		return doInner(ctx)
	}
	var n atomic.Int64
	err := doInner(central.CountScopes(ctx, &n))
	sc.mu.Lock()
	sc.runs = append(sc.runs, execution{kind: job.Kind, scopes: n.Load(), test: a.Test})
	sc.mu.Unlock()
	return err
}

// ran returns the runs of kind so far.
func (sc *scopeCounter) ran(kind string) []execution {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var out []execution
	for _, r := range sc.runs {
		if r.kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// TestJobScopeResolvedOnce: a job's project is bound once per run, by the
// job gate, whatever its kind: a blog post's scheduled publish, the
// webhook delivery of its event, a jobs-pillar job submitted with a test
// key, an idempotency expiry. The workers read the bound scope.
func TestJobScopeResolvedOnce(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	counter := &scopeCounter{}
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()), counter.option())
	p := env.NewProject("build")
	counter.mu.Lock()
	counter.project = p.ID
	counter.mu.Unlock()

	webhooktest.Endpoint(t, env, p.Key, rc.URL, "blog_post.published")
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Due", "status": "scheduled",
		"scheduled_at": at.Format(time.RFC3339Nano)}).Expect(t, 201)
	env.DueNow(t, "blog.publish_scheduled", map[string]any{"project_id": p.ID})

	testKey := p.NewKey(true, "images:write", "jobs:read")
	j := env.Do("POST", "/v1/images", testKey, map[string]any{"prompt": "a plinth"}).Expect(t, 202).JSON(t)
	env.WaitJob(t, testKey, j["id"].(string))

	env.Send(apitest.Request{Method: "POST", Path: "/v1/tags", Key: p.Key, Body: map[string]any{"name": "once"},
		Header: map[string]string{"Idempotency-Key": "tag-1"}}).Expect(t, 201)
	env.DueNow(t, "idempotency.expire", map[string]any{"project_id": p.ID})

	rc.WaitN(t, 30*time.Second, 1) // the delivery of blog_post.published
	kinds := []string{"blog.publish_scheduled", "webhook.deliver", "plinth.job", "idempotency.expire"}
	deadline := time.Now().Add(30 * time.Second)
	for _, kind := range kinds {
		for len(counter.ran(kind)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no run of a %s job", kind)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, kind := range kinds {
		for _, r := range counter.ran(kind) {
			if r.scopes != 1 {
				t.Errorf("a run of a %s job bound its project %d times, want once", kind, r.scopes)
			}
		}
	}
	if r := counter.ran("plinth.job"); !r[0].test {
		t.Errorf("the job submitted with a test key did not run as a test job: %+v", r)
	}
}

// The job gate hands a test job the test scope of its key, a live job the
// project's scope with no key; a job of a gone project never reaches its
// worker.
func TestJobGateBinds(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	gate := env.Server.Central.JobGate().(rivertype.WorkerMiddleware)
	run := func(args string) (*tenant.Scope, error) {
		var bound *tenant.Scope
		err := gate.Work(context.Background(), &rivertype.JobRow{Kind: "x", EncodedArgs: []byte(args)}, func(ctx context.Context) error {
			s, err := tenant.JobScope(ctx)
			bound = s
			return err
		})
		return bound, err
	}
	s, err := run(`{"project_id": "` + p.ID + `"}`)
	if err != nil || s.Project.ID != p.ID || s.Key != nil || s.Test() {
		t.Fatalf("live job: scope %+v, err %v", s, err)
	}
	s, err = run(`{"project_id": "` + p.ID + `", "key_id": "key_t", "test": true}`)
	if err != nil || s.Project.ID != p.ID || !s.Test() || s.Key.ID != "key_t" {
		t.Fatalf("test job: scope %+v, err %v", s, err)
	}
	s, err = run(`{"project_id": "prj_00000000000000000000000000"}`)
	var cancel *river.JobCancelError
	if s != nil || !errors.As(err, &cancel) {
		t.Fatalf("job of a gone project: scope %+v, err %v, want a cancel", s, err)
	}
	s, err = run(`{"deleted_project": "` + p.ID + `"}`)
	if s != nil || !errors.Is(err, tenant.ErrNoJobScope) {
		t.Fatalf("platform job: scope %+v, err %v, want no scope", s, err)
	}
}
