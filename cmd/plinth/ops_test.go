package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

var (
	opsBinOnce sync.Once
	opsBin     string
	opsBinErr  error
)

// testVersion is what the operations tests link in as the version.
const testVersion = "v9.8.7-opstest"

// plinthBin builds the command once for the operations tests, with the
// version set at link time, and with the race detector when the tests
// have it (raceBuild): the packages are then the ones go test compiled,
// and only the link is left, where a plain build compiled the module and
// its dependencies a second time (minutes on an empty cache); and a race
// in a served process fails its test (exit status 66).
func plinthBin(t *testing.T) string {
	t.Helper()
	opsBinOnce.Do(func() {
		// One place per checkout, rebuilt by every run: a fresh temporary
		// directory would outlive the run (TestMain exits), 50 MB a time.
		cwd, err := os.Getwd()
		if err != nil {
			opsBinErr = err
			return
		}
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("plinth-opsbin-%x", sha256.Sum256([]byte(cwd)))[:len("plinth-opsbin-")+16])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			opsBinErr = err
			return
		}
		opsBin = filepath.Join(dir, "plinth")
		args := []string{"build", "-ldflags", "-X main.version=" + testVersion, "-o", opsBin}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			opsBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if opsBinErr != nil {
		t.Fatal(opsBinErr)
	}
	return opsBin
}

