package ratelimit

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkMemoryTake is one in-process decision (target: at most 1 µs,
// 0 allocations), over 10,000 buckets as a busy instance holds.
func BenchmarkMemoryTake(b *testing.B) {
	m := NewMemory(nil)
	l := Limit{RPM: 1_000_000, Burst: 1_000_000}
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("prj:prj_%024d", i)
	}
	ctx := context.Background()
	for _, k := range keys {
		m.Take(ctx, k, l, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Take(ctx, keys[i%len(keys)], l, 1)
	}
}

// BenchmarkMemoryTakeParallel is the same decision from every core at once.
func BenchmarkMemoryTakeParallel(b *testing.B) {
	m := NewMemory(nil)
	l := Limit{RPM: 1_000_000, Burst: 1_000_000}
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("prj:prj_%024d", i)
	}
	ctx := context.Background()
	for _, k := range keys {
		m.Take(ctx, k, l, 1)
	}
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
