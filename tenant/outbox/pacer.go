package outbox

import (
	"sync"
	"time"
)

// Pacing of one endpoint: at most one send per Pace, across every
// process. The endpoint row holds the next free slot (a GCRA in the
// database); a process leases a few slots at a time from it and binds one
// to an attempt just before sending it. A send happens at its slot or at
// most LateTolerance after it (a later one takes a new slot), so no window
// of one second holds more than (1s + LateTolerance)/Pace + 1 = 88 sends:
// under 100 with room for the jitter of the network, such as the first
// requests of a burst arriving together once their connections are set up.
//
// Jobs that cannot get a slot soon wait in a queue of tickets (per
// endpoint and process), spaced Pace apart, and snooze until shortly
// before their turn: a backlog of thousands is worked in order with each
// job woken about once, and no job holds a worker while it waits.
const (
	Pace          = time.Second / 85
	LateTolerance = 25 * time.Millisecond
	// a lease is at most one horizon of slots, and starts at least
	// leaseLead ahead, so the commit of the lease does not make its first
	// slot late
	maxLease  = int(horizon / Pace)
	leaseLead = 10 * time.Millisecond
)

// pacer holds this process's leased slots and tickets, per endpoint.
type pacer struct {
	mu  sync.Mutex
	eps map[string]*endpointSlots
}

type endpointSlots struct {
	mu      sync.Mutex           // serialises this endpoint's leases
	free    []time.Time          // leased slots not yet bound, in order
	size    int                  // size of the next lease
	tickets map[string]time.Time // delivery id → its turn
	tail    time.Time            // the last ticket's turn
	swept   time.Time
}

func newPacer() *pacer { return &pacer{eps: map[string]*endpointSlots{}} }

// leaseFunc books n consecutive slots of an endpoint in the database and
// returns how far from now the first one is.
type leaseFunc func(n int) (time.Duration, error)

func (pc *pacer) endpoint(ep string) *endpointSlots {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e := pc.eps[ep]
	if e == nil {
		e = &endpointSlots{tickets: map[string]time.Time{}, size: 1}
		pc.eps[ep] = e
	}
	return e
}

// wait tells a job of delivery d whether to go on now (0) or snooze: it
// snoozes until shortly before its ticket's turn, and a job without one
// gets the next ticket when the endpoint already has a queue beyond the
// horizon.
func (pc *pacer) wait(ep, d string) time.Duration {
	e := pc.endpoint(ep)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	e.sweep(now)
	if t, ok := e.tickets[d]; ok {
		if w := t.Sub(now); w > horizon {
			return w - early
		}
		return 0
	}
	if e.tail.Sub(now) > horizon {
		return e.ticket(d, e.tail) - early
	}
	return 0
}

// take binds a slot within the horizon to the attempt of delivery d,
// leasing when none is free, or, when the endpoint is booked beyond the
// horizon, gives d a ticket and returns how long to snooze.
func (pc *pacer) take(ep, d string, lease leaseFunc) (time.Time, time.Duration, error) {
	e := pc.endpoint(ep)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	wasted := false
	for len(e.free) > 0 && e.free[0].Before(now) {
		e.free, wasted = e.free[1:], true
	}
	if len(e.free) == 0 {
		// The lease size doubles while leases are used up and halves when
		// slots go unused, so a burst leases few blocks and an idle
		// endpoint wastes little.
		if wasted {
			e.size = max(1, e.size/2)
		}
		n := e.size
		off, err := lease(n)
		if err != nil {
			return time.Time{}, 0, err
		}
		first := time.Now().Add(off)
		for i := range n {
			e.free = append(e.free, first.Add(time.Duration(i)*Pace))
		}
		e.size = min(maxLease, e.size*2)
	}
	if s := e.free[0]; s.Sub(now) <= horizon {
		e.free = e.free[1:]
		delete(e.tickets, d)
		return s, 0, nil
	}
	// booked beyond the horizon (by other processes, or our own lease)
	return time.Time{}, e.ticket(d, e.free[len(e.free)-1]) - early, nil
}

// ticket queues d for the turn after both the queue's tail and after, and
// returns how far that turn is.
func (e *endpointSlots) ticket(d string, after time.Time) time.Duration {
	t := e.tail
	if after.After(t) {
		t = after
	}
	t = t.Add(Pace)
	e.tail = t
	e.tickets[d] = t
	return time.Until(t)
}

// sweep forgets the tickets of jobs that never came back (another process
// ran them, or their delivery was settled elsewhere).
func (e *endpointSlots) sweep(now time.Time) {
	if now.Sub(e.swept) < 10*time.Second {
		return
	}
	for k, t := range e.tickets {
		if now.Sub(t) > time.Minute {
			delete(e.tickets, k)
		}
	}
	e.swept = now
}

// done forgets delivery d's ticket once it is sent or no longer needed.
func (pc *pacer) done(ep, d string) {
	pc.mu.Lock()
	e := pc.eps[ep]
	pc.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	delete(e.tickets, d)
	idle := len(e.tickets) == 0 && len(e.free) == 0 && time.Now().After(e.tail)
	e.mu.Unlock()
	if idle {
		// A job racing with this may still use e; the next caller just
		// starts a fresh entry.
		pc.mu.Lock()
		if pc.eps[ep] == e {
			delete(pc.eps, ep)
		}
		pc.mu.Unlock()
	}
}
