package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/tenant"
)

// Extra clusters: PostgreSQL servers besides the one New's databases live
// on, for tests of several shards (central.AddShard) that must not share
// a server with the central database. Each is a throwaway cluster from the
// machine's initdb/pg_ctl (whatever TEST_DATABASE_URL or Docker offer),
// started by the binary's first NewOn naming it, and stopped by Main like
// the first one.

type extraCluster struct {
	once sync.Once
	srv  *server
	err  error
}

var (
	extraMu  sync.Mutex
	extras   = map[string]*extraCluster{}
	extraSeq = map[string]int{} // databases made on each, for their names
)

// NewOn returns a fresh, empty database (nothing migrated: a shard gets
// River's tables from central.AddShard, and project schemas from the
// server) on the extra cluster named cluster, started on first use and
// shared by the binary's tests that name it. The database is dropped when
// the test ends. Its URL is the superuser's, with the rights a shard
// needs; the cluster runs wal_level=logical like every cluster of
// pgcluster.
func NewOn(t testing.TB, cluster string) *DB {
	t.Helper()
	if !mainRan.Load() {
		t.Fatal("pgtest: this package's TestMain does not call pgtest.Main, so the PostgreSQL clusters its tests start would outlive them; add func TestMain(m *testing.M) { pgtest.Main(m) } (or MainPrivate)")
	}
	extraMu.Lock()
	x, ok := extras[cluster]
	if !ok {
		x = &extraCluster{}
		extras[cluster] = x
	}
	extraSeq[cluster]++
	name := fmt.Sprintf("s_%s_%d_%d", cluster, os.Getpid(), extraSeq[cluster])
	extraMu.Unlock()
	x.once.Do(func() { x.srv, x.err = startPrivate() })
	if x.err != nil {
		fail(t, x.err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, x.srv.adminURL)
	if err != nil {
		fail(t, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database on cluster %s: %v", cluster, err)
	}
	u := withDB(x.srv.adminURL, name)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 10
	tenant.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		c, err := pgx.Connect(context.Background(), x.srv.adminURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	return &DB{Pool: pool, URL: u, Name: name}
}

// stopExtra stops the extra clusters (Main, after the tests).
func stopExtra() {
	extraMu.Lock()
	defer extraMu.Unlock()
	for _, x := range extras {
		if x.srv != nil && x.srv.cleanup != nil {
			x.srv.cleanup()
		}
	}
}
