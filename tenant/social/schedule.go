package social

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/schedule"
)

// PublishScheduledArgs is the River job that starts publishing one
// scheduled post at its time (tenant/schedule): once the post is
// rescheduled, unscheduled, published or deleted it no longer matches,
// and the job does nothing.
type PublishScheduledArgs = schedule.Args[startScheduled]

// startScheduled is the kind of the job (schedule.Kind).
type startScheduled struct{}

func (startScheduled) Kind() string { return "social.publish_scheduled" }

// enqueuePublish inserts, in tx, the job that starts publishing p when its
// scheduled time comes; p is the post as stored, so that the job's time
// matches the row. A post that is not scheduled needs none.
func (sv *Service) enqueuePublish(ctx context.Context, tx pgx.Tx, s *tenant.Scope, p Post) error {
	if p.Status != StatusScheduled {
		return nil
	}
	return sv.scheduled.Enqueue(ctx, tx, s, p.ID, *p.ScheduledAt)
}

// EnqueueScheduled inserts the job of every scheduled post of the project
// and returns how many it inserted (schedule.Schedule.EnqueueAll: running
// it again inserts nothing).
func (sv *Service) EnqueueScheduled(ctx context.Context, s *tenant.Scope) (int, error) {
	return sv.scheduled.EnqueueAll(ctx, s)
}

// startClaimed starts publishing a scheduled post its job claimed: the
// post is publishing (a new run, claimScheduled) and its publish job is
// inserted in the claim's transaction, as POST .../publish does. No key:
// the publish's events draw on the live pool.
func (sv *Service) startClaimed(ctx context.Context, tx pgx.Tx, s *tenant.Scope, postID int64) error {
	_, err := sv.river.InsertTx(ctx, tx, PublishArgs{ProjectID: s.Project.ID, PostID: postID}, nil)
	return err
}
