package central

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestCopyReader: a move's paced copy reads no faster than its rate, and
// counts the rows (lines) that went through.
// The token bucket allows its burst at once, then rate bytes a second,
// so 256 KiB at 1 MiB/s with a 64 KiB burst cannot take less than
// (256-64)/1024 s, however fast the machine.
func TestCopyReader(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("x"), 256<<10)
	lim := rate.NewLimiter(rate.Limit(1<<20), copyBurst)
	t0 := time.Now()
	got, err := io.ReadAll(&copyReader{ctx: context.Background(), r: bytes.NewReader(data), lim: lim})
	took := time.Since(t0)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, err %v", len(got), err)
	}
	if least := (256 - 64) * time.Second / 1024; took < least {
		t.Fatalf("256 KiB at 1 MiB/s read in %s, want at least %s", took, least)
	}

	// Rows counted, unpaced.
	var rows atomic.Int64
	lines := []byte("1\ta\n2\tb\\nstill b\n3\tc\n")
	if _, err := io.ReadAll(&copyReader{ctx: context.Background(), r: bytes.NewReader(lines), rows: &rows}); err != nil || rows.Load() != 3 {
		t.Fatalf("counted %d rows (err %v), want 3", rows.Load(), err)
	}

	// A cancelled context stops it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := rate.NewLimiter(rate.Limit(1), copyBurst)
	slow.AllowN(time.Now(), copyBurst) // the burst spent
	if _, err := io.ReadAll(&copyReader{ctx: ctx, r: bytes.NewReader(data), lim: slow}); err == nil {
		t.Fatal("a paced read went on after its context ended")
	}
}
