package blog

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/schedule"
)

// PublishScheduledArgs is the River job that publishes one scheduled post
// at its time (tenant/schedule): once the post is rescheduled,
// unscheduled, published, archived or deleted it no longer matches, and
// the job does nothing.
type PublishScheduledArgs = schedule.Args[publishScheduled]

// EnqueueScheduled inserts the publish job of every scheduled post of the
// project and returns how many it inserted (schedule.Schedule.EnqueueAll:
// running it again inserts nothing).
func (sv *Service) EnqueueScheduled(ctx context.Context, s *tenant.Scope) (int, error) {
	return sv.scheduled.EnqueueAll(ctx, s)
}

// publishClaimed announces a scheduled post its job published
// (claimScheduled), in the claim's transaction. The job publishes the
// live post as it was scheduled and leaves a pending draft as it is:
// only an explicit POST .../publish applies a draft, so edits made after
// the schedule never go live unreviewed (the event's has_draft tells).
func (sv *Service) publishClaimed(ctx context.Context, tx pgx.Tx, s *tenant.Scope, postID int64) error {
	p, err := loadPostID(ctx, tx, postID, false)
	if err != nil {
		return err
	}
	if err := markPosts(ctx, tx, []*postRow{p}); err != nil {
		return err
	}
	return sv.emit(ctx, tx, s, TopicPublished, toAPIPost(p, nil))
}
