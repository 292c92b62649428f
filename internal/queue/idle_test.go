package queue_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	xtrace "golang.org/x/exp/trace"

	. "github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

type idleArgs struct{}

func (idleArgs) Kind() string { return "test_idle" }

type idleWorker struct {
	river.WorkerDefaults[idleArgs]
}

func (idleWorker) Work(context.Context, *river.Job[idleArgs]) error { return nil }

// An idle working client does not wake its job completer: River's batch
// completer ticks every 50 ms while it has completions to write and stops
// its ticker when it has none (internal/third_party/river/PATCHES.md). A job
// inserted after the idle spell still completes, so the first completion
// restarts it.
func TestIdleCompleterSleeps(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	workers := river.NewWorkers()
	river.AddWorker(workers, idleWorker{})
	client, err := New(db.Pool, workers, Options{Work: true, TestOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })

	complete := func() {
		t.Helper()
		res, err := client.Insert(ctx, idleArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			state := jobState(t, db.Pool, res.Job.ID)
			if state == "completed" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d still %s", res.Job.ID, state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	complete() // the completer has worked once, then goes idle
	time.Sleep(300 * time.Millisecond)

	const window = 1500 * time.Millisecond
	wakes := completerWakes(t, window)
	// Unpatched, the ticker wakes it window/50ms = 30 times.
	if wakes > 1 {
		t.Fatalf("the idle completer woke %d times in %s", wakes, window)
	}
	complete()
	complete()
}

// completerWakes traces the process for d and counts how often a goroutine
// blocked in River's batch completer run loop was made runnable.
func completerWakes(t *testing.T, d time.Duration) int {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("a trace is already running: %v", err) // go test -trace
	}
	time.Sleep(d)
	trace.Stop()

	r, err := xtrace.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	inCompleter := map[xtrace.GoID]bool{}
	wakes := 0
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind() != xtrace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != xtrace.ResourceGoroutine {
			continue
		}
		id := st.Resource.Goroutine()
		from, to := st.Goroutine()
		switch {
		case to == xtrace.GoWaiting:
			inCompleter[id] = false
			for f := range st.Stack.Frames() {
				if strings.Contains(f.Func, "jobcompleter.(*BatchCompleter).Start") {
					inCompleter[id] = true
				}
			}
		case from == xtrace.GoWaiting && to == xtrace.GoRunnable && inCompleter[id]:
			wakes++
		}
	}
	return wakes
}
