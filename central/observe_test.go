package central_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// scrape fetches /metrics of base with an optional bearer token.
func scrape(t *testing.T, base, token string) (int, string) {
	t.Helper()
	return getBearer(t, base+"/metrics", token)
}

// getBearer fetches url with an optional bearer token.
func getBearer(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestMetrics: after a few requests, a refused login and a webhook
// delivery job, /metrics of the operators' listener (open by default)
// shows every family the operator relies on, by route pattern and never
// by raw path or project; promtool accepts it.
func TestMetrics(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()), apitest.WithEnv("PLINTH_LOGIN_RATE", "1/1"))
	p := env.NewProject("build")
	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.paid")
	rc.SetSecret(secret)
	webhooktest.Emit(t, env, p, "order.paid", map[string]any{"id": 1})
	rc.WaitN(t, 10*time.Second, 1)
	for range 3 {
		env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	}
	login := map[string]any{"email": "nobody@example.com", "password": "not-the-password"}
	env.Do("POST", "/central/api/login", "", login).Expect(t, 422)
	env.Do("POST", "/central/api/login", "", login).Expect(t, 429)

	want := []string{
		`plinth_http_requests_total{method="GET",route="/v1/projects/me",status="200"} 3`,
		`plinth_http_requests_total{method="POST",route="/central/api/login",status="429"} 1`,
		`plinth_http_request_duration_seconds_bucket{method="GET",route="/v1/projects/me",le="+Inf"} 3`,
		`plinth_db_pool_max_conns{pool="central"}`,
		`plinth_db_pool_acquires_total{pool="central"}`,
		`plinth_river_jobs{queue="default",state="available"}`,
		`plinth_jobs_total{kind="webhook.deliver",outcome="completed"} 1`,
		`plinth_job_duration_seconds_count{kind="webhook.deliver"} 1`,
		`plinth_webhook_attempts_total{outcome="success"} 1`,
		`plinth_webhook_attempt_duration_seconds_count{outcome="success"} 1`,
		`plinth_credits_charged_total{op="webhook_delivery"} 0.02`,
		`plinth_rate_limit_rejections_total{limit="login"} 1`,
		`plinth_projects 1`,
		`plinth_shard_reachable{shard="default"} 1`,
		`plinth_shard_projects{shard="default"} 1`,
		`plinth_shard_capacity{shard="default"} 10000`,
		`go_goroutines `,
	}
	ops := httptest.NewServer(env.Server.OpsHandler())
	defer ops.Close()
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st int
		st, body = scrape(t, ops.URL, "")
		if st != 200 {
			t.Fatalf("GET /metrics: %d\n%s", st, body)
		}
		missing := missingLines(body, want)
		if len(missing) == 0 {
			break
		}
		// River reports a job's outcome a moment after the receiver has it.
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks:\n\t%s\nin:\n%s", strings.Join(missing, "\n\t"), body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(body, p.ID) || strings.Contains(body, `route="/v1/projects/`+p.ID) {
		t.Fatal("/metrics names a project")
	}
	promtool(t, body)
}

func missingLines(body string, want []string) []string {
	var missing []string
	for _, w := range want {
		found := false
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, w) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, w)
		}
	}
	return missing
}

// promtool runs `promtool check metrics` over an exposition: the linter
// Prometheus itself applies to names, units, types and help texts.
func promtool(t *testing.T, exposition string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is required under CI (Debian package prometheus)")
		}
		t.Log("promtool not installed (Debian package prometheus): exposition not linted")
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsToken: with PLINTH_METRICS_TOKEN set, /metrics on the API
// listener answers only a request bearing it.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_METRICS_TOKEN", "scrape-token"))
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"wrong-token", 401}, {"scrape-token", 200}} {
		if st, body := scrape(t, env.URL, c.token); st != c.want {
			t.Fatalf("token %q: %d, want %d\n%s", c.token, st, c.want, body)
		}
	}
}

// TestMetricsNotOnAPIByDefault: without PLINTH_METRICS_TOKEN the API
// listener, which faces the world, has no /metrics (404, with or without
// a bearer), while the operators' listener serves it openly.
func TestMetricsNotOnAPIByDefault(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	for _, token := range []string{"", p.Key, "anything"} {
		st, body := scrape(t, env.URL, token)
		if st != 404 || strings.Contains(body, "plinth_") {
			t.Fatalf("GET /metrics on the API listener with %q: %d\n%s", token, st, body)
		}
	}
	ops := httptest.NewServer(env.Server.OpsHandler())
	defer ops.Close()
	if st, body := scrape(t, ops.URL, ""); st != 200 || !strings.Contains(body, "plinth_projects ") {
		t.Fatalf("GET /metrics on the operators' listener: %d\n%s", st, body)
	}
}

// TestOpsHandler: the operators' listener (PLINTH_METRICS_ADDR) serves
// /metrics and Go's CPU profile behind the token; the API's listener
// never serves the profiles.
func TestOpsHandler(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_METRICS_TOKEN", "scrape-token", "PLINTH_METRICS_ADDR", "127.0.0.1:1"))
	ops := httptest.NewServer(env.Server.OpsHandler())
	defer ops.Close()
	get := func(base, path, token string) (int, string) { return getBearer(t, base+path, token) }
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", 401}, {"/metrics", "scrape-token", 200},
		{"/debug/pprof/", "", 401}, {"/debug/pprof/profile?seconds=1", "wrong", 401},
		{"/debug/pprof/goroutine?debug=1", "scrape-token", 200},
	} {
		if st, body := get(ops.URL, c.path, c.token); st != c.want {
			t.Fatalf("%s with %q: %d, want %d\n%s", c.path, c.token, st, c.want, body)
		}
	}
	// A CPU profile is a gzipped protobuf.
	if st, body := get(ops.URL, "/debug/pprof/profile?seconds=1", "scrape-token"); st != 200 || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Fatalf("CPU profile: %d, %d bytes", st, len(body))
	}
	if st, _ := get(env.URL, "/debug/pprof/", "scrape-token"); st != 404 {
		t.Fatalf("the API listener served /debug/pprof/: %d", st)
	}
	if st, _ := get(env.URL, "/metrics", "scrape-token"); st != 404 {
		t.Fatalf("the API listener served /metrics beside its own listener: %d", st)
	}
}

// TestProbes: /livez answers while the process lives; /readyz checks the
// database, the project schemas' migrations and the workers.
func TestProbes(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	get := func(path string) (int, map[string]any) {
		res, err := http.Get(env.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, m
	}
	if st, m := get("/livez"); st != 200 || m["status"] != "ok" {
		t.Fatalf("livez: %d %v", st, m)
	}
	st, m := get("/readyz")
	checks, _ := m["checks"].(map[string]any)
	if st != 200 || checks["database"] != "ok" || checks["migrations"] != "ok" || checks["workers"] != "ok" {
		t.Fatalf("readyz: %d %v", st, m)
	}
	// A schema behind this binary's migrations: not ready until migrated.
	if _, err := env.DB.Pool.Exec(context.Background(), `UPDATE central.placements SET schema_version = 0 WHERE project_id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	st, m = get("/readyz")
	checks, _ = m["checks"].(map[string]any)
	if st != 503 || m["status"] != "unavailable" || !strings.Contains(checks["migrations"].(string), "plinth migrate") || checks["database"] != "ok" {
		t.Fatalf("readyz with a schema behind: %d %v", st, m)
	}
}

