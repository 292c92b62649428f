package ratelimit

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plinth-dev/plinth/internal/redistest"
)

// TestMemoryAccuracy is the limit-accuracy must-show on a simulated clock:
// at 60 rpm with burst 10, 4 requests per second for 30 s get 40 ± 1.
func TestMemoryAccuracy(t *testing.T) {
	t.Parallel()
	m, clock := simulatedMemory()
	l := Limit{RPM: 60, Burst: 10}
	accepted := 0
	for i := 0; i < 120; i++ {
		r, _ := m.Take(context.Background(), "p", l, 1)
		if r.Allowed {
			accepted++
		} else if r.RetryAfter <= 0 || r.RetryAfter > time.Second {
			t.Fatalf("request %d: denied with RetryAfter %v", i, r.RetryAfter)
		}
		clock.Add(250 * time.Millisecond)
	}
	if accepted < 39 || accepted > 41 {
		t.Fatalf("accepted %d of 120, want 40 ± 1", accepted)
	}
}

func TestMemoryBurstPeekAndReset(t *testing.T) {
	t.Parallel()
	m, clock := simulatedMemory()
	l := Limit{RPM: 30, Burst: 3} // one request per 2 s
	ctx := context.Background()

	r, _ := m.Take(ctx, "k", l, 0)
	if !r.Allowed || r.Remaining != 3 || r.ResetAfter != 0 {
		t.Fatalf("fresh peek: %+v", r)
	}
	for i, want := range []int{2, 1, 0} {
		r, _ = m.Take(ctx, "k", l, 1)
		if !r.Allowed || r.Remaining != want {
			t.Fatalf("request %d: %+v, want remaining %d", i, r, want)
		}
	}
	if r.ResetAfter != 6*time.Second {
		t.Fatalf("reset after %v, want 6s", r.ResetAfter)
	}
	// peeks never charge
	for i := 0; i < 5; i++ {
		if p, _ := m.Take(ctx, "k", l, 0); p.Remaining != 0 {
			t.Fatalf("peek: %+v", p)
		}
	}
	r, _ = m.Take(ctx, "k", l, 1)
	if r.Allowed || r.RetryAfter != 2*time.Second || r.Remaining != 0 {
		t.Fatalf("over the burst: %+v", r)
	}
	clock.Add(2 * time.Second)
	if r, _ = m.Take(ctx, "k", l, 1); !r.Allowed || r.Remaining != 0 {
		t.Fatalf("after one refill: %+v", r)
	}
	// another key is another bucket
	if r, _ = m.Take(ctx, "other", l, 1); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("other key: %+v", r)
	}
	clock.Add(time.Minute)
	if r, _ = m.Take(ctx, "k", l, 0); r.Remaining != 3 {
		t.Fatalf("after full refill: %+v", r)
	}
}

func TestMemoryForgetsFullBuckets(t *testing.T) {
	t.Parallel()
	m, clock := simulatedMemory()
	l := Limit{RPM: 60, Burst: 10}
	keys := make([]string, 200_000)
	for i := range keys {
		keys[i] = "ip:" + netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()
	}
	for i, k := range keys {
		m.Take(context.Background(), k, l, 1)
		if i%1000 == 0 {
			clock.Add(2 * time.Second) // every earlier bucket has refilled
		}
	}
	n := 0
	for i := range m.shards {
		n += len(m.shards[i].tat)
	}
	if n > 64*2048 {
		t.Fatalf("%d buckets kept; full ones must be dropped", n)
	}
}

func TestMemoryConcurrent(t *testing.T) {
	t.Parallel()
	m, _ := simulatedMemory()
	l := Limit{RPM: 60, Burst: 100}
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if r, _ := m.Take(context.Background(), "shared", l, 1); r.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if allowed != 100 {
		t.Fatalf("%d allowed at once, want exactly the burst 100", allowed)
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	cases := []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"untrusted peer ignores XFF", "203.0.113.9:4000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted peer without XFF", "127.0.0.1:4000", nil, "127.0.0.1"},
		{"trusted peer, one hop", "127.0.0.1:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"rightmost untrusted wins over a spoofed left part", "127.0.0.1:4000", []string{"1.2.3.4, 198.51.100.1, 10.1.2.3"}, "198.51.100.1"},
		{"several headers", "10.0.0.1:4000", []string{"1.2.3.4", "198.51.100.7"}, "198.51.100.7"},
		{"all trusted: leftmost", "127.0.0.1:4000", []string{"10.0.0.5, 10.0.0.6"}, "10.0.0.5"},
		{"garbage stops the walk", "127.0.0.1:4000", []string{"198.51.100.1, nonsense"}, "127.0.0.1"},
		{"IPv6 peer", "[2001:db8::1]:443", nil, "2001:db8::1"},
		{"IPv4-mapped", "[::ffff:203.0.113.9]:80", nil, "203.0.113.9"},
	}
	for _, c := range cases {
		r, _ := http.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := ClientIP(r, trusted); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRedisMatchesMemory runs the same sequence through both stores: the
// Redis store (redis_rate's GCRA) answers as the in-process one does.
func TestRedisMatchesMemory(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	rs := NewRedis(client, NewMemory(nil), slogDiscard())
	mem := NewMemory(nil)
	ctx := context.Background()
	l := Limit{RPM: 6, Burst: 4} // one request per 10 s: the test runs well within one refill
	for i := 0; i < 6; i++ {
		a, err := rs.Take(ctx, "k", l, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := mem.Take(ctx, "k", l, 1)
		if a.Allowed != b.Allowed || a.Remaining != b.Remaining {
			t.Fatalf("request %d: redis %+v, memory %+v", i, a, b)
		}
		if !a.Allowed && (a.RetryAfter <= 0 || a.RetryAfter > 10*time.Second) {
			t.Fatalf("request %d: retry after %v", i, a.RetryAfter)
		}
	}
	p, err := rs.Take(ctx, "k", l, 0)
	if err != nil || !p.Allowed || p.Remaining != 0 || p.ResetAfter < 30*time.Second {
		t.Fatalf("peek: %+v %v", p, err)
	}
	if p2, _ := rs.Take(ctx, "k", l, 0); p2.Remaining != 0 {
		t.Fatalf("a peek charged the bucket: %+v", p2)
	}
}

// TestRedisFallback: with Redis unreachable, decisions come from the
// in-process fallback instead of failing.
func TestRedisFallback(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer client.Close()
	rs := NewRedis(client, NewMemory(nil), slogDiscard())
	l := Limit{RPM: 60, Burst: 2}
	var allowed int
	for i := 0; i < 3; i++ {
		r, err := rs.Take(context.Background(), "k", l, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed {
			allowed++
		}
	}
	if allowed != 2 {
		t.Fatalf("fallback allowed %d, want the burst 2", allowed)
	}
}
