// Command benchhttp measures Plinth's request path against a bare
// net/http + pgx handler running the same SQL on the same PostgreSQL with
// the same pool settings, against an older Plinth binary (-baseline, the
// "before" figures of the same run) and against PocketBase, the peer a
// user would pick instead (`make bench-http`, method and figures in
// docs/performance.md).
//
// It starts `plinth serve` in a fresh directory (its private cluster, the
// demo project), seeds the records, starts the others on loopback, then
// drives every route of every server in alternating rounds, the order of
// the servers reversed every other round, and prints a markdown table of
// req/s, p50 and p99 with the ratios against their targets.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/internal/loadgen"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/content"
)

type options struct {
	plinth     string
	baseline   string
	pocketbase string
	dir        string
	keep       bool
	rounds     int
	duration   time.Duration
	conns      int
	profile    string
}

func main() {
	var o options
	var bare, bareDB, bareSchema string
	flag.StringVar(&o.plinth, "plinth", "bin/plinth", "the plinth binary to measure")
	flag.StringVar(&o.baseline, "baseline", "", "an older plinth binary to measure beside it (the figures before a change)")
	flag.StringVar(&o.pocketbase, "pocketbase", "v0.36.8", "the PocketBase version to build from the Go module proxy (\"\" to leave it out)")
	flag.StringVar(&o.dir, "dir", "", "working directory (default: a new temporary directory, removed at the end)")
	flag.BoolVar(&o.keep, "keep", false, "keep the working directory (and its cluster) at the end")
	flag.IntVar(&o.rounds, "rounds", 3, "alternating rounds")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "length of one server's load on one route in one round")
	flag.IntVar(&o.conns, "conns", 32, "concurrent connections of the load")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of Plinth under each route's load in the last round to this directory (route.pprof; read with go tool pprof)")
	flag.StringVar(&bare, "serve-bare", "", "internal: serve the bare handler on this address")
	flag.StringVar(&bareDB, "db", "", "internal: the bare handler's database URL")
	flag.StringVar(&bareSchema, "schema", "", "internal: the bare handler's project schema")
	flag.Parse()
	log.SetFlags(log.Ltime)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if bare != "" {
		err = serveBare(ctx, bare, bareDB, bareSchema)
	} else {
		err = run(ctx, o)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// bench is one run: the servers and what the routes need.
type bench struct {
	o       options
	dir     string
	client  *http.Client
	procs   []*exec.Cmd
	key     string // the demo project's key
	project string // its id
	schema  string
	dbURL   string
	targets []*target
	pbID    string // the PocketBase record
	pgPid   int    // the cluster's postmaster, root of its backends
	ops     string // Plinth's operators' listener, with -profile
}

// target is one server under load.
type target struct {
	name string
	base string
	pid  int // the root of its processes, whose CPU time is its own
}

// Server names.
const (
	nPlinth   = "plinth"
	nBaseline = "plinth before"
	nBare     = "bare net/http + pgx"
	nPB       = "PocketBase"
)

func run(ctx context.Context, o options) (err error) {
	if o.plinth, err = filepath.Abs(o.plinth); err != nil {
		return err
	}
	if o.baseline != "" {
		if o.baseline, err = filepath.Abs(o.baseline); err != nil {
			return err
		}
	}
	b := &bench{o: o, client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.conns, MaxIdleConns: 4 * o.conns}}}
	if b.dir = o.dir; b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "plinth-bench-http-"); err != nil {
			return err
		}
		if !o.keep {
			defer func() {
				// As root, plinth serve keeps its cluster under the
				// postgres user's home, linked from .plinth/pg.
				if real, err := os.Readlink(filepath.Join(b.dir, ".plinth", "pg")); err == nil {
					_ = os.RemoveAll(real)
				}
				_ = os.RemoveAll(b.dir)
			}()
		}
	}
	log.Printf("working directory %s", b.dir)
	defer b.stop()
	if err := b.start(ctx); err != nil {
		return err
	}
	if err := b.measure(ctx); err != nil {
		return err
	}
	return nil
}

// free returns a free loopback address.
func free() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// fileName is s with every character but ASCII letters and digits
// replaced by '-'.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