// lockedBuffer collects log output written from the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestAccessLog: one JSON line per request with its id, method, route
// pattern, status, size, duration, project and key, and never the key's
// secret or the body.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	_, hs, logs := loggedServer(t, env, central.Options{})

	type sent struct {
		method, path, key, body string
		route                   string
		status                  int
		project                 bool
	}
	const marker = "body-marker-never-logged"
	reqs := []sent{
		{"GET", "/v1/projects/me", p.Key, "", "/v1/projects/me", 200, true},
		{"POST", "/v1/webhook-endpoints", p.Key, `{"url": "` + marker + `"`, "/v1/webhook-endpoints", 400, true},
		{"GET", "/v1/no/such/path", "", "", "/v1/*", 404, false},
		{"GET", "/livez", "", "", "/livez", 200, false},
	}
	var ids []string
	var sizes []int
	for _, r := range reqs {
		req, _ := http.NewRequest(r.method, hs.URL+r.path, strings.NewReader(r.body))
		if r.key != "" {
			req.Header.Set("Authorization", "Bearer "+r.key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != r.status {
			t.Fatalf("%s %s: %d, want %d: %s", r.method, r.path, res.StatusCode, r.status, b)
		}
		ids, sizes = append(ids, res.Header.Get("X-Request-Id")), append(sizes, len(b))
	}
	// A line is written as its handler returns, which the client may
	// see a moment before.
	var lines []map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if lines = logs.lines(t, "request"); len(lines) >= len(reqs) || time.Now().After(deadline) {
			break
		}
	}
	if len(lines) != len(reqs) {
		t.Fatalf("%d access-log lines for %d requests:\n%s", len(lines), len(reqs), logs.String())
	}
	keyID := regexp.MustCompile(`^key_`)
	for i, r := range reqs {
		l := lines[i]
		if l["level"] != "INFO" || l["request_id"] != ids[i] || ids[i] == "" || l["method"] != r.method || l["route"] != r.route ||
			l["status"] != float64(r.status) || l["bytes"] != float64(sizes[i]) {
			t.Errorf("line for %s %s: %v (request id %s, %d bytes)", r.method, r.path, l, ids[i], sizes[i])
		}
		if d, ok := l["duration_ms"].(float64); !ok || d < 0 {
			t.Errorf("line for %s %s: duration_ms %v", r.method, r.path, l["duration_ms"])
		}
		if r.project && (l["project_id"] != p.ID || !keyID.MatchString(l["key_id"].(string))) {
			t.Errorf("line for %s %s: project %v key %v, want %s and a key id", r.method, r.path, l["project_id"], l["key_id"], p.ID)
		}
		if !r.project && (l["project_id"] != "" || l["key_id"] != "") {
			t.Errorf("line for %s %s names a project or key: %v", r.method, r.path, l)
		}
	}
	if all := logs.String(); strings.Contains(all, p.Key) || strings.Contains(all, marker) {
		t.Fatalf("the log holds the key or a body:\n%s", all)
	}
}

