package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	. "github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// A Waker sends River's insert notification for its queue, on River's
// channel, at the time registered.
func TestWakerNotifiesRiver(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN "river.river_insert"`); err != nil {
		t.Fatal(err)
	}
	w := NewWaker(db.Pool, "webhooks", nil)
	defer w.Stop()
	at := time.Now().Add(100 * time.Millisecond)
	w.Wake(at)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := conn.Conn().WaitForNotification(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Now(); got.Before(at) {
		t.Fatalf("notified %s before the wake time", at.Sub(got))
	}
	if n.Channel != "river.river_insert" || n.Payload != `{"queue":"webhooks"}` {
		t.Fatalf("notification %q %q", n.Channel, n.Payload)
	}
}

type snoozeArgs struct{}

func (snoozeArgs) Kind() string { return "test_snooze_once" }

// snoozeOnce snoozes its job briefly on the first run, registering the
// wake-up as the delivery worker does, and reports the second run.
type snoozeOnce struct {
	river.WorkerDefaults[snoozeArgs]
	waker   *Waker
	once    atomic.Bool
	snoozed chan time.Time
	ran     chan time.Time
}

func (w *snoozeOnce) Work(ctx context.Context, job *river.Job[snoozeArgs]) error {
	if w.once.CompareAndSwap(false, true) {
		const d = 10 * time.Millisecond
		now := time.Now()
		w.waker.Wake(now.Add(d))
		w.snoozed <- now
		return river.JobSnooze(d)
	}
	w.ran <- time.Now()
	return nil
}

// A job snoozed for less than River's completer takes to write the snooze
// wakes once the snooze is written, not at the next poll: the worker's
// wake-up comes before the job is available, and Written, fed River's
// job_snoozed events, wakes it again.
func TestWakerWakesLateWrittenSnoozes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	const q = "wake_test"
	w := &snoozeOnce{waker: NewWaker(db.Pool, q, nil), snoozed: make(chan time.Time, 1), ran: make(chan time.Time, 1)}
	defer w.waker.Stop()
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	const poll = 5 * time.Second
	client, err := New(db.Pool, workers, Options{Work: true, TestOnly: true,
		Queues: map[string]river.QueueConfig{q: {MaxWorkers: 2, FetchCooldown: 5 * time.Millisecond, FetchPollInterval: poll}}})
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := client.Subscribe(river.EventKindJobSnoozed)
	defer cancel()
	go func() {
		for e := range events {
			if e.Job != nil && e.Job.Queue == q {
				w.waker.Written(e.Job.ScheduledAt)
			}
		}
	}()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(ctx)
	if _, err := client.Insert(ctx, snoozeArgs{}, &river.InsertOpts{Queue: q}); err != nil {
		t.Fatal(err)
	}
	snoozed := <-w.snoozed
	select {
	case ran := <-w.ran:
		t.Logf("snoozed 10 ms, ran again %s later", ran.Sub(snoozed))
		// The poll that would find it otherwise comes a poll interval
		// after the fetch that took the job, just before the snooze.
		if ran.Sub(snoozed) > poll/2 {
			t.Fatalf("woke %s after a 10 ms snooze: by the %s fetch poll, not a wake-up", ran.Sub(snoozed), poll)
		}
	case <-time.After(poll):
		t.Fatalf("not woken within the %s poll", poll)
	}
}