// spawn starts a server process with its output in dir/name.log and
// waits until GET health answers 200.
func (b *bench) spawn(ctx context.Context, name, dir, health string, cmd *exec.Cmd) error {
	file := fileName(name)
	logf, err := os.Create(filepath.Join(b.dir, file+".log"))
	if err != nil {
		return err
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	b.procs = append(b.procs, cmd)
	log.Printf("%s (pid %d), log in %s", name, cmd.Process.Pid, logf.Name())
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if res, err := b.client.Get(health); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("%s did not answer in 5 minutes (see %s)", name, logf.Name())
}

func (b *bench) stop() {
	for _, p := range slices.Backward(b.procs) {
		if p.Process == nil {
			continue
		}
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			_ = p.Process.Kill()
		}
	}
}

// publicRate lifts the public surface's per-address limit, which the load,
// all from one address, would otherwise meet at once.
const publicRate = "PLINTH_PUBLIC_RATE=100000000/100000000"

// start starts Plinth on its private cluster, seeds the records, then the
// baseline, the bare handler and PocketBase.
func (b *bench) start(ctx context.Context) error {
	addr, err := free()
	if err != nil {
		return err
	}
	serve := exec.Command(b.o.plinth, "serve")
	serve.Env = append(os.Environ(), "PLINTH_ADDR="+addr, "DATABASE_URL=", publicRate)
	if b.o.profile != "" {
		ops, err := free()
		if err != nil {
			return err
		}
		b.ops = "http://" + ops
		serve.Env = append(serve.Env, "PLINTH_METRICS_ADDR="+ops)
	}
	if err := b.spawn(ctx, nPlinth, b.dir, "http://"+addr+"/v1/health", serve); err != nil {
		return err
	}
	b.targets = append(b.targets, &target{nPlinth, "http://" + addr, serve.Process.Pid})
	raw, err := os.ReadFile(filepath.Join(b.dir, ".plinth", "demo_key"))
	if err != nil {
		return fmt.Errorf("the demo key: %w", err)
	}
	b.key = strings.TrimSpace(string(raw))
	if b.dbURL, err = b.databaseURL(); err != nil {
		return err
	}
	if err := b.seed(ctx); err != nil {
		return err
	}

	if b.o.baseline != "" {
		addr, err := free()
		if err != nil {
			return err
		}
		dir := filepath.Join(b.dir, "baseline")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cmd := exec.Command(b.o.baseline, "serve")
		// The server secret is stored in the database they share.
		cmd.Env = append(os.Environ(), "PLINTH_ADDR="+addr, "DATABASE_URL="+b.dbURL, publicRate)
		if err := b.spawn(ctx, nBaseline, dir, "http://"+addr+"/v1/health", cmd); err != nil {
			return err
		}
		b.targets = append(b.targets, &target{nBaseline, "http://" + addr, cmd.Process.Pid})
	}

	if addr, err = free(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-serve-bare", addr, "-db", b.dbURL, "-schema", b.schema)
	if err := b.spawn(ctx, nBare, b.dir, "http://"+addr+"/health", cmd); err != nil {
		return err
	}
	b.targets = append(b.targets, &target{nBare, "http://" + addr, cmd.Process.Pid})

	if b.o.pocketbase != "" {
		if err := b.startPocketBase(ctx); err != nil {
			log.Printf("PocketBase %s left out: %v", b.o.pocketbase, err)
		}
	}
	return nil
}

func (b *bench) databaseURL() (string, error) {
	raw, err := os.ReadFile(filepath.Join(b.dir, ".plinth", "pg", "data", "postmaster.pid"))
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) < 4 {
		return "", errors.New("postmaster.pid: too short")
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil {
		return "", err
	}
	if b.pgPid, err = strconv.Atoi(strings.TrimSpace(lines[0])); err != nil {
		return "", err
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/plinth?sslmode=disable", port), nil
}

// call sends one JSON request and decodes a 2xx answer into out.
func (b *bench) call(ctx context.Context, method, url, bearer string, body, out any) error {
	return loadgen.Call(ctx, b.client, method, url, bearer, body, out)
}

// The records every server reads.
const (
	recordKey = "home.hero.title"
	putKey    = "home.hero.subtitle"
	bulkKeys  = 50
)

// seed lifts the demo project's rate limit and credits far above what
// the machine serves (before its key is first used, so no cache holds the
// old plan), and writes the record, the 50 keys of the bulk read and a
// blog post with two translations.
func (b *bench) seed(ctx context.Context) error {
	db, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if err := db.QueryRow(ctx, `UPDATE central.projects SET plan = 'enterprise', rate_rpm = 100000000, rate_burst = 100000000, plan_credits = 1000000000000
		WHERE id = (SELECT id FROM central.projects ORDER BY seq LIMIT 1) RETURNING id`).Scan(&b.project); err != nil {
		return err
	}
	if err := db.QueryRow(ctx, `SELECT schema_name FROM central.placements WHERE project_id = $1`, b.project).Scan(&b.schema); err != nil {
		return err
	}
	base := b.targets[0].base
	if err := b.call(ctx, "PUT", base+"/v1/content/"+recordKey, b.key, map[string]string{"value": "Fresh bread every morning"}, nil); err != nil {
		return err
	}
	updates := make([]map[string]string, bulkKeys)
	for i := range updates {
		updates[i] = map[string]string{"key": fmt.Sprintf("page.block%02d", i), "value": fmt.Sprintf("Block %d of the page", i)}
	}
	if err := b.call(ctx, "PUT", base+"/v1/content", b.key, map[string]any{"updates": updates}, nil); err != nil {
		return err
	}
	var post struct {
		ID int64 `json:"id"`
	}
	if err := b.call(ctx, "POST", base+"/v1/blog-posts", b.key, map[string]any{"title": "Our sourdough", "slug": "our-sourdough",
		"content": "<p>Flour, water, salt and time.</p>", "language_code": "en"}, &post); err != nil {
		return err
	}
	for _, t := range []struct{ lang, title string }{{"fr", "Notre levain"}, {"de", "Unser Sauerteig"}} {
		if err := b.call(ctx, "PUT", fmt.Sprintf("%s/v1/blog-posts/%d/translations/%s", base, post.ID, t.lang), b.key,
			map[string]any{"title": t.title, "content": "<p>" + t.title + "</p>"}, nil); err != nil {
			return err
		}
	}
	return nil
}

// startPocketBase builds PocketBase's example server from the Go module
// proxy, creates a superuser, a collection "content" whose records anyone
// may view, and the record.
func (b *bench) startPocketBase(ctx context.Context) error {
	dir := filepath.Join(b.dir, "pocketbase")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log.Printf("building PocketBase %s", b.o.pocketbase)
	install := exec.CommandContext(ctx, "go", "install", "github.com/pocketbase/pocketbase/examples/base@"+b.o.pocketbase)
	install.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("go install: %v: %s", err, out)
	}
	bin := filepath.Join(dir, "base")
	const email, password = "bench@example.com", "bench-password-1"
	if out, err := exec.CommandContext(ctx, bin, "superuser", "upsert", email, password, "--dir", filepath.Join(dir, "pb_data")).CombinedOutput(); err != nil {
		return fmt.Errorf("superuser: %v: %s", err, out)
	}
	addr, err := free()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--http", addr, "--dir", filepath.Join(dir, "pb_data"))
	if err := b.spawn(ctx, nPB, dir, "http://"+addr+"/api/health", cmd); err != nil {
		return err
	}
	base := "http://" + addr
	var auth struct {
		Token string `json:"token"`
	}
	if err := b.call(ctx, "POST", base+"/api/collections/_superusers/auth-with-password", "",
		map[string]string{"identity": email, "password": password}, &auth); err != nil {
		return err
	}
	if err := b.call(ctx, "POST", base+"/api/collections", auth.Token, map[string]any{
		"name": "content", "type": "base", "viewRule": "", "listRule": "",
		"fields": []map[string]any{{"name": "key", "type": "text"}, {"name": "value", "type": "text"}, {"name": "lang", "type": "text"}},
	}, nil); err != nil {
		return err
	}
	var rec struct {
		ID string `json:"id"`
	}
	if err := b.call(ctx, "POST", base+"/api/collections/content/records", auth.Token,
		map[string]string{"key": recordKey, "value": "Fresh bread every morning", "lang": "en"}, &rec); err != nil {
		return err
	}
	b.pbID = rec.ID
	b.targets = append(b.targets, &target{nPB, base, cmd.Process.Pid})
	return nil
}

// route is one measured request shape and the servers it runs on.
type route struct {
	name string
	// req builds the i-th request to t; nil when t does not serve it.
	req func(t *target, i int64) *http.Request
	// targets: the ratio of Plinth's req/s to the bare handler's and to
	// PocketBase's at least, Plinth's p99 to the bare handler's at most
	// (0: no target).
	minBare, maxP99, minPB float64
}

func (b *bench) routes() []route {
	keys := make([]string, bulkKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("page.block%02d", i)
	}
	get := func(url string, h ...string) *http.Request {
		r, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(h); i += 2 {
			r.Header.Set(h[i], h[i+1])
		}
		return r
	}
	auth := "Bearer " + b.key
	return []route{
		{name: "GET /v1/content/{key} (authenticated)", minBare: 0.75, maxP99: 1.5, minPB: 1.5,
			req: func(t *target, _ int64) *http.Request {
				if t.name == nPB {
					return get(t.base + "/api/collections/content/records/" + b.pbID)
				}
				return get(t.base+"/v1/content/"+recordKey, "Authorization", auth)
			}},
		{name: "GET /v1/public/content/bulk (50 keys)", minBare: 0.75,
			req: func(t *target, _ int64) *http.Request {
				if t.name == nPB {
					return nil
				}
				return get(t.base+"/v1/public/content/bulk?keys="+strings.Join(keys, ","), "X-Service-Project-Key", b.project)
			}},
		{name: "GET /v1/blog-posts/{slug} (two translations)", minBare: 0.75,
			req: func(t *target, _ int64) *http.Request {
				if t.name == nPB {
					return nil
				}
				return get(t.base+"/v1/blog-posts/our-sourdough", "Authorization", auth)
			}},
		{name: "PUT /v1/content/{key} (1 credit)", minBare: 0.5,
			req: func(t *target, i int64) *http.Request {
				if t.name == nPB {
					return nil
				}
				body := `{"value":"Baked at dawn, batch ` + strconv.FormatInt(i, 10) + `"}`
				r, _ := http.NewRequest("PUT", t.base+"/v1/content/"+putKey, strings.NewReader(body))
				r.Header.Set("Authorization", auth)
				r.Header.Set("Content-Type", "application/json")
				return r
			}},
	}
}

// load is the outcome of one server's load on one route in one round:
// with the CPU time per answered request of the server's processes and
// of PostgreSQL's (every process of the cluster), which the load
// generator's own CPU and a neighbour's load on the machine do not
// change, where req/s moves with both.
type load struct {
	rate       float64
	p50, p99   time.Duration
	server, pg time.Duration
}

// measure runs the rounds and prints the table.
func (b *bench) measure(ctx context.Context) error {
	routes := b.routes()
	res := map[string]map[string][]load{}
	for _, rt := range routes {
		res[rt.name] = map[string][]load{}
	}
	for round := range b.o.rounds {
		order := slices.Clone(b.targets)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, rt := range routes {
			for _, t := range order {
				if rt.req(t, 0) == nil {
					continue
				}
				var profiled chan error
				if b.ops != "" && t.name == nPlinth && round == b.o.rounds-1 {
					profiled = make(chan error, 1)
					go func() { profiled <- b.cpuProfile(ctx, rt.name) }()
				}
				l, err := b.drive(ctx, t, rt)
				if profiled != nil {
					err = errors.Join(err, <-profiled)
				}
				if err != nil {
					return fmt.Errorf("%s on %s: %w", rt.name, t.name, err)
				}
				log.Printf("round %d, %s, %s: %.0f req/s, p50 %s, p99 %s, CPU %.0f + %.0f µs/req", round+1, rt.name, t.name, l.rate, ms(l.p50), ms(l.p99),
					float64(l.server)/1e3, float64(l.pg)/1e3)
				res[rt.name][t.name] = append(res[rt.name][t.name], l)
			}
		}
	}
	b.print(os.Stdout, routes, res)
	return nil
}

// cpuProfile writes the CPU profile of Plinth over most of one load's
// duration to the -profile directory, named after the route.
func (b *bench) cpuProfile(ctx context.Context, route string) error {
	secs := max(1, int(b.o.duration/time.Second)-1)
	req, err := http.NewRequestWithContext(ctx, "GET", b.ops+"/debug/pprof/profile?seconds="+strconv.Itoa(secs), nil)
	if err != nil {
		return err
	}
	res, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("CPU profile: %s", res.Status)
	}
	if err := os.MkdirAll(b.o.profile, 0o755); err != nil {
		return err
	}
	name := fileName(route)
	f, err := os.Create(filepath.Join(b.o.profile, name+".pprof"))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	log.Printf("CPU profile of %s in %s", route, f.Name())
	return f.Close()
}

