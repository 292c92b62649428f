// Package apitest runs the whole server against a real PostgreSQL for API
// tests: a fresh database, an httptest server, projects with keys, and
// request helpers that assert the contract's problem+json shape.
package apitest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// Env is one running server over its own database.
type Env struct {
	T      testing.TB
	DB     *pgtest.DB
	Server *central.Server
	HTTP   *httptest.Server
	URL    string
	Config config.Config

	// Shards are the databases of the shards WithShards added, by name,
	// each on an extra cluster of its own (pgtest.NewOn).
	Shards map[string]*pgtest.DB

	tenantID int64
	// testRoutes are the patterns of test-only routes (WithTestRoutes,
	// WithWidgets): not part of the API, so not checked against the
	// OpenAPI document.
	testRoutes map[string]bool
	// Contract checks every Send; DefaultContract unless a test of the
	// check itself sets another.
	Contract *Contract
}

var seq atomic.Int64

// Option adjusts the configuration before the server is built.
type Option func(*config.Config, *central.Options)

// WithEnv sets environment variables as the server would read them.
func WithEnv(kv ...string) Option {
	return func(c *config.Config, _ *central.Options) {
		env := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		get := c.Getenv
		nc, err := config.Load(func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return get(k)
		})
		if err != nil {
			panic(err)
		}
		*c = nc
	}
}

// WithWorkers runs River workers in the test server.
func WithWorkers() Option { return func(_ *config.Config, o *central.Options) { o.Workers = true } }

// WithRootCAs makes the server trust these roots for outgoing HTTPS, such
// as an httptest TLS receiver's (srv.Client().Transport's RootCAs).
func WithRootCAs(pool *x509.CertPool) Option {
	return func(_ *config.Config, o *central.Options) { o.RootCAs = pool }
}

// WithAI runs the server's jobs on provider p instead of the configured one.
func WithAI(p ai.Provider) Option {
	return func(_ *config.Config, o *central.Options) { o.AI = p }
}

// WithTestRoutes mounts test-only routes inside the authenticated /v1
// group (behind rate limits and idempotency).
func WithTestRoutes(fn func(chi.Router)) Option {
	return func(_ *config.Config, o *central.Options) { o.TestRoutes = fn }
}

// WithRateLimits runs rate limits on store with clock (a simulated one).
func WithRateLimits(store ratelimit.Store, clock func() time.Time) Option {
	return func(_ *config.Config, o *central.Options) { o.RateStore, o.RateClock = store, clock }
}

// shardRequests carries WithShards' names from the option to start,
// keyed by the Options being built (an Option sees only the config and
// the server's options).
var shardRequests sync.Map // *central.Options -> []string

// WithShards adds shards named names to the env's central, besides
// "default" (the env's database): each a database on an extra cluster of
// its own (pgtest.NewOn(t, name)), added by Central.AddShard as an
// operator adds one (its URL sealed, the server checked, River migrated
// there), with the default capacity. The env's server works their jobs
// (with WithWorkers) and listens to their job events. Env.Shards holds
// their databases. Only for New, not Instance (an instance shares the
// central database, so its shards).
func WithShards(names ...string) Option {
	return func(_ *config.Config, o *central.Options) {
		prev, _ := shardRequests.Load(o)
		old, _ := prev.([]string)
		shardRequests.Store(o, append(old, names...))
	}
}

