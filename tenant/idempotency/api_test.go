package idempotency_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/idempotency"
)

func post(env *apitest.Env, key, idemKey string, body any) *apitest.Resp {
	return env.Send(apitest.PostWidget(key, idemKey, body))
}

func setup(t *testing.T, hook apitest.WidgetHook, opts ...apitest.Option) (*apitest.Env, *apitest.Project) {
	t.Helper()
	env := apitest.New(t, append(opts, apitest.WithWidgets(hook))...)
	p := env.NewProject("build")
	p.EnableWidgets()
	return env, p
}

const charges = `SELECT count(*) FROM credit_ledger WHERE amount > 0`

// keyID is the id of the project's "*" key (p.Key).
func keyID(t *testing.T, env *apitest.Env, p *apitest.Project) string {
	t.Helper()
	var id string
	if err := env.DB.Pool.QueryRow(context.Background(), `SELECT id FROM central.api_keys WHERE project_id = $1 AND name = 'test'`, p.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestReplayAndMismatch(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	// One request a minute refills the bucket: every request, replays
	// included, leaves one fewer (at the build plan's 4 a second, a
	// replay sent 250 ms after the first on a loaded machine saw the same
	// remaining count).
	plan, rpm, burst := "enterprise", 1, 100
	ctx := context.Background()
	if _, err := env.Server.Central.UpdateProject(ctx, p.ID, central.ProjectUpdate{Plan: &plan}); err != nil {
		t.Fatal(err)
	}
	if err := env.Server.Central.SetRateOverride(ctx, p.ID, &rpm, &burst, nil); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"name": "a"}

	first := post(env, p.Key, "k-1", body).Expect(t, 201)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a first run is not a replay")
	}
	again := post(env, p.Key, "k-1", body).Expect(t, 201)
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) ||
		again.Header.Get("Location") != first.Header.Get("Location") || again.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("replay differs: %v %s vs %v %s", again.Header, again.Body, first.Header, first.Body)
	}
	// the replay is a fresh delivery: its own request id and limit headers
	if again.Header.Get("X-Request-Id") == first.Header.Get("X-Request-Id") ||
		again.Header.Get("X-RateLimit-Remaining") == first.Header.Get("X-RateLimit-Remaining") {
		t.Fatalf("replay reused per-request headers: %v", again.Header)
	}
	if n := p.Count(`SELECT count(*) FROM widgets`); n != 1 {
		t.Fatalf("%d widgets after a replay, want 1", n)
	}
	if n := p.Count(charges); n != 1 {
		t.Fatalf("%d charges after a replay, want 1", n)
	}

	// same key, other body / path / method: 409 idempotency_conflict
	post(env, p.Key, "k-1", map[string]any{"name": "b"}).Problem(t, 409, "idempotency_conflict")
	env.Send(apitest.Request{Method: "POST", Path: "/v1/test/widgets?x=1", Key: p.Key, Body: body,
		Header: map[string]string{"Idempotency-Key": "k-1"}}).Problem(t, 409, "idempotency_conflict")
	env.Send(apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: body,
		Header: map[string]string{"Idempotency-Key": "k-1"}}).Problem(t, 409, "idempotency_conflict")

	// errors below 500 are stored and replayed too
	bad := post(env, p.Key, "k-2", map[string]any{"nope": 1})
	bad.Problem(t, 400, "bad_request")
	rb := post(env, p.Key, "k-2", map[string]any{"nope": 1})
	rb.Problem(t, 400, "bad_request")
	if rb.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("a stored 400 must replay")
	}

	// key length: 255 is fine, 256 and empty are 400
	post(env, p.Key, strings.Repeat("x", 255), body).Expect(t, 201)
	post(env, p.Key, strings.Repeat("x", 256), body).Problem(t, 400, "bad_request")
	env.Send(apitest.Request{Method: "POST", Path: "/v1/test/widgets", Key: p.Key, Body: body,
		Header: map[string]string{"Idempotency-Key": ""}}).Problem(t, 400, "bad_request")

	// without the header every request runs; GET ignores the header
	post(env, p.Key, "", body).Expect(t, 201)
	post(env, p.Key, "", body).Expect(t, 201)
	env.Send(apitest.Request{Method: "GET", Path: "/v1/projects/me", Key: p.Key, Header: map[string]string{"Idempotency-Key": "k-1"}}).Expect(t, 200)
	if n := p.Count(`SELECT count(*) FROM widgets`); n != 4 {
		t.Fatalf("%d widgets, want 4", n)
	}

	// keys are per project: another project's k-1 is its own
	q := env.NewProject("build")
	q.EnableWidgets()
	post(env, q.Key, "k-1", map[string]any{"name": "other"}).Expect(t, 201)

	// a real route: a key creation replays with the same key, not a second key
	kb := map[string]any{"name": "ci", "scopes": []string{"content:read"}}
	h := map[string]string{"Idempotency-Key": "mint-1"}
	k1 := env.Send(apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: kb, Header: h}).Expect(t, 201).JSON(t)
	k2 := env.Send(apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: kb, Header: h}).Expect(t, 201).JSON(t)
	if k1["id"] != k2["id"] {
		t.Fatalf("replayed key creation minted another key: %v %v", k1["id"], k2["id"])
	}
}

