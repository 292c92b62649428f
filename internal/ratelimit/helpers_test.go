package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// FakeClock is a simulated clock, safe for concurrent use.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock is a FakeClock standing at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{t: t} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *FakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// simulatedMemory is an in-process store on a simulated clock.
func simulatedMemory() (*Memory, *FakeClock) {
	clock := NewFakeClock(time.Unix(1_700_000_000, 0))
	return NewMemory(clock.Now), clock
}

// warmMemory is an in-process store holding n buckets, each charged once,
// at a limit no benchmark reaches, with the buckets' keys.
func warmMemory(n int) (*Memory, Limit, []string) {
	m := NewMemory(nil)
	l := Limit{RPM: 1_000_000, Burst: 1_000_000}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("prj:prj_%024d", i)
		m.Take(context.Background(), keys[i], l, 1)
	}
	return m, l, keys
}
