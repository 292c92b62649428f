package central

import (
	"context"
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/provisioning"
)

// Spare schemas (docs/operations.md): creating every table of a new
// project schema costs tens of milliseconds of PostgreSQL's CPU, so a few
// schemas are created ahead and a new project claims one (insertProject).
// KeepSpares refills them after each claim; it does nothing while no
// project is created, so idle projects still cost nothing.

// kickSpares wakes the filler; a wake-up already pending is enough.
func (c *Central) kickSpares() {
	select {
	case c.spares <- struct{}{}:
	default:
	}
}

// KeepSpares keeps want current spare schemas on every active shard until
// ctx ends: at start, after every project creation, and when a shard is
// added (AddShard kicks it on the instance that added it; the others
// refill at their next creation). Two instances may
// both refill at once and overshoot by up to want each; the extra spares
// are claimed by the next creations.
func (c *Central) KeepSpares(ctx context.Context, want int) {
	if want <= 0 {
		return
	}
	c.kickSpares()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.spares:
		}
		if err := c.refillSpares(ctx, want); err != nil && ctx.Err() == nil {
			c.logger.Warn("refilling spare project schemas", "err", err)
		}
	}
}

// refillSpares refills the spares of every active shard, one after
// another.
func (c *Central) refillSpares(ctx context.Context, want int) error {
	shards, err := c.ListShards(ctx, false)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range shards {
		if s.State != ShardActive {
			continue
		}
		if err := c.refillShardSpares(ctx, s.Name, want); err != nil {
			errs = append(errs, fmt.Errorf("shard %s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// refillShardSpares drops the spares of shard that older migrations
// built, then creates current ones until want are ready.
func (c *Central) refillShardSpares(ctx context.Context, shard string, want int) error {
	latest, count, err := provisioning.TenantVersion()
	if err != nil {
		return err
	}
	pool, err := c.ShardPool(shard)
	if err != nil {
		return err
	}
	stale, err := staleSpares(ctx, c.pool, shard, latest, count)
	if err != nil {
		return err
	}
	for _, schema := range stale {
		if err := provisioning.DropSpare(ctx, c.pool, pool, schema); err != nil {
			return fmt.Errorf("drop stale spare %s: %w", schema, err)
		}
	}
	for {
		// The name is taken from the projects' sequence only when a spare
		// is needed, so a full set costs no sequence values.
		have, err := countSpares(ctx, c.pool, shard, latest, count)
		if err != nil {
			return err
		}
		if have >= want {
			return nil
		}
		next, err := nextProjectSeq(ctx, c.pool)
		if err != nil {
			return err
		}
		schema := fmt.Sprintf("project_%d", next)
		if err := provisioning.CreateSpare(ctx, c.pool, pool, shard, schema); err != nil {
			return fmt.Errorf("create spare %s: %w", schema, err)
		}
		c.logger.Debug("created spare project schema", "shard", shard, "schema", schema)
	}
}