// TestConcurrentDuplicates is the must-show: 50 concurrent identical
// POSTs with one key create exactly one resource and charge once; the
// others get the replay or the in-flight 409 with Retry-After: 1.
func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	sleep := 300
	body := map[string]any{"name": "once", "sleep_ms": sleep}
	const n = 50
	resps := make([]*apitest.Resp, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// spread over twice the handler's time: most overlap the
			// first request, the last ones come after it
			time.Sleep(time.Duration(i) * 2 * time.Duration(sleep) * time.Millisecond / n)
			r, err := env.TrySend(apitest.PostWidget(p.Key, "same-key", body))
			if err != nil {
				t.Error(err)
				return
			}
			resps[i] = r
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var created, replayed, inflight int
	var original []byte
	for _, r := range resps {
		switch {
		case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "":
			created++
			original = r.Body
		case r.Status == 201:
			replayed++
		case r.Status == 409:
			r.Problem(t, 409, "conflict")
			if r.Header.Get("Retry-After") != "1" {
				t.Fatalf("in-flight 409 without Retry-After: 1: %v", r.Header)
			}
			inflight++
		default:
			t.Fatalf("unexpected %d: %s", r.Status, r.Body)
		}
	}
	t.Logf("created %d, replayed %d, in flight %d", created, replayed, inflight)
	if created != 1 || created+replayed+inflight != n {
		t.Fatalf("created %d (want 1), replayed %d, in flight %d", created, replayed, inflight)
	}
	for _, r := range resps {
		if r.Status == 201 && !bytes.Equal(r.Body, original) {
			t.Fatalf("replay body %s differs from %s", r.Body, original)
		}
	}
	if w := p.Count(`SELECT count(*) FROM widgets`); w != 1 {
		t.Fatalf("%d widgets, want 1", w)
	}
	if c := p.Count(charges); c != 1 {
		t.Fatalf("%d charges, want 1", c)
	}
	// once done, the key replays
	post(env, p.Key, "same-key", body).Expect(t, 201)
	if p.Count(`SELECT count(*) FROM idempotency_keys WHERE status IS NULL`) != 0 {
		t.Fatal("a reservation is left in progress")
	}
}

// TestBackendKilled is the fault must-show: the database backend serving
// the request is terminated mid-request; a retry with the same key ends
// with exactly one effect and the key is not stuck in progress.
func TestBackendKilled(t *testing.T) {
	t.Parallel()
	pids := make(chan int32, 1)
	var held atomic.Bool
	hook := func(ctx context.Context, tx pgx.Tx, req apitest.WidgetRequest) error {
		if req.Tag == nil || *req.Tag != "hold" || held.Swap(true) {
			return nil
		}
		var pid int32
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			return err
		}
		pids <- pid
		_, err := tx.Exec(ctx, `SELECT pg_sleep(30)`)
		return err
	}
	env, p := setup(t, hook)
	body := map[string]any{"name": "w", "tag": "hold"}
	done := make(chan *apitest.Resp, 1)
	go func() {
		r, err := env.TrySend(apitest.PostWidget(p.Key, "fault-1", body))
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	pid := <-pids
	// while it runs, a duplicate is told to come back
	dup := post(env, p.Key, "fault-1", body)
	dup.Problem(t, 409, "conflict")
	var ok bool
	if err := env.DB.Pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v %v", ok, err)
	}
	r := <-done
	if r == nil {
		t.FailNow()
	}
	if r.Status < 500 {
		t.Fatalf("the killed request answered %d: %s", r.Status, r.Body)
	}
	if n := p.Count(`SELECT count(*) FROM idempotency_keys WHERE key = 'fault-1'`); n != 0 {
		t.Fatal("the dead request's reservation is not released")
	}
	if p.Count(`SELECT count(*) FROM widgets`) != 0 || p.Count(charges) != 0 {
		t.Fatal("the killed transaction left an effect")
	}
	retry := post(env, p.Key, "fault-1", body).Expect(t, 201)
	if retry.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the retry must run, not replay a failure")
	}
	post(env, p.Key, "fault-1", body).Expect(t, 201)
	if p.Count(`SELECT count(*) FROM widgets`) != 1 || p.Count(charges) != 1 {
		t.Fatal("want exactly one effect after the retry")
	}
	if p.Count(`SELECT count(*) FROM idempotency_keys WHERE status IS NULL`) != 0 {
		t.Fatal("a key is stuck in progress")
	}
}

