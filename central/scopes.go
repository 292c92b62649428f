package central

import (
	"context"

	"github.com/plinth-dev/plinth/tenant"
)

// ProjectScopes binds every project whose schema is provisioned, with no
// key: for background work that visits all projects (the schedulers).
func (c *Central) ProjectScopes(ctx context.Context) ([]*tenant.Scope, error) {
	rows, err := c.pool.Query(ctx, `SELECT `+projectColumns+` FROM central.projects p JOIN central.placements pl ON pl.project_id = p.id
		WHERE pl.migrated_at IS NOT NULL ORDER BY p.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*tenant.Scope
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, err
		}
		pool, err := c.ShardPool(p.Shard)
		if err != nil {
			return nil, err
		}
		s, err := tenant.NewScope(pool, p, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
