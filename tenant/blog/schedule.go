package blog

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/tenant"
)

// ScheduleArgs is the periodic River job that publishes the due scheduled
// posts of every project.
type ScheduleArgs struct{}

// Kind implements river.JobArgs.
func (ScheduleArgs) Kind() string { return "blog.schedule" }

// InsertOpts implements river.JobArgsWithInsertOpts: a failed tick is not
// retried, the next one makes up for it.
func (ScheduleArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

// Periodic is the scheduler's periodic job, every interval
// (PLINTH_SCHEDULER_INTERVAL). River enqueues periodic jobs on its
// elected leader only; should two ticks still run at once (a leader
// change, a slow tick), each post is claimed by one of them (see
// PublishDue).
func Periodic(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return ScheduleArgs{}, nil },
		&river.PeriodicJobOpts{ID: "blog.schedule", RunOnStart: true})
}

// ScheduleWorker works ScheduleArgs.
type ScheduleWorker struct {
	river.WorkerDefaults[ScheduleArgs]
	sv *Service
}

// scheduleConcurrency is how many projects one tick checks at once.
const scheduleConcurrency = 4

// claimBatch bounds the posts one transaction publishes.
const claimBatch = 100

// Work publishes the due posts of every project; one project's failure
// does not hold up the others and is reported at the end.
func (w *ScheduleWorker) Work(ctx context.Context, _ *river.Job[ScheduleArgs]) error {
	_, err := w.sv.PublishAllDue(ctx)
	return err
}

// PublishAllDue publishes the due scheduled posts of every project and
// returns how many it published.
func (sv *Service) PublishAllDue(ctx context.Context) (int, error) {
	var total atomic.Int64
	err := sv.plane.ForEachProject(ctx, scheduleConcurrency, func(ctx context.Context, s *tenant.Scope) error {
		for {
			posts, err := sv.PublishDue(ctx, s, claimBatch)
			total.Add(int64(len(posts)))
			if err != nil || len(posts) < claimBatch {
				return err
			}
		}
	})
	return int(total.Load()), err
}

// PublishDue publishes up to limit posts of the project whose scheduled
// time has come, with one blog_post.published each, and returns them.
// The claim and the events are one transaction, and rows another claimer
// holds are skipped (FOR UPDATE SKIP LOCKED) while a row it has already
// published no longer matches status 'scheduled': however many
// schedulers run at once, in however many processes, each due post is
// published, and announced, once.
func (sv *Service) PublishDue(ctx context.Context, s *tenant.Scope, limit int) ([]Post, error) {
	out, err := tenant.TxV(ctx, s, func(tx pgx.Tx) ([]Post, error) {
		ids, err := claimDue(ctx, tx, limit)
		if err != nil {
			return nil, err
		}
		out := make([]Post, 0, len(ids))
		for _, id := range ids {
			p, err := loadPostID(ctx, tx, id, false)
			if err != nil {
				return nil, err
			}
			post := toAPIPost(p, p.Language)
			if err := sv.emit(ctx, tx, s, TopicPublished, post); err != nil {
				return nil, err
			}
			out = append(out, post)
		}
		return out, nil
	})
	if err != nil {
		return nil, err // the claim rolled back: nothing was published
	}
	return out, nil
}
