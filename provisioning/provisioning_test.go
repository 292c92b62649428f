package provisioning_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/plinth-dev/plinth/migrations"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestFreshScript(t *testing.T) {
	fsys := fstest.MapFS{
		"0002_b.sql": {Data: []byte("-- +goose Up\n-- +goose StatementBegin\nCREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n-- +goose StatementEnd\n\n-- +goose Down\nDROP FUNCTION f();\n")},
		"0001_a.sql": {Data: []byte("-- leading comment\n-- +goose Up\nCREATE TABLE a (id int);\n")},
		"README":     {Data: []byte("not a migration")},
	}
	s, latest, count, err := provisioning.FreshScript(fsys)
	if err != nil || latest != 2 || count != 2 {
		t.Fatalf("latest %d, count %d, err %v", latest, count, err)
	}
	ia, ib := strings.Index(s, "CREATE TABLE a"), strings.Index(s, "CREATE FUNCTION f()")
	if ia < 0 || ib < ia || strings.Contains(s, "DROP FUNCTION") || strings.Contains(s, "leading comment") ||
		!strings.Contains(s, "VALUES (1, true)") || !strings.Contains(s, "VALUES (2, true)") || !strings.Contains(s, "VALUES (0, true)") {
		t.Fatalf("script:\n%s", s)
	}
	for _, a := range []string{"-- +goose NO TRANSACTION", "-- +goose ENVSUB ON"} {
		fsys["0003_c.sql"] = &fstest.MapFile{Data: []byte(a + "\n-- +goose Up\nCREATE INDEX CONCURRENTLY i ON a (id);\n")}
		if s, _, _, err := provisioning.FreshScript(fsys); err != nil || s != "" {
			t.Fatalf("%s: script %q, err %v: goose must run it", a, s, err)
		}
	}
	fsys["0003_c.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE c (id int);\n")}
	if _, _, _, err := provisioning.FreshScript(fsys); err == nil {
		t.Fatal("a migration without -- +goose Up was accepted")
	}
}

// gooseOn returns a goose provider bound to schema, as an operator's goose
// run would see it.
func gooseOn(t *testing.T, db *pgtest.DB, schema string, fsys fstest.MapFS) *goose.Provider {
	t.Helper()
	cfg := db.Pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["search_path"] = provisioning.SearchPath(schema)
	sqlDB := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { sqlDB.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func tenantFS(t testing.TB) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	src := migrations.Tenant()
	entries, err := fs.ReadDir(src, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(src, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = &fstest.MapFile{Data: data}
	}
	return out
}

// TestProvisionProject: a new schema gets every table in one step, goose
// finds it current and applies only later migrations, a second provision
// of the same schema is harmless, and nothing lands outside the schema.
func TestProvisionProject(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	latest, err := provisioning.LatestTenantVersion()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO central.tenants (id, name, domain) VALUES (1, 't', 't.test');
		INSERT INTO central.projects (id, seq, tenant_id, name, slug) VALUES ('prj_a', 41, 1, 'a', 'a');
		INSERT INTO central.placements (project_id, schema_name) VALUES ('prj_a', 'project_41')`); err != nil {
		t.Fatal(err)
	}
	// On a one-connection pool, to see that the connection keeps no
	// project search_path afterwards.
	cfg := db.Pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 1, 0
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if err := provisioning.ProvisionProject(ctx, one, one, "project_41"); err != nil {
		t.Fatal(err)
	}
	var path string
	if err := one.QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil || strings.Contains(path, "project_41") {
		t.Fatalf("search_path after provisioning %q (%v)", path, err)
	}
	var version int64
	var public int
	if err := db.Pool.QueryRow(ctx, `SELECT schema_version FROM central.placements WHERE project_id = 'prj_a'`).Scan(&version); err != nil || version != latest {
		t.Fatalf("placement version %d, want %d (%v)", version, latest, err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&public); err != nil || public != 0 {
		t.Fatalf("%d tables in public (%v)", public, err)
	}
	var ok bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('project_41.credit_pools') IS NOT NULL AND to_regclass('project_41.goose_db_version') IS NOT NULL`).Scan(&ok); err != nil || !ok {
		t.Fatalf("tables missing in project_41 (%v)", err)
	}

	fsys := tenantFS(t)
	g := gooseOn(t, db, "project_41", fsys)
	if v, err := g.GetDBVersion(ctx); err != nil || v != latest {
		t.Fatalf("goose sees version %d, want %d (%v)", v, latest, err)
	}
	if pending, err := g.HasPending(ctx); err != nil || pending {
		t.Fatalf("goose finds pending migrations after provisioning (%v)", err)
	}
	fsys["9999_later.sql"] = &fstest.MapFile{Data: []byte("-- +goose Up\nCREATE TABLE later (id int);\n")}
	res, err := gooseOn(t, db, "project_41", fsys).Up(ctx)
	if err != nil || len(res) != 1 || res[0].Source.Version != 9999 {
		t.Fatalf("goose after provisioning applied %v (%v), want only 9999", res, err)
	}

	// Provisioning an existing schema goes through goose and changes nothing.
	if err := provisioning.ProvisionProject(ctx, db.Pool, db.Pool, "project_41"); err != nil {
		t.Fatalf("second provision: %v", err)
	}
	for _, bad := range []string{"central", "public", "project_1; DROP TABLE x", ""} {
		if err := provisioning.ProvisionProject(ctx, db.Pool, db.Pool, bad); err == nil {
			t.Fatalf("provisioned schema %q", bad)
		}
	}
}
