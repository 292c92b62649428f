// Command benchscale measures what many mostly idle projects cost one
// shard (`make bench-scale`, method and figures in docs/performance.md).
//
// It runs the real binary the way an operator does: `plinth serve` in a
// fresh directory (its private, durable cluster, the demo project), then,
// in one run: project creation latency at the start, at 1,000 and at N
// projects (over the dashboard API); CPU of the server and PostgreSQL over
// an idle minute; the resident memory of the PostgreSQL backends and the
// throughput of one authenticated single-record GET at 1 project and at N
// (same key, same record); `plinth migrate` with nothing to do and with
// one added column across every schema; and the time of `plinth project
// export` of one project.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/loadgen"
	"github.com/plinth-dev/plinth/internal/pgcluster"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
)

type options struct {
	n       int
	plinth  string
	dir     string
	keep    bool
	samples int
	pace    time.Duration
	spares  int
	fill    int
	conns   int
	load    time.Duration
	idle    time.Duration
	settle  time.Duration
	settled time.Duration
	rounds  int
	pgDump  bool
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 10000, "projects to provision")
	flag.StringVar(&o.plinth, "plinth", "bin/plinth", "the plinth binary to measure")
	flag.StringVar(&o.dir, "dir", "", "working directory of the server (default: a new temporary directory, removed at the end)")
	flag.BoolVar(&o.keep, "keep", false, "keep the working directory (and its cluster) at the end")
	flag.IntVar(&o.samples, "samples", 40, "timed project creations at each point")
	flag.DurationVar(&o.pace, "pace", 250*time.Millisecond, "time from the start of one timed creation to the next (a dashboard's pace; bursts are the fill's)")
	flag.IntVar(&o.spares, "spares", serverSpares(), "PLINTH_SPARE_SCHEMAS of the server; each timed series starts once that many are ready")
	flag.IntVar(&o.fill, "fill", 4, "concurrent project creations while filling")
	flag.IntVar(&o.conns, "conns", 32, "concurrent connections of the GET load")
	flag.DurationVar(&o.load, "load", 8*time.Second, "length of one GET load round")
	flag.IntVar(&o.rounds, "rounds", 2, "GET load rounds at each point (the best is reported)")
	flag.DurationVar(&o.idle, "idle", 60*time.Second, "length of the idle CPU sample right after the fill")
	flag.DurationVar(&o.settle, "settle", pgcluster.AutovacuumNaptime, "wait after the first idle sample and a checkpoint, for the autovacuum of the catalogs the fill grew to end (0: no settled sample)")
	flag.DurationVar(&o.settled, "settled-idle", pgcluster.AutovacuumNaptime, "length of the settled idle CPU sample (at least autovacuum_naptime, so it holds one autovacuum round)")
	flag.BoolVar(&o.pgDump, "pg-dump", false, "also time pg_dump -n of one project schema (minutes at 10,000 projects)")
	flag.Parse()
	log.SetFlags(log.Ltime)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

// bench is one run: the server process and what the steps share.
type bench struct {
	o       options
	dir     string
	base    string
	client  *http.Client
	serve   *exec.Cmd
	key     string // the demo project's key
	token   string // the dashboard session
	created atomic.Int64
	db      *pgx.Conn
	report  []row
}

type row struct{ what, figure, target string }

func (b *bench) add(what, figure, target string) {
	b.report = append(b.report, row{what, figure, target})
	log.Printf("%s: %s", what, figure)
}

func run(ctx context.Context, o options) (err error) {
	plinth, err := filepath.Abs(o.plinth)
	if err != nil {
		return err
	}
	o.plinth = plinth
	b := &bench{o: o, client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.conns + o.fill}}}
	if b.dir = o.dir; b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "plinth-bench-scale-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(b.dir)
		}
	} else if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return err
	}
	log.Printf("working directory %s", b.dir)
	if err := b.start(ctx); err != nil {
		return err
	}
	defer b.stop()
	if err := b.steps(ctx); err != nil {
		return err
	}
	b.print(os.Stdout)
	return nil
}