// New starts a server on a fresh database. PLINTH_DEV=1 is set so loopback
// receivers and fetches are allowed.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	db := pgtest.New(t)
	// No spare schemas: a test's few projects are created inline, and the
	// filler's background work would only load the machine (the spares'
	// own tests turn them on). Tests log in from one address far more
	// often, and call the dashboard API faster, than a person would: the
	// login and dashboard limits' own tests set them.
	base := map[string]string{"PLINTH_DEV": "1", "PLINTH_SECRET": "test-secret-" + db.Name, "PLINTH_STORAGE": "file://" + t.TempDir(),
		"PLINTH_SPARE_SCHEMAS": "0", "PLINTH_LOGIN_RATE": "1000000/1000000",
		"PLINTH_DASHBOARD_RATE": "1000000/1000000", "PLINTH_DASHBOARD_IP_RATE": "1000000/1000000"}
	cfg, err := config.Load(func(k string) string { return base[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.DatabaseURL = db.URL
	e := &Env{T: t, DB: db}
	e.start(cfg, opts)
	e.tenantID = e.NewTenant()
	return e
}

// Instance starts another server over the same database, as a second
// instance of a deployment; opts apply on top of the configuration of e.
// Projects of e are reached through either.
func (e *Env) Instance(opts ...Option) *Env {
	e.T.Helper()
	o := &Env{T: e.T, DB: e.DB, tenantID: e.tenantID, Contract: e.Contract}
	o.start(e.Config, opts)
	return o
}

func (e *Env) start(cfg config.Config, opts []Option) {
	t := e.T
	t.Helper()
	so := central.Options{Queue: queue.Options{TestOnly: true, FetchPoll: 100 * time.Millisecond}}
	for _, o := range opts {
		o(&cfg, &so)
	}
	var shards []string
	if v, ok := shardRequests.LoadAndDelete(&so); ok {
		shards = v.([]string)
	}
	level := slog.LevelError
	if os.Getenv("PLINTH_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	e.testRoutes = map[string]bool{}
	for prefix, fn := range map[string]func(chi.Router){"/v1": so.TestRoutes, "/v1/public": so.TestPublicRoutes} {
		if fn == nil {
			continue
		}
		mux := chi.NewRouter()
		fn(mux)
		_ = chi.Walk(mux, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
			e.testRoutes[method+" "+prefix+route] = true
			return nil
		})
	}
	if e.Contract == nil {
		c, err := DefaultContract()
		if err != nil {
			t.Fatal(err)
		}
		e.Contract = c
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx := context.Background()
	srv, err := central.NewServer(ctx, cfg, e.DB.Pool, logger, so)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) > 0 {
		e.Shards = map[string]*pgtest.DB{}
	}
	for _, name := range shards {
		db := pgtest.NewOn(t, name)
		if _, err := srv.Central.AddShard(ctx, central.ShardParams{Name: name, URL: db.URL}); err != nil {
			t.Fatalf("add shard %s: %v", name, err)
		}
		e.Shards[name] = db
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler)
	// Concurrent tests keep their connections instead of churning ports.
	if tr, ok := hs.Client().Transport.(*http.Transport); ok {
		tr.MaxIdleConnsPerHost = 64
	}
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Stop(context.Background())
	})
	e.Server, e.HTTP, e.URL, e.Config = srv, hs, hs.URL, cfg
}

// Project is a provisioned project with a full-access key.
type Project struct {
	*tenant.Project
	Key   string
	Scope *tenant.Scope
	env   *Env
}

// TenantID is the tenant the env's projects belong to.
func (e *Env) TenantID() int64 { return e.tenantID }

// NewProject provisions a project on plan (default tenant.PlanBuild) with a "*" key.
func (e *Env) NewProject(plan string) *Project {
	e.T.Helper()
	if plan == "" {
		plan = tenant.PlanBuild
	}
	return e.CreateProject(central.ProjectParams{Name: "Project " + plan, Plan: plan, TargetLanguages: []string{"fr", "de"}})
}

// NewProjectOn provisions a build project placed on shard (one of
// WithShards', or "default"), as plinth project create --shard does.
func (e *Env) NewProjectOn(shard string) *Project {
	e.T.Helper()
	return e.CreateProject(central.ProjectParams{Name: "Project on " + shard, Plan: tenant.PlanBuild, TargetLanguages: []string{"fr", "de"}, Shard: shard})
}

// Pool is the pool of the project's shard: its schema and its River jobs
// are there.
func (p *Project) Pool() *pgxpool.Pool { return p.Scope.Pool() }

// NewTenant creates another workspace and returns its id, for projects
// that must not share a tenant (identical slugs, for one).
func (e *Env) NewTenant() int64 {
	e.T.Helper()
	n := seq.Add(1)
	tn, _, err := e.Server.Central.CreateTenant(context.Background(), fmt.Sprintf("Tenant %d", n),
		fmt.Sprintf("t%d-%s.test", n, e.DB.Name), fmt.Sprintf("owner%d@example.com", n), "password-123")
	if err != nil {
		e.T.Fatal(err)
	}
	return tn.ID
}

