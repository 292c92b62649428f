// Package pgtest gives tests a real PostgreSQL: TEST_DATABASE_URL when set,
// else a container through dockertest when a Docker engine answers, else a
// throwaway cluster from the machine's initdb/pg_ctl (always the latter
// for packages that call MainPrivate). Each test gets its
// own database cloned from a template that holds the migrated central and
// river schemas. Under CI=true a test that cannot get PostgreSQL fails.
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ory/dockertest/v3"

	"github.com/plinth-dev/plinth/internal/pgcluster"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/migrations"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
)

type server struct {
	adminURL string // URL of a database to run CREATE DATABASE from
	cluster  *pgcluster.Cluster
	cleanup  func()
	template string
}

var (
	once    sync.Once
	srv     *server
	srvErr  error
	counter atomic.Int64
)

// private is set by MainPrivate: start ignores TEST_DATABASE_URL and
// Docker.
var private bool

// mainRan is set by Main. New refuses to run without it: only Main stops
// the cluster New starts, so a package without it left a PostgreSQL
// cluster running after every run of its tests.
var mainRan atomic.Bool

// leakGrace is how long Main waits, after the tests and its own cleanup,
// for the clusters the tests started to finish stopping before it calls
// one left behind. A cleanup that stops a cluster waits for it (pg_ctl
// -w), so this only covers a server exiting as the tests end.
const leakGrace = 10 * time.Second

// Main runs the package's tests and then stops a cluster it started.
// Every package that uses pgtest, or whose tests start a cluster in any
// other way (pgcluster, a plinth serve process), calls it from TestMain.
//
// It fails the run (exit status 1) when a PostgreSQL server the tests
// started, directly or through a process they ran, still runs once they
// and the cleanup are done (naming its data directory; it then stops it,
// so that one failed run does not load the machine for the next), or
// ended without being stopped (its directory removed under it).
// (On Linux: the test binary becomes the subreaper of its descendants,
// so every postmaster it or its children started is its child once
// pg_ctl exits.)
func Main(m *testing.M) {
	mainRan.Store(true)
	watching := watchClusters()
	code := m.Run()
	if srv != nil && srv.cleanup != nil {
		srv.cleanup()
	}
	stopExtra()
	if watching {
		if left := clustersLeft(leakGrace); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "pgtest: FAIL: %d PostgreSQL server(s) the tests started were not stopped (a test that starts a cluster, or runs a plinth serve that does, must stop it before its directory goes):\n", len(left))
			for _, l := range left {
				fmt.Fprintf(os.Stderr, "\t%s\n", l)
			}
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// MainPrivate is Main for packages whose tests need a cluster of their
// own (fault tests that restart PostgreSQL): whatever TEST_DATABASE_URL
// and Docker offer, the tests run on a throwaway cluster from the
// machine's initdb/pg_ctl, so Cluster is never nil once New succeeded.
func MainPrivate(m *testing.M) {
	private = true
	Main(m)
}

func fail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required: %v", err)
	}
	t.Skipf("PostgreSQL unavailable (set TEST_DATABASE_URL or install postgresql): %v", err)
}

func start() (*server, error) {
	if !private {
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			return &server{adminURL: u}, nil
		}
		if s, err := startDocker(); err == nil {
			return s, nil
		}
	}
	return startPrivate()
}

