package central

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Central is the control plane the pillars see.
var _ tenant.ControlPlane = (*Central)(nil)

// ForEachProject binds every project whose schema is migrated, with no
// key, and calls fn with each, limit at a time: for work that must visit
// every project (migrations, backfills). The errors are joined, each
// naming its project.
func (c *Central) ForEachProject(ctx context.Context, limit int, fn func(context.Context, *tenant.Scope) error) error {
	rows, err := c.pool.Query(ctx, `SELECT `+projectColumns+` FROM central.projects p JOIN central.placements pl ON pl.project_id = p.id
		WHERE pl.migrated_at IS NOT NULL ORDER BY p.id`)
	if err != nil {
		return err
	}
	projects, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*tenant.Project, error) { return scanProject(row) })
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	errs := make([]error, len(projects))
	for i, p := range projects {
		g.Go(func() error {
			pool, err := c.ShardPool(p.Shard)
			if err == nil {
				var s *tenant.Scope
				if s, err = tenant.NewScope(pool, p, nil); err == nil {
					err = fn(gctx, s)
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("project %s: %w", p.ID, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// LinkPaymentAccount records the project of a processor account; linking
// an account again is a no-op.
func (c *Central) LinkPaymentAccount(ctx context.Context, projectID, accountID string) error {
	_, err := c.pool.Exec(ctx, `INSERT INTO central.payment_accounts (account_id, project_id) VALUES ($1, $2)
		ON CONFLICT (account_id) DO NOTHING`, accountID, projectID)
	return err
}

// ProjectForAccount returns the project a processor account belongs to.
func (c *Central) ProjectForAccount(ctx context.Context, accountID string) (string, error) {
	var pid string
	err := c.pool.QueryRow(ctx, `SELECT project_id FROM central.payment_accounts WHERE account_id = $1`, accountID).Scan(&pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("payment account %s: %w", accountID, httpapi.ErrNotFound)
	}
	return pid, err
}
