package webhook

import (
	"testing"
	"time"
)

func TestPacerLeasesInGrowingBlocks(t *testing.T) {
	pc := newPacer()
	var leases []int
	next := time.Duration(0)
	lease := func(n int) (time.Duration, error) {
		leases = append(leases, n)
		off := next
		next += time.Duration(n) * Pace
		return off + 50*time.Millisecond, nil
	}
	var last time.Time
	for i := range 100 {
		d := string(rune('a'+i%26)) + string(rune('A'+i/26))
		s, err := pc.slot("e", d, lease)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && s.Sub(last) < Pace-time.Millisecond {
			t.Fatalf("slot %d only %s after the previous", i, s.Sub(last))
		}
		last = s
		if again, _ := pc.slot("e", d, lease); !again.Equal(s) {
			t.Fatal("a delivery's slot changed")
		}
	}
	// 1+2+4+8+16+32+64 >= 100: seven leases for a burst of 100
	if len(leases) != 7 || leases[6] != 64 {
		t.Fatalf("leases %v", leases)
	}
	pc.drop("e", "aA")
	if s, _ := pc.slot("e", "aA", lease); !s.After(last) {
		t.Fatal("a dropped delivery must get a new slot")
	}
}
