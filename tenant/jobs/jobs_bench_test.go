package jobs_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

type bareArgs struct{}

func (bareArgs) Kind() string { return "bench_bare" }

type bareStartArgs struct{}

func (bareStartArgs) Kind() string { return "bench_bare_start" }

// benchEnv is a server with workers plus a bare River client (its own
// queue, a no-op worker) on the same database, for side-by-side figures.
type benchEnv struct {
	env      *apitest.Env
	projects []*apitest.Project
	bare     *queue.Client
	started  chan time.Time // job starts (either path)
	done     <-chan *river.Event
	bareDone <-chan *river.Event
}

// setupBench builds the environment of one benchmark function (which
// b.Loop runs once).
func setupBench(b *testing.B) *benchEnv {
	env := apitest.New(b, apitest.WithWorkers())
	be := &benchEnv{env: env, started: make(chan time.Time, 100000)}
	for range 8 {
		be.projects = append(be.projects, env.NewProject("scale"))
	}
	env.Server.Jobs.Handle("bench.noop", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		return nil, nil
	})
	env.Server.Jobs.Handle("bench.start", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		be.started <- time.Now()
		return nil, nil
	})
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, j *river.Job[bareArgs]) error { return nil }))
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, j *river.Job[bareStartArgs]) error {
		be.started <- time.Now()
		return nil
	}))
	bare, err := queue.New(env.DB.Pool, workers, queue.Options{Work: true, TestOnly: true,
		Queues: map[string]river.QueueConfig{"bare": {MaxWorkers: 50}}})
	if err != nil {
		b.Fatal(err)
	}
	live, err := queue.StartLiveness(context.Background(), env.DB.Pool, bare.ID(), 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := bare.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	be.bare = bare
	be.done, _ = env.Server.River.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 100000})
	be.bareDone, _ = bare.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 100000})
	b.Cleanup(func() {
		_ = bare.Stop(context.Background())
		live.Stop()
	})
	return be
}

func percentile(ds []time.Duration, p float64) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[int(float64(len(ds)-1)*p)]
}

// BenchmarkEnqueueToStart measures the time from submit (the caller's
// transaction: charge, Job row, River insert, commit) to the handler's
// start, one job at a time, against a bare River insert to work start.
func BenchmarkEnqueueToStart(b *testing.B) {
	be := setupBench(b)
	p := be.projects[0]
	drain(be.started)
	measure := func(b *testing.B, enqueue func() error) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			if err := enqueue(); err != nil {
				b.Fatal(err)
			}
			select {
			case at := <-be.started:
				lat = append(lat, at.Sub(t0))
			case <-time.After(10 * time.Second):
				b.Fatal("job did not start")
			}
		}
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.95).Microseconds())/1000, "p95-ms")
	}
	b.Run("job_path", func(b *testing.B) {
		measure(b, func() error {
			return p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
				_, err := jobs.Submit(context.Background(), tx, p.Scope, be.env.Server.River, jobs.Spec{Type: "bench.start", Charges: []jobs.Charge{{Op: "image", Cost: 1}}})
				return err
			})
		})
	})
	b.Run("bare_river", func(b *testing.B) {
		measure(b, func() error {
			_, err := be.bare.Insert(context.Background(), bareStartArgs{}, &river.InsertOpts{Queue: "bare"})
			return err
		})
	})
}

// BenchmarkThroughput measures no-op jobs per second, enqueue to the last
// completion, in batches of 400: bare River (one InsertMany) against the
// whole Job path (Submit with a charge, the worker's start and completion
// transactions, promotion of waiting jobs) over 8 projects and over one
// project (its jobs pass the per-project cap of 8 active jobs).
func BenchmarkThroughput(b *testing.B) {
	be := setupBench(b)
	const batch = 400
	drain(be.done)
	drain(be.bareDone)
	wait := func(ch <-chan *river.Event, n int) {
		for range n {
			select {
			case <-ch:
			case <-time.After(60 * time.Second):
				b.Fatal("jobs did not complete")
			}
		}
	}
	submit := func(ps []*apitest.Project) {
		per := batch / len(ps)
		var wg sync.WaitGroup
		for _, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
					for range per {
						if _, err := jobs.Submit(context.Background(), tx, p.Scope, be.env.Server.River, jobs.Spec{Type: "bench.noop", Charges: []jobs.Charge{{Op: "image", Cost: 1}}}); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	var bare, many, one, enqueue time.Duration
	for b.Loop() {
		t0 := time.Now()
		params := make([]river.InsertManyParams, batch)
		for i := range params {
			params[i] = river.InsertManyParams{Args: bareArgs{}, InsertOpts: &river.InsertOpts{Queue: "bare"}}
		}
		if _, err := be.bare.InsertMany(context.Background(), params); err != nil {
			b.Fatal(err)
		}
		wait(be.bareDone, batch)
		bare += time.Since(t0)

		t0 = time.Now()
		submit(be.projects)
		enqueue += time.Since(t0)
		wait(be.done, batch)
		many += time.Since(t0)

		t0 = time.Now()
		submit(be.projects[:1])
		wait(be.done, batch)
		one += time.Since(t0)
	}
	n := float64(b.N * batch)
	rate := func(d time.Duration) float64 { return n / d.Seconds() }
	b.ReportMetric(rate(bare), "bare-jobs/s")
	b.ReportMetric(rate(many), "job-8proj-jobs/s")
	b.ReportMetric(rate(one), "job-1proj-jobs/s")
	b.ReportMetric(rate(many)/rate(bare), "ratio-8proj")
	b.ReportMetric(float64(enqueue.Microseconds())/1000/n, "submit-ms/job")
	b.ReportMetric(rate(one)/rate(bare), "ratio-1proj")
	b.Logf("bare %.0f jobs/s, job path %.0f jobs/s over 8 projects (%.2fx), %.0f jobs/s in one project (%.2fx)",
		rate(bare), rate(many), rate(many)/rate(bare), rate(one), rate(one)/rate(bare))
}

func drain[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
