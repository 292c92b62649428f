package jobs_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// submit enqueues a job of any type through the one submit API.
func submit(t testing.TB, env *apitest.Env, p *apitest.Project, spec jobs.Spec) jobs.Job {
	t.Helper()
	var j jobs.Job
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		var err error
		j, err = jobs.Submit(context.Background(), tx, p.Scope, env.Server.River, spec)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// secondInstance runs another API server (no workers) on env's database.
func secondInstance(t testing.TB, env *apitest.Env) string {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	srv, err := central.NewServer(context.Background(), env.Config, env.DB.Pool, logger, central.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler)
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Stop(context.Background())
	})
	return hs.URL
}

func next(t testing.TB, live <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case e := <-live:
		return e
	case <-time.After(2 * time.Second): // streams do not poll: this is NOTIFY
		t.Fatal("no event within 2 s")
	}
	return sseEvent{}
}

// Events reach a stream opened on another instance as they happen,
// through Postgres LISTEN/NOTIFY.
func TestStreamLiveAcrossInstances(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	other := secondInstance(t, env)
	p := env.NewProject("build")
	gate := make(chan struct{})
	env.Server.Jobs.Handle("test.gated", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		for i, step := range []string{"one", "two"} {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if err := run.Step(ctx, step, (i+1)*40, "doing "+step); err != nil {
				return nil, err
			}
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return func(ctx context.Context, tx pgx.Tx) (any, error) { return map[string]any{"answer": 42}, nil }, nil
	})
	j := submit(t, env, p, jobs.Spec{Type: "test.gated", Steps: []string{"one", "two"}})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := openStream(t, ctx, other, p.Key, j.ID, "")
	live := make(chan sseEvent, 100)
	go readEvents(t, res, live)

	if e := next(t, live); e.Type != "progress" || e.json(t)["message"] != "Started" {
		t.Fatalf("first event: %+v", e)
	}
	gate <- struct{}{}
	if e := next(t, live); e.Type != "step" || e.Data != `{"name":"one","completed":false,"active":true}` {
		t.Fatalf("step one: %+v", e)
	}
	if e := next(t, live); e.Type != "progress" || e.Data != `{"progress":40,"message":"doing one"}` {
		t.Fatalf("progress one: %+v", e)
	}
	gate <- struct{}{}
	for _, want := range []string{`{"name":"one","completed":true,"active":false}`, `{"name":"two","completed":false,"active":true}`, `{"progress":80,"message":"doing two"}`} {
		if e := next(t, live); e.Data != want {
			t.Fatalf("got %s %s, want %s", e.Type, e.Data, want)
		}
	}
	gate <- struct{}{}
	for _, want := range []string{"step", "progress", "done"} {
		e := next(t, live)
		if e.Type != want {
			t.Fatalf("got %s, want %s", e.Type, want)
		}
		if want == "done" {
			m := e.json(t)
			if m["status"] != "completed" || fmt.Sprint(m["result"]) != "map[answer:42]" {
				t.Fatalf("done: %v", m)
			}
		}
	}
}