func (b *bench) steps(ctx context.Context) error {
	o := b.o
	if err := b.login(ctx); err != nil {
		return err
	}
	db, err := pgx.Connect(ctx, b.databaseURL())
	if err != nil {
		return err
	}
	b.db = db
	defer db.Close(context.Background())
	// The load measures the server, not the plan's rate limit: the demo
	// project gets an enterprise rate far above what the machine serves
	// (set before its key is first used, so no cache holds the old plan).
	if _, err := db.Exec(ctx, `UPDATE central.projects SET plan = 'enterprise', rate_rpm = 100000000
		WHERE id = (SELECT id FROM central.projects ORDER BY seq LIMIT 1)`); err != nil {
		return err
	}
	if err := b.seedRecord(ctx); err != nil {
		return err
	}

	// At 1 project: the GET, then the backends' memory after it.
	get1, err := b.getLoad(ctx)
	if err != nil {
		return err
	}
	rss1, err := b.backendMemory()
	if err != nil {
		return err
	}

	p0, err := b.createSamples(ctx)
	if err != nil {
		return err
	}
	if err := b.fillTo(ctx, min(1000, o.n)); err != nil {
		return err
	}
	p1000, err := b.createSamples(ctx)
	if err != nil {
		return err
	}
	if err := b.fillTo(ctx, o.n); err != nil {
		return err
	}
	pN, err := b.createSamples(ctx)
	if err != nil {
		return err
	}
	total, err := b.projects(ctx)
	if err != nil {
		return err
	}
	b.add("projects on the shard", strconv.Itoa(total), "")
	b.add("create project p50 / p95 at start", p0.String(), "")
	b.add("create project p50 / p95 at 1,000", p1000.String(), "")
	b.add(fmt.Sprintf("create project p50 / p95 at %d", total), pN.String(), "p95 ≤ 50 ms")

	// Idle: nothing scheduled, no traffic. A few seconds first for the
	// fill's connections to go quiet.
	select {
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	cpu, err := b.idleCPU(ctx, o.idle)
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("idle CPU over %s right after the fill, server + PostgreSQL", o.idle), cpu, "")
	// Creating thousands of schemas leaves PostgreSQL's catalogs
	// (pg_attribute, pg_class, pg_depend ...) due for vacuum and analyze:
	// a one-off cost of the fill, not of idle projects. The settled
	// sample is what the projects cost once it is done, and spans an
	// autovacuum round, whose scan of pg_class is the part that grows
	// with the number of relations.
	if o.settle > 0 {
		// The fill also wrote some relation files of every schema: the
		// next checkpoint fsyncs each (about a million files at 10,000
		// projects), which kept the checkpointer busy for tens of
		// minutes. Checkpoint now, as PostgreSQL would within
		// checkpoint_timeout anyway, and then let autovacuum finish.
		start := time.Now()
		if _, err := b.db.Exec(ctx, `CHECKPOINT`); err != nil {
			return err
		}
		log.Printf("checkpoint after the fill: %s", time.Since(start).Round(time.Second))
		log.Printf("settling for %s", o.settle)
		select {
		case <-time.After(o.settle):
		case <-ctx.Done():
			return ctx.Err()
		}
		cpu, err := b.idleCPU(ctx, o.settled)
		if err != nil {
			return err
		}
		b.add(fmt.Sprintf("idle CPU over %s after a checkpoint and %s settling, at %d projects, server + PostgreSQL", o.settled, o.settle, total), cpu, "< 2 % of one core")
	}

	getN, err := b.getLoad(ctx)
	if err != nil {
		return err
	}
	rssN, err := b.backendMemory()
	if err != nil {
		return err
	}
	b.add("GET /v1/content/{key} at 1 project", get1.String(), "")
	b.add(fmt.Sprintf("GET /v1/content/{key} at %d projects", total), fmt.Sprintf("%s (%.2fx)", getN, getN.rate/get1.rate), "≥ 0.9x")
	b.add("PostgreSQL backend memory at 1 project (RssAnon mean / max, VmRSS mean)", rss1.String(), "")
	b.add(fmt.Sprintf("PostgreSQL backend memory at %d projects", total), fmt.Sprintf("%s (%.2fx)", rssN, rssN.anonMean/rss1.anonMean), "≤ 2x")

	if err := b.migrate(ctx); err != nil {
		return err
	}
	return b.export(ctx)
}

