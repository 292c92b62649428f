package provisioning

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var shardRe = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// TenantVersion is what a current project schema has applied: the highest
// embedded tenant version and the number of embedded tenant migrations.
func TenantVersion() (latest int64, count int, err error) {
	set, err := tenantSet()
	if err != nil {
		return 0, 0, err
	}
	lvl := set.level()
	return lvl.Version, lvl.Applied, nil
}

// CreateSpare creates and migrates a project schema that no project holds
// yet, and records it in central.spare_schemas (docs/operations.md, "Spare
// schemas"). On the central database, the schema, its migrations and the
// spare row are one transaction of one round trip, so a spare is either
// complete and recorded or not there at all.
func CreateSpare(ctx context.Context, central, shardPool *pgxpool.Pool, shard, schema string) error {
	if !ValidSchema(schema) || schema == CentralSchema || !shardRe.MatchString(shard) {
		return fmt.Errorf("provisioning: invalid spare %s on shard %q", schema, shard)
	}
	set, err := tenantSet()
	if err != nil {
		return err
	}
	lvl := set.level()
	const record = `INSERT INTO central.spare_schemas (schema_name, shard, schema_version, migrations_applied) VALUES ($1, $2, $3, $4)`
	if set.fresh == "" {
		// A migration needs goose's own handling: migrate the schema as
		// goose does, then record it.
		got, err := gooseMigrate(ctx, shardPool, schema, set.fsys)
		if err != nil {
			return err
		}
		_, err = central.Exec(ctx, record, schema, shard, got.Version, got.Applied)
		return err
	}
	ident := pgx.Identifier{schema}.Sanitize()
	var q strings.Builder
	q.WriteString("CREATE SCHEMA " + ident + ";\nSET LOCAL search_path TO " + ident + ", public;\n")
	q.WriteString(set.fresh)
	if central == shardPool {
		// Values written in: the script is one simple-protocol message
		// (schema and shard are validated names).
		fmt.Fprintf(&q, "INSERT INTO central.spare_schemas (schema_name, shard, schema_version, migrations_applied) VALUES ('%s', '%s', %d, %d);\n",
			schema, shard, lvl.Version, lvl.Applied)
	}
	if err := execOnce(ctx, shardPool, q.String()); err != nil {
		return err
	}
	if central != shardPool {
		// Another database: a crash here leaves a schema no row names,
		// which only costs its disk space.
		_, err = central.Exec(ctx, record, schema, shard, lvl.Version, lvl.Applied)
	}
	return err
}

// DropSpare drops a spare schema and its row; a spare a project claimed
// meanwhile (its row gone) is left alone. On the central database both go
// in one transaction; on another shard the row goes first (so no project
// claims the spare), then the schema.
func DropSpare(ctx context.Context, central, shardPool *pgxpool.Pool, schema string) error {
	if !ValidSchema(schema) || schema == CentralSchema {
		return fmt.Errorf("provisioning: invalid spare %s", schema)
	}
	if central != shardPool {
		tag, err := central.Exec(ctx, `DELETE FROM central.spare_schemas WHERE schema_name = $1`, schema)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = shardPool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		return err
	}
	return pgx.BeginFunc(ctx, central, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM central.spare_schemas WHERE schema_name = $1`, schema)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		return err
	})
}

// execOnce runs a schema-creating script on a connection of its own,
// closed afterwards. A backend keeps the catalog entries of every relation
// it created for as long as it lives; run on pooled connections, creating
// thousands of projects left every backend of the pool holding thousands
// of schemas' tables (2.4 times the memory of a fresh one at 10,000
// projects, docs/performance.md). A new connection costs a few
// milliseconds; spares are created in the background anyway.
func execOnce(ctx context.Context, pool *pgxpool.Pool, script string) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, script)
	return err
}

// TakeSpare gives a current spare schema of shard the name schema, for a
// project that moves there: renaming a spare is one catalog update, where
// creating the schema (ProvisionProject) runs every tenant migration on
// the target, about 0.4 s of its CPU a move (docs/performance.md). ok is
// false, and nothing changed, when the shard has no current spare. The
// spare is claimed as a new project claims one (its row deleted, one
// another claim holds skipped); on the central database the claim and
// the rename are one transaction, on another shard the claim comes first
// (a crash between leaves a schema no row names, which only costs its
// disk space, as DropSpare's does).
func TakeSpare(ctx context.Context, central, shardPool *pgxpool.Pool, shard, schema string) (ok bool, err error) {
	if !ValidSchema(schema) || schema == CentralSchema || !shardRe.MatchString(shard) {
		return false, fmt.Errorf("provisioning: invalid schema %s on shard %q", schema, shard)
	}
	set, err := tenantSet()
	if err != nil {
		return false, err
	}
	lvl := set.level()
	const claim = `DELETE FROM central.spare_schemas WHERE schema_name = (
			SELECT schema_name FROM central.spare_schemas
			WHERE shard = $1 AND schema_version = $2 AND migrations_applied = $3
			ORDER BY schema_name LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING schema_name`
	take := func(db interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (string, error) {
		var spare string
		err := db.QueryRow(ctx, claim, shard, lvl.Version, lvl.Applied).Scan(&spare)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil
		}
		return spare, err
	}
	rename := func(spare string) string {
		return "ALTER SCHEMA " + pgx.Identifier{spare}.Sanitize() + " RENAME TO " + pgx.Identifier{schema}.Sanitize()
	}
	if central == shardPool {
		err = pgx.BeginFunc(ctx, central, func(tx pgx.Tx) error {
			spare, err := take(tx)
			if err != nil || spare == "" {
				return err
			}
			_, err = tx.Exec(ctx, rename(spare))
			ok = err == nil
			return err
		})
		return ok, err
	}
	spare, err := take(central)
	if err != nil || spare == "" {
		return false, err
	}
	if _, err := shardPool.Exec(ctx, rename(spare)); err != nil {
		return false, fmt.Errorf("rename spare %s to %s: %w", spare, schema, err)
	}
	return true, nil
}
