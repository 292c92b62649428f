package provisioning_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// provisioned returns a database with n project schemas, project_1 …
// project_n, provisioned with the embedded tenant migrations.
func provisioned(t testing.TB, n int) *pgtest.DB {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO central.tenants (id, name, domain) VALUES (1, 't', 't.test');
		INSERT INTO central.projects (id, seq, tenant_id, name, slug) SELECT 'prj_' || i, i, 1, 'p' || i, 'p' || i FROM generate_series(1, `+fmt.Sprint(n)+`) i;
		INSERT INTO central.placements (project_id, schema_name) SELECT 'prj_' || i, 'project_' || i FROM generate_series(1, `+fmt.Sprint(n)+`) i`); err != nil {
		t.Fatal(err)
	}
	var g errgroup.Group
	g.SetLimit(4)
	for i := 1; i <= n; i++ {
		g.Go(func() error {
			return provisioning.ProvisionProject(ctx, db.Pool, db.Pool, fmt.Sprintf("project_%d", i))
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return db
}

// withFiles is the embedded tenant set plus files. The tests add versions
// 9950 and up: after every embedded one, whatever areas add.
func withFiles(t *testing.T, files map[string]string) fstest.MapFS {
	t.Helper()
	fsys := tenantFS(t)
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	return fsys
}

func migrateAll(ctx context.Context, pool *pgxpool.Pool, opts provisioning.Options) (int, error) {
	return provisioning.MigrateAll(ctx, pool, func(shard string) (*pgxpool.Pool, error) {
		if shard != "default" {
			return nil, fmt.Errorf("unknown shard %q", shard)
		}
		return pool, nil
	}, opts)
}

// count runs a count query and fails the test on error.
func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// assertCurrent checks that goose itself finds nothing to apply in
// schema: every file of fsys applied.
func assertCurrent(t *testing.T, db *pgtest.DB, schema string, fsys fstest.MapFS) {
	t.Helper()
	p := gooseOn(t, db, schema, fsys)
	status, err := p.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range status {
		if s.State != goose.StateApplied {
			t.Fatalf("%s: goose finds %s %s", schema, s.Source.Path, s.State)
		}
	}
	if pending, err := p.HasPending(context.Background()); err != nil || pending {
		t.Fatalf("%s: goose finds pending migrations (%v)", schema, err)
	}
}

// queryCounter counts the queries a pool sends.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestMigrateAllAddedColumn: two added migrations reach every schema in
// one transaction each (goose would record them in two, with two
// timestamps), goose finds every schema current, the placements record
// the level, progress is logged, and a second run is one query.
func TestMigrateAllAddedColumn(t *testing.T) {
	t.Parallel()
	const n = 30
	db := provisioned(t, n)
	ctx := context.Background()
	fsys := withFiles(t, map[string]string{
		"9950_note.sql": "-- +goose Up\nALTER TABLE credit_pools ADD COLUMN note text;\n-- +goose Down\nALTER TABLE credit_pools DROP COLUMN note;\n",
		"9951_tag.sql":  "-- +goose Up\n-- +goose StatementBegin\nALTER TABLE credit_pools ADD COLUMN tag text;\n-- +goose StatementEnd\n",
	})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	migrated, err := migrateAll(ctx, db.Pool, provisioning.Options{Concurrency: 4, Logger: logger, Migrations: fsys, Every: time.Millisecond})
	if err != nil || migrated != n {
		t.Fatalf("migrated %d of %d (%v)", migrated, n, err)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM information_schema.columns WHERE table_schema LIKE 'project\_%' AND table_name = 'credit_pools' AND column_name IN ('note', 'tag')`); c != 2*n {
		t.Fatalf("%d added columns, want %d", c, 2*n)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM central.placements WHERE schema_version = 9951 AND migrations_applied = $1 AND migrated_at IS NOT NULL`, len(fsys)); c != n {
		t.Fatalf("%d placements record version 9951 and %d migrations, want %d", c, len(fsys), n)
	}
	for i := 1; i <= n; i++ {
		schema := fmt.Sprintf("project_%d", i)
		if c := count(t, db.Pool, `SELECT count(DISTINCT tstamp) FROM `+schema+`.goose_db_version WHERE version_id IN (9950, 9951) AND is_applied`); c != 1 {
			t.Fatalf("%s: 9950 and 9951 recorded with %d timestamps, want both in one transaction", schema, c)
		}
	}
	for _, schema := range []string{"project_1", "project_17", "project_30"} {
		assertCurrent(t, db, schema, fsys)
	}
	out := logs.String()
	for _, re := range []string{
		`msg="migrate progress" done=\d+ total=30 failed=0 rate_per_s=[0-9.]+ eta=\S+ elapsed=\S+`,
		`msg="migrate done" done=30 total=30 failed=0 rate_per_s=[0-9.]+ eta=0s elapsed=\S+`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("no line matching %s in\n%s", re, out)
		}
	}

	// Nothing to do: one query, and no schema touched.
	qc := &queryCounter{}
	cfg := db.Pool.Config().Copy()
	cfg.ConnConfig.Tracer = qc
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()
	start := time.Now()
	if migrated, err := migrateAll(ctx, traced, provisioning.Options{Migrations: fsys}); err != nil || migrated != 0 {
		t.Fatalf("second run migrated %d (%v), want 0", migrated, err)
	}
	if q := qc.n.Load(); q != 1 {
		t.Fatalf("second run sent %d queries, want 1", q)
	}
	t.Logf("nothing to do at %d schemas: %v", n, time.Since(start))
}

// TestMigrateAllFailure: a migration failing in one schema is reported
// with that schema's name while every other schema migrates, and the
// failed schema keeps its level to be retried.
func TestMigrateAllFailure(t *testing.T) {
	t.Parallel()
	const n = 12
	db := provisioned(t, n)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `ALTER TABLE project_5.credit_pools ADD COLUMN note text`); err != nil {
		t.Fatal(err)
	}
	fsys := withFiles(t, map[string]string{"9950_note.sql": "-- +goose Up\nALTER TABLE credit_pools ADD COLUMN note text;\n"})
	migrated, err := migrateAll(ctx, db.Pool, provisioning.Options{Migrations: fsys})
	if migrated != n-1 || err == nil || !strings.Contains(err.Error(), "1 of 12 failed") ||
		!strings.Contains(err.Error(), "project_5 (project prj_5): apply 9950_note.sql:") || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("migrated %d, err %v", migrated, err)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM central.placements WHERE schema_version = 9950`); c != n-1 {
		t.Fatalf("%d placements at 9950, want %d", c, n-1)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM project_5.goose_db_version WHERE version_id = 9950`); c != 0 {
		t.Fatal("the failed schema records 9950")
	}
	if _, err := db.Pool.Exec(ctx, `ALTER TABLE project_5.credit_pools DROP COLUMN note`); err != nil {
		t.Fatal(err)
	}
	if migrated, err := migrateAll(ctx, db.Pool, provisioning.Options{Migrations: fsys}); err != nil || migrated != 1 {
		t.Fatalf("the retry migrated %d (%v), want the one failed", migrated, err)
	}
}

// TestMigrateAllOutOfOrder: a file numbered below the highest applied
// is applied to every schema, and goose finds them current.
func TestMigrateAllOutOfOrder(t *testing.T) {
	t.Parallel()
	const n = 6
	db := provisioned(t, n)
	ctx := context.Background()
	fsys := withFiles(t, map[string]string{"0150_between.sql": "-- +goose Up\nCREATE TABLE between_note (id int);\n"})
	if migrated, err := migrateAll(ctx, db.Pool, provisioning.Options{Migrations: fsys}); err != nil || migrated != n {
		t.Fatalf("migrated %d of %d (%v)", migrated, n, err)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM pg_tables WHERE tablename = 'between_note'`); c != n {
		t.Fatalf("%d schemas have the out-of-order table, want %d", c, n)
	}
	latest, _ := provisioning.LatestTenantVersion()
	if c := count(t, db.Pool, `SELECT count(*) FROM central.placements WHERE schema_version = $1 AND migrations_applied = $2`, latest, len(fsys)); c != n {
		t.Fatalf("%d placements at version %d with %d migrations, want %d", c, latest, len(fsys), n)
	}
	assertCurrent(t, db, "project_3", fsys)
}