// binResult is one finished run of the binary.
type binResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runBin runs the binary in dir with env (plus PATH) and waits for it.
func runBin(t *testing.T, dir string, env map[string]string, args ...string) binResult {
	t.Helper()
	cmd := exec.Command(plinthBin(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := binResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// empty requires dir to hold nothing.
func empty(t *testing.T, dir, after string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("%s created %v in its directory", after, names)
	}
}

// TestHelp: every command's --help lists its flags with their meaning and
// exits 0 before touching anything (no .plinth, no cluster, no database
// connection, whatever DATABASE_URL says); plinth help lists the commands
// and the environment; plinth version prints the linked version.
func TestHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A database that is never reachable: --help must not try.
	env := map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?connect_timeout=1"}
	parser, err := kong.New(&commands{})
	if err != nil {
		t.Fatal(err)
	}
	leaves := parser.Model.Leaves(true)
	if len(leaves) < 11 {
		t.Fatalf("only %d commands declared", len(leaves))
	}
	for _, n := range leaves {
		args := append(strings.Fields(n.Path()), "--help")
		r := runBin(t, dir, env, args...)
		what := "plinth " + strings.Join(args, " ")
		out := oneLine(r.stdout) // help wraps long lines
		if n.Path() == "help" {  // plinth help --help is plinth help, whose content is checked below
			if r.code != 0 || !strings.Contains(out, "usage: plinth") {
				t.Fatalf("%s: exit %d\n%s%s", what, r.code, r.stdout, r.stderr)
			}
			empty(t, dir, what)
			continue
		}
		if r.code != 0 || !strings.Contains(out, "Usage: plinth "+n.Path()) || !strings.Contains(out, oneLine(n.Help)) {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
		}
		for _, f := range n.Flags {
			if f.Hidden {
				continue
			}
			if !strings.Contains(out, "--"+f.Name) || !strings.Contains(out, oneLine(f.Help)) {
				t.Fatalf("%s does not explain --%s:\n%s", what, f.Name, r.stdout)
			}
		}
		empty(t, dir, what)
	}

	r := runBin(t, dir, env, "help")
	if r.code != 0 || !strings.Contains(r.stdout, "usage: plinth") {
		t.Fatalf("plinth help: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"project create --tenant=INT-64 --name=STRING", "credits topup", "key create", "DATABASE_URL", "PLINTH_LOG_FORMAT", "PLINTH_METRICS_TOKEN", "(default 127.0.0.1:8080)"} {
		if !strings.Contains(oneLine(r.stdout), want) {
			t.Errorf("plinth help lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := runBin(t, dir, env, "help", "key", "create"); r.code != 0 || !strings.Contains(r.stdout, "--scopes") {
		t.Fatalf("plinth help key create: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBin(t, dir, env, "version"); r.code != 0 || strings.TrimSpace(r.stdout) != "plinth "+testVersion {
		t.Fatalf("plinth version: exit %d, %q", r.code, r.stdout)
	}
	if r := runBin(t, dir, env, "key", "rotate"); r.code != 1 || !strings.Contains(r.stderr, `unknown command "key rotate"`) {
		t.Fatalf("plinth key rotate: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBin(t, dir, env, "project", "create", "--name", "X"); r.code != 1 || !strings.Contains(r.stderr, "--tenant") || !strings.Contains(r.stderr, "plinth project create --help") {
		t.Fatalf("a missing flag must be named with where to read about it: exit %d\n%s", r.code, r.stderr)
	}
	empty(t, dir, "help, version and refused commands")
}

// oneLine collapses every run of white space to one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestPortTaken: serve on a taken address fails at once, naming it,
// before it creates anything (no .plinth, no cluster).
func TestPortTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, c := range []struct {
		name     string
		env      map[string]string
		variable string
	}{
		{"api", map[string]string{"PLINTH_ADDR": addr}, "PLINTH_ADDR"},
		{"metrics", map[string]string{"PLINTH_ADDR": freeAddr(t), "PLINTH_METRICS_ADDR": addr}, "PLINTH_METRICS_ADDR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			// What starting the binary costs on this machine now: "at once"
			// is within a second of it, however loaded the machine is.
			started := runBin(t, dir, nil, "version").took
			r := runBin(t, dir, c.env, "serve")
			if r.code == 0 || !strings.Contains(r.stderr, addr) || !strings.Contains(r.stderr, c.variable) {
				t.Fatalf("serve on a taken address: exit %d\n%s", r.code, r.stderr)
			}
			if r.took > started+time.Second {
				t.Fatalf("serve took %s to fail, want under 1 s more than plinth version (%s)", r.took, started)
			}
			empty(t, dir, "serve on a taken address")
		})
	}
}

// bgServe is a `plinth serve` process running in the background.
type bgServe struct {
	*process
	base string
	logs *syncBuffer
}

// process is a started command: exited is closed once it has ended
// (waitErr is then its exit), so any number of waits see the exit,
// a cleanup after a test's own wait among them.
type process struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// startProcess starts cmd and reaps it in the background.
func startProcess(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p
}

// signalWait sends sig unless the process has ended, and waits up to
// timeout for its exit; it reports whether the process ended.
func (p *process) signalWait(sig os.Signal, timeout time.Duration) bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

func startBin(t *testing.T, dir string, env map[string]string, args ...string) *bgServe {
	t.Helper()
	cmd := exec.Command(plinthBin(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &bgServe{base: "http://" + env["PLINTH_ADDR"], logs: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	s.process = startProcess(t, cmd)
	t.Cleanup(func() {
		if !s.signalWait(syscall.SIGTERM, 30*time.Second) {
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	return s
}

// ready waits until the process answers /readyz with 200.
func (s *bgServe) ready(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			t.Fatalf("plinth exited before it was ready: %v\n%s", s.waitErr, s.logs.String())
		default:
		}
		if st, _, err := get(s.base+"/readyz", ""); err == nil && st == 200 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never became ready:\n%s", s.base, s.logs.String())
}

// stop sends SIGTERM and requires a clean exit within 60 s.
func (s *bgServe) stop(t *testing.T) {
	t.Helper()
	s.stopWithin(t, 60*time.Second)
}

// stopWithin sends SIGTERM and requires a clean exit within limit.
func (s *bgServe) stopWithin(t *testing.T, limit time.Duration) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", s.waitErr, s.logs.String())
		}
	case <-time.After(limit):
		t.Fatalf("no exit within %v of SIGTERM:\n%s", limit, s.logs.String())
	}
}

// errorLines returns the JSON log lines at level ERROR.
func errorLines(t *testing.T, logs string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["level"] == "ERROR" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// TestSecondServeSharesCluster: two serve processes in one directory use
// one private cluster; stopping the first leaves the second's database
// running, and the last one out stops the cluster.
func TestSecondServeSharesCluster(t *testing.T) {
	t.Parallel()
	dir := pgtest.TempDir(t)
	pidFile := filepath.Join(dir, ".plinth", "pg", "data", "postmaster.pid")
	first := startBin(t, dir, map[string]string{"PLINTH_ADDR": freeAddr(t), "PLINTH_LOG_FORMAT": "json"}, "serve")
	first.ready(t, 120*time.Second)
	second := startBin(t, dir, map[string]string{"PLINTH_ADDR": freeAddr(t), "PLINTH_LOG_FORMAT": "json"}, "serve")
	second.ready(t, 60*time.Second)
	key, err := os.ReadFile(filepath.Join(dir, ".plinth", "demo_key"))
	if err != nil {
		t.Fatal(err)
	}

	first.stop(t)
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("stopping the first serve stopped the cluster the second uses: %v\n%s", err, first.logs.String())
	}
	for range 20 { // a while, not one lucky request
		if st, body, err := get(second.base+"/v1/projects/me", strings.TrimSpace(string(key))); err != nil || st != 200 {
			t.Fatalf("the second serve after the first stopped: %d %s %v\n%s", st, body, err, second.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, body, _ := get(second.base+"/readyz", ""); st != 200 {
		t.Fatalf("readyz of the second serve: %d %s", st, body)
	}
	second.stop(t)
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("the last serve left the cluster running (%v)", err)
	}
	for _, s := range []*bgServe{first, second} {
		if e := errorLines(t, s.logs.String()); len(e) > 0 {
			t.Fatalf("errors logged:\n%s", strings.Join(e, "\n"))
		}
	}
}

// TestStopWithManyProjects: SIGTERM to a serve with 1,000 projects ends
// it cleanly with no ERROR line, both once it serves and while it is
// still migrating them.
func TestStopWithManyProjects(t *testing.T) {
	if testing.Short() {
		t.Skip("provisions 1,000 projects")
	}
	t.Parallel()
	const projects = 1000
	db := pgtest.New(t)
	ctx := context.Background()
	c, err := central.Open(ctx, db.Pool, "stop-test-secret", time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tn, _, err := c.CreateTenant(ctx, "Many", "many.test", "owner@many.test", "many-password")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": db.URL, "PLINTH_SECRET": "stop-test-secret", "PLINTH_LOG_FORMAT": "json",
		"PLINTH_SPARE_SCHEMAS": "0", "PLINTH_STORAGE": "file://" + t.TempDir()}
	// A serve ran before the projects came, as on a platform that has
	// been up (its one-off backfills are behind it).
	env["PLINTH_ADDR"] = freeAddr(t)
	s := startBin(t, t.TempDir(), env, "serve")
	s.ready(t, 120*time.Second)
	s.stop(t)

	// One project with a whole schema; the others, created the same way,
	// each take a spare schema the test made ahead, holding only goose's
	// table at the first one's level. What a serve does with a project at
	// start and stop is the migration check, which reads that table alone;
	// the 32 tables of a whole schema cost about 200 ms of PostgreSQL's CPU
	// each (200 s for 1,000, most of this test's time before).
	first, err := c.CreateProject(ctx, central.ProjectParams{TenantID: tn.ID, Name: "P0"})
	if err != nil {
		t.Fatal(err)
	}
	latest, count, err := provisioning.TenantVersion()
	if err != nil {
		t.Fatal(err)
	}
	goose := pgx.Identifier{first.Schema, "goose_db_version"}.Sanitize()
	var spares strings.Builder
	for i := 1; i < projects; i++ {
		schema := pgx.Identifier{fmt.Sprintf("project_%d", 900000+i)}.Sanitize()
		fmt.Fprintf(&spares, "CREATE SCHEMA %s; CREATE TABLE %s.goose_db_version (LIKE %s INCLUDING ALL); INSERT INTO %[2]s.goose_db_version SELECT * FROM %[3]s;\n",
			schema, schema, goose)
	}
	fmt.Fprintf(&spares, "INSERT INTO central.spare_schemas (schema_name, shard, schema_version, migrations_applied) SELECT 'project_' || (900000 + i), 'default', %d, %d FROM generate_series(1, %d) i;",
		latest, count, projects-1)
	if _, err := db.Pool.Exec(ctx, spares.String()); err != nil {
		t.Fatal(err)
	}
	var g errgroup.Group
	g.SetLimit(2)
	for i := 1; i < projects; i++ {
		g.Go(func() error {
			p, err := c.CreateProject(ctx, central.ProjectParams{TenantID: tn.ID, Name: fmt.Sprintf("P%d", i)})
			if err == nil && !strings.HasPrefix(p.Schema, "project_9") {
				err = fmt.Errorf("project %s took no spare: %s", p.ID, p.Schema)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	env["PLINTH_ADDR"] = freeAddr(t)
	s = startBin(t, t.TempDir(), env, "serve")
	s.ready(t, 120*time.Second)
	s.stop(t)
	if e := errorLines(t, s.logs.String()); len(e) > 0 {
		t.Fatalf("SIGTERM while serving %d projects logged errors:\n%s", projects, strings.Join(e, "\n"))
	}

	// Every schema behind: the next start migrates them all, and is
	// stopped in the middle of it.
	if _, err := db.Pool.Exec(ctx, `UPDATE central.placements SET schema_version = 0`); err != nil {
		t.Fatal(err)
	}
	// The migration of one schema waits on a lock this test holds, so the
	// stop comes in the middle of it however fast the others go.
	var schema string
	if err := db.Pool.QueryRow(ctx, `SELECT schema_name FROM central.placements ORDER BY project_id DESC LIMIT 1`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	hold, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `LOCK TABLE `+pgx.Identifier{schema, "goose_db_version"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	env["PLINTH_ADDR"] = freeAddr(t)
	s = startBin(t, t.TempDir(), env, "serve")
	waitFor(t, "the migration waiting on the held schema", 60*time.Second, func() bool {
		var waiting bool
		err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%goose_db_version%')`).Scan(&waiting)
		return err == nil && waiting
	})
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit within 60 s of SIGTERM during migration:\n%s", s.logs.String())
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "migrate stopped") {
		t.Fatalf("the stop did not come during the migration:\n%s", logs)
	}
	if e := errorLines(t, logs); len(e) > 0 {
		t.Fatalf("SIGTERM while migrating %d projects logged errors:\n%s", projects, strings.Join(e, "\n"))
	}
}
