package blog

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// PublishScheduledArgs is the River job that publishes one scheduled post
// at its time: River runs it then, and it is inserted in the transaction
// that schedules the post, so nothing visits a project's schema unless
// one of its posts is due. ScheduledAt is the post's scheduled_at the job was inserted for;
// once the post is rescheduled, unscheduled, published, archived or
// deleted it no longer matches, and the job does nothing.
type PublishScheduledArgs struct {
	ProjectID   string    `json:"project_id"`
	PostID      int64     `json:"post_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// Kind implements river.JobArgs.
func (PublishScheduledArgs) Kind() string { return "blog.publish_scheduled" }

// InsertOpts implements river.JobArgsWithInsertOpts: scheduling a post
// again for the same time (a double submit, a replay, EnqueueScheduled
// run twice) finds the job already there instead of adding another.
func (PublishScheduledArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// scheduledJob is the job of a post scheduled at at, run at that time.
// at is the scheduled_at as stored (microseconds), in UTC so that the
// same schedule always encodes to the same args.
func scheduledJob(projectID string, postID int64, at time.Time) river.InsertManyParams {
	at = at.UTC()
	return river.InsertManyParams{
		Args:       PublishScheduledArgs{ProjectID: projectID, PostID: postID, ScheduledAt: at},
		InsertOpts: &river.InsertOpts{ScheduledAt: at},
	}
}

// enqueuePublish inserts, in tx, the job that publishes the post when its
// scheduled time at (as stored) comes.
func (sv *Service) enqueuePublish(ctx context.Context, tx pgx.Tx, s *tenant.Scope, postID int64, at time.Time) error {
	j := scheduledJob(s.Project.ID, postID, at)
	_, err := sv.river.InsertTx(ctx, tx, j.Args, j.InsertOpts)
	return err
}

// EnqueueScheduled inserts the publish job of every scheduled post of the
// project and returns how many it inserted. Posts scheduled before
// scheduling was done by these jobs have none; a post that already has
// its job (same post, same time) is skipped, so running it again inserts
// nothing. A post whose time has passed is published within seconds.
func (sv *Service) EnqueueScheduled(ctx context.Context, s *tenant.Scope) (int, error) {
	return tenant.TxV(ctx, s, func(tx pgx.Tx) (int, error) {
		return queue.InsertRows(ctx, sv.river, tx, scheduledPostsSQL,
			func(id int64, at time.Time) river.InsertManyParams { return scheduledJob(s.Project.ID, id, at) })
	})
}

// publishScheduledWorker works PublishScheduledArgs.
type publishScheduledWorker struct {
	river.WorkerDefaults[PublishScheduledArgs]
	sv *Service
}

// Work publishes the job's post, with its blog_post.published, if it is
// still scheduled for the job's time. The claim is one conditional
// UPDATE: of however many jobs run for the post (a retry, a duplicate),
// one publishes it and the others, like a stale job, find no row. A job
// whose project is gone has nothing left to do.
func (w *publishScheduledWorker) Work(ctx context.Context, job *river.Job[PublishScheduledArgs]) error {
	a := job.Args
	s, err := tenant.JobScope(ctx) // bound by the job gate
	if err != nil {
		return err
	}
	return s.Tx(ctx, func(tx pgx.Tx) error {
		claimed, err := claimScheduled(ctx, tx, a.PostID, a.ScheduledAt)
		if err != nil || !claimed {
			return err
		}
		p, err := loadPostID(ctx, tx, a.PostID, false)
		if err != nil {
			return err
		}
		return w.sv.emit(ctx, tx, s, TopicPublished, toAPIPost(p, p.Language))
	})
}