// A heartbeat comment keeps an idle stream open.
func TestStreamHeartbeat(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers: the job stays pending
	p := env.NewProject("build")
	api := jobs.New(jobs.Deps{Pool: env.DB.Pool, Queue: env.Server.River, Heartbeat: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	hubCtx, stopHub := context.WithCancel(context.Background())
	defer stopHub()
	go api.Hub().Run(hubCtx)
	r := chiWithAuth(env, api)
	hs := httptest.NewServer(r)
	defer hs.Close()
	j := submit(t, env, p, jobs.Spec{Type: "test.none"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := openStream(t, ctx, hs.URL, p.Key, j.ID, "")
	buf := make([]byte, 0, 256)
	tmp := make([]byte, 64)
	for !strings.Contains(string(buf), ": heartbeat\n\n: heartbeat\n\n") {
		n, err := res.Body.Read(tmp)
		if err != nil {
			t.Fatalf("read: %v after %q", err, buf)
		}
		buf = append(buf, tmp[:n]...)
	}
}

// Cancelling a pending job ends it at once, refunds it, and cancels its
// River job; scopes are checked; a finished job cannot be cancelled.
func TestCancelPending(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers: the job stays pending
	p := env.NewProject("build")
	before := p.Balance(t)
	j := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "never drawn"}).Expect(t, 202).JSON(t)
	id := j["id"].(string)
	if before-p.Balance(t) != 1000 {
		t.Fatal("submit must charge 10 credits")
	}

	env.Do("POST", "/v1/jobs/"+id+"/cancel", p.NewKey(false, "jobs:read"), nil).Problem(t, 403, "forbidden")
	m := env.Do("POST", "/v1/jobs/"+id+"/cancel", p.NewKey(false, "images:write"), nil).Problem(t, 403, "forbidden")
	if !strings.Contains(m["detail"].(string), "jobs:read") {
		t.Fatalf("403 must name jobs:read: %v", m)
	}
	env.Do("POST", "/v1/jobs/job_000000000000000000000000/cancel", p.Key, nil).Problem(t, 404, "not_found")

	c := env.Do("POST", "/v1/jobs/"+id+"/cancel", p.NewKey(false, "jobs:read", "images:write"), nil).Expect(t, 200).JSON(t)
	if c["status"] != "cancelled" || c["id"] != id {
		t.Fatalf("cancel: %v", c)
	}
	if b := p.Balance(t); b != before {
		t.Fatalf("balance %d after the refund, want %d", b, before)
	}
	if net, rows := ledger(t, p, id); net != 0 || rows != 2 {
		t.Fatalf("ledger: net %d in %d rows, want a charge and its refund", net, rows)
	}
	if s := riverState(t, env, p, id); s != "cancelled" {
		t.Fatalf("river job %s", s)
	}
	env.Do("POST", "/v1/jobs/"+id+"/cancel", p.Key, nil).Problem(t, 409, "conflict")
	if g := env.Do("GET", "/v1/jobs/"+id, p.Key, nil).Expect(t, 200).JSON(t); g["status"] != "cancelled" {
		t.Fatalf("job after cancel: %v", g)
	}
	evs := streamAll(t, env.URL, p.Key, id, "")
	if len(evs) != 1 || evs[0].Type != "done" || evs[0].json(t)["status"] != "cancelled" {
		t.Fatalf("stream of a cancelled job: %+v", evs)
	}
}

// Cancelling a processing job: the worker observes it (through the job's
// context, or through Progress for a handler that ignores its context) and
// ends the job cancelled, refunded.
func TestCancelProcessing(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	started := make(chan string, 2)
	env.Server.Jobs.Handle("test.wait", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		started <- run.JobID
		<-ctx.Done()
		return nil, ctx.Err()
	})
	env.Server.Jobs.Handle("test.busy", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		started <- run.JobID
		for i := 0; ; i++ { // ignores ctx; Progress reports the cancellation
			if err := run.Progress(context.WithoutCancel(ctx), i%100, "busy"); err != nil {
				return nil, err
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	for _, typ := range []string{"test.wait", "test.busy"} {
		t.Run(typ, func(t *testing.T) {
			before := p.Balance(t)
			j := submit(t, env, p, jobs.Spec{Type: typ, Charges: []jobs.Charge{{Op: "image", Cost: 300}}})
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("job did not start")
			}
			c := env.Do("POST", "/v1/jobs/"+j.ID+"/cancel", p.Key, nil).Expect(t, 200).JSON(t)
			if c["status"] != "processing" && c["status"] != "cancelled" {
				t.Fatalf("cancel of a processing job: %v", c)
			}
			got := env.WaitJob(t, p.Key, j.ID)
			if got["status"] != "cancelled" {
				t.Fatalf("job: %v", got)
			}
			if b := p.Balance(t); b != before {
				t.Fatalf("balance %d, want %d (refunded)", b, before)
			}
			if net, _ := ledger(t, p, j.ID); net != 0 {
				t.Fatalf("ledger net %d", net)
			}
		})
	}
}

// A permanent failure ends the job failed at once with its code (SSE error
// then done) and refunds it; a transient one is retried.
func TestFailureAndRetry(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	env.Server.Jobs.Handle("test.fail", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		return nil, jobs.Fail("validation_failed", "the brief is empty")
	})
	var tries atomic.Int32
	env.Server.Jobs.Handle("test.flaky", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		if tries.Add(1) == 1 {
			return nil, errors.New("connection reset")
		}
		return func(ctx context.Context, tx pgx.Tx) (any, error) { return map[string]any{"attempt": run.Attempt}, nil }, nil
	})

	before := p.Balance(t)
	f := submit(t, env, p, jobs.Spec{Type: "test.fail", Charges: []jobs.Charge{{Op: "content_plan", Cost: 2000}}})
	got := env.WaitJob(t, p.Key, f.ID)
	if got["status"] != "failed" || fmt.Sprint(got["error"]) != "map[code:validation_failed message:the brief is empty]" {
		t.Fatalf("failed job: %v", got)
	}
	if _, ok := got["result"]; ok {
		t.Fatalf("a failed job has no result: %v", got)
	}
	if b := p.Balance(t); b != before {
		t.Fatalf("balance %d, want %d (refunded)", b, before)
	}
	evs := streamAll(t, env.URL, p.Key, f.ID, "0")
	if n := len(evs); n < 2 || evs[n-2].Type != "error" || evs[n-2].Data != `{"code":"validation_failed","message":"the brief is empty"}` || evs[n-1].Type != "done" {
		t.Fatalf("events of a failed job: %+v", evs)
	}

	// A job submitted with a test key is charged to, and refunded into,
	// the test pool, also when its worker (with no key) fails it.
	testScope, err := tenant.NewScope(p.Scope.Pool(), p.Project, &tenant.Key{ID: "key_test", Test: true})
	if err != nil {
		t.Fatal(err)
	}
	var tj jobs.Job
	err = testScope.Tx(context.Background(), func(tx pgx.Tx) error {
		tj, err = jobs.Submit(context.Background(), tx, testScope, env.Server.River, jobs.Spec{Type: "test.fail", Charges: []jobs.Charge{{Op: "image", Cost: 1000}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := env.WaitJob(t, p.Key, tj.ID); got["status"] != "failed" {
		t.Fatalf("test-key job: %v", got)
	}
	var pools string
	var net int64
	err = p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT string_agg(DISTINCT pool, ','), sum(amount) FROM credit_ledger WHERE ref = $1`, tj.ID).Scan(&pools, &net)
	})
	if err != nil || pools != "test" || net != 0 {
		t.Fatalf("test-key job ledger: pools %q net %d %v", pools, net, err)
	}

	fl := submit(t, env, p, jobs.Spec{Type: "test.flaky"})
	got = env.WaitJob(t, p.Key, fl.ID)
	if got["status"] != "completed" || fmt.Sprint(got["result"]) != "map[attempt:2]" || tries.Load() != 2 {
		t.Fatalf("flaky job: %v after %d tries", got, tries.Load())
	}
	var retried bool
	for _, e := range streamAll(t, env.URL, p.Key, fl.ID, "0") {
		retried = retried || strings.Contains(e.Data, "Retrying after an error (attempt 1 of 5)")
	}
	if !retried {
		t.Fatal("the retry must show on the stream")
	}

	// A panicking handler is retried like a transient error.
	var panics atomic.Int32
	env.Server.Jobs.Handle("test.panic", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		if panics.Add(1) == 1 {
			panic("boom")
		}
		return nil, nil
	})
	pj := submit(t, env, p, jobs.Spec{Type: "test.panic"})
	if got := env.WaitJob(t, p.Key, pj.ID); got["status"] != "completed" || panics.Load() != 2 {
		t.Fatalf("panicking job: %v after %d runs", got, panics.Load())
	}

	// A job type no worker knows fails instead of retrying forever.
	u := submit(t, env, p, jobs.Spec{Type: "test.unknown"})
	if got := env.WaitJob(t, p.Key, u.ID); got["status"] != "failed" || got["error"].(map[string]any)["code"] != "internal_error" {
		t.Fatalf("unknown type: %v", got)
	}
}

// fakeOpenAI serves /images/generations: its handler decides per call.
func fakeOpenAI(t testing.TB, h func(call int, w http.ResponseWriter)) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	png, err := ai.Offline{}.Image(context.Background(), ai.ImageRequest{Prompt: "fake", Width: 64, Height: 48})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"created":1,"data":[{"b64_json":"` + base64.StdEncoding.EncodeToString(png.Data) + `"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/images/generations" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "bad request", 400)
			return
		}
		n := int(calls.Add(1))
		h(n, w)
		if w.Header().Get("X-Done") == "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// The OpenAI-compatible client through the whole job: a 429 is retried
// (honouring Retry-After) and the job completes; a 500 that persists ends
// the job failed with upstream_unavailable, refunded.
func TestUpstreamThroughJobs(t *testing.T) {
	t.Parallel()
	t.Run("429 then success", func(t *testing.T) {
		t.Parallel()
		up, calls := fakeOpenAI(t, func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.Header().Set("X-Done", "1")
				http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
			}
		})
		env := apitest.New(t, apitest.WithWorkers(), apitest.WithEnv("PLINTH_AI_PROVIDER", "openai", "OPENAI_BASE_URL", up.URL+"/v1", "OPENAI_API_KEY", "sk-test"))
		p := env.NewProject("build")
		start := time.Now()
		j := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "retry me"}).Expect(t, 202).JSON(t)
		got := env.WaitJob(t, p.Key, j["id"].(string))
		if got["status"] != "completed" || calls.Load() != 2 || time.Since(start) < time.Second {
			t.Fatalf("job %v after %d calls in %s", got, calls.Load(), time.Since(start))
		}
		if res := got["result"].(map[string]any); res["width"] != float64(64) || res["height"] != float64(48) {
			t.Fatalf("result must give the real size of the image: %v", res)
		}
	})
	t.Run("500 persists", func(t *testing.T) {
		t.Parallel()
		up, calls := fakeOpenAI(t, func(n int, w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("X-Done", "1")
			http.Error(w, `{"error":{"message":"the server had an error"}}`, 500)
		})
		env := apitest.New(t, apitest.WithWorkers(), apitest.WithEnv("PLINTH_AI_PROVIDER", "openai", "OPENAI_BASE_URL", up.URL+"/v1", "OPENAI_API_KEY", "sk-test"))
		p := env.NewProject("build")
		before := p.Balance(t)
		j := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "never"}).Expect(t, 202).JSON(t)
		got := env.WaitJob(t, p.Key, j["id"].(string))
		e, _ := got["error"].(map[string]any)
		if got["status"] != "failed" || e["code"] != "upstream_unavailable" || !strings.Contains(e["message"].(string), "500") ||
			strings.Contains(e["message"].(string), "the server had an error") {
			t.Fatalf("job: %v", got)
		}
		if calls.Load() != 5 {
			t.Fatalf("%d calls, want 5 attempts", calls.Load())
		}
		if b := p.Balance(t); b != before {
			t.Fatalf("balance %d, want %d (refunded)", b, before)
		}
		var n int
		err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
			return tx.QueryRow(context.Background(), `SELECT count(*) FROM images`).Scan(&n)
		})
		if err != nil || n != 0 {
			t.Fatalf("a failed job registers no image: %d %v", n, err)
		}
	})
}

// Spec.Handler runs a job of a shared public type with another registered
// handler: the Job keeps its public type.
func TestSpecHandler(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	env.Server.Jobs.Handle("test.shared", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		return func(context.Context, pgx.Tx) (any, error) { return map[string]string{"by": "type"}, nil }, nil
	})
	env.Server.Jobs.Handle("test.shared.other", 0, func(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
		return func(context.Context, pgx.Tx) (any, error) { return map[string]string{"by": run.Type}, nil }, nil
	})
	own := submit(t, env, p, jobs.Spec{Type: "test.shared"})
	other := submit(t, env, p, jobs.Spec{Type: "test.shared", Handler: "test.shared.other"})
	if got := env.WaitJob(t, p.Key, own.ID); fmt.Sprint(got["result"]) != "map[by:type]" {
		t.Fatalf("own handler: %v", got)
	}
	if got := env.WaitJob(t, p.Key, other.ID); got["type"] != "test.shared" || fmt.Sprint(got["result"]) != "map[by:test.shared]" {
		t.Fatalf("named handler: %v", got)
	}
}
