package logging_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
