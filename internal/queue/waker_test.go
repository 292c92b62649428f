package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/pgtest"
	. "github.com/plinth-dev/plinth/internal/queue"
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
