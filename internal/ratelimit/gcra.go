// Package ratelimit enforces the request limits of the contract with GCRA
// (the generic cell rate algorithm): a bucket of Burst requests that
// refills at RPM/60 per second. The in-process Memory store is the
// default; Redis shares one limit across instances.
//
// It knows no project: the buckets, their headers and 429, the client IP
// and the per-IP and per-key limits of the control plane's routes. The
// guard in front of /v1, which charges a request to its project's bucket,
// is tenant/ratelimit.
package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Limit is a rate in requests per minute with a burst allowance.
type Limit struct {
	RPM   int
	Burst int
}

// Result is one limiter decision.
type Result struct {
	// Allowed reports whether the request conforms (always true for a peek).
	Allowed bool
	// Remaining is how many more requests would be allowed right now.
	Remaining int
	// RetryAfter is how long until a denied request would be allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again.
	ResetAfter time.Duration
}

// Store takes n requests from the bucket key under limit l. n = 0 peeks:
// it reports the bucket without charging it.
type Store interface {
	Take(ctx context.Context, key string, l Limit, n int) (Result, error)
}

// interval is the emission interval of l (the time one request refills).
func (l Limit) interval() int64 {
	rpm := max(l.RPM, 1)
	return int64(time.Minute) / int64(rpm)
}

// gcra applies one decision to the theoretical arrival time tat (ns) at
// now (ns) and returns the result and the new tat. The semantics match
// go-redis/redis_rate, so both stores answer alike.
func gcra(tat, now int64, l Limit, n int) (Result, int64) {
	t := l.interval()
	if tat < now {
		tat = now
	}
	newTat := tat + t*int64(n)
	diff := now - (newTat - t*int64(max(l.Burst, 1)))
	if diff < 0 {
		return Result{RetryAfter: time.Duration(-diff), ResetAfter: time.Duration(tat - now)}, tat
	}
	return Result{Allowed: true, Remaining: int(diff / t), ResetAfter: time.Duration(newTat - now)}, newTat
}

const shards = 64

// Memory is the in-process GCRA store: a sharded map from bucket key to
// its theoretical arrival time. A decision takes one mutex and one map
// lookup and allocates nothing for a known key.
type Memory struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [shards]memShard
}

type memShard struct {
	mu sync.Mutex
	// tat holds each bucket's theoretical arrival time in Unix ns; a
	// bucket whose tat is in the past is full and is the same as absent.
	tat   map[string]int64
	sweep int // size at which the shard next drops full buckets
}

// NewMemory returns an in-process store reading time from now (time.Now
// when nil).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{now: now, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].tat = make(map[string]int64)
		m.shards[i].sweep = 1024
	}
	return m
}

// Take implements Store.
func (m *Memory) Take(_ context.Context, key string, l Limit, n int) (Result, error) {
	return m.take(key, l, n), nil
}

func (m *Memory) take(key string, l Limit, n int) Result {
	sh := &m.shards[maphash.String(m.seed, key)%shards]
	now := m.now().UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tat, known := sh.tat[key]
	res, newTat := gcra(tat, now, l, n)
	if res.Allowed && n > 0 {
		sh.tat[key] = newTat
		if !known && len(sh.tat) >= sh.sweep {
			sh.drop(now)
		}
	}
	return res
}

// drop forgets full buckets, so memory stays proportional to the callers
// seen within one refill time; it runs when the shard has doubled.
func (sh *memShard) drop(now int64) {
	for k, tat := range sh.tat {
		if tat <= now {
			delete(sh.tat, k)
		}
	}
	sh.sweep = max(1024, 2*len(sh.tat))
}
