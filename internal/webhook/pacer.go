package webhook

import (
	"sync"
	"time"
)

// Pacing of one endpoint: at most one send per Pace, across every
// process. The endpoint row holds the next free slot (a GCRA in the
// database); a process leases slots from it in blocks and hands them out
// to its jobs without a database round trip. A send happens at its slot
// or at most LateTolerance after it (a job that misses its slot takes a
// new one), so no window of one second holds more than
// (1s + LateTolerance)/Pace + 1 = 88 sends: under 100 with room for the
// jitter of the network, such as the first requests of a burst arriving
// together once their connections are set up.
const (
	Pace          = time.Second / 85
	LateTolerance = 25 * time.Millisecond
	// maxLease bounds a lease to one second of slots; a lease starts at
	// least leaseLead ahead, so the commit of the lease does not make its
	// first slot late.
	maxLease  = 90
	leaseLead = 10 * time.Millisecond
)

// pacer hands out this process's leased slots, per endpoint.
type pacer struct {
	mu  sync.Mutex
	eps map[string]*endpointSlots
}

type endpointSlots struct {
	mu    sync.Mutex           // serialises this endpoint's leases
	free  []time.Time          // leased slots not given out yet, in order
	given map[string]time.Time // delivery id → its slot
	size  int                  // size of the next lease
	swept time.Time
}

func newPacer() *pacer { return &pacer{eps: map[string]*endpointSlots{}} }

// leaseFunc books n consecutive slots of an endpoint in the database and
// returns how far from now the first one is.
type leaseFunc func(n int) (time.Duration, error)

// slot returns the slot of delivery d of endpoint ep: the one it was given
// before, or a new one, leasing a block when none is free. The lease size
// doubles while blocks are used up and halves when slots go unused, so a
// burst leases few blocks and an idle endpoint wastes little.
func (pc *pacer) slot(ep, d string, lease leaseFunc) (time.Time, error) {
	pc.mu.Lock()
	e := pc.eps[ep]
	if e == nil {
		e = &endpointSlots{given: map[string]time.Time{}, size: 1}
		pc.eps[ep] = e
	}
	pc.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.given[d]; ok {
		return s, nil
	}
	now := time.Now()
	if now.Sub(e.swept) > 10*time.Second {
		// slots of jobs that never came back (another process ran them)
		for k, s := range e.given {
			if now.Sub(s) > time.Minute {
				delete(e.given, k)
			}
		}
		e.swept = now
	}
	wasted := false
	for len(e.free) > 0 && e.free[0].Before(now) {
		e.free, wasted = e.free[1:], true
	}
	if len(e.free) == 0 {
		if wasted {
			e.size = max(1, e.size/2)
		}
		n := e.size
		off, err := lease(n)
		if err != nil {
			return time.Time{}, err
		}
		first := time.Now().Add(off)
		for i := range n {
			e.free = append(e.free, first.Add(time.Duration(i)*Pace))
		}
		e.size = min(maxLease, e.size*2)
	}
	s := e.free[0]
	e.free = e.free[1:]
	e.given[d] = s
	return s, nil
}

// drop forgets delivery d's slot: used, missed, or no longer needed.
func (pc *pacer) drop(ep, d string) {
	pc.mu.Lock()
	e := pc.eps[ep]
	pc.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	delete(e.given, d)
	idle := len(e.given) == 0 && len(e.free) == 0
	e.mu.Unlock()
	if idle {
		// A job racing with this may still use e; its slots stay valid,
		// the next caller just starts a fresh entry.
		pc.mu.Lock()
		if pc.eps[ep] == e {
			delete(pc.eps, ep)
		}
		pc.mu.Unlock()
	}
}