// TestMigrateAllGooseFallback: a NO TRANSACTION file (CREATE INDEX
// CONCURRENTLY, which fails inside a transaction) goes through goose, and
// a placement whose provisioning never created its schema is created
// with the whole set.
func TestMigrateAllGooseFallback(t *testing.T) {
	t.Parallel()
	const n = 4
	db := provisioned(t, n)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO central.projects (id, seq, tenant_id, name, slug) VALUES ('prj_900', 900, 1, 'i', 'i');
		INSERT INTO central.placements (project_id, schema_name) VALUES ('prj_900', 'project_900')`); err != nil {
		t.Fatal(err)
	}
	fsys := withFiles(t, map[string]string{"9950_index.sql": "-- +goose NO TRANSACTION\n-- +goose Up\nCREATE INDEX CONCURRENTLY credit_pools_note ON credit_pools (pool);\n"})
	if migrated, err := migrateAll(ctx, db.Pool, provisioning.Options{Migrations: fsys}); err != nil || migrated != n+1 {
		t.Fatalf("migrated %d of %d (%v)", migrated, n+1, err)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM pg_indexes WHERE indexname = 'credit_pools_note'`); c != n+1 {
		t.Fatalf("%d schemas have the index, want %d", c, n+1)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM central.placements WHERE schema_version = 9950 AND migrations_applied = $1`, len(fsys)); c != n+1 {
		t.Fatalf("%d placements at 9950, want %d", c, n+1)
	}
	assertCurrent(t, db, "project_2", fsys)
	assertCurrent(t, db, "project_900", fsys)
}

// TestMigrateAllWaitsForGooseLock: the fast path waits for the advisory
// lock goose's session locker holds on the schema, so an operator's goose
// run and MigrateAll never migrate one schema at once.
func TestMigrateAllWaitsForGooseLock(t *testing.T) {
	t.Parallel()
	db := provisioned(t, 1)
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, provisioning.LockID("project_1")); err != nil {
		t.Fatal(err)
	}
	fsys := withFiles(t, map[string]string{"9950_note.sql": "-- +goose Up\nALTER TABLE credit_pools ADD COLUMN note text;\n"})
	var wg sync.WaitGroup
	var migrated int
	var migErr error
	wg.Go(func() { migrated, migErr = migrateAll(ctx, db.Pool, provisioning.Options{Migrations: fsys}) })
	// Wait until MigrateAll asks for the lock (a bigint advisory key is
	// classid, objid and objsubid 1 in pg_locks), so the check below sees
	// it waiting, not yet started.
	deadline := time.Now().Add(30 * time.Second)
	for count(t, db.Pool, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
		AND ((classid::bigint << 32) | objid::bigint) = $1`, provisioning.LockID("project_1")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("MigrateAll did not wait for goose's lock within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c := count(t, db.Pool, `SELECT count(*) FROM project_1.goose_db_version WHERE version_id = 9950`); c != 0 {
		t.Fatal("migrated while goose's lock was held")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, provisioning.LockID("project_1")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if migErr != nil || migrated != 1 {
		t.Fatalf("migrated %d (%v) after the lock was released", migrated, migErr)
	}
}
