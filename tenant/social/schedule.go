package social

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/tenant"
)

// ScheduleArgs is the periodic job that starts the publishing of due
// scheduled posts in every project.
type ScheduleArgs struct{}

// Kind is the River job kind.
func (ScheduleArgs) Kind() string { return "social.schedule" }

// InsertOpts implements river.JobArgsWithInsertOpts: a missed tick is
// made up by the next one, so a failed tick is not retried.
func (ScheduleArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

// ScheduleWorker runs the scheduler's ticks.
type ScheduleWorker struct {
	river.WorkerDefaults[ScheduleArgs]
	sv *Service
}

// Periodic is the scheduler's River periodic job, every interval
// (PLINTH_SCHEDULER_INTERVAL).
func Periodic(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return ScheduleArgs{}, nil },
		&river.PeriodicJobOpts{ID: "social.schedule", RunOnStart: true})
}

// claimBatch is how many due posts one transaction claims.
const claimBatch = 100

// scheduleConcurrency is how many projects a tick checks at once.
const scheduleConcurrency = 4

// Work checks every project for due posts.
func (w *ScheduleWorker) Work(ctx context.Context, _ *river.Job[ScheduleArgs]) error {
	err := w.sv.plane.ForEachProject(ctx, scheduleConcurrency, func(ctx context.Context, s *tenant.Scope) error {
		for {
			n, err := w.sv.ClaimDue(ctx, s, claimBatch)
			if err != nil || n < claimBatch {
				return err
			}
		}
	})
	if err != nil {
		// one project's trouble does not stop the others, nor fail the tick
		w.sv.logger.ErrorContext(ctx, "social: scheduler claim failed", "err", err)
	}
	return nil
}

// ClaimDue starts publishing up to limit due scheduled posts of the
// project and returns how many it claimed. Claiming is one transaction:
// the posts become publishing and their publish jobs are inserted
// together, and rows another claimer holds are skipped (FOR UPDATE SKIP
// LOCKED), so however many schedulers run at once, in however many
// processes, each due post is claimed, and published, once.
func (sv *Service) ClaimDue(ctx context.Context, s *tenant.Scope, limit int) (int, error) {
	return tenant.TxV(ctx, s, func(tx pgx.Tx) (int, error) {
		ids, err := claimDuePosts(ctx, tx, limit)
		if err != nil || len(ids) == 0 {
			return 0, err
		}
		jobs := make([]river.InsertManyParams, len(ids))
		for i, id := range ids {
			jobs[i] = river.InsertManyParams{Args: PublishArgs{ProjectID: s.Project.ID, PostID: id}}
		}
		if _, err := sv.river.InsertManyTx(ctx, tx, jobs); err != nil {
			return 0, err
		}
		return len(ids), nil
	})
}
