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
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

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

// lockID is the advisory lock that serialises the migrators of one
// schema. Goose's session lock and the fast path's transaction lock take
// this one key, and PostgreSQL makes session and transaction advisory
// locks on a key wait for each other, so the two paths never interleave.
func lockID(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("plinth.migrate." + schema))
	return int64(h.Sum64() >> 1)
}

// gooseMigrate applies fsys to schema with goose, creating the schema if
// needed, on a dedicated connection whose search_path is the schema,
// under the schema's advisory lock. It is the path for what the fast one
// leaves: the central schema, a file only goose runs, a schema whose
// provisioning was interrupted. The connection is closed at the end, so
// it keeps no schema's catalog cache.
func gooseMigrate(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS) (Level, error) {
	if !ValidSchema(schema) {
		return Level{}, fmt.Errorf("provisioning: invalid schema name %q", schema)
	}
	cfg := pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["search_path"] = SearchPath(schema)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return Level{}, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(schema)))
	if err != nil {
		return Level{}, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker),
		goose.WithAllowOutofOrder(true), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return Level{}, err
	}
	if _, err := p.Up(ctx); err != nil && !errors.Is(err, goose.ErrNoNextVersion) {
		return Level{}, fmt.Errorf("migrate %s: %w", schema, err)
	}
	status, err := p.Status(ctx)
	if err != nil {
		return Level{}, err
	}
	var lvl Level
	for _, m := range status {
		if m.State == goose.StateApplied {
			lvl.Applied++
		}
	}
	lvl.Version, err = p.GetDBVersion(ctx)
	return lvl, err
}

// MigrateCentral migrates the central schema.
func MigrateCentral(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := gooseMigrate(ctx, pool, CentralSchema, migrations.Central())
	return err
}

// MigrateProject creates (when new) and migrates one project schema with
// the embedded tenant migrations, every pending one including one
// numbered below the highest applied, and records the level reached in
// the placement row.
func MigrateProject(ctx context.Context, central, shard *pgxpool.Pool, schema string) error {
	s, err := tenantSet()
	if err != nil {
		return err
	}
	return s.migrate(ctx, central, shard, schema)
}

// ProvisionProject creates and migrates a new project schema and records
// its level in the placement row. A new schema takes one round trip:
// every tenant migration is sent in one simple-protocol message, which
// PostgreSQL runs as one transaction, together with goose's version table
// and rows (so goose finds the schema current) and, when the shard is the
// central database, the placement update. When the schema exists already,
// or a migration needs goose's own handling (NO TRANSACTION, ENVSUB),
// goose migrates it.
func ProvisionProject(ctx context.Context, central, shard *pgxpool.Pool, schema string) error {
	s, err := tenantSet()
	if err != nil {
		return err
	}
	return s.provision(ctx, central, shard, schema)
}

// migration is one numbered file of a migration set.
type migration struct {
	version int64
	name    string
	up      string // the Up section, when goose is false
	goose   bool   // NO TRANSACTION or ENVSUB ON: only goose runs it
}

// migrationSet is a tenant migration set read once for every schema it
// migrates.
type migrationSet struct {
	fsys  fs.FS
	files []migration // in version order
	// fresh creates a new schema's tables and goose rows in one script
	// (see ProvisionProject); "" when a file needs goose.
	fresh string
}

// tenantSet is the embedded tenant migration set.
var tenantSet = sync.OnceValues(func() (*migrationSet, error) { return parseSet(migrations.Tenant()) })

// level is the level of a schema with every file of the set applied.
func (s *migrationSet) level() Level {
	if len(s.files) == 0 {
		return Level{}
	}
	return Level{Version: s.files[len(s.files)-1].version, Applied: len(s.files)}
}

// parseSet reads the numbered .sql files of fsys.
func parseSet(fsys fs.FS) (*migrationSet, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	s := &migrationSet{fsys: fsys}
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		m := migration{name: e.Name()}
		if m.version, err = strconv.ParseInt(num, 10, 64); err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		up, ok, err := upSection(string(b))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		m.up, m.goose = up, !ok
		s.files = append(s.files, m)
	}
	slices.SortFunc(s.files, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	s.fresh = freshOf(s.files)
	return s, nil
}

// freshOf is the one script that creates a new schema with files, or ""
// when one of them needs goose.
func freshOf(files []migration) string {
	var fresh strings.Builder
	fresh.WriteString(gooseTable)
	for _, m := range files {
		if m.goose {
			return ""
		}
		m.writeUp(&fresh)
	}
	return fresh.String()
}

