// Package apitest runs the whole server against a real PostgreSQL for API
// tests: a fresh database, an httptest server, projects with keys, and
// request helpers that assert the contract's problem+json shape.
package apitest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/pgtest"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/internal/server"
	"github.com/plinth-dev/plinth/tenant"
)

// Env is one running server over its own database.
type Env struct {
	T      testing.TB
	DB     *pgtest.DB
	Server *server.Server
	HTTP   *httptest.Server
	URL    string
	Config config.Config

	tenantID int64
}

var seq atomic.Int64

// Option adjusts the configuration before the server is built.
type Option func(*config.Config, *server.Options)

// WithEnv sets environment variables as the server would read them.
func WithEnv(kv ...string) Option {
	return func(c *config.Config, _ *server.Options) {
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
func WithWorkers() Option { return func(_ *config.Config, o *server.Options) { o.Workers = true } }

// WithRootCAs makes the server trust these roots for outgoing HTTPS, such
// as an httptest TLS receiver's (srv.Client().Transport's RootCAs).
func WithRootCAs(pool *x509.CertPool) Option {
	return func(_ *config.Config, o *server.Options) { o.RootCAs = pool }
}

// WithTestRoutes mounts test-only routes inside the authenticated /v1
// group (behind rate limits and idempotency).
func WithTestRoutes(fn func(chi.Router)) Option {
	return func(_ *config.Config, o *server.Options) { o.TestRoutes = fn }
}

// WithRateLimits runs rate limits on store with clock (a simulated one).
func WithRateLimits(store ratelimit.Store, clock func() time.Time) Option {
	return func(_ *config.Config, o *server.Options) { o.RateStore, o.RateClock = store, clock }
}

// New starts a server on a fresh database. PLINTH_DEV=1 is set so loopback
// receivers and fetches are allowed.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	db := pgtest.New(t)
	base := map[string]string{"PLINTH_DEV": "1", "PLINTH_SECRET": "test-secret-" + db.Name, "PLINTH_STORAGE": "file://" + t.TempDir()}
	cfg, err := config.Load(func(k string) string { return base[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.DatabaseURL = db.URL
	e := &Env{T: t, DB: db}
	e.start(cfg, opts)
	ctx := context.Background()
	n := seq.Add(1)
	tn, _, err := e.Server.Central.CreateTenant(ctx, fmt.Sprintf("Tenant %d", n), fmt.Sprintf("t%d-%s.test", n, db.Name), fmt.Sprintf("owner%d@example.com", n), "password-123")
	if err != nil {
		t.Fatal(err)
	}
	e.tenantID = tn.ID
	return e
}

// Instance starts another server over the same database, as a second
// instance of a deployment; opts apply on top of the configuration of e.
// Projects of e are reached through either.
func (e *Env) Instance(opts ...Option) *Env {
	e.T.Helper()
	o := &Env{T: e.T, DB: e.DB, tenantID: e.tenantID}
	o.start(e.Config, opts)
	return o
}

func (e *Env) start(cfg config.Config, opts []Option) {
	t := e.T
	t.Helper()
	so := server.Options{Queue: queue.Options{TestOnly: true}}
	for _, o := range opts {
		o(&cfg, &so)
	}
	level := slog.LevelError
	if os.Getenv("PLINTH_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx := context.Background()
	srv, err := server.New(ctx, cfg, e.DB.Pool, logger, so)
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

// NewProject provisions a project on plan (default "build") with a "*" key.
func (e *Env) NewProject(plan string) *Project {
	e.T.Helper()
	if plan == "" {
		plan = "build"
	}
	ctx := context.Background()
	p, err := e.Server.Central.CreateProject(ctx, central.ProjectParams{TenantID: e.tenantID, Name: "Project " + plan, Plan: plan, TargetLanguages: []string{"fr", "de"}})
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

// Send sends r.
func (e *Env) Send(r Request) *Resp {
	e.T.Helper()
	var rd io.Reader
	ct := ""
	switch b := r.Body.(type) {
	case nil:
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	case []byte:
		rd, ct = bytes.NewReader(b), "application/json"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		rd, ct = bytes.NewReader(buf), "application/json"
	}
	req, err := http.NewRequest(r.Method, e.URL+r.Path, rd)
	if err != nil {
		e.T.Fatal(err)
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
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return &Resp{Status: res.StatusCode, Header: res.Header, Body: b}
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
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, want application/problem+json", ct)
	}
	m := r.JSON(t)
	if m["code"] != code {
		t.Fatalf("code %v, want %s: %s", m["code"], code, r.Body)
	}
	rid := r.Header.Get("X-Request-Id")
	if rid == "" || m["instance"] != rid {
		t.Fatalf("instance %v must equal X-Request-Id %q", m["instance"], rid)
	}
	if m["status"] != float64(status) || m["title"] == "" || !strings.HasSuffix(fmt.Sprint(m["type"]), "/"+code) {
		t.Fatalf("problem fields wrong: %s", r.Body)
	}
	return m
}
