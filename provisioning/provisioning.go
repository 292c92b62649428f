// Package provisioning creates project schemas and migrates the central
// schema and every project schema with goose.
package provisioning

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"regexp"
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
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS) (int64, error) {
	if !ValidSchema(schema) {
		return 0, fmt.Errorf("provisioning: invalid schema name %q", schema)
	}
	cfg := pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["search_path"] = SearchPath(schema)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return 0, err
	}
	h := fnv.New64a()
	h.Write([]byte("plinth.migrate." + schema))
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64() >> 1)))
	if err != nil {
		return 0, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker),
		goose.WithAllowOutofOrder(true), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return 0, err
	}
	if _, err := p.Up(ctx); err != nil && !errors.Is(err, goose.ErrNoNextVersion) {
		return 0, fmt.Errorf("migrate %s: %w", schema, err)
	}
	return p.GetDBVersion(ctx)
}

// MigrateCentral migrates the central schema.
func MigrateCentral(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := migrate(ctx, pool, CentralSchema, migrations.Central())
	return err
}

// MigrateProject creates (when new) and migrates one project schema and
// records the version reached in the placement row.
func MigrateProject(ctx context.Context, central, shard *pgxpool.Pool, schema string) error {
	v, err := migrate(ctx, shard, schema, migrations.Tenant())
	if err != nil {
		return err
	}
	_, err = central.Exec(ctx, `UPDATE central.placements SET schema_version = $2, migrated_at = now() WHERE schema_name = $1`, schema, v)
	return err
}

// LatestTenantVersion is the highest tenant migration version embedded.
func LatestTenantVersion() (int64, error) {
	entries, err := fs.ReadDir(migrations.Tenant(), ".")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// MigrateAll migrates every project schema whose recorded version is
// behind, at most concurrency at a time. It is idempotent and resumable:
// an interrupted run leaves each schema at a consistent version and the
// next run continues from there.
func MigrateAll(ctx context.Context, central *pgxpool.Pool, shardPool func(string) (*pgxpool.Pool, error), concurrency int) (int, error) {
	latest, err := LatestTenantVersion()
	if err != nil {
		return 0, err
	}
	rows, err := central.Query(ctx, `SELECT shard, schema_name FROM central.placements WHERE schema_version < $1 ORDER BY schema_name`, latest)
	if err != nil {
		return 0, err
	}
	type target struct{ shard, schema string }
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (target, error) {
		var t target
		return t, r.Scan(&t.shard, &t.schema)
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
			if err := MigrateProject(gctx, central, pool, t.schema); err != nil {
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
