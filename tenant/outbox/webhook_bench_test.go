package outbox_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ssrf"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant/outbox"
)

// BenchmarkDeliveryThroughput measures deliveries per second from commit
// to a local HTTPS receiver: 3,000 deliveries to 32 endpoints (each is
// paced at 85/s), once in one project (its credit balance row serialises
// the charges of all its deliveries) and once spread over four projects.
// Two baselines run beside them, in the same run on the same machine: the
// same number of bare HTTPS POSTs to the receiver (32 at a time, through
// the guarded client), and of no-op River jobs inserted in one statement.
// Every figure is a custom metric of the one iteration.
func BenchmarkDeliveryThroughput(b *testing.B) {
	const n = 3000
	for range b.N {
		https := baselinePosts(b, n)
		noop := baselineRiver(b, n)
		one, cpu1 := deliveries(b, n, 1, 32)
		four, cpu4 := deliveries(b, n, 4, 8)
		b.ReportMetric(https, "https-posts/s")
		b.ReportMetric(noop, "river-noop-jobs/s")
		b.ReportMetric(one, "deliveries/s-1project")
		b.ReportMetric(four, "deliveries/s-4projects")
		b.ReportMetric(float64(cpu1.Microseconds())/n, "cpu-µs/delivery-1project")
		b.ReportMetric(float64(cpu4.Microseconds())/n, "cpu-µs/delivery-4projects")
	}
}

// deliveries emits n/endpoints events to every endpoint of each project,
// 50 per transaction, and returns deliveries per second from the first
// commit to the last receipt, and the CPU spent.
func deliveries(b *testing.B, n, projects, endpoints int) (float64, time.Duration) {
	rc := webhooktest.NewTLS(b, nil)
	env := apitest.New(b, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	var ps []*apitest.Project
	for range projects {
		p := env.NewProject("enterprise")
		for range endpoints {
			webhooktest.Endpoint(b, env, p.Key, rc.URL, "content.changed")
		}
		ps = append(ps, p)
	}
	events := n / endpoints
	ctx := context.Background()
	cpu0 := cpuTime(env.DB.Name)
	start := time.Now()
	for i, sent := 0, 0; sent < events; i++ {
		p := ps[i%len(ps)]
		batch := min(50, events-sent)
		if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
			for i := range batch {
				if err := env.Server.Outbox.Emit(ctx, tx, p.Scope, "content.changed", map[string]any{"key": "k", "i": sent + i}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		sent += batch
	}
	want := events * endpoints // an event reaches its project's endpoints
	rc.WaitN(b, 10*time.Minute, want)
	elapsed := time.Since(start)
	// CPU of this process (server, River and the receiver) and of the
	// database backends of the test database: a figure a busy shared
	// machine disturbs less than the wall clock.
	return float64(want) / elapsed.Seconds(), cpuTime(env.DB.Name) - cpu0
}

// baselinePosts sends n bare POSTs to a receiver, 32 at a time.
func baselinePosts(b *testing.B, n int) float64 {
	rc := webhooktest.NewTLS(b, nil)
	c := ssrf.NewClient(ssrf.Options{Dev: true, Timeout: 10 * time.Second, RootCAs: rc.RootCAs(), MaxConnsPerHost: outbox.MaxInFlight})
	body := []byte(`{"id":"evt_x","type":"content.changed","created":1,"data":{"key":"k"}}`)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 32 {
				res, err := c.Post(rc.URL, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// baselineRiver inserts n no-op jobs in one statement and works them.
func baselineRiver(b *testing.B, n int) float64 {
	db := pgtest.New(b)
	var done atomic.Int64
	all := make(chan struct{})
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, j *river.Job[noopArgs]) error {
		if done.Add(1) == int64(n) {
			close(all)
		}
		return nil
	}))
	rc, err := queue.New(db.Pool, workers, queue.Options{Work: true, Queues: map[string]river.QueueConfig{"bench": {MaxWorkers: 100}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := rc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rc.Stop(ctx) }()
	jobs := make([]river.InsertManyParams, n)
	for i := range jobs {
		jobs[i] = river.InsertManyParams{Args: noopArgs{}, InsertOpts: &river.InsertOpts{Queue: "bench"}}
	}
	start := time.Now()
	if _, err := rc.InsertMany(ctx, jobs); err != nil {
		b.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d jobs done", done.Load(), n)
	}
	return float64(n) / time.Since(start).Seconds()
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "bench.noop" }

// cpuTime is the user and system CPU time of this process plus that of
// the PostgreSQL backends connected to database db (Linux /proc).
func cpuTime(db string) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range procs {
		cmd, err := os.ReadFile(c)
		if err != nil || !bytes.HasPrefix(cmd, []byte("postgres: postgres "+db+" ")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(c), "stat"))
		if err != nil {
			continue
		}
		// fields after the ")" of the command: state is field 3; utime and
		// stime are fields 14 and 15, in clock ticks of 10 ms
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			total += time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	return total
}

// BenchmarkCommitToReceipt measures the latency from the commit of an
// event's transaction to the receiver getting the request, one event at a
// time; it reports the p50 and p99.
func BenchmarkCommitToReceipt(b *testing.B) {
	rc := webhooktest.NewTLS(b, nil)
	env := apitest.New(b, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	p := env.NewProject("enterprise")
	webhooktest.Endpoint(b, env, p.Key, rc.URL, "order.paid")
	// warm up connections and caches
	webhooktest.Emit(b, env, p, "order.paid", map[string]any{"id": -1})
	rc.WaitN(b, 10*time.Second, 1)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		webhooktest.Emit(b, env, p, "order.paid", map[string]any{"id": i})
		committed := time.Now()
		got := rc.WaitN(b, 10*time.Second, i+2)
		lat = append(lat, got[i+1].At.Sub(committed))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
}
