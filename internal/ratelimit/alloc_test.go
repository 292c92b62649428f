//go:build !race

package ratelimit

import (
	"context"
	"testing"
)

// TestMemoryZeroAllocs: a decision on a known bucket allocates nothing.
func TestMemoryZeroAllocs(t *testing.T) {
	m := NewMemory(nil)
	l := Limit{RPM: 240, Burst: 480}
	ctx := context.Background()
	m.Take(ctx, "prj:abc", l, 1)
	if n := testing.AllocsPerRun(1000, func() { m.Take(ctx, "prj:abc", l, 1) }); n != 0 {
		t.Fatalf("%v allocations per decision, want 0", n)
	}
}
