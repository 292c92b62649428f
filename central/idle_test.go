package central_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/queue"
)

// queryCounter counts every statement a pool sends, single or batched.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (q *queryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (q *queryCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	q.n.Add(1)
}

func (q *queryCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestIdleQueriesDoNotGrowWithProjects runs a whole server (workers on)
// over a pool that counts what it sends, and counts the statements of 10
// idle seconds with 10 provisioned projects and then with 100: an idle
// project costs nothing, so the second count is no larger than the first
// but for the noise of the queue's own timers.
func TestIdleQueriesDoNotGrowWithProjects(t *testing.T) {
	if testing.Short() {
		t.Skip("20 idle seconds")
	}
	t.Parallel()
	// 100 projects of one workspace: at the default cap, lifted.
	env := apitest.New(t, apitest.WithEnv("PLINTH_MAX_PROJECTS_PER_TENANT", "0"))
	for range 10 {
		env.NewProject("free")
	}

	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(env.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	counter := &queryCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// The server as deployed: workers and its queue's production timing.
	srv, err := central.NewServer(ctx, env.Config, pool, slog.New(slog.DiscardHandler), central.Options{Workers: true, Queue: queue.Options{TestOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	idle := func() int64 {
		time.Sleep(2 * time.Second) // start-up work and the last provisioning settle
		before := counter.n.Load()
		time.Sleep(10 * time.Second)
		return counter.n.Load() - before
	}
	at10 := idle()
	for range 90 {
		env.NewProject("free")
	}
	at100 := idle()
	t.Logf("statements over 10 idle seconds: %d with 10 projects, %d with 100", at10, at100)
	// River's own timers (fetch polls, leader election, maintenance) make
	// the count move a little from one window to the next; anything that
	// visits every project moves it by at least 90 (a quiet server
	// sends about 30 in the window).
	if at100 > at10+at10/4+10 {
		t.Errorf("idle statements grew with the projects: %d with 10, %d with 100", at10, at100)
	}
	// And what a quiet server sends at all: a fetch poll a second for the
	// default and delivery queues, one every 10 s for moves, and River's
	// leader election, scheduler and the liveness sweep, about 31. The
	// move queue polling every second, as the others, makes it about 41.
	if at := max(at10, at100); at > 36 {
		t.Errorf("an idle server sent %d statements in 10 s, want at most 36 (docs/performance.md)", at)
	}
}
