package provisioning

import (
	"context"
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
