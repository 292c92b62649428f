package idempotency

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/tenant"
)

// CleanupArgs is the periodic River job that deletes expired entries in
// every project schema.
type CleanupArgs struct{}

// Kind implements river.JobArgs.
func (CleanupArgs) Kind() string { return "idempotency.cleanup" }

// CleanupInterval is how often expired entries are deleted. Expired rows
// are ignored (and reused) before then, so it only bounds table size.
const CleanupInterval = time.Hour

// CleanupWorker works CleanupArgs.
type CleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	Projects tenant.ControlPlane
}

// PeriodicCleanup is the periodic job to register with the River client.
func PeriodicCleanup() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(CleanupInterval),
		func() (river.JobArgs, *river.InsertOpts) { return CleanupArgs{}, nil },
		&river.PeriodicJobOpts{ID: "idempotency.cleanup", RunOnStart: true})
}

// Work deletes expired entries project by project; a project that fails
// is reported after the others are done.
func (w *CleanupWorker) Work(ctx context.Context, _ *river.Job[CleanupArgs]) error {
	_, err := CleanupAll(ctx, w.Projects)
	return err
}

// CleanupAll deletes expired entries in every project schema and returns
// how many were deleted.
func CleanupAll(ctx context.Context, p tenant.ControlPlane) (int64, error) {
	var total atomic.Int64
	err := p.ForEachProject(ctx, 1, func(ctx context.Context, s *tenant.Scope) error {
		n, err := Cleanup(ctx, s)
		total.Add(n)
		return err
	})
	return total.Load(), err
}