// TestDeadProcessReservation: a reservation left by a process that died
// (no renewal, lease lapsed) is taken over; a live one is not.
func TestDeadProcessReservation(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	body := map[string]any{"name": "w"}
	// the fingerprint of the request below, as the middleware computes it
	hash := sha256.Sum256([]byte(`{"name":"w"}`))
	reserve := func(key, lease string) {
		err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
			_, err := tx.Exec(context.Background(), `INSERT INTO idempotency_keys (key_id, key, method, path, body_hash, owner, locked_until, expires_at)
				VALUES ($4, $1, 'POST', '/v1/test/widgets', $3, gen_random_uuid(), now() + $2::interval, now() + interval '1 day')`, key, lease, hash[:], keyID(t, env, p))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	reserve("alive", "30 seconds")
	r := post(env, p.Key, "alive", body)
	r.Problem(t, 409, "conflict")
	if r.Header.Get("Retry-After") != "1" {
		t.Fatal("in-flight 409 needs Retry-After: 1")
	}
	reserve("dead", "-1 second")
	post(env, p.Key, "dead", body).Expect(t, 201)
	post(env, p.Key, "dead", body).Expect(t, 201)
	if p.Count(`SELECT count(*) FROM widgets`) != 1 {
		t.Fatal("want one effect from the taken-over key")
	}
}

// TestLeaseRenewal: a request running longer than the lease keeps its
// reservation, because the running process renews it.
func TestLeaseRenewal(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	m := &idempotency.Middleware{Logger: slog.New(slog.DiscardHandler), Lease: time.Second, Queue: env.Server.River}
	var runs atomic.Int32
	// The handler runs until the test lets it end (a fixed 3 s run ended
	// before the second request on a loaded machine, which then replayed).
	entered, release := make(chan struct{}), make(chan struct{})
	end := sync.OnceFunc(func() { close(release) })
	t.Cleanup(end)
	slow := m.Handler(tenant.Handle(func(w http.ResponseWriter, r *http.Request, _ *tenant.Scope) error {
		if runs.Add(1) == 1 { // a second run (a takeover) ends at once
			close(entered)
			<-release
		}
		return httpapi.JSON(w, 201, map[string]string{"ok": "yes"})
	}))
	serve := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/slow", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "slow")
		req = req.WithContext(tenant.WithScope(req.Context(), p.Scope))
		w := httptest.NewRecorder()
		slow.ServeHTTP(w, req)
		return w
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- serve() }()
	<-entered                           // the key is reserved and the request runs
	time.Sleep(2500 * time.Millisecond) // past two leases: what is tested is that time
	if w := serve(); w.Code != 409 {
		t.Fatalf("a running request's key was taken over: %d %s", w.Code, w.Body)
	}
	end()
	if w := <-first; w.Code != 201 {
		t.Fatalf("first: %d", w.Code)
	}
	if w := serve(); w.Code != 201 || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after completion: %d %v", w.Code, w.Header())
	}
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times", runs.Load())
	}
}

// TestExpiry: after 24 h a key is usable again, with another request.
func TestExpiry(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	body := map[string]any{"name": "w"}
	post(env, p.Key, "old", body).Expect(t, 201)
	expire(t, p, "old")
	r := post(env, p.Key, "old", map[string]any{"name": "another body is fine now"}).Expect(t, 201)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("an expired key replayed")
	}
	if p.Count(`SELECT count(*) FROM widgets`) != 2 {
		t.Fatal("want 2 widgets")
	}
}

// TestServerErrorsAreNotStored: a 5xx releases the key.
func TestServerErrorsAreNotStored(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	env, p := setup(t, func(ctx context.Context, tx pgx.Tx, req apitest.WidgetRequest) error {
		if fail.Swap(false) {
			return errors.New("boom")
		}
		return nil
	})
	body := map[string]any{"name": "w"}
	post(env, p.Key, "k", body).Problem(t, 500, "internal_error")
	r := post(env, p.Key, "k", body).Expect(t, 201)
	if r.Header.Get("Idempotent-Replayed") != "" || p.Count(`SELECT count(*) FROM widgets`) != 1 {
		t.Fatal("after a 500 the key must run again")
	}
}

// TestPublicSurface: keyless public submits accept Idempotency-Key too.
func TestPublicSurface(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	send := func(body any) *apitest.Resp {
		return env.Send(apitest.Request{Method: "POST", Path: "/v1/public/test/widgets", Body: body,
			Header: map[string]string{"X-Service-Project-Key": p.ID, "Idempotency-Key": "pub-1"}})
	}
	first := send(map[string]any{"name": "booking"}).Expect(t, 201)
	again := send(map[string]any{"name": "booking"}).Expect(t, 201)
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, again.Body) {
		t.Fatalf("public replay: %v %s", again.Header, again.Body)
	}
	send(map[string]any{"name": "other"}).Problem(t, 409, "idempotency_conflict")
	if p.Count(`SELECT count(*) FROM widgets`) != 1 {
		t.Fatal("want one public write")
	}
}
