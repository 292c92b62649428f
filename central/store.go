package central

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// The control plane's SQL lives in its store files, as a pillar's does
// (TestSQLInStores): this one holds what the process itself keeps in the
// central database (settings, the invalidation channel, the counts of
// its probes and metrics); store_projects.go the projects, their
// placements and spare schemas; store_keys.go the API keys and admin
// tokens; store_users.go the tenants, users, logins and sessions;
// store_exports.go the exports. A store function runs its statements on
// the dbtx it is given, translates pgx.ErrNoRows to httpapi.ErrNotFound
// and wraps its error with its name (httpapi.Wrap); the Central method
// that calls it holds the transaction, when there is one, and turns a
// kind into the failure the client is shown.

// dbtx is what a store function runs on: the central pool, a connection
// of it, or a transaction the caller holds.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// storedSecret stores generated as the server secret unless one is
// stored already (another instance may have stored its own first), and
// returns the one stored.
func storedSecret(ctx context.Context, db dbtx, generated string) (secret string, err error) {
	defer httpapi.Wrap(&err, "storedSecret")
	if _, err := db.Exec(ctx, `INSERT INTO central.settings (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING`, generated); err != nil {
		return "", fmt.Errorf("store server secret: %w", err)
	}
	err = db.QueryRow(ctx, `SELECT value FROM central.settings WHERE key = 'secret'`).Scan(&secret)
	return secret, err
}

// backfillDone reports whether the backfill recorded as key has run on
// this database.
func backfillDone(ctx context.Context, db dbtx, key string) (done bool, err error) {
	defer httpapi.Wrap(&err, "backfillDone(%s)", key)
	err = db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM central.settings WHERE key = $1)`, key).Scan(&done)
	return done, err
}

// recordBackfill records that the backfill key has run on every project.
func recordBackfill(ctx context.Context, db dbtx, key string) (err error) {
	defer httpapi.Wrap(&err, "recordBackfill(%s)", key)
	_, err = db.Exec(ctx, `INSERT INTO central.settings (key, value) VALUES ($1, now()::text) ON CONFLICT (key) DO NOTHING`, key)
	return err
}

// notifyCentral sends payload on the channel every instance listens to
// for cache invalidations (Central.Listen).
func notifyCentral(ctx context.Context, db dbtx, payload string) (err error) {
	defer httpapi.Wrap(&err, "notifyCentral(%s)", payload)
	_, err = db.Exec(ctx, `SELECT pg_notify('plinth_central', $1)`, payload)
	return err
}

// listenCentral makes the connection db listen to the invalidation
// channel; unlistenCentral ends that.
func listenCentral(ctx context.Context, db dbtx) (err error) {
	defer httpapi.Wrap(&err, "listenCentral")
	_, err = db.Exec(ctx, "LISTEN plinth_central")
	return err
}

func unlistenCentral(ctx context.Context, db dbtx) (err error) {
	defer httpapi.Wrap(&err, "unlistenCentral")
	_, err = db.Exec(ctx, "UNLISTEN plinth_central")
	return err
}

// countSchemasBehind counts the placements not at the tenant migrations
// latest and count (provisioning.TenantVersion).
func countSchemasBehind(ctx context.Context, db dbtx, latest int64, count int) (n int64, err error) {
	defer httpapi.Wrap(&err, "countSchemasBehind")
	err = db.QueryRow(ctx, `SELECT count(*) FROM central.placements WHERE schema_version <> $1 OR migrations_applied <> $2`,
		latest, count).Scan(&n)
	return n, err
}

// jobCount is how many River jobs of a queue are in a state.
type jobCount struct {
	queue, state string
	n            int64
}

// countRiverJobs counts the River jobs waiting or running, by queue and
// state (only the pairs that have some).
func countRiverJobs(ctx context.Context, db dbtx) (_ []jobCount, err error) {
	defer httpapi.Wrap(&err, "countRiverJobs")
	rows, err := db.Query(ctx, `SELECT queue, state::text, count(*) FROM river.river_job
				WHERE state IN ('available', 'scheduled', 'retryable', 'running') GROUP BY 1, 2`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobCount, error) {
		var c jobCount
		return c, r.Scan(&c.queue, &c.state, &c.n)
	})
}

// countProjects counts the projects of the deployment, those being
// deleted included.
func countProjects(ctx context.Context, db dbtx) (n int64, err error) {
	defer httpapi.Wrap(&err, "countProjects")
	err = db.QueryRow(ctx, `SELECT count(*) FROM central.projects`).Scan(&n)
	return n, err
}

// countTenants counts the workspaces.
func countTenants(ctx context.Context, db dbtx) (n int, err error) {
	defer httpapi.Wrap(&err, "countTenants")
	err = db.QueryRow(ctx, `SELECT count(*) FROM central.tenants`).Scan(&n)
	return n, err
}

// databaseExists reports whether the cluster of db has the database name.
func databaseExists(ctx context.Context, db dbtx, name string) (exists bool, err error) {
	defer httpapi.Wrap(&err, "databaseExists(%s)", name)
	err = db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists)
	return exists, err
}

// createDatabase creates the database name on the cluster of db.
func createDatabase(ctx context.Context, db dbtx, name string) (err error) {
	defer httpapi.Wrap(&err, "createDatabase(%s)", name)
	_, err = db.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	return err
}

// notFound translates a row that is not there into httpapi.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return httpapi.ErrNotFound
	}
	return err
}