// TestMixedRunCounted: after a run of content writes, an AI job and an
// MCP tool call, the credits counter of /metrics equals the project's
// ledger, operation by operation (deferred charges, jobs' charges and
// the routes MCP tools run all reach it); the job is counted under its
// type, not River's one kind of the API's jobs; and the route the tool
// ran has an access-log line of its own naming the tool and the project.
func TestMixedRunCounted(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ctx := context.Background()
	srv, hs, logs := loggedServer(t, env, central.Options{Workers: true, Queue: queue.Options{TestOnly: true, FetchPoll: 100 * time.Millisecond}})
	require.NoError(t, srv.Start(ctx))
	send := func(method, path, body string, header map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+p.Key)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, b
	}

	for i := range 3 {
		st, b := send("PUT", fmt.Sprintf("/v1/content/mixed.k%d", i), `{"value":"v"}`, nil)
		require.Equal(t, 200, st, "%s", b)
	}
	st, b := send("POST", "/v1/blog-posts", `{"type":"ai","topic":"Green tea","target_languages":["fr"]}`, nil)
	require.Equal(t, 202, st, "%s", b)
	var job struct{ ID string }
	require.NoError(t, json.Unmarshal(b, &job))
	require.Equal(t, "completed", env.WaitJob(t, p.Key, job.ID)["status"])
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"set_content","arguments":{"key":"mixed.mcp","value":"from a tool"}}}`
	st, b = send("POST", "/v1/mcp", call, map[string]string{"Accept": "application/json, text/event-stream"})
	require.Equal(t, 200, st, "%s", b)
	require.NotContains(t, string(b), `"isError":true`)

	// The ledger, by operation, in credits.
	ledger := map[string]float64{}
	rows, err := env.DB.Pool.Query(ctx, `SELECT op, sum(amount) FROM `+pgx.Identifier{p.Schema, "credit_ledger"}.Sanitize()+` GROUP BY op`)
	require.NoError(t, err)
	for rows.Next() {
		var op string
		var n int64
		require.NoError(t, rows.Scan(&op, &n))
		ledger[op] = float64(n) / 100
	}
	require.NoError(t, rows.Err())
	require.Contains(t, ledger, "content_update")
	require.Contains(t, ledger, "blog_post")

	var counted map[string]float64
	var jobs map[string]float64
	deadline := time.Now().Add(10 * time.Second)
	for {
		counted = metricValues(t, srv.Metrics.Registry, "plinth_credits_charged_total", "op")
		jobs = metricValues(t, srv.Metrics.Registry, "plinth_jobs_total", "kind")
		// River reports the job's outcome a moment after its row says so.
		if jobs["blog_post.generate"] == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, ledger, counted, "the credits counter against the ledger")
	require.Equal(t, float64(1), jobs["blog_post.generate"], "jobs by kind: %v", jobs)
	require.Zero(t, jobs["plinth.job"], "jobs by kind: %v", jobs)

	var tool map[string]any
	for _, l := range logs.lines(t, "request") {
		if l["tool"] != nil {
			require.Nil(t, tool, "two lines name a tool:\n%s", logs.String())
			tool = l
		}
	}
	require.NotNil(t, tool, "no access-log line names the tool:\n%s", logs.String())
	require.Equal(t, "set_content", tool["tool"])
	require.Equal(t, "PUT", tool["method"])
	require.Equal(t, "/v1/content/{key}", tool["route"])
	require.Equal(t, float64(200), tool["status"])
	require.Equal(t, p.ID, tool["project_id"])
	require.NotEmpty(t, tool["request_id"])
}

// TestMetricsDatabaseDown: while the PostgreSQL server of the central
// database is stopped, /metrics still answers 200 with the process's
// series and plinth_database_up 0 (the figures read from the database
// left out), promtool-clean; once it is back, plinth_database_up is 1.
func TestMetricsDatabaseDown(t *testing.T) {
	t.Parallel()
	pg := apitest.ShardServer(t, "logical") // a server of the test's own, to stop; it stops after the server below
	env := apitest.New(t)                   // for its configuration
	ctx := context.Background()
	cfg := env.Config
	cfg.DatabaseURL = shardURL(pg.Port)
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	require.NoError(t, err)
	tenant.ConfigurePool(pcfg)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	logger := slog.New(slog.DiscardHandler)
	require.NoError(t, central.MigrateAll(ctx, cfg, pool, logger))
	srv, err := central.NewServer(ctx, cfg, pool, logger, central.Options{})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler)
	ops := httptest.NewServer(srv.OpsHandler())
	t.Cleanup(func() {
		ops.Close()
		hs.Close()
		_ = srv.Stop(context.Background())
	})
	res, err := http.Get(hs.URL + "/v1/health")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	st, body := scrape(t, ops.URL, "")
	require.Equal(t, 200, st, body)
	require.Empty(t, missingLines(body, []string{"plinth_database_up 1", "plinth_projects 0"}), body)

	require.NoError(t, pg.Stop())
	st, body = scrape(t, ops.URL, "")
	require.Equal(t, 200, st, body)
	require.Empty(t, missingLines(body, []string{
		"plinth_database_up 0",
		`plinth_http_requests_total{method="GET",route="/v1/health",status="200"} 1`,
		`plinth_db_pool_max_conns{pool="central"}`,
		"go_goroutines ",
	}), body)
	require.NotContains(t, body, "plinth_projects ", "a figure read from the database while it is down")
	promtool(t, body)

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = pg.Start(startCtx)
	require.NoError(t, err)
	st, body = scrape(t, ops.URL, "")
	require.Equal(t, 200, st, body)
	require.Empty(t, missingLines(body, []string{"plinth_database_up 1", "plinth_projects 0"}), body)
}

// loggedServer is a server over env's database whose log lines (JSON)
// the test reads, served by hs; both stop when the test ends. Start it
// for its workers.
func loggedServer(t *testing.T, env *apitest.Env, opts central.Options) (srv *central.Server, hs *httptest.Server, logs *lockedBuffer) {
	t.Helper()
	logs = &lockedBuffer{}
	srv, err := central.NewServer(context.Background(), env.Config, env.DB.Pool, slog.New(slog.NewJSONHandler(logs, nil)), opts)
	require.NoError(t, err)
	hs = httptest.NewServer(srv.Handler)
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Stop(context.Background())
	})
	return srv, hs, logs
}

// metricValues reads the counter or gauge family name of reg, by the
// value of its label.
func metricValues(t *testing.T, reg *prometheus.Registry, name, label string) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var v string
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					v = l.GetValue()
				}
			}
			switch {
			case m.Counter != nil:
				out[v] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[v] += m.GetGauge().GetValue()
			}
		}
	}
	return out
}
