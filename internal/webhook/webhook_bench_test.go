package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/apitest"
	"github.com/plinth-dev/plinth/internal/webhook/webhooktest"
)

// BenchmarkDeliveryThroughput measures deliveries per second from commit
// to a local HTTPS receiver, one op per delivery. Each endpoint is paced
// at 96/s, so the load is spread over several endpoints; "projects"
// compares one project (its credit balance row serialises the charges of
// all its deliveries) with the same endpoints over four projects.
func BenchmarkDeliveryThroughput(b *testing.B) {
	for _, c := range []struct{ projects, endpoints int }{{1, 32}, {4, 8}} {
		b.Run(fmt.Sprintf("projects=%d/endpoints=%d", c.projects, c.projects*c.endpoints), func(b *testing.B) {
			rc := webhooktest.NewTLS(b, nil)
			env := apitest.New(b, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
			var projects []*apitest.Project
			for range c.projects {
				p := env.NewProject("enterprise")
				for range c.endpoints {
					webhooktest.Endpoint(b, env, p.Key, rc.URL, "content.changed")
				}
				projects = append(projects, p)
			}
			// at least 3,000 deliveries per run, so the ramp-up of a burst
			// does not dominate; ns/op is reported per delivery
			events := (max(b.N, 3000) + c.endpoints - 1) / c.endpoints
			ctx := context.Background()
			b.ResetTimer()
			cpu0 := cpuTime(env.DB.Name)
			start := time.Now()
			for i, sent := 0, 0; sent < events; i++ {
				p := projects[i%len(projects)]
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
			want := events * c.endpoints // an event reaches its project's endpoints
			rc.WaitN(b, 10*time.Minute, want)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(want), "ns/op")
			// CPU spent per delivery by this process (server, River and the
			// receiver) and by the database backends of the test database:
			// a figure a busy shared machine disturbs far less than the
			// wall clock.
			cpu := cpuTime(env.DB.Name) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(want), "cpu-µs/delivery")
		})
	}
}

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
