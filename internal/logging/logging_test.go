package logging_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/logging"
)

// TestLevels: River's info lines are written at debug, a cancellation is
// not an error, and every other warning or error stays what it was.
func TestLevels(t *testing.T) {
	var buf bytes.Buffer
	logger, err := logging.New(&buf, logging.Options{Format: "json", Level: "info"})
	if err != nil {
		t.Fatal(err)
	}
	river := logging.Quiet(logger)
	river.Info("producer: Producer job counts")
	river.Warn("river warning kept")
	logger.Error("stopped", "err", fmt.Errorf("project_7: %w", context.Canceled))
	logger.Error("river stopped", "error", "jobexecutor: context canceled")
	logger.Error("real failure", "err", errors.New("disk full"))
	out := buf.String()
	for _, gone := range []string{"Producer job counts", `"msg":"stopped"`, "river stopped"} {
		if strings.Contains(out, gone) {
			t.Errorf("%q logged at info:\n%s", gone, out)
		}
	}
	for _, kept := range []string{`"level":"WARN","msg":"river warning kept"`, `"level":"ERROR","msg":"real failure"`} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q missing:\n%s", kept, out)
		}
	}

	buf.Reset()
	logger, _ = logging.New(&buf, logging.Options{Format: "text", Level: "error"})
	logger.Warn("a warning below the level")
	if buf.Len() != 0 {
		t.Fatalf("level error wrote a warning: %s", buf.String())
	}
	if _, err := logging.New(&buf, logging.Options{Level: "loud"}); err == nil || !strings.Contains(err.Error(), "PLINTH_LOG_LEVEL") {
		t.Fatalf("bad level: %v", err)
	}
}

// lockedBuffer is an io.Writer safe for the Buffer's timer goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int // writes
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.n
}

// TestBuffered: a serving process's lines are written together, within
// logging.Every of the first; a warning is written at once with the
// lines before it; MaxBuffer bytes are written without waiting; Flush
// writes the rest.
func TestBuffered(t *testing.T) {
	var out lockedBuffer
	logs := logging.Buffered(&out)
	b, ok := logs.(*logging.Buffer)
	if !ok {
		t.Fatalf("Buffered of a non-terminal is %T", logs)
	}
	logger, err := logging.New(logs, logging.Options{Format: "json", Level: "info"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 100 {
		logger.Info("request", "n", i)
	}
	logged := time.Since(start)
	if s, _ := out.String(); s != "" && time.Since(start) < logging.Every {
		t.Fatalf("lines written before the batch is due:\n%s", s)
	}
	// One write when the 100 lines came within Every; on a machine too
	// loaded for that, one per Every they took, and one for the rest.
	most := 1 + int(logged/logging.Every)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, n := out.String()
		if strings.Count(s, `"msg":"request"`) == 100 {
			if n > most {
				t.Fatalf("100 lines logged in %s took %d writes, want at most %d (one per %s)", logged, n, most, logging.Every)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch was not written in 5 s:\n%s", s)
		}
		time.Sleep(5 * time.Millisecond)
	}

	logger.Info("before the warning")
	logger.Warn("disk almost full")
	if s, _ := out.String(); !strings.Contains(s, "before the warning") || !strings.Contains(s, "disk almost full") {
		t.Fatalf("a warning waited:\n%s", s)
	}

	_, before := out.String()
	if _, err := logs.Write(bytes.Repeat([]byte("x"), logging.MaxBuffer)); err != nil {
		t.Fatal(err)
	}
	if _, n := out.String(); n != before+1 {
		t.Fatalf("MaxBuffer bytes waited (%d writes, want %d)", n, before+1)
	}

	logger.Info("last line")
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if s, _ := out.String(); !strings.HasSuffix(s, "\"msg\":\"last line\"}\n") {
		t.Fatalf("Flush left the last line waiting:\n%s", s[max(0, len(s)-200):])
	}
}
