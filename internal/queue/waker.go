package queue

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A job River snoozes for less than its scheduler interval is written back
// as available with a future scheduled_at, and a longer one is promoted
// by the scheduler up to an interval early without a notification: in
// both cases nothing tells the producers when the job becomes due, so
// only their fetch poll finds it. A Waker tells them instead. The worker
// that snoozes registers the time the job is due; at that time the Waker
// sends River's insert notification for the queue, which makes the
// producers of every process fetch at once. A fast poll is then not
// needed for snoozed jobs to wake on time, and an idle process sends
// nothing.

// WakeGrain coalesces wake times: each is rounded up to a multiple of it,
// so the jobs of a burst due within a few milliseconds of each other cost
// one notification, and a wake never comes before the time asked for.
const WakeGrain = 5 * time.Millisecond

// wakeMargin is added before the rounding: River takes a snoozed job's
// scheduled_at from its own clock a little after the worker returned, and
// a notification ahead of it would find nothing to fetch.
const wakeMargin = time.Millisecond

// Waker sends a queue's insert notification at registered times: one
// timer for the earliest, no goroutine while nothing is due.
type Waker struct {
	notify func(context.Context) error
	logger *slog.Logger

	mu      sync.Mutex
	due     wakeHeap           // pending wake times (unix ns, multiples of WakeGrain)
	pending map[int64]struct{} // the same, to coalesce
	timer   *time.Timer        // fires at armed; nil until the first Wake
	armed   int64              // when the timer fires, 0 when it is not set
	firing  chan struct{}      // open while a notification is being sent
	stopped bool
}

// NewWaker returns a Waker that notifies the producers of queue through
// pool.
func NewWaker(pool *pgxpool.Pool, queue string, logger *slog.Logger) *Waker {
	return newWaker(func(ctx context.Context) error { return NotifyInsert(ctx, pool, queue) }, logger)
}

func newWaker(notify func(context.Context) error, logger *slog.Logger) *Waker {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Waker{notify: notify, logger: logger, pending: map[int64]struct{}{}}
}

// Wake registers a notification at at (a little after it: see wakeMargin
// and WakeGrain). It is safe for concurrent use and returns at once;
// after Stop it does nothing.
func (w *Waker) Wake(at time.Time) {
	ns := at.Add(wakeMargin).UnixNano()
	if r := ns % int64(WakeGrain); r != 0 {
		ns += int64(WakeGrain) - r
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if _, ok := w.pending[ns]; ok {
		return
	}
	w.pending[ns] = struct{}{}
	heap.Push(&w.due, ns)
	if w.firing == nil && (w.armed == 0 || ns < w.armed) {
		w.arm(ns)
	}
}

// Written is told that the state of a snoozed job due at due has been
// written (River's job_snoozed event, sent once its completer wrote it).
// River writes a snooze asynchronously, in batches up to about 250 ms
// after the worker returned, so the wake-up the worker registered may
// come before the job is available and find nothing to fetch: a job
// written only once due is woken now.
func (w *Waker) Written(due time.Time) {
	if now := time.Now(); !due.After(now) {
		w.Wake(now)
	}
}

// Pending is the number of wake times not yet notified.
func (w *Waker) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.due)
}

// arm sets the timer for ns; w.mu is held.
func (w *Waker) arm(ns int64) {
	w.armed = ns
	d := time.Until(time.Unix(0, ns))
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

// fire sends one notification for every wake time now due, then sets the
// timer for the next. A failed notification is only logged: the
// producers' fallback poll still finds the jobs, later.
func (w *Waker) fire() {
	w.mu.Lock()
	// A Reset racing with the timer's expiry may run fire twice; the
	// second finds the first at work (it re-arms) or nothing due.
	if w.stopped || w.firing != nil {
		w.mu.Unlock()
		return
	}
	now := time.Now().UnixNano()
	n := 0
	for len(w.due) > 0 && w.due[0] <= now {
		delete(w.pending, heap.Pop(&w.due).(int64))
		n++
	}
	w.armed = 0
	if n == 0 {
		if len(w.due) > 0 {
			w.arm(w.due[0])
		}
		w.mu.Unlock()
		return
	}
	done := make(chan struct{})
	w.firing = done
	w.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := w.notify(ctx); err != nil {
		w.logger.Warn("queue: wake-up notification failed; the jobs wait for the fetch poll", "err", err)
	}
	cancel()

	w.mu.Lock()
	w.firing = nil
	close(done)
	if !w.stopped && len(w.due) > 0 {
		w.arm(w.due[0])
	}
	w.mu.Unlock()
}

// Stop drops the pending wake times and waits for a notification being
// sent, so none is sent once it returns (stop it after the River client,
// before closing the pool).
func (w *Waker) Stop() {
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.due, w.pending, w.armed = nil, map[int64]struct{}{}, 0
	firing := w.firing
	w.mu.Unlock()
	if firing != nil {
		<-firing
	}
}

// wakeHeap is a min-heap of unix nanoseconds.
type wakeHeap []int64

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// NotifyInsert wakes the producers of queue at once, as NotifyInsertTx
// does at a commit.
func NotifyInsert(ctx context.Context, pool *pgxpool.Pool, queue string) error {
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, insertChannel, insertPayload(queue)); err != nil {
		return fmt.Errorf("queue: notify insert: %w", err)
	}
	return nil
}

// Wakers keeps a Waker of one queue per shard pool, each made on first
// use: a snoozed job is notified on the database that holds it.
type Wakers struct {
	queue  string
	logger *slog.Logger

	mu      sync.Mutex
	wakers  map[*pgxpool.Pool]*Waker
	stopped bool
}

// NewWakers returns the wakers of queue.
func NewWakers(queue string, logger *slog.Logger) *Wakers {
	return &Wakers{queue: queue, logger: logger, wakers: map[*pgxpool.Pool]*Waker{}}
}

// For is the waker of pool's queue. After Stop it is a stopped one, whose
// Wake does nothing.
func (ws *Wakers) For(pool *pgxpool.Pool) *Waker {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w, ok := ws.wakers[pool]
	if !ok {
		w = NewWaker(pool, ws.queue, ws.logger)
		if ws.stopped {
			w.Stop()
		}
		ws.wakers[pool] = w
	}
	return w
}

// Stop stops every waker (see Waker.Stop).
func (ws *Wakers) Stop() {
	ws.mu.Lock()
	ws.stopped = true
	all := make([]*Waker, 0, len(ws.wakers))
	for _, w := range ws.wakers {
		all = append(all, w)
	}
	ws.mu.Unlock()
	for _, w := range all {
		w.Stop()
	}
}
