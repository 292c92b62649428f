package central

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// The SQL of shards (central.shards) and of what is asked of a shard's
// own server when it is added or probed.

// shardURL reads a shard's sealed URL (pgx.ErrNoRows when there is no
// such shard).
func shardURL(ctx context.Context, db dbtx, name string) (sealed []byte, err error) {
	defer httpapi.Wrap(&err, "shardURL(%s)", name)
	err = db.QueryRow(ctx, `SELECT url_sealed FROM central.shards WHERE name = $1`, name).Scan(&sealed)
	return sealed, err
}

// setShardURL records a shard's new sealed URL.
func setShardURL(ctx context.Context, db dbtx, name string, sealed []byte) (err error) {
	defer httpapi.Wrap(&err, "setShardURL(%s)", name)
	_, err = db.Exec(ctx, `UPDATE central.shards SET url_sealed = $2 WHERE name = $1`, name, sealed)
	return err
}

// shardExists reports whether a shard of that name is recorded.
func shardExists(ctx context.Context, db dbtx, name string) (exists bool, err error) {
	defer httpapi.Wrap(&err, "shardExists(%s)", name)
	err = db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM central.shards WHERE name = $1)`, name).Scan(&exists)
	return exists, err
}

// insertShard records a shard, active.
func insertShard(ctx context.Context, db dbtx, name string, sealed []byte, capacity int) (s Shard, err error) {
	defer httpapi.Wrap(&err, "insertShard(%s)", name)
	err = db.QueryRow(ctx, `INSERT INTO central.shards (name, url_sealed, capacity) VALUES ($1, $2, $3)
		RETURNING name, state, capacity, created_at`, name, sealed, capacity).Scan(&s.Name, &s.State, &s.Capacity, &s.CreatedAt)
	return s, err
}

// listShards lists every shard with its count of projects, oldest first.
func listShards(ctx context.Context, db dbtx) (_ []Shard, err error) {
	defer httpapi.Wrap(&err, "listShards")
	rows, err := db.Query(ctx, `SELECT s.name, s.state, s.capacity, s.created_at,
			(SELECT count(*) FROM central.placements pl WHERE pl.shard = s.name)
		FROM central.shards s ORDER BY s.created_at, s.name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Shard, error) {
		var s Shard
		err := r.Scan(&s.Name, &s.State, &s.Capacity, &s.CreatedAt, &s.Projects)
		return s, err
	})
}

// lockShard reads a shard and locks its row for the transaction, then
// counts its projects (pgx.ErrNoRows when there is no such shard).
func lockShard(ctx context.Context, tx pgx.Tx, name string) (s Shard, err error) {
	defer httpapi.Wrap(&err, "lockShard(%s)", name)
	err = tx.QueryRow(ctx, `SELECT name, state, capacity, created_at FROM central.shards WHERE name = $1 FOR UPDATE`, name).
		Scan(&s.Name, &s.State, &s.Capacity, &s.CreatedAt)
	if err != nil {
		return s, err
	}
	err = tx.QueryRow(ctx, `SELECT count(*) FROM central.placements WHERE shard = $1`, name).Scan(&s.Projects)
	return s, err
}

// setShardState sets a shard's state.
func setShardState(ctx context.Context, db dbtx, name, state string) (err error) {
	defer httpapi.Wrap(&err, "setShardState(%s, %s)", name, state)
	_, err = db.Exec(ctx, `UPDATE central.shards SET state = $2 WHERE name = $1`, name, state)
	return err
}

// shareShardState reads a shard's state and holds its row against a
// change for the transaction (pgx.ErrNoRows when there is no such shard).
func shareShardState(ctx context.Context, tx pgx.Tx, name string) (state string, err error) {
	defer httpapi.Wrap(&err, "shareShardState(%s)", name)
	err = tx.QueryRow(ctx, `SELECT state FROM central.shards WHERE name = $1 FOR SHARE`, name).Scan(&state)
	return state, err
}

// roomiestShard is the active shard with the most room (capacity less its
// projects; the name breaks ties), its row held for the transaction
// (pgx.ErrNoRows when no shard is active).
func roomiestShard(ctx context.Context, tx pgx.Tx) (name string, room int, err error) {
	defer httpapi.Wrap(&err, "roomiestShard")
	err = tx.QueryRow(ctx, `SELECT s.name, s.capacity - (SELECT count(*) FROM central.placements pl WHERE pl.shard = s.name)
		FROM central.shards s WHERE s.state = 'active'
		ORDER BY 2 DESC, s.name LIMIT 1 FOR SHARE OF s`).Scan(&name, &room)
	return name, room, err
}

// A shard's own server, as AddShard checks it and list probes it.

// shardServer is what a server says of itself and of the connecting role.
type shardServer struct {
	version                    int
	walLevel                   string
	super, replication, create bool
}

func readShardServer(ctx context.Context, db dbtx) (s shardServer, err error) {
	defer httpapi.Wrap(&err, "readShardServer")
	err = db.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('wal_level'),
			r.rolsuper, r.rolreplication, has_database_privilege(current_database(), 'CREATE')
		FROM pg_roles r WHERE r.rolname = current_user`).Scan(&s.version, &s.walLevel, &s.super, &s.replication, &s.create)
	return s, err
}

// roleMaySubscribe reports whether the connecting role is a member of
// pg_create_subscription (PostgreSQL 16 and newer).
func roleMaySubscribe(ctx context.Context, db dbtx) (ok bool, err error) {
	defer httpapi.Wrap(&err, "roleMaySubscribe")
	err = db.QueryRow(ctx, `SELECT pg_has_role(current_user, 'pg_create_subscription', 'MEMBER')`).Scan(&ok)
	return ok, err
}

// createShardExtensions creates on a shard's server the extensions the
// project schemas use, as the central database's migrations create them
// there (btree_gist: trusted, so the role's CREATE on the database
// suffices).
func createShardExtensions(ctx context.Context, db dbtx) (err error) {
	defer httpapi.Wrap(&err, "createShardExtensions")
	_, err = db.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA public`)
	return err
}

// shardVersion reads a server's version and wal_level.
func shardVersion(ctx context.Context, db dbtx) (version, walLevel string, err error) {
	defer httpapi.Wrap(&err, "shardVersion")
	err = db.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('wal_level')`).Scan(&version, &walLevel)
	return version, walLevel, err
}
