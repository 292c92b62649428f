package outbox

import (
	"fmt"
	"testing"
	"time"
)

// fakeLease books slots on a simulated endpoint row, as the UPDATE does.
type fakeLease struct {
	next   time.Time
	leases []int
}

func (f *fakeLease) lease(n int) (time.Duration, error) {
	now := time.Now()
	first := f.next
	if first.Before(now.Add(leaseLead)) {
		first = now.Add(leaseLead)
	}
	f.next = first.Add(time.Duration(n) * Pace)
	f.leases = append(f.leases, n)
	return time.Until(first), nil
}

func TestPacerBurst(t *testing.T) {
	pc := newPacer()
	f := &fakeLease{}
	var bound []time.Time
	var tickets []time.Duration
	var queued []string
	for i := range 200 {
		d := fmt.Sprint("whd_", i)
		if w := pc.wait("e", d); w > 0 {
			tickets = append(tickets, w)
			queued = append(queued, d)
			// asking again before the turn keeps the place in the queue
			if again := pc.wait("e", d); again > w || again < w-time.Second {
				t.Fatalf("ticket moved: %s then %s", w, again)
			}
			continue
		}
		s, w, err := pc.take("e", d, f.lease)
		if err != nil {
			t.Fatal(err)
		}
		if w > 0 {
			tickets = append(tickets, w)
			queued = append(queued, d)
			continue
		}
		if time.Until(s) > horizon {
			t.Fatalf("slot %s ahead, beyond the horizon", time.Until(s))
		}
		bound = append(bound, s)
	}
	for i := 1; i < len(bound); i++ {
		if bound[i].Sub(bound[i-1]) < Pace-time.Millisecond {
			t.Fatalf("bound slots %d and %d only %s apart", i-1, i, bound[i].Sub(bound[i-1]))
		}
	}
	if len(bound) == 0 || len(bound) > 2*maxLease || len(bound)+len(tickets) != 200 {
		t.Fatalf("%d bound, %d queued", len(bound), len(tickets))
	}
	turns := pc.endpoint("e").tickets
	for i := 1; i < len(queued); i++ {
		if gap := turns[queued[i]].Sub(turns[queued[i-1]]); gap != Pace {
			t.Fatalf("tickets %d and %d %s apart, want %s", i-1, i, gap, Pace)
		}
	}
	for _, n := range f.leases {
		if n > maxLease {
			t.Fatalf("lease of %d slots", n)
		}
	}
	// the last queued job waits about its place in line
	if last := tickets[len(tickets)-1]; last < time.Duration(len(tickets))*Pace {
		t.Fatalf("last ticket in %s for %d queued", last, len(tickets))
	}
}

func TestPacerTicketTurn(t *testing.T) {
	pc := newPacer()
	e := pc.endpoint("e")
	e.tail = time.Now().Add(time.Second)
	if w := pc.wait("e", "d1"); w < time.Second-early-10*time.Millisecond {
		t.Fatalf("queued behind a 1 s tail: wait %s", w)
	}
	e.tickets["d1"] = time.Now().Add(horizon / 2) // its turn comes
	if w := pc.wait("e", "d1"); w != 0 {
		t.Fatalf("turn came, wait %s", w)
	}
	f := &fakeLease{}
	if _, w, err := pc.take("e", "d1", f.lease); err != nil || w != 0 {
		t.Fatalf("take at its turn: %s %v", w, err)
	}
	if _, ok := e.tickets["d1"]; ok {
		t.Fatal("ticket kept after its slot was bound")
	}
}
