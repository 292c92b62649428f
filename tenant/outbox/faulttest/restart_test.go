package faulttest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// TestMain asks for a private cluster, whatever TEST_DATABASE_URL or
// Docker offer: the test restarts it.
func TestMain(m *testing.M) { pgtest.MainPrivate(m) }

// TestDeliveriesSurviveDatabaseRestart emits 2,000 events, each in its own
// transaction, while PostgreSQL is restarted mid-run. Every committed
// event is delivered; the receiver dedupes by X-Service-Delivery; no
// delivery is lost or left pending.
func TestDeliveriesSurviveDatabaseRestart(t *testing.T) {
	rc := webhooktest.NewTLS(t, nil)
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()),
		apitest.WithEnv("PLINTH_WEBHOOK_RETRY_DELAYS", "500ms,500ms,500ms,500ms,500ms", "PLINTH_WEBHOOK_TIMEOUT", "5s"))
	cluster := pgtest.Cluster()
	if cluster == nil {
		t.Fatal("pgtest.MainPrivate gave no private cluster to restart")
	}
	p := env.NewProject("scale")
	// Four endpoints, one topic each, so the 2,000 events drain in
	// parallel within the per-endpoint pace.
	topics := []string{"order.created", "order.paid", "order.fulfilled", "booking.confirmed"}
	for _, topic := range topics {
		webhooktest.Endpoint(t, env, p.Key, rc.URL, topic)
	}

	const events = 2000
	ctx := context.Background()
	var committed atomic.Int64
	var failedTx atomic.Int64
	restarted := make(chan time.Duration, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for committed.Load() < events/3 {
			time.Sleep(10 * time.Millisecond)
		}
		start := time.Now()
		if err := cluster.Restart(ctx); err != nil {
			t.Errorf("restart: %v", err)
		}
		restarted <- time.Since(start)
	}()

	for seq := 0; seq < events; seq++ {
		topic := topics[seq%len(topics)]
		for {
			err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
				return env.Server.Outbox.Emit(ctx, tx, p.Scope, topic, map[string]any{"seq": seq})
			})
			if err == nil {
				break
			}
			// The database is down: the event's transaction failed, so
			// nothing was emitted; the pillar's write would be retried.
			failedTx.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
		committed.Add(1)
	}
	wg.Wait()
	downFor := <-restarted
	t.Logf("emitted %d events; %d transactions failed while PostgreSQL restarted (%s)", events, failedTx.Load(), downFor)
	if failedTx.Load() == 0 {
		t.Fatal("no transaction failed: the restart did not happen mid-run")
	}

	// Wait until the database has no pending delivery.
	deadline := time.Now().Add(3 * time.Minute)
	var pending, total int
	for {
		err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status <> 'succeeded'), count(*) FROM webhook_deliveries`).Scan(&pending, &total)
		})
		if err == nil && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries still not succeeded (err %v)", pending, total, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Every delivery the database holds reached the receiver, and every
	// sequence number was delivered.
	var ids []string
	if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM webhook_deliveries`)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	seqs := map[int]bool{}
	dups := 0
	for _, r := range rc.Requests() {
		if got[r.Delivery()] {
			dups++ // an attempt whose outcome was lost in the restart, sent again
			continue
		}
		got[r.Delivery()] = true
		var env struct {
			Data struct {
				Seq int `json:"seq"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil {
			t.Fatal(err)
		}
		seqs[env.Data.Seq] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Fatalf("delivery %s never reached the receiver", id)
		}
	}
	var missing []int
	for s := 0; s < events; s++ {
		if !seqs[s] {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d events never delivered, e.g. %v", len(missing), missing[:min(len(missing), 10)])
	}
	t.Logf("%d deliveries in the database, %d distinct received, %d duplicates deduped by X-Service-Delivery", len(ids), len(got), dups)
	if len(got) != len(ids) {
		t.Fatalf("received %d distinct deliveries, the database holds %d", len(got), len(ids))
	}
}
