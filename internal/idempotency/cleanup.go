package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
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

// Projects is what the cleanup needs of the control plane.
type Projects interface {
	Pool() *pgxpool.Pool
	ScopeFor(ctx context.Context, projectID string) (*tenant.Scope, error)
}

// CleanupWorker works CleanupArgs.
type CleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	Projects Projects
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
func CleanupAll(ctx context.Context, p Projects) (int64, error) {
	rows, err := p.Pool().Query(ctx, `SELECT project_id FROM central.placements ORDER BY project_id`)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	var total int64
	var errs []error
	for _, id := range ids {
		s, err := p.ScopeFor(ctx, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("project %s: %w", id, err))
			continue
		}
		n, err := Cleanup(ctx, s)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
			continue // schema not migrated yet
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("project %s: %w", id, err))
			continue
		}
		total += n
	}
	return total, errors.Join(errs...)
}