// start runs `plinth serve` in the working directory on a free port and
// waits until it answers.
func (b *bench) start(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	b.base = "http://" + addr
	logf, err := os.Create(filepath.Join(b.dir, "serve.log"))
	if err != nil {
		return err
	}
	b.serve = exec.Command(b.o.plinth, "serve")
	b.serve.Dir = b.dir
	// One workspace makes every project as fast as it can: the per-user
	// and per-IP dashboard limits and the projects-per-workspace cap
	// would stop it (the benchmark measures the shard, not those limits).
	b.serve.Env = append(os.Environ(), "PLINTH_ADDR="+addr, "DATABASE_URL=",
		"PLINTH_DASHBOARD_RATE=1000000/100000", "PLINTH_DASHBOARD_IP_RATE=1000000/100000", "PLINTH_MAX_PROJECTS_PER_TENANT=0", "PLINTH_SPARE_SCHEMAS="+strconv.Itoa(b.o.spares))
	b.serve.Stdout, b.serve.Stderr = logf, logf
	if err := b.serve.Start(); err != nil {
		return err
	}
	log.Printf("plinth serve (pid %d) on %s, log in %s", b.serve.Process.Pid, addr, logf.Name())
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if res, err := b.client.Get(b.base + "/v1/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return b.readDemoKey()
			}
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("plinth serve did not answer in 3 minutes (see %s)", logf.Name())
}

func (b *bench) stop() {
	if b.serve == nil || b.serve.Process == nil {
		return
	}
	_ = b.serve.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- b.serve.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		_ = b.serve.Process.Kill()
	}
}

func (b *bench) readDemoKey() error {
	raw, err := os.ReadFile(filepath.Join(b.dir, ".plinth", "demo_key"))
	if err != nil {
		return fmt.Errorf("the demo key: %w", err)
	}
	b.key = strings.TrimSpace(string(raw))
	return nil
}

// postmaster returns the cluster's postmaster pid and port.
func (b *bench) postmaster() (pid, port int, err error) {
	raw, err := os.ReadFile(filepath.Join(b.dir, ".plinth", "pg", "data", "postmaster.pid"))
	if err != nil {
		return 0, 0, err
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) < 4 {
		return 0, 0, errors.New("postmaster.pid: too short")
	}
	pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	return pid, port, nil
}

func (b *bench) databaseURL() string {
	_, port, _ := b.postmaster()
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/plinth?sslmode=disable", port)
}

// call sends one JSON request and decodes a 2xx answer into out.
func (b *bench) call(ctx context.Context, method, path, bearer string, body, out any) error {
	return loadgen.Call(ctx, b.client, method, b.base+path, bearer, body, out)
}

// login signs in to the dashboard as the demo user `plinth serve` creates.
func (b *bench) login(ctx context.Context) error {
	var out struct {
		Token string `json:"token"`
	}
	if err := b.call(ctx, "POST", "/central/api/login", "", map[string]string{"email": "demo@plinth.dev", "password": "plinth-demo"}, &out); err != nil {
		return err
	}
	b.token = out.Token
	return nil
}

const recordKey = "home.hero.title"

func (b *bench) seedRecord(ctx context.Context) error {
	return b.call(ctx, "PUT", "/v1/content/"+recordKey, b.key, map[string]string{"value": "Fresh bread every morning"}, nil)
}

func (b *bench) create(ctx context.Context) (time.Duration, error) {
	n := b.created.Add(1)
	start := time.Now()
	err := b.call(ctx, "POST", "/central/api/projects", b.token, map[string]string{"name": fmt.Sprintf("Scale site %d", n), "plan": tenant.PlanFree}, nil)
	return time.Since(start), err
}

func (b *bench) projects(ctx context.Context) (int, error) {
	var n int
	err := b.db.QueryRow(ctx, `SELECT count(*) FROM central.placements WHERE migrated_at IS NOT NULL`).Scan(&n)
	return n, err
}

