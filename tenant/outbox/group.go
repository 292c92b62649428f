package outbox

import (
	"context"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/tenant"
)

// maxGroup bounds how many deliveries one grouped transaction carries.
const maxGroup = 256

// group runs one step of concurrent deliveries of a project together, in
// one transaction (group commit): the first caller of an idle project
// starts a runner that takes everything queued, runs it, and goes on
// while more has queued meanwhile; the other callers wait for their
// result. Under load a transaction then carries as many deliveries as
// arrived while the previous one ran, so the cost per delivery (round
// trips, commits, the credit pool's lock) falls as the rate rises, and a
// lone delivery is not delayed at all.
type group[Req, Res any] struct {
	run func(ctx context.Context, sc *tenant.Scope, reqs []Req) ([]Res, error)

	mu       sync.Mutex
	projects map[string]*groupQueue[Req, Res]
}

type groupQueue[Req, Res any] struct {
	calls []*groupCall[Req, Res]
}

type groupCall[Req, Res any] struct {
	req Req
	// values is the caller's context without its end: the batch carries
	// the values of its first call (the metrics' observer of charges).
	values context.Context
	res    Res
	err    error
	done   chan struct{}
}

func newGroup[Req, Res any](run func(context.Context, *tenant.Scope, []Req) ([]Res, error)) *group[Req, Res] {
	return &group[Req, Res]{run: run, projects: map[string]*groupQueue[Req, Res]{}}
}

// do queues req for sc's project and returns its result. When ctx ends
// first, do returns ctx.Err() and the step may still run: every step is
// written so that the job's next run finds what it did.
func (g *group[Req, Res]) do(ctx context.Context, sc *tenant.Scope, req Req) (Res, error) {
	c := &groupCall[Req, Res]{req: req, values: context.WithoutCancel(ctx), done: make(chan struct{})}
	g.mu.Lock()
	q := g.projects[sc.Project.ID]
	if q == nil {
		q = &groupQueue[Req, Res]{}
		g.projects[sc.Project.ID] = q
		go g.runner(sc, q)
	}
	q.calls = append(q.calls, c)
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// runner runs the queue of one project until it is empty. A batch runs
// apart from its callers' contexts, so one caller giving up (a shutdown)
// does not fail the others; it has its own bound instead.
func (g *group[Req, Res]) runner(sc *tenant.Scope, q *groupQueue[Req, Res]) {
	for {
		g.mu.Lock()
		n := min(len(q.calls), maxGroup)
		if n == 0 {
			delete(g.projects, sc.Project.ID)
			g.mu.Unlock()
			return
		}
		batch := q.calls[:n:n]
		q.calls = q.calls[n:]
		g.mu.Unlock()

		reqs := make([]Req, n)
		for i, c := range batch {
			reqs[i] = c.req
		}
		ctx, cancel := context.WithTimeout(batch[0].values, 30*time.Second)
		res, err := g.run(ctx, sc, reqs)
		cancel()
		for i, c := range batch {
			if err != nil {
				c.err = err
			} else {
				c.res = res[i]
			}
			close(c.done)
		}
	}
}
