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
