package webhook_test

import (
	"context"
	"fmt"
	"sort"
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
			events := (b.N + c.endpoints - 1) / c.endpoints
			ctx := context.Background()
			b.ResetTimer()
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
		})
	}
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