// writeUp writes the file's Up section and the goose row that records it.
func (m migration) writeUp(w *strings.Builder) {
	fmt.Fprintf(w, "-- %s\n%s\n;\nINSERT INTO goose_db_version (version_id, is_applied) VALUES (%d, true);\n", m.name, m.up, m.version)
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

// freshScript is the script that creates a new schema with the
// migrations of fsys, with their latest version and number; the script
// is "" when a migration cannot run inside one transaction with the
// others.
func freshScript(fsys fs.FS) (string, int64, int, error) {
	s, err := parseSet(fsys)
	if err != nil {
		return "", 0, 0, err
	}
	lvl := s.level()
	return s.fresh, lvl.Version, lvl.Applied, nil
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
	s, err := tenantSet()
	if err != nil {
		return 0, err
	}
	return s.level().Version, nil
}

// recordSQL records a schema's level in its placement row.
const recordSQL = `UPDATE central.placements SET schema_version = $2, migrations_applied = $3, migrated_at = now() WHERE schema_name = $1`

// recordInline is recordSQL with its values written in, for a script
// that runs in the shard's transaction (schema is a validated name).
func recordInline(schema string, lvl Level) string {
	return fmt.Sprintf("UPDATE central.placements SET schema_version = %d, migrations_applied = %d, migrated_at = now() WHERE schema_name = '%s';\n",
		lvl.Version, lvl.Applied, schema)
}

// provision creates schema with the set in one round trip (see
// ProvisionProject), or migrates it with goose.
func (s *migrationSet) provision(ctx context.Context, central, shard *pgxpool.Pool, schema string) error {
	if !ValidSchema(schema) || schema == CentralSchema {
		return fmt.Errorf("provisioning: invalid project schema %q", schema)
	}
	if s.fresh != "" {
		ident := pgx.Identifier{schema}.Sanitize()
		var q strings.Builder
		q.WriteString("CREATE SCHEMA " + ident + ";\nSET LOCAL search_path TO " + ident + ", public;\n")
		q.WriteString(s.fresh)
		if central == shard {
			q.WriteString(recordInline(schema, s.level()))
		}
		err := execOnce(ctx, shard, q.String())
		if err == nil {
			if central != shard {
				_, err = central.Exec(ctx, recordSQL, schema, s.level().Version, s.level().Applied)
			}
			return err
		}
		if ctx.Err() != nil {
			return err
		}
	}
	lvl, err := gooseMigrate(ctx, shard, schema, s.fsys)
	if err != nil {
		return err
	}
	_, err = central.Exec(ctx, recordSQL, schema, lvl.Version, lvl.Applied)
	return err
}

// migrate brings schema up to the set: by the fast path when it can,
// else as a new schema is provisioned (which leaves an existing one to
// goose).
func (s *migrationSet) migrate(ctx context.Context, central, shard *pgxpool.Pool, schema string) error {
	if !ValidSchema(schema) || schema == CentralSchema {
		return fmt.Errorf("provisioning: invalid project schema %q", schema)
	}
	ok, err := s.migrateFast(ctx, central, shard, schema)
	if err != nil || ok {
		return err
	}
	return s.provision(ctx, central, shard, schema)
}

// migrateFast applies the set's pending files to an existing schema in
// one transaction of two round trips on a pooled connection, where goose
// would open a connection and spend a dozen round trips (version table
// check, lock, a listing, a transaction per file, a status query per
// file). The first message begins, binds the schema, takes the schema's
// advisory lock and lists goose's versions; the second sends each pending
// Up section with the goose row goose would insert (so goose finds the
// schema exactly as its own run leaves it), the placement update when the
// shard is the central database, and COMMIT.
//
// Pending is every file whose version goose has no row for, including
// one numbered below the highest applied, as goose's Provider with
// out-of-order allowed counts them (it ignores is_applied, and deletes
// the row of a migration it undoes). ok is false, and nothing is
// changed, when the schema has no goose table (its provisioning was
// interrupted) or a pending file needs goose itself.
func (s *migrationSet) migrateFast(ctx context.Context, central, shard *pgxpool.Pool, schema string) (ok bool, err error) {
	conn, err := shard.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	pg := conn.Conn().PgConn()
	// A connection left inside the transaction would be destroyed by
	// Release; rolling back keeps it for the pool.
	defer func() {
		if !ok && !pg.IsClosed() && pg.TxStatus() != 'I' {
			_ = pg.Exec(ctx, "ROLLBACK").Close()
		}
	}()
	// The version table is named with its schema: unqualified, a missing
	// schema would fall through the search_path to a public one.
	ident := pgx.Identifier{schema}.Sanitize()
	res, err := pg.Exec(ctx, fmt.Sprintf("BEGIN; SET LOCAL search_path TO %s, public; SELECT pg_advisory_xact_lock(%d); SELECT version_id FROM %s.goose_db_version",
		ident, lockID(schema), ident)).ReadAll()
	if err != nil {
		if pgErr, isPg := errors.AsType[*pgconn.PgError](err); isPg && pgErr.Code == "42P01" { // undefined_table
			return false, nil
		}
		return false, err
	}
	have := make(map[int64]bool)
	for _, r := range res[len(res)-1].Rows {
		v, err := strconv.ParseInt(string(r[0]), 10, 64)
		if err != nil {
			return false, fmt.Errorf("goose_db_version of %s: %w", schema, err)
		}
		have[v] = true
	}
	var q strings.Builder
	var pending []string
	for _, m := range s.files {
		if have[m.version] {
			continue
		}
		if m.goose {
			return false, nil
		}
		m.writeUp(&q)
		pending = append(pending, m.name)
		have[m.version] = true
	}
	lvl := Level{Applied: len(s.files)}
	for v := range have {
		lvl.Version = max(lvl.Version, v)
	}
	if central == shard {
		q.WriteString(recordInline(schema, lvl))
	}
	q.WriteString("COMMIT")
	if _, err := pg.Exec(ctx, q.String()).ReadAll(); err != nil {
		return false, fmt.Errorf("apply %s: %w", strings.Join(pending, ", "), err)
	}
	ok = true
	if central != shard {
		_, err = central.Exec(ctx, recordSQL, schema, lvl.Version, lvl.Applied)
	}
	return true, err
}

// DefaultConcurrency is how many schemas MigrateAll migrates at once by
// default. A schema's migration mostly waits: on its two round trips and
// on its commit's WAL flush, which concurrent commits share. Measured
// with BenchmarkMigrateAll (200 schemas, one added column, 2 cores under
// load): with fsync on, 3.3 ms per schema at 1, 1.5 at 4, 1.0 at 8 and
// 0.8 at 16; with fsync off, 0.98, 0.40, 0.32 and 0.44. Eight takes most
// of the gain and leaves most of a 20-connection pool to the traffic.
const DefaultConcurrency = 8

// Options tune MigrateAll.
type Options struct {
	// Concurrency is how many schemas are migrated at once
	// (default DefaultConcurrency).
	Concurrency int
	// Logger receives the progress lines; nil logs nothing.
	Logger *slog.Logger
	// Migrations is the tenant migration set (default migrations.Tenant()).
	Migrations fs.FS
	// Every is the interval between progress lines (default 5 s).
	Every time.Duration
	// Shard, when set, migrates the schemas of that shard only.
	Shard string
}

// MigrateAll migrates every project schema that lacks a migration of the
// set (its placement's level is behind), through Each: counted first, so
// nothing to do is one query, and logged as it goes. It is idempotent and
// resumable: each schema moves to the set's level in one transaction, so
// an interrupted run leaves every schema at a consistent level and the
// next run continues with those still behind. It returns how many
// schemas it migrated.
func MigrateAll(ctx context.Context, central *pgxpool.Pool, shardPool func(string) (*pgxpool.Pool, error), opts Options) (int, error) {
	s, err := tenantSet()
	if opts.Migrations != nil {
		s, err = parseSet(opts.Migrations)
	}
	if err != nil {
		return 0, err
	}
	lvl := s.level()
	q := Query{Task: "migrate", Behind: &lvl, Concurrency: cmp.Or(opts.Concurrency, DefaultConcurrency),
		Logger: opts.Logger, Every: opts.Every, Shard: opts.Shard}
	var migrated atomic.Int64
	err = Each(ctx, central, q, Placements, func(ctx context.Context, p Placement) error {
		pool, err := shardPool(p.Shard)
		if err != nil {
			return err
		}
		if err := s.migrate(ctx, central, pool, p.Schema); err != nil {
			return err
		}
		migrated.Add(1)
		return nil
	})
	return int(migrated.Load()), err
}
