package outbox

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/tenant"
)

// TestGroupBatchesConcurrentCalls: calls that arrive while a batch runs
// share the next one, each gets its own result, and a lone call runs at
// once; projects are batched apart.
func TestGroupBatchesConcurrentCalls(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	g := newGroup(func(ctx context.Context, sc *tenant.Scope, reqs []int) ([]string, error) {
		if runs.Add(1) == 1 {
			<-release // the first batch runs while the others queue
		}
		out := make([]string, len(reqs))
		for i, r := range reqs {
			out[i] = sc.Project.ID + ":" + string(rune('a'+r))
		}
		return out, nil
	})
	a := &tenant.Scope{Project: &tenant.Project{ID: "prj_a"}}
	b := &tenant.Scope{Project: &tenant.Project{ID: "prj_b"}}
	ctx := context.Background()
	first := make(chan string)
	go func() { r, _ := g.do(ctx, a, 0); first <- r }()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	results := make([]string, 20)
	for i := 1; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = g.do(ctx, a, i)
		}()
	}
	// another project is not held up by prj_a's running batch
	if r, err := g.do(ctx, b, 3); err != nil || r != "prj_b:d" {
		t.Fatalf("prj_b: %q, %v", r, err)
	}
	for queued := 0; queued < 19; time.Sleep(time.Millisecond) { // let the 19 queue
		g.mu.Lock()
		queued = len(g.projects["prj_a"].calls)
		g.mu.Unlock()
	}
	close(release)
	wg.Wait()
	if r := <-first; r != "prj_a:a" {
		t.Fatalf("first call got %q", r)
	}
	for i := 1; i < 20; i++ {
		if want := "prj_a:" + string(rune('a'+i)); results[i] != want {
			t.Fatalf("call %d got %q, want %q", i, results[i], want)
		}
	}
	// prj_a: the first batch, then the 19 together; prj_b: one
	if n := runs.Load(); n != 3 {
		t.Fatalf("%d batches ran, want 3", n)
	}
}

// TestGroupErrorsAndCancel: a failed batch fails each of its calls; a
// caller whose context ends gets its error without waiting.
func TestGroupErrorsAndCancel(t *testing.T) {
	boom := errors.New("boom")
	block := make(chan struct{})
	g := newGroup(func(ctx context.Context, sc *tenant.Scope, reqs []int) ([]int, error) {
		if reqs[0] == 0 {
			<-block
		}
		return nil, boom
	})
	sc := &tenant.Scope{Project: &tenant.Project{ID: "prj_a"}}
	if _, err := g.do(context.Background(), sc, 1); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.do(ctx, sc, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the caller's deadline", err)
	}
	close(block)
}
