package queue_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	. "github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// lockKeySQL is the liveness lock's key, as the package computes it.
const lockKeySQL = `hashtextextended('plinth.river.client:' || $1, 0)`

func TestMain(m *testing.M) { pgtest.Main(m) }

// jobState is the state of River job id.
func jobState(t *testing.T, pool *pgxpool.Pool, id int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), `SELECT state FROM river.river_job WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "test_noop" }

// Sweep rescues the running jobs of plinth clients whose liveness lock is
// free, and only those.
func TestLivenessSweep(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	client, err := New(db.Pool, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	alive, dead, foreign := NewClientID(), NewClientID(), "someone-else"
	if !strings.HasPrefix(alive, ClientIDPrefix) || alive == dead {
		t.Fatalf("client ids %q %q", alive, dead)
	}
	// The live client holds its lock on its own connection.
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+lockKeySQL+`)`, alive); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, by := range []string{alive, dead, foreign} {
		res, err := client.Insert(ctx, noopArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[by] = res.Job.ID
		if _, err := db.Pool.Exec(ctx, `UPDATE river.river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '1 second',
			attempted_by = ARRAY[$2] WHERE id = $1`, res.Job.ID, by); err != nil {
			t.Fatal(err)
		}
	}
	state := func(by string) string { return jobState(t, db.Pool, ids[by]) }
	sweeper := NewLiveness(db.Pool, NewClientID(), nil)
	n, err := sweeper.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if state(dead) != "available" || state(alive) != "running" || state(foreign) != "running" {
		t.Fatalf("states: dead %s, alive %s, foreign %s", state(dead), state(alive), state(foreign))
	}
	var errs string
	_ = db.Pool.QueryRow(ctx, `SELECT errors::text FROM river.river_job WHERE id = $1`, ids[dead]).Scan(&errs)
	if !strings.Contains(errs, "died") {
		t.Fatalf("the rescue is recorded: %s", errs)
	}
	// Once the live client's process dies, its lock is free too.
	conn.Conn().Close(ctx)
	conn.Release()
	// The server frees a dead session's locks as its backend exits, a
	// moment after the connection closes.
	deadline := time.Now().Add(10 * time.Second)
	for state(alive) != "available" {
		if _, err := sweeper.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job of a dead client is still %s", state(alive))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StartLiveness holds the lock until Stop.
func TestLivenessHoldsLock(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	id := NewClientID()
	l, err := StartLiveness(ctx, db.Pool, id, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	probe := NewLiveness(db.Pool, NewClientID(), nil)
	if ok, err := probe.Alive(ctx, id); err != nil || !ok {
		t.Fatalf("alive while started: %v %v", ok, err)
	}
	l.Stop()
	if ok, err := probe.Alive(ctx, id); err != nil || ok {
		t.Fatalf("alive after Stop: %v %v", ok, err)
	}
	if _, err := StartLiveness(ctx, db.Pool, "other-client", 0, nil); err == nil {
		t.Fatal("a client id without the prefix is refused")
	}
}