// CreateProject provisions a project from params (TenantID defaults to
// the env's tenant) with a "*" key.
func (e *Env) CreateProject(params central.ProjectParams) *Project {
	e.T.Helper()
	if params.TenantID == 0 {
		params.TenantID = e.tenantID
	}
	ctx := context.Background()
	p, err := e.Server.Central.CreateProject(ctx, params)
	if err != nil {
		e.T.Fatal(err)
	}
	k, err := e.Server.Central.MintKey(ctx, p.ID, "test", []string{"*"}, nil, false)
	if err != nil {
		e.T.Fatal(err)
	}
	sc, err := e.Server.Central.ScopeFor(ctx, p.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	return &Project{Project: p, Key: k.Secret, Scope: sc, env: e}
}

// NewKey mints another key of the project with the given scopes.
func (p *Project) NewKey(test bool, scopes ...string) string {
	p.env.T.Helper()
	k, err := p.env.Server.Central.MintKey(context.Background(), p.ID, "extra", scopes, nil, test)
	if err != nil {
		p.env.T.Fatal(err)
	}
	return k.Secret
}

// Resp is a recorded response.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// Request is a request to send; Body is marshalled as JSON unless it is
// a string or []byte.
type Request struct {
	Method string
	Path   string
	Key    string
	Body   any
	Header map[string]string
}

// Do sends a request to the test server.
func (e *Env) Do(method, path, key string, body any) *Resp {
	e.T.Helper()
	return e.Send(Request{Method: method, Path: path, Key: key, Body: body})
}

// Send sends r, and fails the test (Errorf) when the request or the
// response is not what the OpenAPI document describes (see Contract.Check).
func (e *Env) Send(r Request) *Resp {
	e.T.Helper()
	res, err := e.TrySend(r)
	if err != nil {
		e.T.Fatal(err)
	}
	return res
}

// TrySend sends r and returns transport errors instead of failing the
// test, so it may run on goroutines other than the test's. A contract
// mismatch is reported with Errorf, which is safe there too.
func (e *Env) TrySend(r Request) (*Resp, error) {
	var body []byte
	ct := ""
	switch b := r.Body.(type) {
	case nil:
	case string:
		body, ct = []byte(b), "application/json"
	case []byte:
		body, ct = b, "application/json"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		body, ct = buf, "application/json"
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(r.Method, e.URL+r.Path, rd)
	if err != nil {
		return nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if r.Key != "" {
		req.Header.Set("Authorization", "Bearer "+r.Key)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	res, err := e.HTTP.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	e.checkContract(req, body, res, b)
	return &Resp{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// Probe is one request of an isolation run and the check that its
// response holds only the data of the project whose key sent it.
type Probe struct {
	Request Request
	Check   func(*Resp) error
}

// Isolation sends workers x perWorker requests from workers goroutines at
// once, alternating between the projects: request i of worker w is
// probe(projects[(w+i)%len(projects)], i). It fails the test with the
// first failed check. Pillars seed the same slugs and ids in each project,
// then use it to show that every key sees only its own project's rows and
// that another project's ids answer 404. Thousands of requests exceed a
// plan's burst: use enterprise projects with Central.SetRateOverride.
func (e *Env) Isolation(t testing.TB, projects []*Project, workers, perWorker int, probe func(p *Project, i int) Probe) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sent  atomic.Int64
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				p := projects[(w+i)%len(projects)]
				pr := probe(p, i)
				if pr.Request.Key == "" {
					pr.Request.Key = p.Key
				}
				r, err := e.TrySend(pr.Request)
				if err == nil {
					err = pr.Check(r)
				}
				sent.Add(1)
				if err != nil {
					once.Do(func() {
						first = fmt.Errorf("worker %d, request %d (%s %s as %s): %w", w, i, pr.Request.Method, pr.Request.Path, p.ID, err)
					})
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	if n := sent.Load(); n != int64(workers*perWorker) {
		t.Fatalf("sent %d requests, want %d", n, workers*perWorker)
	}
}

// checkContract checks one exchange against the OpenAPI document.
func (e *Env) checkContract(req *http.Request, reqBody []byte, res *http.Response, resBody []byte) {
	e.T.Helper()
	rctx := chi.NewRouteContext()
	routed := e.Server.Router.Match(rctx, req.Method, req.URL.Path)
	if routed && e.testRoutes[req.Method+" "+rctx.RoutePattern()] {
		return
	}
	path := req.URL.EscapedPath() // a decoded NUL would not parse again
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	for _, msg := range e.Contract.Check(Exchange{Method: req.Method, Path: path, ReqHeader: req.Header, ReqBody: reqBody,
		Status: res.StatusCode, RespHeader: res.Header, RespBody: resBody, Routed: routed}) {
		e.T.Errorf("OpenAPI contract: %s", msg)
	}
}

// JSON decodes the body into a map.
func (r *Resp) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r *Resp) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode: %v: %s", err, r.Body)
	}
}

// Expect fails the test unless the status is want.
func (r *Resp) Expect(t testing.TB, want int) *Resp {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r
}

// Problem asserts a problem+json error with status and code, with instance
// equal to X-Request-Id, and returns the decoded body.
func (r *Resp) Problem(t testing.TB, status int, code string) map[string]any {
	t.Helper()
	m, err := r.CheckProblem(status, code)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// CheckProblem is Problem returning an error, for use off the test goroutine.
func (r *Resp) CheckProblem(status int, code string) (map[string]any, error) {
	if r.Status != status {
		return nil, fmt.Errorf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		return nil, fmt.Errorf("content type %q, want application/problem+json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %v: %s", err, r.Body)
	}
	if m["code"] != code {
		return nil, fmt.Errorf("code %v, want %s: %s", m["code"], code, r.Body)
	}
	rid := r.Header.Get("X-Request-Id")
	if rid == "" || m["instance"] != rid {
		return nil, fmt.Errorf("instance %v must equal X-Request-Id %q", m["instance"], rid)
	}
	if m["status"] != float64(status) || m["title"] == "" || m["title"] == nil || !strings.HasSuffix(fmt.Sprint(m["type"]), "/"+code) {
		return nil, fmt.Errorf("problem fields wrong: %s", r.Body)
	}
	return m, nil
}

// WaitJob polls GET /v1/jobs/{id} with key until the job is completed,
// failed or cancelled (at most 60 s) and returns it.
func (e *Env) WaitJob(t testing.TB, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j := e.Do("GET", "/v1/jobs/"+id, key, nil).Expect(t, 200).JSON(t)
		if s := j["status"]; s == "completed" || s == "failed" || s == "cancelled" {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %v after 60 s: %v", id, j["status"], j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Balance is the credits left to the project's live pool, in hundredths.
func (p *Project) Balance(t testing.TB) int64 {
	t.Helper()
	ctx := context.Background()
	b, err := tenant.TxV(ctx, p.Scope, func(tx pgx.Tx) (int64, error) { return credits.Balance(ctx, tx, p.Scope) })
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RiverJob is a River job as a test inspects it.
type RiverJob struct {
	ID          int64
	State       string // River's: scheduled, available, running, retryable, completed, cancelled, discarded
	ScheduledAt time.Time
	Args        map[string]any
	// Errors counts the attempts that failed.
	Errors int
}

// RiverJobs lists the River jobs of kind whose args contain args (JSON
// containment: {"post_id": 3} matches every job of post 3), oldest first.
// A job's project is in its args' project_id, and the job on the
// project's shard: RiverJobs and DueNow read that shard's River tables,
// or every shard's when args name no project (River's own jobs are on
// each).
func (e *Env) RiverJobs(t testing.TB, kind string, args map[string]any) []RiverJob {
	t.Helper()
	var jobs []RiverJob
	for _, pool := range e.riverPools(t, args) {
		rows, err := pool.Query(context.Background(), `SELECT id, state, scheduled_at, args, coalesce(array_length(errors, 1), 0)
			FROM river.river_job WHERE kind = $1 AND args @> $2 ORDER BY id`, kind, args)
		if err != nil {
			t.Fatal(err)
		}
		some, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RiverJob, error) {
			var j RiverJob
			err := r.Scan(&j.ID, &j.State, &j.ScheduledAt, &j.Args, &j.Errors)
			return j, err
		})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, some...)
	}
	return jobs
}

// riverPools are the pools of the shards whose River tables hold the
// jobs args match: the shard of args' project_id, else every shard of e.
func (e *Env) riverPools(t testing.TB, args map[string]any) []*pgxpool.Pool {
	t.Helper()
	if id, ok := args["project_id"].(string); ok {
		sc, err := e.Server.Central.ScopeFor(context.Background(), id)
		if err == nil {
			return []*pgxpool.Pool{sc.Pool()}
		}
		if !errors.Is(err, httpapi.ErrNotFound) {
			t.Fatal(err)
		}
	}
	pools := []*pgxpool.Pool{e.DB.Pool}
	for _, name := range slices.Sorted(maps.Keys(e.Shards)) {
		pools = append(pools, e.Shards[name].Pool)
	}
	return pools
}

// DueNow makes the scheduled River jobs of kind whose args contain args
// due at once (River's scheduler makes them available within its
// interval), so that a test runs a job scheduled ahead without waiting
// for its time, and without betting that its setup ends before then.
func (e *Env) DueNow(t testing.TB, kind string, args map[string]any) {
	t.Helper()
	for _, pool := range e.riverPools(t, args) {
		if _, err := pool.Exec(context.Background(), `UPDATE river.river_job SET scheduled_at = now()
			WHERE kind = $1 AND args @> $2 AND state = 'scheduled'`, kind, args); err != nil {
			t.Fatal(err)
		}
	}
}

// AheadOf is a schedule time far enough ahead for as many requests as
// those that just took took to be sent before it (a fixed 2 s runs out on
// a loaded machine, and the API refuses a time in the past): 2 s, plus
// twice took, for a machine that gets slower meanwhile; in milliseconds,
// as the API stores it.
func AheadOf(took time.Duration) time.Time {
	return time.Now().Add(2*time.Second + 2*took).UTC().Truncate(time.Millisecond)
}

// WaitRiverJobs polls RiverJobs until it lists at least one job and every
// one has ended (completed, cancelled or discarded), at most 30 s, and
// returns them.
func (e *Env) WaitRiverJobs(t testing.TB, kind string, args map[string]any) []RiverJob {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		jobs := e.RiverJobs(t, kind, args)
		ended := len(jobs) > 0
		for _, j := range jobs {
			ended = ended && (j.State == "completed" || j.State == "cancelled" || j.State == "discarded")
		}
		if ended {
			return jobs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s jobs %v still running after 30 s: %+v", kind, args, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
