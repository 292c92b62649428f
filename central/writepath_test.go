package central_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
)

// TestWriteRoundTrips: a write of one statement and a charge (PUT
// /v1/content/{key}, 1 credit, an event no endpoint wants) is one round
// trip to PostgreSQL once the connection knows its statements: BEGIN, the
// binding, the upsert with its read-back, the charge, the check that no
// endpoint wants the event, and COMMIT, in one pipeline, so the credit
// pool row is locked for that pipeline's work only. Every write is still
// charged and counted once; an event an endpoint wants is recorded, by
// the first write after the endpoint was made (its check fails, and the
// write goes back to before it) and by the ones after (which read the
// endpoints as they begin); once the endpoint is gone, writes are one
// round trip again; a charge the balance does not cover is 402 with cost
// and balance and leaves no trace of the write.
func TestWriteRoundTrips(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env := apitest.New(t, apitest.WithRootCAs(rc.RootCAs()))
	p := env.NewProject("build")
	// Requests one after another take the connection the last released
	// (the server's LISTENs hold two others): after the first writes, it
	// knows every statement.
	srv, rt, begins := countingServer(t, env, 4)
	put := func(key, value string) (status int, trips, txs int64, body map[string]any) {
		t.Helper()
		t0, b0 := rt.Count(), begins.n.Load()
		rec := putValue(srv, p.Key, key, value, "")
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, rt.Count() - t0, begins.n.Load() - b0, body
	}
	// Warm: a connection's first meeting with a statement takes more
	// (pgx prepares it), and the server's other work may hand a request
	// another connection; the measure starts after a write took one.
	warm := 0
	for trips := int64(0); trips != 1; warm++ {
		if warm == 10 {
			t.Fatal("no write took 1 round trip in 10")
		}
		var status int
		if status, trips, _, _ = put("hero.title", fmt.Sprint("warm ", warm)); status != 200 {
			t.Fatalf("warm write: %d", status)
		}
	}
	// The count is the pool's: a round trip of the server's own
	// background work (a metrics gauge, a listener) may land inside a
	// write's window on a loaded machine. Of ten writes, at least three
	// take exactly one (the code before this took two, every time; of
	// five, two once took one under the whole suite's load).
	before := p.Balance(t)
	const writes = 10
	one := func(what string) {
		t.Helper()
		n := 0
		for i := range writes {
			v := fmt.Sprint(what, " ", i)
			status, trips, txs, body := put("hero.title", v)
			if status != 200 || body["value"] != v {
				t.Fatalf("%s %d: %d %v", what, i, status, body)
			}
			// The counter counts a turn when a Read call starts after a
			// Write: a read pgconn's background reader had already begun
			// is missed (0, seen under load), so only an exact 1 counts.
			if txs != 1 {
				t.Fatalf("%s %d took %d round trips and %d transactions, want 1 and 1", what, i, trips, txs)
			}
			if trips == 1 {
				n++
			}
		}
		if n < 3 {
			t.Fatalf("%d of %d writes (%s) took 1 round trip, want at least 3", n, writes, what)
		}
	}
	one("value")
	if after := p.Balance(t); after != before-writes*100 { // hundredths
		t.Fatalf("balance %d after %d writes from %d", after, writes, before)
	}
	if n := p.Count(`SELECT count(*) FROM credit_ledger WHERE op = 'content_update'`); n != warm+writes {
		t.Fatalf("%d ledger rows, want %d", n, warm+writes)
	}
	if n := p.Count(`SELECT count(*) FROM webhook_events`); n != 0 {
		t.Fatalf("%d events stored with no endpoint", n)
	}

	// An endpoint that wants the event: the first write after it was
	// made bets that none does and loses; it and the write after it store
	// the event with its delivery and River job, in the write's
	// transaction, charged once each.
	ep, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "content.changed")
	before = p.Balance(t)
	for i, v := range []string{"four", "four again"} {
		if status, _, _, body := put("hero.title", v); status != 200 || body["value"] != v {
			t.Fatalf("write with a subscriber: %d %v", status, body)
		}
		if n := p.Count(`SELECT count(*) FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.type = 'content.changed'`); n != i+1 {
			t.Fatalf("%d deliveries of the event after %d writes, want %d", n, i+1, i+1)
		}
		if jobs := env.RiverJobs(t, "webhook.deliver", map[string]any{"project_id": p.ID}); len(jobs) != i+1 {
			t.Fatalf("%d delivery jobs, want %d", len(jobs), i+1)
		}
	}
	if after := p.Balance(t); after != before-200 {
		t.Fatalf("balance %d after 2 writes from %d", after, before)
	}
	// Subscribed and short of credits: 402, and neither the value nor an
	// event is stored.
	ctx := context.Background()
	setUsed := func(used int64) {
		t.Helper()
		if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE credit_pools SET plan_used = $1, topup_balance = 0 WHERE pool = 'live'`, used)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	setUsed(p.Project.Limits().Credits * 100)
	if status, _, _, body := put("hero.title", "unpaid"); status != 402 || body["balance"] != float64(0) {
		t.Fatalf("subscribed write at balance 0: %d %v", status, body)
	}
	if n := p.Count(`SELECT count(*) FROM webhook_events`); n != 2 {
		t.Fatalf("%d events after the unpaid write, want 2", n)
	}
	if n := p.Count(`SELECT count(*) FROM content_values WHERE value = 'unpaid'`); n != 0 {
		t.Fatalf("the unpaid write left its value")
	}
	setUsed(0)
	// The endpoint gone: one round trip again (after the write that
	// reads, as it begins, that none is left).
	env.Do("DELETE", "/v1/webhook-endpoints/"+ep, p.Key, nil).Expect(t, 204)
	one("after the endpoint")
	if n := p.Count(`SELECT count(*) FROM webhook_events`); n != 2 {
		t.Fatalf("%d events stored, want the 2 an endpoint wanted", n)
	}

	// A balance of nothing: 402 from the charge in the COMMIT's pipeline,
	// and the write is not there.
	setUsed(p.Project.Limits().Credits * 100)
	status, _, _, body := put("new.key", "unpaid")
	if status != 402 || body["code"] != "insufficient_credits" || body["cost"] != float64(1) || body["balance"] != float64(0) {
		t.Fatalf("write at balance 0: %d %v", status, body)
	}
	if n := p.Count(`SELECT count(*) FROM content_values WHERE key = 'new.key'`); n != 0 {
		t.Fatalf("the unpaid write left %d values", n)
	}
	if status, _, _, _ := put("hero.title", "five"); status != 402 {
		t.Fatalf("second write at balance 0: %d", status)
	}
}

// TestBetWithCommitHook: a write that bets that no endpoint wants its
// event but whose end is not sealed (an Idempotency-Key's commit hook
// runs before COMMIT) gives the bet up and reads the endpoints: on a
// process that has not seen the project's endpoint, the event is stored
// with its delivery and River job all the same.
func TestBetWithCommitHook(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env := apitest.New(t, apitest.WithRootCAs(rc.RootCAs()))
	p := env.NewProject("build")
	srv, _, _ := countingServer(t, env, 4)
	webhooktest.Endpoint(t, env, p.Key, rc.URL, "content.changed")
	if rec := putValue(srv, p.Key, "sdk.hooked", "Signed", "put-once"); rec.Code != 200 {
		t.Fatalf("idempotent write: %d %s", rec.Code, rec.Body)
	}
	if n := p.Count(`SELECT count(*) FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.type = 'content.changed'`); n != 1 {
		t.Fatalf("%d deliveries of the event, want 1", n)
	}
	if jobs := env.RiverJobs(t, "webhook.deliver", map[string]any{"project_id": p.ID}); len(jobs) != 1 {
		t.Fatalf("%d delivery jobs, want 1", len(jobs))
	}
}

// putValue sends PUT /v1/content/{key} with value to srv in process, with
// an Idempotency-Key when idem is not empty.
func putValue(srv *central.Server, apiKey, key, value, idem string) *httptest.ResponseRecorder {
	raw, _ := json.Marshal(map[string]any{"value": value})
	req := httptest.NewRequest("PUT", "/v1/content/"+key, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	rec := httptest.NewRecorder()
	srv.Handler.ServeHTTP(rec, req)
	return rec
}
