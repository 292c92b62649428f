package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// concurrency tracks how many jobs of each project run at once.
type concurrency struct {
	mu      sync.Mutex
	running map[string]int
	peak    map[string]int
	started map[string]int
}

func newConcurrency() *concurrency {
	return &concurrency{running: map[string]int{}, peak: map[string]int{}, started: map[string]int{}}
}

func (c *concurrency) enter(project string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[project]++
	c.started[project]++
	c.peak[project] = max(c.peak[project], c.running[project])
}

func (c *concurrency) leave(project string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[project]--
}

func (c *concurrency) get(project string) (peak, started int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peak[project], c.started[project]
}

// submitMany enqueues n jobs, 100 per transaction.
func submitMany(t testing.TB, env *apitest.Env, p *apitest.Project, n int, spec jobs.Spec) []jobs.Job {
	t.Helper()
	var out []jobs.Job
	for n > 0 {
		batch := min(n, 100)
		err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
			for range batch {
				j, err := jobs.Submit(context.Background(), tx, p.Scope, env.Server.River, spec)
				if err != nil {
					return err
				}
				out = append(out, j)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		n -= batch
	}
	return out
}

// Project A queues 500 slow jobs, then project B queues one: B's job
// starts before A's queue has moved much (in FIFO order 450 of A's jobs
// would start first: 500 jobs on 50 workers), while A never runs more
// than its cap at once and its waiting jobs keep being admitted as
// earlier ones finish. The check counts A's jobs started before B's,
// not seconds, so a loaded machine, which slows A's jobs as much as B's,
// does not change its outcome.
func TestFairness(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	a, b := env.NewProject("build"), env.NewProject("build")
	conc := newConcurrency()
	aBeforeB := make(chan int, 1) // A's jobs started when B's started
	env.Server.Jobs.Handle("test.slow", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		pid := run.Scope.Project.ID
		if pid == b.ID {
			_, started := conc.get(a.ID)
			aBeforeB <- started
		}
		conc.enter(pid)
		defer conc.leave(pid)
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	})
	submitMany(t, env, a, 500, jobs.Spec{Type: "test.slow"})
	bj := submit(t, env, b, jobs.Spec{Type: "test.slow"})
	select {
	case n := <-aBeforeB:
		// 100: twice the workers, a fifth of A's queue.
		if n >= 100 {
			t.Fatalf("B's job started after %d of A's, want it ahead of A's queue (under 100)", n)
		}
		t.Logf("B's job started after %d of A's 500 queued jobs", n)
	case <-time.After(30 * time.Second):
		t.Fatal("B's job did not start within 30 s")
	}
	if got := env.WaitJob(t, b.Key, bj.ID); got["status"] != "completed" {
		t.Fatalf("B's job: %v", got)
	}
	// A's waiting jobs are admitted as its running ones finish.
	deadline := time.Now().Add(20 * time.Second)
	for {
		peak, started := conc.get(a.ID)
		if peak > jobs.MaxActivePerProject {
			t.Fatalf("A ran %d jobs at once, cap %d", peak, jobs.MaxActivePerProject)
		}
		if started >= 3*jobs.MaxActivePerProject {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of A's jobs started", started)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Jobs over the cap wait and all run in the end; cancelling
// a waiting job does not disturb the others.
func TestAdmissionDrains(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	conc := newConcurrency()
	env.Server.Jobs.Handle("test.quick", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		conc.enter(p.ID)
		defer conc.leave(p.ID)
		time.Sleep(30 * time.Millisecond)
		return nil, nil
	})
	js := submitMany(t, env, p, 30, jobs.Spec{Type: "test.quick"})
	last := js[len(js)-1].ID
	env.Do("POST", "/v1/jobs/"+last+"/cancel", p.Key, nil).Expect(t, 200)
	for _, j := range js {
		want := "completed"
		if j.ID == last {
			want = "cancelled"
		}
		if got := env.WaitJob(t, p.Key, j.ID); got["status"] != want {
			t.Fatalf("job %s: %v", j.ID, got)
		}
	}
	if peak, started := conc.get(p.ID); peak > jobs.MaxActivePerProject || started != 29 {
		t.Fatalf("peak %d (cap %d), started %d of 29", peak, jobs.MaxActivePerProject, started)
	}
}
