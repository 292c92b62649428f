package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

func TestMain(m *testing.M) {
	runAsPlinthIfAsked() // a child process of a test (jobs_test.go)
	pgtest.Main(m)
}

// syncBuffer is an io.Writer safe for a running command and a test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// cli runs one command in-process and returns its stdout and stderr.
func cli(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, envOf(env), &out, &errb)
	return out.String(), errb.String(), err
}

// mustJSON runs a command that must print one JSON object.
func mustJSON(t *testing.T, env map[string]string, args ...string) map[string]any {
	t.Helper()
	out, errs, err := cli(t, env, args...)
	if err != nil {
		t.Fatalf("plinth %s: %v\n%s", strings.Join(args, " "), err, errs)
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&m); err != nil || dec.More() {
		t.Fatalf("plinth %s printed %q, want one JSON object", strings.Join(args, " "), out)
	}
	return m
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// get sends GET url with an optional bearer key.
func get(url, key string) (int, []byte, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// serving is a `plinth serve` running in-process.
type serving struct {
	out, errs syncBuffer
	base      string
	cancel    context.CancelFunc
	finished  chan struct{}
	err       error
}

// startServe runs `plinth serve args` in-process on PLINTH_ADDR of env and
// waits until /v1/health answers 200.
func startServe(t *testing.T, env map[string]string, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{base: "http://" + env["PLINTH_ADDR"], cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer close(s.finished)
		s.err = run(ctx, append([]string{"serve"}, args...), envOf(env), &s.out, &s.errs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.finished:
		case <-time.After(30 * time.Second):
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.finished:
			t.Fatalf("serve returned before serving: %v\n%s", s.err, s.errs.String())
		default:
		}
		if st, _, err := get(s.base+"/v1/health", ""); err == nil && st == 200 {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never became healthy:\n%s", s.base, s.errs.String())
	return nil
}

// stop cancels the context, as SIGINT does, and requires a clean return.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case <-s.finished:
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop within 60 s of cancel")
	}
	if s.err != nil {
		t.Fatalf("serve after cancel: %v\n%s", s.err, s.errs.String())
	}
	if _, _, err := get(s.base+"/v1/health", ""); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	env := map[string]string{"DATABASE_URL": db.URL, "PLINTH_SECRET": "cli-test-secret"}
	ctx := context.Background()

	tn := mustJSON(t, env, "tenant", "create", "--name", "Acme", "--domain", "Acme.Test", "--owner-email", "a@acme.test", "--owner-password", "long-password")
	owner, _ := tn["owner"].(map[string]any)
	if tn["id"] == nil || tn["name"] != "Acme" || tn["domain"] != "acme.test" || owner["email"] != "a@acme.test" || owner["id"] == nil || owner["created_at"] == nil {
		t.Fatalf("tenant create: %v", tn)
	}
	if strings.Contains(fmt.Sprint(tn), "password") {
		t.Fatalf("tenant create prints a password: %v", tn)
	}
	tid := fmt.Sprint(tn["id"])

	pr := mustJSON(t, env, "project", "create", "--tenant", tid, "--name", "Acme site", "--plan", "build", "--target-languages", "fr, de", "--timezone", "Europe/Paris", "--industry", "bakery")
	pid, _ := pr["id"].(string)
	if !strings.HasPrefix(pid, "prj_") || pr["slug"] != "acme-site" || pr["plan"] != "build" || pr["default_language"] != "en" ||
		fmt.Sprint(pr["target_languages"]) != "[fr de]" || pr["timezone"] != "Europe/Paris" || pr["industry"] != "bakery" {
		t.Fatalf("project create: %v", pr)
	}
	var schema string
	var version int64
	if err := db.Pool.QueryRow(ctx, `SELECT schema_name, schema_version FROM central.placements WHERE project_id = $1`, pid).Scan(&schema, &version); err != nil {
		t.Fatal(err)
	}
	latest, _ := provisioning.LatestTenantVersion()
	if version != latest || !tableExists(t, db, schema, "credit_pools") {
		t.Fatalf("project schema %s at version %d (want %d) or without its tables", schema, version, latest)
	}

	k := mustJSON(t, env, "key", "create", "--project", pid, "--name", "deploy", "--scopes", "project:read, content:*")
	secret, _ := k["secret"].(string)
	if !strings.HasPrefix(secret, "pln_live_") || len(secret) != 41 || k["name"] != "deploy" || fmt.Sprint(k["scopes"]) != "[project:read content:*]" || !strings.HasPrefix(fmt.Sprint(k["id"]), "key_") {
		t.Fatalf("key create: %v", k)
	}
	tk := mustJSON(t, env, "key", "create", "--project", pid, "--test")
	if !strings.HasPrefix(fmt.Sprint(tk["secret"]), "pln_test_") || fmt.Sprint(tk["scopes"]) != "[*]" || tk["name"] != "cli" {
		t.Fatalf("key create --test: %v", tk)
	}

	c := mustJSON(t, env, "credits", "topup", "--project", pid, "--amount", "500")
	if c["project_id"] != pid || c["added"] != float64(500) || c["balance"].(float64) < 500 {
		t.Fatalf("credits topup: %v", c)
	}
	var topup int64
	if err := db.Pool.QueryRow(ctx, `SELECT topup_balance FROM `+schema+`.credit_pools WHERE pool = 'live'`).Scan(&topup); err != nil || topup != 500*100 {
		t.Fatalf("topup balance %d (hundredths), err %v", topup, err)
	}

	// The printed secret authenticates against a server on this database,
	// which shuts down cleanly when its context ends.
	srv := startServe(t, map[string]string{"DATABASE_URL": db.URL, "PLINTH_SECRET": "cli-test-secret", "PLINTH_ADDR": freeAddr(t)}, "--no-migrate")
	st, body, err := get(srv.base+"/v1/projects/me", secret)
	if err != nil || st != 200 || !strings.Contains(string(body), pid) {
		t.Fatalf("the CLI key on GET /v1/projects/me: %d %s %v", st, body, err)
	}
	srv.stop(t)

	// Failures are errors, never a printed object.
	for _, args := range [][]string{
		{"tenant", "create", "--name", "X", "--domain", "x.test", "--owner-email", "not-an-email", "--owner-password", "long-password"},
		{"tenant", "create", "--name", "Dup", "--domain", "acme.test", "--owner-email", "d@acme.test", "--owner-password", "long-password"},
		{"project", "create", "--tenant", "999999", "--name", "Orphan"},
		{"project", "create", "--tenant", tid, "--name", "Bad", "--plan", "gold"},
		{"key", "create", "--project", "prj_nope"},
		{"key", "create", "--project", pid, "--scopes", "blog:delete"},
		{"credits", "topup", "--project", "prj_nope", "--amount", "5"},
		{"credits", "topup", "--project", pid, "--amount", "0"},
		{"project", "create", "--tenant", tid, "--colour", "red"},
	} {
		out, _, err := cli(t, env, args...)
		if err == nil || out != "" {
			t.Fatalf("plinth %s: err %v, printed %q", strings.Join(args, " "), err, out)
		}
	}
}

func tableExists(t *testing.T, db *pgtest.DB, schema, table string) bool {
	t.Helper()
	var ok bool
	if err := db.Pool.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, schema+"."+table).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// migratedRe reads the summary line of migrate in either log format.
var migratedRe = regexp.MustCompile(`msg"?[=:]"?migrated"?[ ,]"?project_schemas"?[=:](\d+)`)

func migrated(t *testing.T, env map[string]string) string {
	t.Helper()
	_, errs, err := cli(t, env, "migrate")
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, errs)
	}
	m := migratedRe.FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("migrate logged no count: %s", errs)
	}
	return m[1]
}

