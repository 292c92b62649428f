// Package schedule is the scheduled publishing the blog and social pillars
// share: a River job inserted, at the post's time, in the transaction that
// schedules it, so nothing visits a project's schema unless one of its
// posts is due; a backfill for posts scheduled before; and the worker that
// claims the post at its time, with a conditional UPDATE of the pillar's,
// and then does what the pillar does with it, in one transaction.
package schedule

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// Kind names a pillar's scheduled-publish job kind (a zero-size type of
// the pillar's): it makes Args[K] a job type of its own for River.
type Kind interface {
	Kind() string
}

// Args is the River job that acts on one scheduled post at its time.
// ScheduledAt is the post's scheduled_at the job was inserted for; once
// the post is rescheduled, unscheduled, published or deleted it no longer
// matches, and the job does nothing.
type Args[K Kind] struct {
	ProjectID   string    `json:"project_id"`
	PostID      int64     `json:"post_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// Kind implements river.JobArgs.
func (Args[K]) Kind() string {
	var k K
	return k.Kind()
}

// InsertOpts implements river.JobArgsWithInsertOpts: scheduling a post
// again for the same time (a double submit, a replay, EnqueueAll run
// twice) finds the job already there instead of adding another.
func (Args[K]) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Schedule is one pillar's scheduled posts.
type Schedule[K Kind] struct {
	Queue *queue.Client
	// ScheduledSQL reads the id and scheduled_at of every scheduled post
	// (EnqueueAll).
	ScheduledSQL string
	// Claim takes the post if it is still scheduled at at, in one
	// conditional UPDATE (WHERE status = 'scheduled' AND scheduled_at =
	// at): of however many jobs run for the post (a retry, a duplicate),
	// one claims it and the others, like a stale job, find no row.
	Claim func(ctx context.Context, tx pgx.Tx, postID int64, at time.Time) (bool, error)
	// Claimed is what the pillar does with a post it claimed, in the
	// claim's transaction.
	Claimed func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, postID int64) error
	// Early is how long before its time the job is scheduled, to wait in
	// its worker for the exact time. River makes scheduled jobs available
	// on its leader every 5 s (its job scheduler's fixed interval), so a
	// job scheduled at the time may start up to 5 s late; scheduled
	// Early = 6 s ahead it starts on time, holding a worker for the wait.
	// Zero: scheduled at the time.
	Early time.Duration
}

// EarlyForRiver is the Early that starts a job on time: River's job
// scheduler interval (5 s) and a second for the fetch.
const EarlyForRiver = 6 * time.Second

// job is the job of a post scheduled at at, run at that time. at is the
// scheduled_at as stored (microseconds), in UTC so that the same schedule
// always encodes to the same args.
func (sc *Schedule[K]) job(projectID string, postID int64, at time.Time) river.InsertManyParams {
	at = at.UTC()
	return river.InsertManyParams{
		Args:       Args[K]{ProjectID: projectID, PostID: postID, ScheduledAt: at},
		InsertOpts: &river.InsertOpts{ScheduledAt: at.Add(-sc.Early)},
	}
}

// Enqueue inserts, in tx, the job of the post when its scheduled time at
// (as stored) comes.
func (sc *Schedule[K]) Enqueue(ctx context.Context, tx pgx.Tx, s *tenant.Scope, postID int64, at time.Time) error {
	j := sc.job(s.Project.ID, postID, at)
	_, err := sc.Queue.InsertTx(ctx, tx, j.Args, j.InsertOpts)
	return err
}

// EnqueueAll inserts the job of every scheduled post of the project and
// returns how many it inserted. Posts scheduled before scheduling was done
// by these jobs have none; a post that already has its job (same post,
// same time) is skipped, so running it again inserts nothing. A post whose
// time has passed is acted on within seconds.
func (sc *Schedule[K]) EnqueueAll(ctx context.Context, s *tenant.Scope) (int, error) {
	return tenant.TxV(ctx, s, func(tx pgx.Tx) (int, error) {
		return queue.InsertRows(ctx, sc.Queue, tx, sc.ScheduledSQL,
			func(id int64, at time.Time) river.InsertManyParams { return sc.job(s.Project.ID, id, at) })
	})
}

// AddWorker adds the worker of the pillar's scheduled-publish jobs to w.
func (sc *Schedule[K]) AddWorker(w *river.Workers) { river.AddWorker(w, &worker[K]{sc: sc}) }

// worker works Args[K].
type worker[K Kind] struct {
	river.WorkerDefaults[Args[K]]
	sc *Schedule[K]
}

// Work claims the job's post if it is still scheduled for the job's time
// and acts on it, in one transaction, in the project the job gate bound
// (a job whose project is gone never gets here).
func (w *worker[K]) Work(ctx context.Context, job *river.Job[Args[K]]) error {
	a := job.Args
	s, err := tenant.JobScope(ctx)
	if err != nil {
		return err
	}
	// Scheduled Early, it waits for its time; a job run sooner than that
	// by hand (made available ahead: an operator, a test) acts at once.
	if wait := time.Until(a.ScheduledAt); wait > 0 && wait <= w.sc.Early {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Tx(ctx, func(tx pgx.Tx) error {
		claimed, err := w.sc.Claim(ctx, tx, a.PostID, a.ScheduledAt)
		if err != nil || !claimed {
			return err
		}
		return w.sc.Claimed(ctx, tx, s, a.PostID)
	})
}
