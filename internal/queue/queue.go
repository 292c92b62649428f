// Package queue wires River: its tables live once per database in the
// schema "river", and one client per process inserts and works every
// project's jobs.
package queue

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/plinth-dev/plinth/internal/logging"
)

// Schema holds River's tables.
const Schema = "river"

// Client is the River client type used across the service.
type Client = river.Client[pgx.Tx]

// Migrate creates the river schema and applies River's migrations. An
// advisory lock serialises processes that start together (an API and a
// worker), since rivermigrate takes no lock of its own.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('plinth.river.migrate', 0))`); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('plinth.river.migrate', 0))`)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS river`); err != nil {
		return err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: Schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	return nil
}

// Options configure a client.
type Options struct {
	// Work makes the client fetch and work jobs; otherwise it only inserts.
	Work bool
	// Queues and their concurrency (defaults: "default": 50).
	Queues       map[string]river.QueueConfig
	PeriodicJobs []*river.PeriodicJob
	Logger       *slog.Logger
	// FetchPoll is the fallback poll interval (default 1s, River's own).
	// LISTEN wakes fetches sooner, but River sends at most one insert
	// notification per queue per FetchCooldown, so a job inserted within
	// that window of another may wait for the poll. The poll is nearly
	// all an idle process sends PostgreSQL (one fetch per queue per
	// poll): at 100 ms it was 20 statements a second for nothing, so the
	// default keeps River's second and test harnesses, which wait on
	// jobs, shorten it.
	FetchPoll time.Duration
	// FetchCooldown is the least time between two fetches of a queue, and
	// between two insert notifications (default 2ms; River's is 100ms,
	// which puts up to that much latency on bursts).
	FetchCooldown time.Duration
	// TestOnly skips River's start-up jitter of maintenance services.
	TestOnly bool
	// Middleware wraps every job worked (and insert), such as the
	// metrics' context for credit charges.
	Middleware []rivertype.Middleware
}

// New builds the River client over pool with workers.
func New(pool *pgxpool.Pool, workers *river.Workers, o Options) (*Client, error) {
	cfg := &river.Config{
		ID:              NewClientID(),
		Schema:          Schema,
		Logger:          logging.Quiet(o.Logger), // River's info lines are statistics nobody reads daily
		Middleware:      o.Middleware,
		SoftStopTimeout: 10 * time.Second,
		FetchCooldown:   2 * time.Millisecond,
		TestOnly:        o.TestOnly,
	}
	if o.FetchCooldown > 0 {
		cfg.FetchCooldown = o.FetchCooldown
	}
	if o.Work {
		cfg.Workers = workers
		cfg.Queues = o.Queues
		if cfg.Queues == nil {
			cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 50}}
		}
		cfg.PeriodicJobs = o.PeriodicJobs
		cfg.FetchPollInterval = max(time.Second, cfg.FetchCooldown)
		if o.FetchPoll > 0 {
			cfg.FetchPollInterval = o.FetchPoll
		}
	}
	return river.NewClient(riverpgxv5.New(pool), cfg)
}

// InsertNew inserts jobs in tx and returns how many it added: a unique job
// (river.UniqueOpts) already there is skipped, so a backfill that runs
// twice adds nothing the second time.
func InsertNew(ctx context.Context, c *Client, tx pgx.Tx, jobs []river.InsertManyParams) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	res, err := c.InsertManyTx(ctx, tx, jobs)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range res {
		if !r.UniqueSkippedAsDuplicate {
			n++
		}
	}
	return n, nil
}

// InsertRows inserts, in tx, the job build makes of each (id, time) row
// that sql selects, and returns how many it added: jobs already there
// (unique by args) are skipped, so a backfill that runs twice adds
// nothing the second time.
func InsertRows(ctx context.Context, c *Client, tx pgx.Tx, sql string, build func(id int64, at time.Time) river.InsertManyParams) (int, error) {
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return 0, err
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (river.InsertManyParams, error) {
		var id int64
		var at time.Time
		err := r.Scan(&id, &at)
		return build(id, at), err
	})
	if err != nil {
		return 0, err
	}
	return InsertNew(ctx, c, tx, jobs)
}