type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (l latencies) String() string {
	return fmt.Sprintf("%s / %s", ms(l.pct(0.5)), ms(l.pct(0.95)))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// createSamples times creations one at a time, one every pace, as
// dashboard users make them: the spare schemas are refilled between two.
// The fill measures bursts.
//
// A series starts once the server's spares are all ready again: right
// after a fill of thousands (a burst no dashboard makes) the pool is empty
// and refills at about 2 schemas a second at 10,000 projects
// (docs/operations.md, "Spare schemas"), which the series would measure
// instead of a creation. How long that took is logged.
func (b *bench) createSamples(ctx context.Context) (latencies, error) {
	if err := b.waitSpares(ctx); err != nil {
		return nil, err
	}
	out := make(latencies, 0, b.o.samples)
	for range b.o.samples {
		d, err := b.create(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		select {
		case <-time.After(b.o.pace - d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// serverSpares is the server's default PLINTH_SPARE_SCHEMAS: what
// config.Load gives with nothing set.
func serverSpares() int {
	c, err := config.Load(func(string) string { return "" })
	if err != nil {
		log.Fatal(err)
	}
	return c.SpareSchemas
}

// waitSpares waits until the server holds its spare schemas.
func (b *bench) waitSpares(ctx context.Context) error {
	start := time.Now()
	for {
		var n int
		if err := b.db.QueryRow(ctx, `SELECT count(*) FROM central.spare_schemas`).Scan(&n); err != nil {
			return err
		}
		if n >= b.o.spares {
			log.Printf("%d spare schemas ready after %s", n, time.Since(start).Round(time.Second))
			return nil
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("%d of %d spare schemas ready after 10 minutes", n, b.o.spares)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fillTo creates projects, fill at a time, until the shard holds n.
func (b *bench) fillTo(ctx context.Context, n int) error {
	have, err := b.projects(ctx)
	if err != nil {
		return err
	}
	todo := n - have
	if todo <= 0 {
		return nil
	}
	log.Printf("creating %d projects (%d at a time)", todo, b.o.fill)
	start := time.Now()
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.o.fill)
	last := time.Now()
	var mu sync.Mutex
	for range todo {
		g.Go(func() error {
			if _, err := b.create(gctx); err != nil {
				return err
			}
			d := done.Add(1)
			mu.Lock()
			defer mu.Unlock()
			if time.Since(last) > 15*time.Second {
				last = time.Now()
				rate := float64(d) / time.Since(start).Seconds()
				log.Printf("  %d/%d, %.0f/s, ETA %s", d, todo, rate, time.Duration(float64(int64(todo)-d)/rate*float64(time.Second)).Round(time.Second))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	took := time.Since(start)
	log.Printf("created %d projects in %s", todo, took.Round(time.Second))
	b.add(fmt.Sprintf("burst creation up to %d projects, %d at a time", n, b.o.fill),
		fmt.Sprintf("%.0f projects/s (%d in %s)", float64(todo)/took.Seconds(), todo, took.Round(time.Second)), "")
	return nil
}

// load is the outcome of one GET load.
type load struct {
	rate float64
	p99  time.Duration
}

func (l load) String() string { return fmt.Sprintf("%.0f req/s, p99 %s", l.rate, ms(l.p99)) }

// getLoad runs rounds of conns keep-alive clients each sending the same
// authenticated single-record GET for the load time, and returns the best
// round (the least disturbed by the rest of the machine).
func (b *bench) getLoad(ctx context.Context) (load, error) {
	var best load
	for range b.o.rounds {
		l, err := b.getRound(ctx)
		if err != nil {
			return load{}, err
		}
		if l.rate > best.rate {
			best = l
		}
	}
	return best, nil
}

func (b *bench) getRound(ctx context.Context) (load, error) {
	url := b.base + "/v1/content/" + recordKey
	r, err := loadgen.Run(ctx, b.client, b.o.conns, b.o.load, func(int64) *http.Request {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+b.key)
		return req
	})
	if err != nil {
		return load{}, fmt.Errorf("GET load: %w", err)
	}
	return load{rate: r.Rate, p99: r.P99}, nil
}

// processes is the server and every process of the cluster (the
// postmaster and its children).
func (b *bench) processes() ([]int, error) {
	pm, _, err := b.postmaster()
	if err != nil {
		return nil, err
	}
	pids := []int{b.serve.Process.Pid, pm}
	children, err := childrenOf(pm)
	return append(pids, children...), err
}

func childrenOf(parent int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := statusField(pid, "PPid:"); ok && ppid == parent {
			out = append(out, pid)
		}
	}
	return out, nil
}

// statusField reads one numeric field of /proc/pid/status (kB for the
// memory fields).
func statusField(pid int, field string) (int, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			v, err := strconv.Atoi(strings.Fields(rest)[0])
			return v, err == nil
		}
	}
	return 0, false
}

// cpuTicks is utime + stime of pid in clock ticks, plus cutime + cstime
// (its children that ended and were waited for) when children is set.
func cpuTicks(pid int, children bool) (int64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(raw), ") ")
	if !ok {
		return 0, false
	}
	f := strings.Fields(rest)
	if len(f) < 15 {
		return 0, false
	}
	n := 2
	if children {
		n = 4
	}
	var sum int64
	for _, v := range f[11 : 11+n] {
		t, _ := strconv.ParseInt(v, 10, 64)
		sum += t
	}
	return sum, true
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// idleCPU samples the CPU time of the server and the cluster over the
// idle period, as percent of one core, each side and together. Short-lived
// processes count in full: the postmaster's and the server's figures
// include their reaped children (an autovacuum worker, say, that starts
// and ends within the period), and a child alive at the start that ends
// during it is counted in its parent's figure less what it had used
// before.
func (b *bench) idleCPU(ctx context.Context, period time.Duration) (string, error) {
	before := map[int]int64{}
	pids, err := b.processes()
	if err != nil {
		return "", err
	}
	pm, _, err := b.postmaster()
	if err != nil {
		return "", err
	}
	parents := map[int]bool{b.serve.Process.Pid: true, pm: true}
	for _, p := range pids {
		before[p], _ = cpuTicks(p, parents[p])
	}
	log.Printf("idle for %s", period)
	select {
	case <-time.After(period):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	pids, err = b.processes()
	if err != nil {
		return "", err
	}
	var server, pg int64
	alive := map[int]bool{}
	for _, p := range pids {
		t, ok := cpuTicks(p, parents[p])
		if !ok {
			continue
		}
		alive[p] = true
		if p == b.serve.Process.Pid {
			server += t - before[p]
		} else {
			pg += t - before[p]
		}
	}
	// A child of the postmaster that ended is in its cutime, whole.
	for p, t := range before {
		if !alive[p] && !parents[p] {
			pg -= t
		}
	}
	pct := func(t int64) float64 { return float64(t) / clockTicks / period.Seconds() * 100 }
	return fmt.Sprintf("%.2f %% (server %.2f %%, PostgreSQL %.2f %%)", pct(server+pg), pct(server), pct(pg)), nil
}

// memory is the resident memory of the client backends.
type memory struct {
	backends          int
	anonMean, anonMax float64 // RssAnon, MB: the backend's private memory (its catalog caches among it)
	rssMean           float64 // VmRSS, MB, which also counts the shared buffers it touched
}

func (m memory) String() string {
	return fmt.Sprintf("%.1f / %.1f MB, VmRSS %.1f MB (%d backends)", m.anonMean, m.anonMax, m.rssMean, m.backends)
}

// backendMemory reads the memory of every client backend of the cluster
// (not the postmaster's own helpers: checkpointer, WAL writer...).
func (b *bench) backendMemory() (memory, error) {
	pm, _, err := b.postmaster()
	if err != nil {
		return memory{}, err
	}
	kids, err := childrenOf(pm)
	if err != nil {
		return memory{}, err
	}
	var m memory
	var anon, rss float64
	for _, p := range kids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		// A client backend names its user, database and peer:
		// "postgres: postgres plinth 127.0.0.1(40012) idle".
		if err != nil || !bytes.Contains(cmdline, []byte(" plinth ")) {
			continue
		}
		a, ok1 := statusField(p, "RssAnon:")
		r, ok2 := statusField(p, "VmRSS:")
		if !ok1 || !ok2 {
			continue
		}
		m.backends++
		anon += float64(a) / 1024
		rss += float64(r) / 1024
		m.anonMax = max(m.anonMax, float64(a)/1024)
	}
	if m.backends == 0 {
		return m, errors.New("no client backends found")
	}
	m.anonMean, m.rssMean = anon/float64(m.backends), rss/float64(m.backends)
	return m, nil
}

// benchMigration is the migration the second `plinth migrate` applies: one
// column added to a table of every project schema.
const benchMigration = `-- +goose Up
ALTER TABLE blog_posts ADD COLUMN bench_scale text;

-- +goose Down
ALTER TABLE blog_posts DROP COLUMN bench_scale;
`

// migrate runs `plinth migrate` twice in the server's directory (it
// reuses the running cluster): as built, with nothing to do, then built
// with one more tenant migration (added with go build -overlay, so the
// checkout is untouched).
func (b *bench) migrate(ctx context.Context) error {
	d, _, err := b.runMigrate(ctx, b.o.plinth)
	if err != nil {
		return err
	}
	b.add("plinth migrate, nothing to do", fmt.Sprintf("%.2f s", d.Seconds()), "≤ 1 s")

	root, err := moduleRoot()
	if err != nil {
		return err
	}
	src := filepath.Join(b.dir, "9999_bench_scale.sql")
	if err := os.WriteFile(src, []byte(benchMigration), 0o644); err != nil {
		return err
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "migrations", "tenant", "9999_bench_scale.sql"): src}})
	ovf := filepath.Join(b.dir, "overlay.json")
	if err := os.WriteFile(ovf, overlay, 0o644); err != nil {
		return err
	}
	bin := filepath.Join(b.dir, "plinth-with-migration")
	build := exec.CommandContext(ctx, "go", "build", "-overlay", ovf, "-o", bin, "./cmd/plinth")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -overlay: %w: %s", err, out)
	}
	d, lines, err := b.runMigrate(ctx, bin)
	if err != nil {
		return err
	}
	var with, total int
	if err := b.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_attribute WHERE attname = 'bench_scale' AND NOT attisdropped),
		(SELECT count(*) FROM central.placements)`).Scan(&with, &total); err != nil {
		return err
	}
	if with != total {
		return fmt.Errorf("the added migration reached %d of %d schemas", with, total)
	}
	progress := 0
	for _, l := range lines {
		if strings.Contains(l, "ETA") || strings.Contains(l, "eta") {
			progress++
		}
	}
	b.add(fmt.Sprintf("plinth migrate, one added column across %d schemas", total),
		fmt.Sprintf("%.1f s, %d progress lines", d.Seconds(), progress), "≤ 3 min, with progress")
	return nil
}

func (b *bench) runMigrate(ctx context.Context, bin string) (time.Duration, []string, error) {
	cmd := exec.CommandContext(ctx, bin, "migrate")
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, nil, fmt.Errorf("%s migrate: %w: %s", bin, err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, l := range lines {
		log.Printf("  migrate: %s", l)
	}
	return d, lines, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run benchscale from the plinth checkout")
	}
	return filepath.Dir(mod), nil
}

// export times `plinth project export` of the demo project, the real
// export path (its tables listed from the schema's namespace, COPY of
// each in one snapshot, its media, the archive written), run as an
// operator runs it in the server's directory; and, when asked, pg_dump -n
// of the same schema.
func (b *bench) export(ctx context.Context) error {
	var schema, project string
	if err := b.db.QueryRow(ctx, `SELECT pl.schema_name, p.id FROM central.placements pl JOIN central.projects p ON p.id = pl.project_id
		ORDER BY p.created_at LIMIT 1`).Scan(&schema, &project); err != nil {
		return err
	}
	file := filepath.Join(b.dir, "export.tar.gz")
	cmd := exec.CommandContext(ctx, b.o.plinth, "project", "export", "--project", project, "-o", file)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("plinth project export: %w: %s", err, errOut.String())
	}
	d := time.Since(start)
	var res struct {
		SizeBytes int64            `json:"size_bytes"`
		RowCounts map[string]int64 `json:"row_counts"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return fmt.Errorf("plinth project export printed %q: %w", out.String(), err)
	}
	var rows int64
	for _, n := range res.RowCounts {
		rows += n
	}
	b.add(fmt.Sprintf("plinth project export of one project (%d tables, %d rows, %d bytes; process start and cluster attach included)",
		len(res.RowCounts), rows, res.SizeBytes), ms(d), "")

	// The export itself, in this process, on a new pool: what the
	// project.export job of the admin API runs.
	pool, err := pgxpool.New(ctx, b.databaseURL())
	if err != nil {
		return err
	}
	defer pool.Close()
	c, err := central.Open(ctx, pool, "", time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	media, err := storage.NewFile(filepath.Join(b.dir, ".plinth", "media"))
	if err != nil {
		return err
	}
	c.UseArchives(nil, media, "") // exports only: no media URL is written
	start = time.Now()
	m, err := c.ExportProject(ctx, project, io.Discard)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	b.add(fmt.Sprintf("export of one project (%d tables, %d media), first call on a new pool", len(m.Tables), len(m.Media)),
		ms(time.Since(start)), "≤ 1 s + reading its rows")
	if b.o.pgDump {
		_, port, _ := b.postmaster()
		start := time.Now()
		cmd := exec.CommandContext(ctx, "pg_dump", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-n", schema, "-f", os.DevNull, "plinth")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pg_dump: %w: %s", err, out)
		}
		b.add("pg_dump -n of one project schema", time.Since(start).Round(time.Second).String(), "")
	}
	return nil
}

func (b *bench) print(w io.Writer) {
	fmt.Fprintf(w, "\n| measure | figure | target |\n|---|---|---|\n")
	for _, r := range b.report {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.what, r.figure, cmp.Or(r.target, ""))
	}
}
