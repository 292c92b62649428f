package outbox

import (
	"math/rand/v2"
	"sync"
	"time"
)

// MaxInFlight bounds how many delivery workers of one process one endpoint
// may hold at once: from the binding of a pacing slot to the receiver's
// answer, including the wait of up to 225 ms for the slot. A
// receiver that hangs therefore holds at most this many of the
// QueueConfig.MaxWorkers workers until the timeout, and every other
// endpoint keeps the rest: a slow endpoint never delays another unless
// more than MaxWorkers/MaxInFlight (41) endpoints hang at the same moment.
// At 24 a receiver answering within 100 ms still gets its full 85/s.
const MaxInFlight = 24

// limits is the per-process, per-endpoint concurrency bound. A job that
// finds its endpoint full is snoozed (it frees its worker) for about half
// the endpoint's current latency, so a hanging endpoint's backlog is
// looked at a few times per timeout rather than in a busy loop.
type limits struct {
	mu      sync.Mutex
	m       map[string]*endpointLimit
	max     int
	ceiling time.Duration // the receiver timeout
}

type endpointLimit struct {
	held []*permit     // permits held now
	ewma time.Duration // smoothed latency of finished attempts
}

func newLimits(max int, ceiling time.Duration) *limits {
	return &limits{m: map[string]*endpointLimit{}, max: max, ceiling: ceiling}
}

// permit is one held slot of an endpoint.
type permit struct {
	l     *limits
	ep    string
	start time.Time
}

// acquire takes a slot of endpoint ep, or returns nil when all are held.
func (l *limits) acquire(ep string) *permit {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[ep]
	if e == nil {
		e = &endpointLimit{}
		l.m[ep] = e
	}
	if len(e.held) >= l.max {
		return nil
	}
	p := &permit{l: l, ep: ep, start: time.Now()}
	e.held = append(e.held, p)
	return p
}

// full reports whether endpoint ep holds all its slots now.
func (l *limits) full(ep string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[ep]
	return e != nil && len(e.held) >= l.max
}

// release frees the slot; took > 0 is the latency of an attempt made
// under it, folded into the endpoint's estimate.
func (p *permit) release(took time.Duration) {
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[p.ep]
	if e == nil {
		return
	}
	for i, h := range e.held {
		if h == p {
			e.held = append(e.held[:i], e.held[i+1:]...)
			break
		}
	}
	if took > 0 {
		if e.ewma == 0 {
			e.ewma = took
		} else {
			e.ewma = (e.ewma*7 + took) / 8
		}
	}
	if len(e.held) == 0 && e.ewma < l.ceiling/4 {
		delete(l.m, p.ep) // an idle, healthy endpoint needs no state
	}
}

// backoff is how long a job of a full endpoint should snooze: half the
// endpoint's latency as now seen (the longest-running attempt counts, so a
// receiver that just started hanging is recognised before any attempt of
// it finishes), within [50 ms, timeout], jittered so waiters spread out.
func (l *limits) backoff(ep string) time.Duration {
	l.mu.Lock()
	est := time.Duration(0)
	if e := l.m[ep]; e != nil {
		est = e.ewma
		for _, h := range e.held {
			est = max(est, time.Since(h.start))
		}
	}
	l.mu.Unlock()
	d := time.Duration(float64(max(est/2, 50*time.Millisecond)) * (0.75 + rand.Float64()/2))
	return min(d, l.ceiling)
}
