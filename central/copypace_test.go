package central

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestPacedReader: a move's paced copy reads no faster than its rate.
// The token bucket allows its burst at once, then rate bytes a second,
// so 256 KiB at 1 MiB/s with a 64 KiB burst cannot take less than
// (256-64)/1024 s, however fast the machine.
func TestPacedReader(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("x"), 256<<10)
	lim := rate.NewLimiter(rate.Limit(1<<20), copyBurst)
	t0 := time.Now()
	got, err := io.ReadAll(&pacedReader{ctx: context.Background(), r: bytes.NewReader(data), lim: lim})
	took := time.Since(t0)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, err %v", len(got), err)
	}
	if least := (256 - 64) * time.Second / 1024; took < least {
		t.Fatalf("256 KiB at 1 MiB/s read in %s, want at least %s", took, least)
	}

	// A cancelled context stops it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := rate.NewLimiter(rate.Limit(1), copyBurst)
	slow.AllowN(time.Now(), copyBurst) // the burst spent
	if _, err := io.ReadAll(&pacedReader{ctx: ctx, r: bytes.NewReader(data), lim: slow}); err == nil {
		t.Fatal("a paced read went on after its context ended")
	}
}
