package central

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/plinth-dev/plinth/tenant"
)

// A backfill brings every existing project up to what new code expects of
// it, once per database: it runs after the migrations (plinth migrate,
// plinth serve) through ForEachProject and is recorded in central.settings
// as "backfill:<name>" when every project succeeded.
type backfill struct {
	name string
	run  func(context.Context, *tenant.Scope) (int, error)
}

// backfillConcurrency is how many projects a backfill works on at once.
const backfillConcurrency = 4

// Backfill runs the backfills this database has not had yet.
func (s *Server) Backfill(ctx context.Context) error {
	for _, b := range s.backfills {
		key := "backfill:" + b.name
		done, err := backfillDone(ctx, s.Pool, key)
		if err != nil {
			return err
		}
		if done {
			continue
		}
		var total atomic.Int64
		err = s.Central.ForEachProject(ctx, "backfill "+b.name, backfillConcurrency, func(ctx context.Context, sc *tenant.Scope) error {
			n, err := b.run(ctx, sc)
			total.Add(int64(n))
			return err
		})
		if err != nil {
			return fmt.Errorf("backfill %s: %w", b.name, err)
		}
		if err := recordBackfill(ctx, s.Pool, key); err != nil {
			return err
		}
		s.logger.Info("backfilled", "backfill", b.name, "rows", total.Load())
	}
	return nil
}
