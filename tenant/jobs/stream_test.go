package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
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

// An open stream of an idle job sends nothing to the database: the hub's
// NOTIFY wakes it, and it still delivers the job's next event then. The
// stream runs on a second instance whose pool counts its round trips on
// the wire (a tracer of pgx misses the reads, which run below it); the
// event is written through the first. The idle window starts once that
// instance's connections show, in pg_stat_activity, the stream's read of
// the job's events finished and nothing running.
func TestIdleStreamQueriesNothing(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers: the job stays pending until cancelled
	p := env.NewProject("build")
	ctx := context.Background()

	cfg, err := pgxpool.ParseConfig(env.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	const app = "idle_stream_instance"
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	counter := pgtest.Count(cfg)
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
	// The key's first use on this instance records last_used_at in the
	// background; it is done before the stream opens (the next is a
	// minute away).
	var since time.Time
	if err := env.DB.Pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&since); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("GET", hs.URL+"/v1/projects/me", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.Key)
	me, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	me.Body.Close()
	if me.StatusCode != 200 {
		t.Fatalf("GET /v1/projects/me on the second instance: %d", me.StatusCode)
	}
	waitQuery(t, env, "the key's last use recorded", `SELECT count(*) FROM central.api_keys WHERE project_id = $1 AND last_used_at >= $2`, p.ID, since)

	j := submit(t, env, p, jobs.Spec{Type: "test.none"})
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	live := make(chan sseEvent, 100)
	// open: the stream has read the job (its events come after the headers)
	res := openStream(t, sctx, hs.URL, p.Key, j.ID, "")
	go readEvents(t, res, live)
	waitQuery(t, env, "the stream's read of the job's events to end", `SELECT count(*) FILTER (WHERE query LIKE '%FROM job_events%')
		FROM pg_stat_activity WHERE application_name = $1 HAVING count(*) FILTER (WHERE state <> 'idle') = 0`, app)

	before := counter.Count()
	time.Sleep(6 * time.Second) // longer than the 5 s poll streams once ran
	idle := counter.Count() - before

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
		t.Fatalf("an idle stream made %d round trips to the database in 6 s", idle)
	}
}

// waitQuery waits until sql, run on the test's own pool, counts at least
// one row.
func waitQuery(t *testing.T, env *apitest.Env, what, sql string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := env.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
