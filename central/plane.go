package central

import (
	"context"

	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
)

// Central is the control plane the pillars see.
var _ tenant.ControlPlane = (*Central)(nil)

// ForEachProject binds every project whose schema is migrated, with no
// key, and calls fn with each, limit at a time: for the rare work that
// must visit every project (backfills; nothing on a timer). It walks the
// placements with provisioning.Each, a page at a time, logging progress
// as task, so memory stays flat however many projects the shard holds.
// The errors are joined, each naming its project.
func (c *Central) ForEachProject(ctx context.Context, task string, limit int, fn func(context.Context, *tenant.Scope) error) error {
	q := provisioning.Query{Task: task, Migrated: true, Concurrency: limit, Logger: c.logger}
	return provisioning.Each(ctx, c.pool, q, projectRow, func(ctx context.Context, p *tenant.Project) error {
		s, err := c.scope(p, nil)
		if err != nil {
			return err
		}
		return fn(ctx, s)
	})
}

// LinkPaymentAccount records the project of a processor account; linking
// an account again is a no-op.
func (c *Central) LinkPaymentAccount(ctx context.Context, projectID, accountID string) error {
	return linkPaymentAccount(ctx, c.pool, projectID, accountID)
}

// ProjectForAccount returns the project a processor account belongs to.
func (c *Central) ProjectForAccount(ctx context.Context, accountID string) (string, error) {
	return accountProject(ctx, c.pool, accountID)
}