// drive loads rt on t with conns connections for the round's duration.
func (b *bench) drive(ctx context.Context, t *target, rt route) (load, error) {
	cpu0, pg0 := cpuTime(t.pid), cpuTime(b.pgPid)
	r, err := loadgen.Run(ctx, b.client, b.o.conns, b.o.duration, func(seq int64) *http.Request { return rt.req(t, seq) })
	if err != nil {
		return load{}, err
	}
	cpu, pg := cpuTime(t.pid)-cpu0, cpuTime(b.pgPid)-pg0
	n := time.Duration(r.Requests)
	return load{rate: r.Rate, p50: r.P50, p99: r.P99, server: cpu / n, pg: pg / n}, nil
}

// cpuTime is the CPU time (user and system) the processes of the tree
// rooted at pid have used, from /proc (the children it reaped included).
func cpuTime(pid int) time.Duration {
	type proc struct {
		parent int
		ticks  int64
	}
	procs := map[int]proc{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17)
		i := strings.LastIndexByte(string(raw), ')')
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 15 {
			continue
		}
		parent, _ := strconv.Atoi(f[1])
		var ticks int64
		for _, s := range f[11:15] {
			n, _ := strconv.ParseInt(s, 10, 64)
			ticks += n
		}
		procs[p] = proc{parent, ticks}
	}
	var sum int64
	for p, pr := range procs {
		for q := p; q > 1; q = procs[q].parent {
			if q == pid {
				sum += pr.ticks
				break
			}
		}
	}
	return time.Duration(sum) * time.Second / clockTicks
}

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// median is the median of the rounds' figures of one kind.
func median(ls []load, f func(load) float64) float64 {
	v := make([]float64, len(ls))
	for i, l := range ls {
		v[i] = f(l)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// print writes the markdown table: per route and server, each round's
// req/s, the median p50 and p99, and the median ratios against the bare
// handler (and PocketBase) with their targets.
func (b *bench) print(w io.Writer, routes []route, res map[string]map[string][]load) {
	rate := func(l load) float64 { return l.rate }
	p50 := func(l load) float64 { return float64(l.p50) }
	p99 := func(l load) float64 { return float64(l.p99) }
	fmt.Fprintf(w, "\n%d rounds of %s, %d connections, %d CPUs (median of the rounds in the ratios)\n\n", b.o.rounds, b.o.duration, b.o.conns, runtime.NumCPU())
	fmt.Fprintln(w, "| route | server | req/s by round | p50 | p99 | CPU µs/req: server + PostgreSQL | req/s vs bare | p99 vs bare | CPU/req vs bare | target |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	cpu := func(l load) float64 { return float64(l.server + l.pg) }
	server := func(l load) float64 { return float64(l.server) }
	pg := func(l load) float64 { return float64(l.pg) }
	for _, rt := range routes {
		bare := res[rt.name][nBare]
		for _, t := range b.targets {
			ls := res[rt.name][t.name]
			if len(ls) == 0 {
				continue
			}
			rates := make([]string, len(ls))
			for i, l := range ls {
				rates[i] = fmt.Sprintf("%.0f", l.rate)
			}
			vsRate, vsP99, vsCPU, goal := "", "", "", ""
			if t.name != nBare && len(bare) > 0 {
				r := median(ls, rate) / median(bare, rate)
				q := median(ls, p99) / median(bare, p99)
				vsRate, vsP99 = fmt.Sprintf("%.2fx", r), fmt.Sprintf("%.2fx", q)
				vsCPU = fmt.Sprintf("%.2fx", median(ls, cpu)/median(bare, cpu))
				if t.name == nPlinth {
					goal = verdict(fmt.Sprintf("req/s ≥ %.2fx bare", rt.minBare), r >= rt.minBare)
					if rt.maxP99 > 0 {
						goal += "; " + verdict(fmt.Sprintf("p99 ≤ %.1fx bare", rt.maxP99), q <= rt.maxP99)
					}
					if pb := res[rt.name][nPB]; rt.minPB > 0 && len(pb) > 0 {
						v := median(ls, rate) / median(pb, rate)
						goal += "; " + verdict(fmt.Sprintf("%.2fx PocketBase, ≥ %.1fx", v, rt.minPB), v >= rt.minPB)
					}
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.0f + %.0f | %s | %s | %s | %s |\n", rt.name, t.name, strings.Join(rates, " / "),
				ms(time.Duration(median(ls, p50))), ms(time.Duration(median(ls, p99))),
				median(ls, server)/1e3, median(ls, pg)/1e3, vsRate, vsP99, vsCPU, goal)
		}
	}
}

func verdict(what string, ok bool) string {
	if ok {
		return what + " (met)"
	}
	return what + " (NOT met)"
}

// serveBare serves the bare handler: net/http and a pgx pool sized as
// Plinth sizes its own (central/process.go), the project's schema on the
// pool's search_path, the SQL of Plinth's routes, prepared statements (the
// pool's default), no authentication, no middleware.
func serveBare(ctx context.Context, addr, dbURL, schema string) error {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	if cfg.MaxConns < 20 {
		cfg.MaxConns = int32(max(20, 4*runtime.NumCPU()))
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize() + ", public"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	var def string
	if err := pool.QueryRow(ctx, `SELECT default_language FROM central.projects p JOIN central.placements l ON l.project_id = p.id WHERE l.schema_name = $1`, schema).Scan(&def); err != nil {
		return err
	}
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	fail := func(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusInternalServerError) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	mux.HandleFunc("GET /v1/content/{key}", func(w http.ResponseWriter, r *http.Request) {
		rows, err := pool.Query(r.Context(), content.KeySQL, r.PathValue("key"))
		if err != nil {
			fail(w, err)
			return
		}
		all := map[string]string{}
		var at time.Time
		var lang, value string
		_, err = pgx.ForEachRow(rows, []any{&lang, &value, &at}, func() error { all[lang] = value; return nil })
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, map[string]any{"key": r.PathValue("key"), "value": all[def], "lang": def, "all_locales": all, "updated_at": at.UTC()})
	})
	mux.HandleFunc("GET /v1/public/content/bulk", func(w http.ResponseWriter, r *http.Request) {
		keys := strings.Split(r.URL.Query().Get("keys"), ",")
		rows, err := pool.Query(r.Context(), content.BulkSQL, keys, []string{def}, nil, nil)
		if err != nil {
			fail(w, err)
			return
		}
		data := make(map[string]string, len(keys))
		var k, v, lang string
		if _, err := pgx.ForEachRow(rows, []any{&k, &v, &lang}, func() error { data[k] = v; return nil }); err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, map[string]any{"data": data, "lang": def, "missing": []string{}})
	})
	mux.HandleFunc("GET /v1/blog-posts/{slug}", func(w http.ResponseWriter, r *http.Request) {
		rows, err := pool.Query(r.Context(), blog.PostBySlugSQL, r.PathValue("slug"))
		if err != nil {
			fail(w, err)
			return
		}
		post, err := pgx.CollectExactlyOneRow(rows, pgx.RowToMap)
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, post)
	})
	mux.HandleFunc("PUT /v1/content/{key}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Value string `json:"value"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var at time.Time
		if err := pool.QueryRow(r.Context(), `INSERT INTO content_values (key, lang, value) VALUES ($1, $2, $3)
			ON CONFLICT (key, lang) DO UPDATE SET value = EXCLUDED.value, updated_at = now() RETURNING updated_at`,
			r.PathValue("key"), def, body.Value).Scan(&at); err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, map[string]any{"key": r.PathValue("key"), "value": body.Value, "lang": def, "updated_at": at.UTC()})
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
