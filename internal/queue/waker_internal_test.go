package queue

import (
	"context"
	"sync"
	"testing"
	"time"
)

// recorder counts a waker's notifications and when they were sent.
type recorder struct {
	mu sync.Mutex
	at []time.Time
	ch chan time.Time
}

func newRecorder() *recorder { return &recorder{ch: make(chan time.Time, 1000)} }

func (r *recorder) notify(context.Context) error {
	now := time.Now()
	r.mu.Lock()
	r.at = append(r.at, now)
	r.mu.Unlock()
	r.ch <- now
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}

// next waits for the next notification.
func (r *recorder) next(t *testing.T, within time.Duration) time.Time {
	t.Helper()
	select {
	case at := <-r.ch:
		return at
	case <-time.After(within):
		t.Fatalf("no notification within %s", within)
		return time.Time{}
	}
}

// Wake times within one grain cost one notification, sent no earlier than
// the latest of them asked for.
func TestWakerCoalesces(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	w := newWaker(r.notify, nil)
	defer w.Stop()
	base := time.Now().Add(100 * time.Millisecond).Truncate(WakeGrain)
	last := base
	for i := range 4 { // within one grain, wakeMargin included
		last = base.Add(time.Duration(i)*time.Millisecond + 1)
		w.Wake(last)
	}
	if n := w.Pending(); n != 1 {
		t.Fatalf("%d pending wake times, want 1", n)
	}
	at := r.next(t, 2*time.Second)
	if at.Before(last) {
		t.Fatalf("notified at %s, before the wake time %s", at.Format(time.StampMicro), last.Format(time.StampMicro))
	}
	time.Sleep(100 * time.Millisecond)
	if n := r.count(); n != 1 {
		t.Fatalf("%d notifications, want 1", n)
	}
}

// A wake time earlier than the one the timer is set for is notified at
// its own time, and the later one still at its own. "At its own time" is
// told apart from "at the later one's" by the later one, a second apart,
// not by a fixed tolerance a loaded machine could exceed.
func TestWakerEarliestFirst(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	w := newWaker(r.notify, nil)
	defer w.Stop()
	start := time.Now()
	late, early := start.Add(time.Second), start.Add(50*time.Millisecond)
	w.Wake(late)
	w.Wake(early)
	first := r.next(t, 5*time.Second)
	second := r.next(t, 5*time.Second)
	t.Logf("woken after %s and %s", first.Sub(start), second.Sub(start))
	if first.Before(early) || !first.Before(late) {
		t.Fatalf("first notification %s after start, want at 50 ms (before the later wake time, 1 s)", first.Sub(start))
	}
	if second.Before(late) {
		t.Fatalf("second notification %s after start, want at 1 s", second.Sub(start))
	}
	if n := w.Pending(); n != 0 {
		t.Fatalf("%d wake times still pending", n)
	}
}

// Many workers registering at once: every distinct grain is notified, in
// Wake times registered concurrently, out of order, are all kept and
// notified in order, none early. A notification serves every wake time
// due by then, so a waker the machine's load makes late sends fewer than
// one per wake time: the checks hold whatever the lateness (the j-th
// notification comes no earlier than the j-th wake time; the last one at
// or after the last), and none counts on a timer being on time.
func TestWakerConcurrent(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	w := newWaker(r.notify, nil)
	defer w.Stop()
	// A second ahead: the 1,000 registrations end before the first is due.
	base := time.Now().Add(time.Second).Truncate(WakeGrain)
	var wg sync.WaitGroup
	for g := range 50 {
		wg.Go(func() {
			for i := range 20 {
				// 20 grains apart by 20 ms, registered out of order by
				// 50 goroutines
				w.Wake(base.Add(time.Duration((i*7+g)%20) * 20 * time.Millisecond))
			}
		})
	}
	wg.Wait()
	if n, early := w.Pending(), time.Now().Before(base); early && n != 20 {
		t.Fatalf("%d pending wake times after 20 distinct ones were registered, want 20", n)
	}
	last := base.Add(19 * 20 * time.Millisecond)
	var prev time.Time
	for j := 0; !prev.After(last); j++ {
		if j == 20 {
			t.Fatalf("20 notifications, the last at %s, before the last wake time %s", prev.Format(time.StampMicro), last.Format(time.StampMicro))
		}
		at := r.next(t, 5*time.Second)
		want := base.Add(time.Duration(j) * 20 * time.Millisecond)
		if at.Before(want) || !at.After(prev) {
			t.Fatalf("notification %d at %s, want after %s and after the one before", j, at.Format(time.StampMicro), want.Format(time.StampMicro))
		}
		prev = at
	}
	if n := w.Pending(); n != 0 {
		t.Fatalf("%d wake times still pending after the last was notified", n)
	}
	t.Logf("%d notifications for 20 wake times", r.count())
}

// Stop drops pending wake times, ignores later ones and waits for a
// notification being sent.
func TestWakerStop(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var calls int
	var mu sync.Mutex
	w := newWaker(func(context.Context) error {
		mu.Lock()
		calls++
		mu.Unlock()
		entered <- struct{}{}
		<-release
		return nil
	}, nil)
	w.Wake(time.Now())
	w.Wake(time.Now().Add(100 * time.Millisecond))
	<-entered // the first notification is being sent
	stopped := make(chan struct{})
	go func() {
		w.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a notification was being sent")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-stopped
	w.Wake(time.Now())
	time.Sleep(250 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("%d notifications, want only the one before Stop", calls)
	}
	if n := w.Pending(); n != 0 {
		t.Fatalf("%d wake times pending after Stop", n)
	}
}
