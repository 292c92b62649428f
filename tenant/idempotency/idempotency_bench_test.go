package idempotency_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
)

// BenchmarkIdempotentPOST measures, in one run, the same paid POST (insert
// a row and charge a credit in one transaction) with and without an
// Idempotency-Key, alternating the two from parallel clients.
// ratio = idempotent throughput / plain throughput (target >= 0.7).
func BenchmarkIdempotentPOST(b *testing.B) {
	env := apitest.New(b, apitest.WithWidgets(nil))
	p := env.NewProject("enterprise")
	p.EnableWidgets()
	rpm, burst, allowance := 100_000_000, 100_000_000, int64(1_000_000_000)
	if err := env.Server.Central.SetRateOverride(context.Background(), p.ID, &rpm, &burst, &allowance); err != nil {
		b.Fatal(err)
	}
	body := map[string]any{"name": "bench"}
	for i := 0; i < 20; i++ { // warm the pools and caches
		post(env, p.Key, "", body).Expect(b, 201)
		post(env, p.Key, fmt.Sprintf("warm-%d", i), body).Expect(b, 201)
	}
	var plainNS, idemNS, seq atomic.Int64
	b.SetParallelism(2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t0 := time.Now()
			post(env, p.Key, "", body).Expect(b, 201)
			t1 := time.Now()
			post(env, p.Key, fmt.Sprintf("bench-%d", seq.Add(1)), body).Expect(b, 201)
			plainNS.Add(int64(t1.Sub(t0)))
			idemNS.Add(int64(time.Since(t1)))
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(plainNS.Load())/float64(b.N), "plain-ns/req")
	b.ReportMetric(float64(idemNS.Load())/float64(b.N), "idem-ns/req")
	b.ReportMetric(float64(plainNS.Load())/float64(idemNS.Load()), "ratio")
}
