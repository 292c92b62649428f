package webhooks_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/outbox"
	"github.com/plinth-dev/plinth/tenant/webhooks/signature"
)

// TestRotationSignsWithBothSecrets: after a rotation the header carries
// two v1 entries, and a receiver holding either secret verifies it.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	ep, old := webhooktest.Endpoint(t, env, p.Key, rc.URL, "image.generated")
	rot := env.Do("POST", "/v1/webhook-endpoints/"+ep+"/rotate-secret", p.Key, nil).Expect(t, 200).JSON(t)
	cur := rot["signing_secret"].(string)
	rc.SetSecret(cur)
	webhooktest.Emit(t, env, p, "image.generated", map[string]any{"key": "hero"})
	got := rc.WaitN(t, 10*time.Second, 1)[0]
	sig := got.Header.Get("X-Service-Signature")
	if strings.Count(sig, "v1=") != 2 {
		t.Fatalf("want two v1 entries during the rotation window: %s", sig)
	}
	for _, s := range []string{cur, old} {
		if err := signature.Verify(s, sig, got.Body, time.Now()); err != nil {
			t.Fatalf("verify with %s: %v", s[:10], err)
		}
	}
	// After the window only the new secret signs.
	exec(t, p, `UPDATE webhook_endpoints SET previous_until = now() - interval '1 second' WHERE id = $1`, ep)
	webhooktest.Emit(t, env, p, "image.generated", map[string]any{"key": "logo"})
	got = rc.WaitN(t, 10*time.Second, 2)[1]
	sig = got.Header.Get("X-Service-Signature")
	if strings.Count(sig, "v1=") != 1 || signature.Verify(cur, sig, got.Body, time.Now()) != nil || signature.Verify(old, sig, got.Body, time.Now()) == nil {
		t.Fatalf("after the window: %s", sig)
	}
}

// TestInsufficientCredits: an attempt the balance cannot pay for is not
// sent; the attempts count and the delivery fails, redeliverable later.
func TestInsufficientCredits(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	ep, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.created")
	ctx := context.Background()
	drain := func() { leave(t, p, 1) } // leaves 0.01
	drain()
	webhooktest.Emit(t, env, p, "order.created", map[string]any{"id": 1})
	d := waitDeliveries(t, env, p.Key, ep, settled)
	if d[0]["status"] != "failed" || d[0]["attempts"] != float64(6) || d[0]["last_status_code"] != nil ||
		d[0]["last_error"] != "insufficient_credits" {
		t.Fatalf("delivery: %v", d)
	}
	if n := len(rc.Requests()); n != 0 {
		t.Fatalf("sent %d unpaid attempts", n)
	}
	if n, _ := ledger(t, p, "live"); n != 0 {
		t.Fatalf("%d charges", n)
	}
	// topped up, a redeliver goes through
	if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error { return credits.TopUp(ctx, tx, p.Scope, 1) }); err != nil {
		t.Fatal(err)
	}
	env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/"+d[0]["id"].(string)+"/redeliver", p.Key, nil).Expect(t, 202)
	rc.WaitN(t, 10*time.Second, 1)
	if n, sum := ledger(t, p, "live"); n != 1 || sum != 2 {
		t.Fatalf("charges after top-up: %d, %d", n, sum)
	}
}

// TestCreditsRunOutMidBatch: deliveries started together, whose attempts
// the group commit charges in one go, are paid in order while the balance
// lasts: a balance of 0.10 credits pays for exactly five of eight, and
// only those five are sent; the others are recorded unpaid.
func TestCreditsRunOutMidBatch(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc, apitest.WithEnv("PLINTH_WEBHOOK_RETRY_DELAYS", "1h,1h,1h,1h,1h"))
	var eps []string
	for range 8 {
		ep, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.created")
		eps = append(eps, ep)
	}
	// Leave 0.10 credits.
	leave(t, p, 10)
	webhooktest.Emit(t, env, p, "order.created", map[string]any{"id": 1}) // one event, eight deliveries
	rc.WaitN(t, 20*time.Second, 5)
	var unpaid int
	for _, ep := range eps {
		d := waitDeliveries(t, env, p.Key, ep, func(d []map[string]any) bool {
			return len(d) == 1 && (d[0]["status"] == "succeeded" || d[0]["last_error"] != nil)
		})
		if d[0]["status"] == "pending" {
			if d[0]["last_error"] != "insufficient_credits" || d[0]["attempts"] != float64(1) {
				t.Fatalf("unpaid delivery: %v", d[0])
			}
			unpaid++
		}
	}
	if unpaid != 3 {
		t.Fatalf("%d unpaid deliveries, want 3", unpaid)
	}
	time.Sleep(200 * time.Millisecond) // nothing more is sent
	if n := len(rc.Requests()); n != 5 {
		t.Fatalf("%d requests sent, want the 5 paid ones", n)
	}
	if n, sum := ledger(t, p, "live"); n != 5 || sum != 10 {
		t.Fatalf("charges: %d, sum %d; want 5 of 2", n, sum)
	}
}

