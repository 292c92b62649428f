package id

import (
	"sort"
	"testing"
	"time"
)

func TestNewFormatAndOrder(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := 0; i < 100; i++ {
		ids = append(ids, NewAt("job_", base.Add(time.Duration(i)*time.Millisecond)))
	}
	for _, s := range ids {
		if !Valid("job_", s) {
			t.Fatalf("invalid id %q", s)
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids minted later must sort later")
	}
	if Valid("job_", "job_short") || Valid("key_", ids[0]) || Valid("job_", ids[0][:len(ids[0])-1]+"!") {
		t.Fatal("Valid accepted a malformed id")
	}
}

func FuzzValid(f *testing.F) {
	f.Add("prj_000000000000000000000000")
	f.Fuzz(func(t *testing.T, s string) {
		if Valid("prj_", s) && len(s) != 28 {
			t.Fatalf("accepted %q", s)
		}
	})
}

// TestRandomIsUniform: every base62 character is about equally likely. A
// remainder by 62 of every random byte, without dropping the bytes from
// 248 up, would make the first eight characters a quarter more likely
// than the others, far outside the band checked here.
func TestRandomIsUniform(t *testing.T) {
	const per = 10000
	counts := map[byte]int{}
	b := make([]byte, 62*per)
	Random(b)
	for _, c := range b {
		counts[c]++
	}
	if len(counts) != 62 {
		t.Fatalf("%d distinct characters, want 62", len(counts))
	}
	for c, n := range counts {
		if n < per*9/10 || n > per*11/10 {
			t.Errorf("%q drawn %d times, want %d ± 10 %%", c, n, per)
		}
	}
	// Short and long fills alike come out whole.
	for _, n := range []int{1, 15, 32, 64, 65, 300} {
		d := make([]byte, n)
		Random(d)
		for _, c := range d {
			if !isBase62(c) {
				t.Fatalf("fill of %d: %q", n, d)
			}
		}
	}
}

// TestNewAtAllocations: an id costs its buffer and its string, no more
// (it is minted on every request).
func TestNewAtAllocations(t *testing.T) {
	now := time.Now()
	if n := testing.AllocsPerRun(100, func() { _ = NewAt("req_", now) }); n > 2 {
		t.Fatalf("NewAt allocates %.0f times, want at most 2", n)
	}
}

func BenchmarkNewAt(b *testing.B) {
	now := time.Now()
	for b.Loop() {
		_ = NewAt("req_", now)
	}
}