// TestMigrate: migrate is idempotent, and resumes an interrupted
// provisioning: placements left at version 0, with or without their
// schema, are migrated by the next run.
func TestMigrate(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	ctx := context.Background()
	tid := fmt.Sprint(mustJSON(t, env, "tenant", "create", "--name", "M", "--domain", "m.test", "--owner-email", "m@m.test", "--owner-password", "long-password")["id"])
	var pids []string
	for i := 0; i < 3; i++ {
		pids = append(pids, mustJSON(t, env, "project", "create", "--tenant", tid, "--name", "P")["id"].(string))
	}
	if n := migrated(t, env); n != "0" {
		t.Fatalf("first migrate touched %s schemas, want 0 (all current)", n)
	}

	// Interrupted: a project whose schema was never created, and one whose
	// version was never recorded.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO central.projects (id, seq, tenant_id, name, slug) VALUES ('prj_interrupted0000000000000', 900, $1, 'I', 'i')`, mustInt(tid)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO central.placements (project_id, schema_name) VALUES ('prj_interrupted0000000000000', 'project_900')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE central.placements SET schema_version = 0 WHERE project_id = $1`, pids[1]); err != nil {
		t.Fatal(err)
	}
	if n := migrated(t, env); n != "2" {
		t.Fatalf("resuming migrate touched %s schemas, want 2", n)
	}
	latest, _ := provisioning.LatestTenantVersion()
	var behind int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM central.placements WHERE schema_version <> $1`, latest).Scan(&behind); err != nil || behind != 0 {
		t.Fatalf("%d placements behind after migrate (%v)", behind, err)
	}
	if !tableExists(t, db, "project_900", "credit_ledger") {
		t.Fatal("the interrupted project's schema was not created")
	}
	if n := migrated(t, env); n != "0" {
		t.Fatalf("repeated migrate touched %s schemas, want 0", n)
	}

	// Out of order: a schema at the highest version that lacks a lower
	// migration, as when a file numbered below the latest lands in an
	// upgrade (here 0100, undone by hand and recorded as one fewer).
	var schema string
	if err := db.Pool.QueryRow(ctx, `UPDATE central.placements SET migrations_applied = migrations_applied - 1
		WHERE project_id = $1 RETURNING schema_name`, pids[2]).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `DROP TABLE `+schema+`.idempotency_keys; DROP INDEX `+schema+`.credit_ledger_recent;
		DELETE FROM `+schema+`.goose_db_version WHERE version_id = 100`); err != nil {
		t.Fatal(err)
	}
	if n := migrated(t, env); n != "1" {
		t.Fatalf("migrate with an out-of-order file touched %s schemas, want 1", n)
	}
	if !tableExists(t, db, schema, "idempotency_keys") {
		t.Fatal("the out-of-order migration 0100 was not applied")
	}
	if n := migrated(t, env); n != "0" {
		t.Fatalf("migrate after the out-of-order file touched %s schemas, want 0", n)
	}
}

func mustInt(s string) int64 {
	var n int64
	fmt.Sscan(s, &n)
	return n
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"tenant"}, `unknown command "tenant"`},
		{[]string{"tenant", "delete"}, `unknown command "tenant delete"`},
		{[]string{"key", "rotate", "--project", "prj_x"}, `unknown command "key rotate"`},
	} {
		out, errs, err := cli(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" || !strings.Contains(errs, "usage: plinth") {
			t.Fatalf("plinth %v: err %v, stdout %q, stderr %q", c.args, err, out, errs)
		}
	}
	out, _, err := cli(t, nil, "help")
	if err != nil || !strings.Contains(out, "usage: plinth") {
		t.Fatalf("help: %v %q", err, out)
	}
	if _, _, err := cli(t, map[string]string{"PLINTH_KEY_CACHE_TTL": "soon"}, "migrate"); err == nil || !strings.Contains(err.Error(), "PLINTH_KEY_CACHE_TTL") {
		t.Fatalf("bad config: %v", err)
	}
	// a plan name the plan table lacks: refused at start, before the
	// command reaches its database (central.CheckConfig)
	if _, _, err := cli(t, map[string]string{"PLINTH_DASHBOARD_PLANS": "free,gold", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, "migrate"); err == nil || !strings.Contains(err.Error(), `PLINTH_DASHBOARD_PLANS: unknown plan "gold"`) {
		t.Fatalf("unknown dashboard plan: %v", err)
	}
	if _, _, err := cli(t, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/x?connect_timeout=2"}, "serve", "--bogus"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bad flag: %v", err)
	}
	if _, _, err := cli(t, map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}, "migrate"); err == nil {
		t.Fatal("migrate against no database succeeded")
	}
}

// TestServePrivateCluster: with DATABASE_URL unset, serve starts a cluster
// under ./.plinth/pg, creates and prints a demo key with a curl line, and
// stops the cluster on shutdown; the next start reuses it.
func TestServePrivateCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	dir := pgtest.TempDir(t)
	t.Chdir(dir)
	addr := freeAddr(t)
	env := map[string]string{"PLINTH_ADDR": addr}
	pidFile := filepath.Join(dir, ".plinth", "pg", "data", "postmaster.pid")

	notRunning := func() {
		t.Helper()
		if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
			t.Fatalf("the private cluster still runs after shutdown (%v)", err)
		}
	}

	srv := startServe(t, env)
	out := srv.out.String()
	key := regexp.MustCompile(`pln_live_[0-9A-Za-z]{32}`).FindString(out)
	if key == "" || !strings.Contains(out, "curl -s http://"+addr+"/v1/projects/me -H 'Authorization: Bearer "+key+"'") {
		t.Fatalf("no demo key and curl line in:\n%s", out)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("no cluster under ./.plinth/pg: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".plinth", "demo_key")); err != nil || strings.TrimSpace(string(b)) != key {
		t.Fatalf(".plinth/demo_key holds %q (%v), want the printed key", b, err)
	}
	st, body, err := get(srv.base+"/v1/projects/me", key)
	if err != nil || st != 200 || !strings.Contains(string(body), `"plan":"build"`) {
		t.Fatalf("demo key: %d %s %v", st, body, err)
	}
	srv.stop(t)
	notRunning()

	srv = startServe(t, env)
	if out := srv.out.String(); !strings.Contains(out, "Reusing the private cluster") || !strings.Contains(out, ".plinth/demo_key") || strings.Contains(out, "pln_live_") {
		t.Fatalf("second start output:\n%s", out)
	}
	if st, _, err := get(srv.base+"/v1/projects/me", key); err != nil || st != 200 {
		t.Fatalf("the demo key after a restart: %d %v", st, err)
	}
	srv.stop(t)
	notRunning()
}

// TestTuneGC: a serving process collects at GOGC=400 unless the
// environment sets GOGC.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Fatalf("GOGC unset: GC percent %d, want %d", got, gcPercent)
	}
	tuneGC(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set: GC percent changed to %d", got)
	}
}

// TestServePrivateShards: serve --shards=2 runs two private clusters
// beside the private one (wal_level=logical, like it), adds them as
// shard1 and shard2, and is ready; a project created with the CLI lands
// on the shard with the most room; a second start reuses the clusters
// and the shards (no second row, the URLs still open), and stopping
// stops every cluster.
func TestServePrivateShards(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three PostgreSQL clusters")
	}
	dir := pgtest.TempDir(t)
	t.Chdir(dir)
	env := map[string]string{"PLINTH_ADDR": freeAddr(t)}
	pidFiles := []string{filepath.Join(dir, ".plinth", "pg", "data", "postmaster.pid")}
	for _, s := range []string{"pg-shard1", "pg-shard2"} {
		pidFiles = append(pidFiles, filepath.Join(dir, ".plinth", s, "data", "postmaster.pid"))
	}
	running := func(want bool) {
		t.Helper()
		for _, f := range pidFiles {
			if _, err := os.Stat(f); (err == nil) != want {
				t.Fatalf("%s: running %t, want %t (%v)", f, err == nil, want, err)
			}
		}
	}
	tenant := func() string {
		t.Helper()
		tn := mustJSON(t, env, "tenant", "create", "--name", "Shards", "--domain", fmt.Sprintf("shards%d.test", time.Now().UnixNano()), "--owner-email", fmt.Sprintf("o%d@shards.test", time.Now().UnixNano()), "--owner-password", "long-password")
		return fmt.Sprint(tn["id"])
	}
	shardOf := func(tid, name string) string {
		t.Helper()
		pr := mustJSON(t, env, "project", "create", "--tenant", tid, "--name", name)
		got := mustJSON(t, env, "project", "get", "--project", pr["id"].(string))
		return fmt.Sprint(got["shard"])
	}

	srv := startServe(t, env, "--shards=2")
	running(true)
	if st, body, err := get(srv.base+"/readyz", ""); err != nil || st != 200 {
		t.Fatalf("readyz: %d %s %v", st, body, err)
	}
	tid := tenant()
	// default holds the demo project; shard1 and shard2 none: the first
	// of the emptiest by name.
	if got := shardOf(tid, "First"); got != "shard1" {
		t.Fatalf("first project on %s, want shard1", got)
	}
	if n := strings.Count(srv.errs.String(), "added private shard"); n != 2 {
		t.Fatalf("first start added %d shards, want 2:\n%s", n, srv.errs.String())
	}

	srv.stop(t)
	running(false)

	srv = startServe(t, env, "--shards=2")
	running(true)
	if strings.Contains(srv.errs.String(), "added private shard") {
		t.Fatalf("the second start added shards again:\n%s", srv.errs.String())
	}
	second := mustJSON(t, env, "project", "create", "--tenant", tid, "--name", "Second")
	if got := mustJSON(t, env, "project", "get", "--project", second["id"].(string))["shard"]; got != "shard2" {
		t.Fatalf("second project on %v, want shard2 (shard1 holds one)", got)
	}
	// Supervision: a cluster whose postmaster is killed is started again,
	// and its projects are served again, without a restart of plinth;
	// meanwhile they answer 503, never 500, and the others are served.
	demo, err := os.ReadFile(filepath.Join(dir, ".plinth", "demo_key"))
	if err != nil {
		t.Fatal(err)
	}
	key := mustJSON(t, env, "key", "create", "--project", second["id"].(string))["secret"].(string)
	killAndRevive(t, srv.base, pidFiles[0], strings.TrimSpace(string(demo)), key, srv.errs.String) // central (and default)
	killAndRevive(t, srv.base, pidFiles[2], key, strings.TrimSpace(string(demo)), srv.errs.String) // shard2
	// pg_ctl returns a moment after the server answers: the second log
	// line may follow the requests it answered.
	waitFor(t, "two restarts logged", 10*time.Second, func() bool {
		return strings.Count(srv.errs.String(), "restarted a private PostgreSQL cluster") == 2
	})
	srv.stop(t)
	running(false)
}

// killAndRevive kills the postmaster of pidFile's cluster (SIGKILL, as a
// crash would: pgtest.Crash) under the running serve at base and requires
// that it comes back on its own within 60 s: /readyz answers 503 while it
// is down, then 200; requests with key (a project on it) answer only 200
// or 503 with Retry-After meanwhile (one a second: the demo plan allows
// 30 a minute), and 200 at the end; and other (a project elsewhere)
// answers 200 afterwards.
func killAndRevive(t *testing.T, base, pidFile, key, other string, logs func() string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	reap := pgtest.Crash(t, pid)
	var down, up bool
	var lastKey time.Time
	deadline := time.Now().Add(60 * time.Second)
	for !up {
		if time.Now().After(deadline) {
			t.Fatalf("not back 60 s after the postmaster of %s was killed (readyz 503 seen: %t); serve's log:\n%s", pidFile, down, logs())
		}
		st, body, err := get(base+"/readyz", "")
		switch {
		case err != nil:
			t.Fatal(err)
		case st == 503:
			down = true
		case st == 200 && down && time.Since(lastKey) > time.Second:
			up = statusOf(t, base, key) == 200
			lastKey = time.Now()
			continue
		case st != 200:
			t.Fatalf("readyz: %d %s", st, body)
		}
		if time.Since(lastKey) > time.Second {
			statusOf(t, base, key)
			lastKey = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	reap()
	if st := statusOf(t, base, other); st != 200 {
		t.Fatalf("the other project after the restart: %d", st)
	}
}

// statusOf is the status of GET /v1/projects/me with key: 200, or 503
// with Retry-After (anything else fails t).
func statusOf(t *testing.T, base, key string) int {
	t.Helper()
	res, err := http.DefaultClient.Do(authed(t, base+"/v1/projects/me", key))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	switch {
	case res.StatusCode == 503 && res.Header.Get("Retry-After") == "":
		t.Fatalf("503 without Retry-After: %s", body)
	case res.StatusCode != 200 && res.StatusCode != 503:
		t.Fatalf("while a cluster is down or coming back: %d %s", res.StatusCode, body)
	}
	return res.StatusCode
}

// authed is a GET of url with key.
func authed(t *testing.T, url, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return req
}

// TestServeShardsNeedPrivateCluster: with DATABASE_URL, serve --shards is
// an error naming plinth shard add, before anything is opened.
func TestServeShardsNeedPrivateCluster(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PLINTH_ADDR": freeAddr(t), "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "PLINTH_SECRET": "shards-secret"}
	_, _, err := cli(t, env, "serve", "--shards=1")
	if err == nil || !strings.Contains(err.Error(), "plinth shard add") {
		t.Fatalf("serve --shards with DATABASE_URL: %v", err)
	}
	env["PLINTH_SHARDS"] = "1"
	if _, _, err := cli(t, env, "serve"); err == nil || !strings.Contains(err.Error(), "plinth shard add") {
		t.Fatalf("serve with PLINTH_SHARDS and DATABASE_URL: %v", err)
	}
}

// shardLineRe is migrate's line of one shard (JSON logs).
var shardLineRe = regexp.MustCompile(`"msg":"migrated shard","shard":"([a-z0-9_]+)","project_schemas":(\d+)`)

// TestMigrateShards: plinth migrate migrates every shard, each on its own
// server (River there, then its projects' schemas), with a line per shard
// and a summary: projects on default and on a second cluster, all made
// behind, and on the second a schema that lacks a migration.
func TestMigrateShards(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	b := pgtest.NewOn(t, "b")
	const secret = "migrate-shards-secret"
	env := map[string]string{"DATABASE_URL": db.URL, "PLINTH_SECRET": secret, "PLINTH_LOG_FORMAT": "json"}
	ctx := context.Background()
	c, err := central.Open(ctx, db.Pool, secret, time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddShard(ctx, central.ShardParams{Name: "b", URL: b.URL}); err != nil {
		t.Fatal(err)
	}
	tn, _, err := c.CreateTenant(ctx, "Shards", "migrate-shards.test", "o@migrate-shards.test", "long-password")
	if err != nil {
		t.Fatal(err)
	}
	var onB string
	for _, shard := range []string{"default", "default", "b", "b"} {
		p, err := c.CreateProject(ctx, central.ProjectParams{TenantID: tn.ID, Name: "P", Shard: shard})
		if err != nil {
			t.Fatal(err)
		}
		if shard == "b" {
			onB = p.Schema
		}
	}
	c.Close()
	if _, err := db.Pool.Exec(ctx, `UPDATE central.placements SET schema_version = 0`); err != nil {
		t.Fatal(err)
	}
	// On b only: migration 0100 undone (a read of default would find it).
	if _, err := b.Pool.Exec(ctx, `DROP TABLE `+onB+`.idempotency_keys; DROP INDEX `+onB+`.credit_ledger_recent;
		DELETE FROM `+onB+`.goose_db_version WHERE version_id = 100`); err != nil {
		t.Fatal(err)
	}

	_, errs, err := cli(t, env, "migrate")
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, errs)
	}
	perShard := map[string]string{}
	for _, m := range shardLineRe.FindAllStringSubmatch(errs, -1) {
		perShard[m[1]] = m[2]
	}
	if fmt.Sprint(perShard) != "map[b:2 default:2]" {
		t.Fatalf("per-shard lines %v, want 2 schemas on each of default and b:\n%s", perShard, errs)
	}
	if !regexp.MustCompile(`"msg":"migrated","project_schemas":4,"shards":2`).MatchString(errs) {
		t.Fatalf("no summary of 4 schemas on 2 shards:\n%s", errs)
	}
	if !tableExists(t, b, onB, "idempotency_keys") {
		t.Fatal("the schema on b was not migrated on b")
	}
	latest, _ := provisioning.LatestTenantVersion()
	var behind int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM central.placements WHERE schema_version <> $1`, latest).Scan(&behind); err != nil || behind != 0 {
		t.Fatalf("%d placements behind after migrate (%v)", behind, err)
	}
	if n := migrated(t, env); n != "0" {
		t.Fatalf("a second migrate touched %s schemas, want 0", n)
	}
}