// TestTestKeyEventsChargeTheTestPool: an event emitted in a test-key
// request's scope is delivered and charged to the test pool.
func TestTestKeyEventsChargeTheTestPool(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	webhooktest.Endpoint(t, env, p.Key, rc.URL, "content.changed")
	ctx := context.Background()
	sc, err := env.Server.Central.Resolve(ctx, p.NewKey(true, "*"))
	if err != nil || !sc.Test() {
		t.Fatalf("test scope: %v", err)
	}
	if err := sc.Tx(ctx, func(tx pgx.Tx) error {
		return env.Server.Outbox.Emit(ctx, tx, sc, "content.changed", map[string]any{"key": "k"})
	}); err != nil {
		t.Fatal(err)
	}
	rc.WaitN(t, 10*time.Second, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := ledger(t, p, "test")
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("test pool charges: %d", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, _ := ledger(t, p, "live"); n != 0 {
		t.Fatalf("live pool charged %d", n)
	}
}

// TestConnectTimeGuard: an endpoint accepted at creation whose address
// later turns internal (DNS rebinding, stood in for by rewriting the row)
// is refused when the connection is made, outside dev mode.
func TestConnectTimeGuard(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc, apitest.WithEnv("PLINTH_DEV", ""))
	ep, _ := webhooktest.Endpoint(t, env, p.Key, "https://93.184.216.34/hook", "order.paid")
	exec(t, p, `UPDATE webhook_endpoints SET url = $2 WHERE id = $1`, ep, rc.URL)
	webhooktest.Emit(t, env, p, "order.paid", map[string]any{"id": 1})
	d := waitDeliveries(t, env, p.Key, ep, settled)
	if d[0]["status"] != "failed" || d[0]["attempts"] != float64(6) || d[0]["last_error"] != "address_not_allowed" {
		t.Fatalf("delivery: %v", d)
	}
	if n := len(rc.Requests()); n != 0 {
		t.Fatalf("loopback receiver reached %d times", n)
	}
}

// pacedBurst emits n events in one transaction to one endpoint of a
// new project and returns the times its receiver got them, in order.
func pacedBurst(t *testing.T, n int) []time.Time {
	t.Helper()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	webhooktest.Endpoint(t, env, p.Key, rc.URL, "content.changed")
	ctx := context.Background()
	if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		for i := 0; i < n; i++ {
			if err := env.Server.Outbox.Emit(ctx, tx, p.Scope, "content.changed", map[string]any{"key": "k", "i": i}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	reqs := rc.WaitN(t, 30*time.Second, n)
	at := make([]time.Time, len(reqs))
	for i, r := range reqs {
		at[i] = r.At
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	return at
}

// TestPacing: a burst to one endpoint is sent at most 100 per second.
func TestPacing(t *testing.T) {
	t.Parallel()
	const n = 250
	at := pacedBurst(t, n)
	worst := 0
	for i := range at {
		j := sort.Search(len(at), func(k int) bool { return !at[k].Before(at[i].Add(time.Second)) })
		worst = max(worst, j-i)
	}
	span := at[len(at)-1].Sub(at[0])
	t.Logf("%d deliveries in %s, at most %d in any second", n, span, worst)
	if worst > 100 {
		t.Fatalf("%d deliveries within one second", worst)
	}
	// the first requests may arrive bunched while connections are set up
	if span < time.Duration(n-1)*outbox.Pace-150*time.Millisecond {
		t.Fatalf("%d deliveries in %s: faster than the pace", n, span)
	}
}

// TestPacedDeliveriesWakeOnTime: a burst beyond the pacing horizon
// snoozes most of its jobs until shortly before their turns, and the
// delivery queue polls only every second: the waker brings each back on
// time, so the burst is sent at the pace, without a gap of a poll.
func TestPacedDeliveriesWakeOnTime(t *testing.T) {
	t.Parallel()
	if outbox.QueueConfig.FetchPollInterval < time.Second {
		t.Fatalf("the delivery queue polls every %s: this test needs the 1 s fallback poll", outbox.QueueConfig.FetchPollInterval)
	}
	const n = 100
	at := pacedBurst(t, n)
	// The slots are Pace apart from the first send: a job woken late
	// shows as a gap, and every later one is late too.
	var gap time.Duration
	for i := 1; i < len(at); i++ {
		gap = max(gap, at[i].Sub(at[i-1]))
	}
	span := at[len(at)-1].Sub(at[0])
	t.Logf("%d deliveries in %s (the pace: %s), longest gap %s", n, span, time.Duration(n-1)*outbox.Pace, gap)
	// A snoozed job is due `early` (200 ms) before its slot; without a
	// wake it waits for the next 1 s poll, so the burst stops for about
	// 800 ms wherever the poll falls. A loaded CI machine showed gaps of
	// 166 ms and 300 ms with the waker, so the bound sits between the two.
	if gap > 550*time.Millisecond {
		t.Fatalf("a gap of %s between paced deliveries: a snoozed job waited for the poll", gap)
	}
	// Small delays of a loaded machine add up over a hundred slots (runs
	// at a load of 12 on 2 cores saw 533 ms and 1.74 s, their longest
	// gaps 166 ms); a wake that waits for the poll shows above as a gap,
	// and a waker that lags every wake shows as lateness per slot: the
	// bound is 25 ms a slot, twice the pace (1/85 s).
	if late := span - time.Duration(n-1)*outbox.Pace; late > time.Duration(n)*25*time.Millisecond {
		t.Fatalf("%d deliveries in %s: the last was %s behind its slot", n, span, late)
	}
}

// TestSlowEndpointDoesNotDelayAnother: while one receiver hangs on every
// request, another subscribed to the same events gets all of them: none
// waits for the hanging requests to time out.
func TestSlowEndpointDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	slow := webhooktest.NewTLS(t, func(r *http.Request, _ int) int {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return 200
	})
	fast := webhooktest.NewTLS(t, nil)
	// httptest servers share one certificate: one pool trusts both
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(fast.RootCAs()),
		apitest.WithEnv("PLINTH_WEBHOOK_TIMEOUT", "30s", "PLINTH_WEBHOOK_RETRY_DELAYS", "1s,1s,1s,1s,1s"))
	p := env.NewProject("build")
	webhooktest.Endpoint(t, env, p.Key, slow.URL, "booking.confirmed")
	webhooktest.Endpoint(t, env, p.Key, fast.URL, "booking.confirmed")
	const n = 60
	start := time.Now()
	for i := 0; i < n; i++ {
		webhooktest.Emit(t, env, p, "booking.confirmed", map[string]any{"id": i})
	}
	fast.WaitN(t, 25*time.Second, n)
	took := time.Since(start)
	t.Logf("fast endpoint got %d deliveries in %s while the slow one held %d requests", n, took, slow.MaxInFlight())
	// The slow receiver records a request only when it answers: none has,
	// so nothing the fast one got waited for a slow request to end.
	if done := len(slow.Requests()); done != 0 {
		t.Fatalf("%d slow requests ended first", done)
	}
	if m := slow.MaxInFlight(); m == 0 || m > outbox.MaxInFlight {
		t.Fatalf("slow endpoint held %d requests at once, bound is %d", m, outbox.MaxInFlight)
	}
	once.Do(func() { close(release) })
}

// TestUndecryptableSecret: a signing secret sealed under another server
// secret (PLINTH_SECRET changed) fails the delivery without sending or
// charging, saying why; a rotation makes the endpoint deliverable again.
func TestUndecryptableSecret(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	ep, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.paid")
	exec(t, p, `UPDATE webhook_endpoints SET secret = $2 WHERE id = $1`, ep,
		outbox.NewSecrets([]byte("another server secret")).Seal(ep, outbox.NewSigningSecret()))
	webhooktest.Emit(t, env, p, "order.paid", map[string]any{"id": 1})
	d := waitDeliveries(t, env, p.Key, ep, settled)
	if d[0]["status"] != "failed" || d[0]["attempts"] != float64(0) || d[0]["last_error"] != "signing_secret_unusable" {
		t.Fatalf("delivery: %v", d)
	}
	if n, _ := ledger(t, p, "live"); n != 0 || len(rc.Requests()) != 0 {
		t.Fatalf("%d charges, %d requests", n, len(rc.Requests()))
	}
	secret := env.Do("POST", "/v1/webhook-endpoints/"+ep+"/rotate-secret", p.Key, nil).Expect(t, 200).JSON(t)["signing_secret"].(string)
	rc.SetSecret(secret)
	env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/"+d[0]["id"].(string)+"/redeliver", p.Key, nil).Expect(t, 202)
	if got := rc.WaitN(t, 10*time.Second, 1)[0]; got.Verified != nil {
		t.Fatalf("after rotation: %v", got.Verified)
	}
}

// leave spends the project's balance down to left hundredths of a credit.
func leave(t *testing.T, p *apitest.Project, left int64) {
	t.Helper()
	ctx := context.Background()
	if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		b, err := credits.Balance(ctx, tx, p.Scope)
		if err != nil {
			return err
		}
		return credits.Charge(ctx, tx, p.Scope, "content_update", b-left, "")
	}); err != nil {
		t.Fatal(err)
	}
}
