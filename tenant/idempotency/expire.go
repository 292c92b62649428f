package idempotency

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/plinth-dev/plinth/tenant"
)

// ExpireArgs is the River job that deletes one project's expired entries.
// It exists only while the project has entries: the key reservation that
// finds no live job of the project inserts one, and the job completes
// once the table is empty. Nothing visits the projects that stored none.
type ExpireArgs struct {
	ProjectID string `json:"project_id"`
}

// Kind implements river.JobArgs.
func (ExpireArgs) Kind() string { return "idempotency.expire" }

// InsertOpts makes the job unique per project among live jobs. The states
// leave out completed, which River's default keeps: a completed job stays
// in river_job for a day, and a key reserved meanwhile needs a new job.
func (ExpireArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

const (
	// expirySlack is added to every expiry the job waits for, so that a
	// busy project's job runs at most about once per slack, deleting the
	// keys of that stretch together, rather than once per key.
	expirySlack = 10 * time.Minute
	// expiryMargin is how long before its job is due a cached entry stops
	// sparing the insert: a reservation made in the last moments could
	// still be in flight when the job looks at the table.
	expiryMargin = time.Minute
	// expireBatch rows per DELETE, expireRounds DELETEs per run: a run
	// stays short and each statement's transaction small.
	expireBatch  = 1000
	expireRounds = 10
	// expireAgain is when a run that left expired rows behind continues.
	expireAgain = time.Second
	// maxCached bounds the projects whose job a process remembers.
	maxCached = 100_000
)

// expiryOpts schedules a project's job for just after the key reserved
// now expires.
func expiryOpts(now time.Time) *river.InsertOpts {
	return &river.InsertOpts{ScheduledAt: now.Add(TTL + expirySlack)}
}

// expiries remembers, per project, until when the expiry job this process
// inserted (or found) is known not to have run. Until then a new key needs
// no insert: the job will see the key's row when it runs. It spares the
// hot path the River insert, a round trip and a lock on the job's row.
type expiries struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// covered reports whether the project's job is known to be still ahead.
func (e *expiries) covered(projectID string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.until[projectID]
	return ok && now.Before(t)
}

// set records that the project's job will not run before until.
func (e *expiries) set(projectID string, until, now time.Time) {
	if !now.Before(until) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.until == nil {
		e.until = map[string]time.Time{}
	}
	if len(e.until) >= maxCached {
		maps.DeleteFunc(e.until, func(_ string, t time.Time) bool { return !now.Before(t) })
		if len(e.until) >= maxCached {
			// Every entry is live: start over rather than sweep on each
			// insert. A forgotten project costs one insert, a no-op.
			clear(e.until)
		}
	}
	e.until[projectID] = until
}

// ExpireWorker works ExpireArgs.
type ExpireWorker struct {
	river.WorkerDefaults[ExpireArgs]
}

// Work deletes the project's expired entries, then waits (snoozes) for the
// first of those left to expire, or completes when none is left. Snoozing
// does not use up attempts in River: the job lives as long as the keys.
func (w *ExpireWorker) Work(ctx context.Context, job *river.Job[ExpireArgs]) error {
	s, err := tenant.JobScope(ctx) // bound by the job gate
	if err != nil {
		return err
	}
	for range expireRounds {
		n, err := deleteExpired(ctx, s)
		if err != nil {
			return err
		}
		if n < expireBatch {
			return complete(ctx, s, job)
		}
	}
	// More expired rows than a run deletes: the rest in a moment, after
	// the other jobs of the queue had their turn.
	return river.JobSnooze(expireAgain)
}

// deleteExpired deletes up to expireBatch expired entries, reservations
// whose lease lapsed included (expires_at governs). A row that a
// reservation is taking over is locked by it and skipped: it is no longer
// expired once that commits.
func deleteExpired(ctx context.Context, s *tenant.Scope) (int64, error) {
	return tenant.TxV(ctx, s, func(tx pgx.Tx) (int64, error) {
		tag, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE (key_id, key) IN (
			SELECT key_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)`, expireBatch)
		return tag.RowsAffected(), err
	})
}

// complete marks the job completed when the project has no entries left,
// or snoozes it until the first of them expires.
//
// Completing takes a SHARE lock on the table, which waits for the
// reservations in flight and holds off new ones until the completion
// commits. A reservation that committed before is seen here; one after it
// finds no live job and inserts one. Without the lock a reservation could
// commit between the check and River's completion, its insert a no-op
// against the still-running job, and its row would have no job.
func complete(ctx context.Context, s *tenant.Scope, job *river.Job[ExpireArgs]) error {
	var next *time.Time
	var now time.Time
	earliest := func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT min(expires_at), now() FROM idempotency_keys`).Scan(&next, &now)
	}
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		if err := earliest(tx); err != nil || next != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE idempotency_keys IN SHARE MODE`); err != nil {
			return err
		}
		if err := earliest(tx); err != nil || next != nil {
			return err
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	switch {
	case err != nil:
		return err
	case next == nil:
		return nil
	case !next.After(now):
		return river.JobSnooze(expireAgain) // a row expired since the DELETE, or one was locked
	default:
		return river.JobSnooze(next.Sub(now) + expirySlack)
	}
}
