package ratelimit

import (
	"context"
	"testing"
)

// BenchmarkMemoryTake is one in-process decision (target: at most 1 µs,
// 0 allocations), over 10,000 buckets as a busy instance holds.
func BenchmarkMemoryTake(b *testing.B) {
	m, l, keys := warmMemory(10_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Take(ctx, keys[i%len(keys)], l, 1)
	}
}

// BenchmarkMemoryTakeParallel is the same decision from every core at once.
func BenchmarkMemoryTakeParallel(b *testing.B) {
	m, l, keys := warmMemory(10_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Take(ctx, keys[i%len(keys)], l, 1)
			i++
		}
	})
}
