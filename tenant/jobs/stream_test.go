package jobs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// tryStream opens a job's stream and returns the response, whatever its
// status; ctx bounds it (a stream that opens stays open until it ends).
func tryStream(t *testing.T, ctx context.Context, baseURL, key, jobID string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", baseURL+"/v1/jobs/"+jobID+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// A project holds at most jobs.MaxStreamsPerProject streams open at once:
// one more is 429 with Retry-After, another project is not affected, and a
// stream that ends frees its slot.
func TestStreamCap(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers: the job stays pending, its streams open
	p, other := env.NewProject("build"), env.NewProject("build")
	j := submit(t, env, p, jobs.Spec{Type: "test.none"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first, closeFirst := context.WithCancel(ctx)
	openStream(t, first, env.URL, p.Key, j.ID, "")
	for range jobs.MaxStreamsPerProject - 1 {
		openStream(t, ctx, env.URL, p.Key, j.ID, "")
	}
	res := tryStream(t, ctx, env.URL, p.Key, j.ID)
	var problem struct{ Code string }
	if err := json.NewDecoder(res.Body).Decode(&problem); res.StatusCode != 429 || err != nil || problem.Code != "rate_limited" {
		t.Fatalf("stream %d: status %d, code %q (%v)", jobs.MaxStreamsPerProject+1, res.StatusCode, problem.Code, err)
	}
	if res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a refused stream: %v", res.Header)
	}

	// the cap is the project's: another project streams its own job
	oj := submit(t, env, other, jobs.Spec{Type: "test.none"})
	openStream(t, ctx, env.URL, other.Key, oj.ID, "")

	// a client that goes away frees its slot
	closeFirst()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := tryStream(t, ctx, env.URL, p.Key, j.ID)
		if res.StatusCode == 200 {
			break
		}
		if res.StatusCode != 429 || time.Now().After(deadline) {
			t.Fatalf("after a stream closed: status %d", res.StatusCode)
		}
		res.Body.Close()
		time.Sleep(50 * time.Millisecond)
	}
}

// statements counts the statements a pool sends, single or batched.
type statements struct{ n atomic.Int64 }

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (s *statements) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) { s.n.Add(1) }

func (s *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// An open stream of an idle job sends no statement to the database: the
// hub's NOTIFY wakes it, and it still delivers the job's next event then.
// The stream runs on a second instance whose pool counts what it sends; the
// event is written through the first.
func TestIdleStreamQueriesNothing(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers: the job stays pending until cancelled
	p := env.NewProject("build")
	ctx := context.Background()

	cfg, err := pgxpool.ParseConfig(env.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	counter := &statements{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	conf := env.Config
	conf.SpareSchemas = 0 // no schema building in the background of the count
	srv, err := central.NewServer(ctx, conf, pool, slog.New(slog.DiscardHandler), central.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler)
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Stop(context.Background())
	})

	j := submit(t, env, p, jobs.Spec{Type: "test.none"})
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	live := make(chan sseEvent, 100)
	// open: the stream has read the job's events so far (none while pending)
	res := openStream(t, sctx, hs.URL, p.Key, j.ID, "")
	go readEvents(t, res, live)

	time.Sleep(500 * time.Millisecond) // the request's own statements settle
	before := counter.n.Load()
	time.Sleep(6 * time.Second) // longer than the 5 s poll streams once ran
	idle := counter.n.Load() - before

	env.Do("POST", "/v1/jobs/"+j.ID+"/cancel", p.Key, nil).Expect(t, 200)
	for {
		e := next(t, live)
		if e.Type == jobs.EventDone {
			if e.json(t)["status"] != jobs.StatusCancelled {
				t.Fatalf("done: %s", e.Data)
			}
			break
		}
	}
	if idle != 0 {
		t.Fatalf("an idle stream sent %d statements in 6 s", idle)
	}
}
