// Package provisioning creates project schemas and migrates the central
// schema and every project schema with goose.
package provisioning

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/migrations"
)

// CentralSchema is the schema of the control plane.
const CentralSchema = "central"

var schemaRe = regexp.MustCompile(`^(central|project_[0-9]+)$`)

// ValidSchema reports whether name is a schema this service manages.
func ValidSchema(name string) bool { return schemaRe.MatchString(name) }

// SearchPath is the search_path of a managed schema: the schema, then
// public for shared extensions.
func SearchPath(schema string) string {
	return pgx.Identifier{schema}.Sanitize() + ", public"
}

// migrate applies fsys to schema, creating the schema if needed, on a
// dedicated connection whose search_path is the schema. A session advisory
// lock on the schema name serialises concurrent migrators of one schema.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS) (version int64, applied int, err error) {
	if !ValidSchema(schema) {
		return 0, 0, fmt.Errorf("provisioning: invalid schema name %q", schema)
	}
	cfg := pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["search_path"] = SearchPath(schema)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return 0, 0, err
	}
	h := fnv.New64a()
	h.Write([]byte("plinth.migrate." + schema))
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64() >> 1)))
	if err != nil {
		return 0, 0, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker),
		goose.WithAllowOutofOrder(true), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return 0, 0, err
	}
	if _, err := p.Up(ctx); err != nil && !errors.Is(err, goose.ErrNoNextVersion) {
		return 0, 0, fmt.Errorf("migrate %s: %w", schema, err)
	}
	status, err := p.Status(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range status {
		if m.State == goose.StateApplied {
			applied++
		}
	}
	version, err = p.GetDBVersion(ctx)
	return version, applied, err
}

// MigrateCentral migrates the central schema.
func MigrateCentral(ctx context.Context, pool *pgxpool.Pool) error {
	_, _, err := migrate(ctx, pool, CentralSchema, migrations.Central())
	return err
}

// MigrateProject creates (when new) and migrates one project schema, every
// pending migration including one numbered below the highest applied, and
// records the version reached and the number applied in the placement row.
func MigrateProject(ctx context.Context, central, shard *pgxpool.Pool, schema string) error {
	v, n, err := migrate(ctx, shard, schema, migrations.Tenant())
	if err != nil {
		return err
	}
	_, err = central.Exec(ctx, `UPDATE central.placements SET schema_version = $2, migrations_applied = $3, migrated_at = now() WHERE schema_name = $1`, schema, v, n)
	return err
}

// ProvisionProject creates and migrates a new project schema and records
// its version in the placement row. A new schema takes one round trip:
// every tenant migration is sent in one simple-protocol message, which
// PostgreSQL runs as one transaction, together with goose's version table
// and rows (so goose finds the schema current) and, when the shard is the
// central database, the placement update. When the schema exists already,
// or a migration needs goose's own handling (NO TRANSACTION, ENVSUB), goose
// migrates it as MigrateProject does.
func ProvisionProject(ctx context.Context, central, shard *pgxpool.Pool, schema string) error {
	if !ValidSchema(schema) || schema == CentralSchema {
		return fmt.Errorf("provisioning: invalid project schema %q", schema)
	}
	fresh, latest, count, err := tenantScript()
	if err != nil {
		return err
	}
	if fresh != "" {
		ident := pgx.Identifier{schema}.Sanitize()
		var q strings.Builder
		q.WriteString("CREATE SCHEMA " + ident + ";\nSET LOCAL search_path TO " + ident + ", public;\n")
		q.WriteString(fresh)
		if central == shard {
			fmt.Fprintf(&q, "UPDATE central.placements SET schema_version = %d, migrations_applied = %d, migrated_at = now() WHERE schema_name = '%s';\n", latest, count, schema)
		}
		if _, err = shard.Exec(ctx, q.String()); err == nil {
			if central != shard {
				_, err = central.Exec(ctx, `UPDATE central.placements SET schema_version = $2, migrations_applied = $3, migrated_at = now() WHERE schema_name = $1`, schema, latest, count)
			}
			return err
		}
		if ctx.Err() != nil {
			return err
		}
	}
	return MigrateProject(ctx, central, shard, schema)
}

var tenantOnce struct {
	sync.Once
	script string
	latest int64
	count  int
	err    error
}

// tenantScript is the embedded tenant migrations as one script for a new
// schema (see ProvisionProject), the latest version and the number of
// migrations.
func tenantScript() (string, int64, int, error) {
	tenantOnce.Do(func() {
		tenantOnce.script, tenantOnce.latest, tenantOnce.count, tenantOnce.err = freshScript(migrations.Tenant())
	})
	return tenantOnce.script, tenantOnce.latest, tenantOnce.count, tenantOnce.err
}