// startPrivate starts a throwaway cluster from the machine's
// initdb/pg_ctl.
func startPrivate() (*server, error) {
	dir, err := os.MkdirTemp("", "plinth-pgtest-")
	if err != nil {
		return nil, err
	}
	c, err := pgcluster.New(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &server{adminURL: c.URL("postgres"), cluster: c, cleanup: func() {
		_ = c.Stop()
		os.RemoveAll(dir)
	}}, nil
}

// startDocker runs postgres:15 when a Docker engine answers within 2 s.
func startDocker() (*server, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, err
	}
	pool.MaxWait = 60 * time.Second
	done := make(chan error, 1)
	go func() { done <- pool.Client.Ping() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-time.After(2 * time.Second):
		return nil, fmt.Errorf("docker engine did not answer")
	}
	// wal_level=logical as every cluster of pgcluster: a test database can
	// be a shard (central.AddShard checks it).
	cmd := []string{"postgres"}
	for _, o := range strings.Fields(pgcluster.ReplicationSettings) {
		if o != "-c" {
			cmd = append(cmd, "-c", o)
		}
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{Repository: "postgres", Tag: "15", Env: []string{"POSTGRES_HOST_AUTH_METHOD=trust"}, Cmd: cmd})
	if err != nil {
		return nil, err
	}
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", res.GetPort("5432/tcp"))
	if err := pool.Retry(func() error {
		c, err := pgx.Connect(context.Background(), u)
		if err != nil {
			return err
		}
		return c.Close(context.Background())
	}); err != nil {
		_ = pool.Purge(res)
		return nil, err
	}
	return &server{adminURL: u, cleanup: func() { _ = pool.Purge(res) }}, nil
}

// migrationHash names the template after the embedded migrations, so a
// changed migration gets a fresh template.
func migrationHash() string {
	h := sha256.New()
	for _, fsys := range []fs.FS{migrations.Central(), migrations.Tenant()} {
		_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := fs.ReadFile(fsys, p)
				h.Write([]byte(p))
				h.Write(b)
			}
			return nil
		})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func withDB(adminURL, db string) string {
	u, _ := url.Parse(adminURL)
	u.Path = "/" + db
	return u.String()
}

// ensureTemplate creates the template database once per server.
func (s *server) ensureTemplate(ctx context.Context) error {
	name := "plinth_tpl_" + migrationHash()
	admin, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	// Several test processes may share a server: one builds the template.
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(7423001)`); err != nil {
		return err
	}
	defer admin.Exec(ctx, `SELECT pg_advisory_unlock(7423001)`)
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		_, _ = admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize())
		if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
			return err
		}
		pool, err := pgxpool.New(ctx, withDB(s.adminURL, name))
		if err != nil {
			return err
		}
		err = provisioning.MigrateCentral(ctx, pool)
		if err == nil {
			err = queue.Migrate(ctx, pool)
		}
		pool.Close()
		if err != nil {
			return err
		}
		if _, err := admin.Exec(ctx, `UPDATE pg_database SET datistemplate = true WHERE datname = $1`, name); err != nil {
			return err
		}
	}
	s.template = name
	return nil
}

// DB is one test's database.
type DB struct {
	Pool *pgxpool.Pool
	URL  string
	Name string
}

// New returns a fresh database with central and river migrated, dropped
// when the test ends.
func New(t testing.TB) *DB {
	t.Helper()
	if !mainRan.Load() {
		t.Fatal("pgtest: this package's TestMain does not call pgtest.Main, so the PostgreSQL cluster its tests start would outlive them; add func TestMain(m *testing.M) { pgtest.Main(m) } (or MainPrivate)")
	}
	once.Do(func() {
		srv, srvErr = start()
		if srvErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			srvErr = srv.ensureTemplate(ctx)
		}
	})
	if srvErr != nil {
		fail(t, srvErr)
	}
	ctx := context.Background()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	admin, err := pgx.Connect(ctx, srv.adminURL)
	if err != nil {
		fail(t, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE `+pgx.Identifier{srv.template}.Sanitize()); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	u := withDB(srv.adminURL, name)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 40
	tenant.ConfigurePool(cfg) // as the server's pool is
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		c, err := pgx.Connect(context.Background(), srv.adminURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	return &DB{Pool: pool, URL: u, Name: name}
}

// Cluster is the private cluster the tests run on, or nil when the server
// is external; fault tests use it to restart PostgreSQL (their TestMain
// calls MainPrivate, so it is theirs).
func Cluster() *pgcluster.Cluster {
	if srv == nil {
		return nil
	}
	return srv.cluster
}

// TempDir is a directory the postgres user can use too.
func TempDir(t testing.TB) string {
	d := t.TempDir()
	_ = os.Chmod(filepath.Dir(d), 0o755)
	return d
}