// gooseTable is goose's version table as its PostgreSQL dialect creates it
// (github.com/pressly/goose/v3/internal/dialects/postgres.go); the first
// row, version 0, is the one goose inserts with the table.
const gooseTable = `CREATE TABLE goose_db_version (
	id integer PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY,
	version_id bigint NOT NULL,
	is_applied boolean NOT NULL,
	tstamp timestamp NOT NULL DEFAULT now()
);
INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true);
`

// freshScript joins the Up sections of the migrations in fsys, in version
// order, each followed by its goose version row, with the latest version
// and the number of migrations. The script is "" when a migration cannot
// run inside one transaction with the others.
func freshScript(fsys fs.FS) (string, int64, int, error) {
	type file struct {
		version int64
		name    string
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", 0, 0, err
	}
	var files []file
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return "", 0, 0, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		files = append(files, file{v, e.Name()})
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.version, b.version) })
	var out strings.Builder
	out.WriteString(gooseTable)
	var latest int64
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f.name)
		if err != nil {
			return "", 0, 0, err
		}
		up, ok, err := upSection(string(b))
		if err != nil {
			return "", 0, 0, fmt.Errorf("migration %s: %w", f.name, err)
		}
		if !ok {
			return "", 0, 0, nil
		}
		fmt.Fprintf(&out, "-- %s\n%s\n;\nINSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, true);\n", f.name, up, f.version)
		latest = f.version
	}
	return out.String(), latest, len(files), nil
}

// upSection returns the SQL between "-- +goose Up" and "-- +goose Down",
// read as goose reads annotations; ok is false when the file asks for
// something only goose does (NO TRANSACTION, ENVSUB ON).
func upSection(src string) (string, bool, error) {
	var up strings.Builder
	state := "" // "", "up", "down"
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") && strings.Contains(line, "+goose") {
			a := strings.TrimSpace(strings.Replace(strings.ReplaceAll(line, "--", ""), "+goose", "", 1))
			switch {
			case strings.EqualFold(a, "Up"):
				state = "up"
			case strings.EqualFold(a, "Down"):
				state = "down"
			case strings.EqualFold(a, "StatementBegin"), strings.EqualFold(a, "StatementEnd"), strings.EqualFold(a, "ENVSUB OFF"):
			case strings.EqualFold(a, "NO TRANSACTION"), strings.EqualFold(a, "ENVSUB ON"):
				return "", false, nil
			default:
				return "", false, fmt.Errorf("unknown goose annotation %q", line)
			}
			continue
		}
		if state == "up" {
			up.WriteString(line)
			up.WriteByte('\n')
		}
	}
	if state == "" {
		return "", false, errors.New("no -- +goose Up annotation")
	}
	return up.String(), true, nil
}

// LatestTenantVersion is the highest tenant migration version embedded.
func LatestTenantVersion() (int64, error) {
	latest, _, err := tenantMigrations()
	return latest, err
}

// tenantMigrations is the highest version and the number of the embedded
// tenant migrations.
func tenantMigrations() (latest int64, count int, err error) {
	entries, err := fs.ReadDir(migrations.Tenant(), ".")
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		latest = max(latest, v)
		count++
	}
	return latest, count, nil
}

// MigrateAll migrates every project schema that lacks an embedded
// migration (its highest version is behind, or fewer migrations are
// applied than embedded: a file numbered below one already applied), at
// most concurrency at a time. It is idempotent and resumable:
// an interrupted run leaves each schema at a consistent version and the
// next run continues from there.
func MigrateAll(ctx context.Context, central *pgxpool.Pool, shardPool func(string) (*pgxpool.Pool, error), concurrency int) (int, error) {
	latest, count, err := tenantMigrations()
	if err != nil {
		return 0, err
	}
	rows, err := central.Query(ctx, `SELECT shard, schema_name, schema_version FROM central.placements
		WHERE schema_version < $1 OR migrations_applied < $2 ORDER BY schema_name`, latest, count)
	if err != nil {
		return 0, err
	}
	type target struct {
		shard, schema string
		version       int64
	}
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (target, error) {
		var t target
		return t, r.Scan(&t.shard, &t.schema, &t.version)
	})
	if err != nil {
		return 0, err
	}
	if concurrency < 1 {
		concurrency = 1
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	var mu sync.Mutex
	done := 0
	for _, t := range todo {
		g.Go(func() error {
			pool, err := shardPool(t.shard)
			if err != nil {
				return err
			}
			migrate := MigrateProject
			if t.version == 0 {
				// Perhaps never created: provisioning was interrupted.
				migrate = ProvisionProject
			}
			if err := migrate(gctx, central, pool, t.schema); err != nil {
				return err
			}
			mu.Lock()
			done++
			mu.Unlock()
			return nil
		})
	}
	err = g.Wait()
	return done, err
}
