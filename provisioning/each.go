package provisioning

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Level is how far a schema is migrated: the highest tenant migration
// version applied and the number of tenant migrations applied (the
// version alone misses a file numbered below one already applied).
type Level struct {
	Version int64
	Applied int
}

// Placement is a project's row in central.placements: where its schema
// lives and how far it is migrated.
type Placement struct {
	ProjectID string
	Shard     string
	Schema    string
	Level
}

// Row is what Each reads of each placement for fn: Columns is a constant
// select list over central.placements pl joined with central.projects p,
// and Scan reads exactly those columns.
type Row[T any] struct {
	Columns string
	Scan    func(pgx.Row) (T, error)
}

// Placements reads the placement itself.
var Placements = Row[Placement]{
	Columns: `pl.project_id, pl.shard, pl.schema_name, pl.schema_version, pl.migrations_applied`,
	Scan: func(r pgx.Row) (Placement, error) {
		var p Placement
		err := r.Scan(&p.ProjectID, &p.Shard, &p.Schema, &p.Version, &p.Applied)
		return p, err
	},
}

// Query chooses the placements Each visits and how.
type Query struct {
	// Task names the walk in its progress lines and errors ("migrate",
	// a backfill's name).
	Task string
	// Behind, when set, keeps the schemas lacking a migration of a set
	// that is at this level: a lower highest version, or fewer applied.
	Behind *Level
	// Migrated keeps the schemas migrated at least once: a project whose
	// provisioning never finished has no tables to visit.
	Migrated bool
	// Shard, when set, keeps the placements on that shard.
	Shard string
	// Concurrency bounds the fn calls running at once; at least 1.
	Concurrency int
	// Logger receives the progress lines; nil logs nothing.
	Logger *slog.Logger
	// Every is the interval between progress lines (default 2 s).
	Every time.Duration
	// PageSize is the number of placements read per query (default 1000).
	PageSize int
}

// maxErrors caps the per-project errors Each returns: after a broken
// migration every schema fails alike, and ten thousand copies of one
// error help nobody.
const maxErrors = 20

// The filter of a walk. A project being deleted is never visited: its
// schema was renamed out of the way, and migrating its placement would
// create it again. A NULL $1 drops the Behind test and a false $3
// the Migrated one, and a NULL $4 the shard's, so one constant text
// serves every Query.
const (
	walkFilter = `($1::bigint IS NULL OR pl.schema_version < $1 OR pl.migrations_applied < $2)
		AND (NOT $3 OR pl.migrated_at IS NOT NULL)
		AND ($4::text IS NULL OR pl.shard = $4)
		AND pl.project_id NOT IN (SELECT id FROM central.projects WHERE status = 'deleting')`
	walkCount = `SELECT count(*) FROM central.placements pl WHERE ` + walkFilter
)

// Each calls fn with every placement q selects, read by row, at most
// q.Concurrency at once: the one way to visit every project of a shard
// (migrations, backfills), so that none discovers schemas by probing
// the catalog. It counts the placements first (a walk with nothing to do
// is that one query), then reads them in pages ordered by schema name
// (keyset pagination: a page costs the same at the end of 10,000
// placements as at the start, and a placement that leaves the filter
// mid-walk moves nothing), and logs done / total, rate and ETA at most
// every q.Every and once at the end.
//
// One project's failure does not stop the others: the errors are joined
// (the first 20), each naming its schema and project. When ctx ends, the
// walk stops taking placements, waits for the calls in flight and
// returns ctx's error alone: a stop is not a failure of each project.
func Each[T any](ctx context.Context, central *pgxpool.Pool, q Query, row Row[T], fn func(context.Context, T) error) error {
	logger := q.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	every := cmp.Or(q.Every, 2*time.Second)
	pageSize := cmp.Or(q.PageSize, 1000)
	var version, applied any // NULL: no Behind test
	if q.Behind != nil {
		version, applied = q.Behind.Version, q.Behind.Applied
	}
	var shard any // NULL: every shard
	if q.Shard != "" {
		shard = q.Shard
	}
	args := []any{version, applied, q.Migrated, shard}

	start := time.Now()
	var total int
	if err := central.QueryRow(ctx, walkCount, args...).Scan(&total); err != nil {
		return fmt.Errorf("%s: count placements: %w", q.Task, err)
	}
	pr := &progress{task: q.Task, total: total, start: start, logger: logger}
	if total == 0 {
		pr.log(slog.LevelDebug, "nothing to do")
		return nil
	}

	type item struct {
		v                 T
		schema, projectID string
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	items := make(chan item)
	var pageErr error
	go func() {
		defer close(items)
		page := `SELECT ` + row.Columns + `, pl.schema_name, pl.project_id
			FROM central.placements pl JOIN central.projects p ON p.id = pl.project_id
			WHERE ` + walkFilter + ` AND pl.schema_name > $5 ORDER BY pl.schema_name LIMIT $6`
		after := ""
		for {
			rows, err := central.Query(ctx, page, append(args, after, pageSize)...)
			if err != nil {
				pageErr = err
				return
			}
			// The whole page is read before fn sees any of it, so no
			// central connection is held while the workers are busy.
			batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (item, error) {
				var it item
				var err error
				it.v, err = row.Scan(suffixed{r, []any{&it.schema, &it.projectID}})
				return it, err
			})
			if err != nil {
				pageErr = err
				return
			}
			for _, it := range batch {
				if ctx.Err() != nil {
					return
				}
				select {
				case items <- it:
				case <-ctx.Done():
					return
				}
			}
			if len(batch) < pageSize {
				return
			}
			after = batch[len(batch)-1].schema
		}
	}()

	var mu sync.Mutex
	var errs []error // the first maxErrors
	var wg sync.WaitGroup
	for range max(q.Concurrency, 1) {
		wg.Go(func() {
			for it := range items {
				if ctx.Err() != nil {
					continue // drain: the reader stops at its next send
				}
				err := fn(ctx, it.v)
				if err != nil && ctx.Err() != nil {
					continue // stopped, not failed
				}
				if err != nil && pr.failed.Add(1) <= maxErrors {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s (project %s): %w", it.schema, it.projectID, err))
					mu.Unlock()
				}
				pr.done.Add(1)
			}
		})
	}
	ticker := time.NewTicker(every)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	for waiting := true; waiting; {
		select {
		case <-ticker.C:
			pr.log(slog.LevelInfo, "progress")
		case <-finished:
			waiting = false
		}
	}
	ticker.Stop()

	if ctx.Err() != nil {
		// The caller's context: stop runs only on return.
		pr.log(slog.LevelInfo, "stopped")
		return fmt.Errorf("%s stopped after %d of %d: %w", q.Task, pr.done.Load(), total, ctx.Err())
	}
	// Walks are rare (migrations, backfills; nothing walks on a timer),
	// so the summary is always worth a line.
	failed := int(pr.failed.Load())
	pr.log(slog.LevelInfo, "done")
	if pageErr != nil {
		errs = append([]error{fmt.Errorf("read placements: %w", pageErr)}, errs...)
	}
	if failed > maxErrors {
		errs = append(errs, fmt.Errorf("and %d more", failed-maxErrors))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %d of %d failed: %w", q.Task, failed, total, errors.Join(errs...))
	}
	return nil
}

// progress is a walk's counters and its log line.
type progress struct {
	task         string
	total        int
	start        time.Time
	logger       *slog.Logger
	done, failed atomic.Int64
}

func (p *progress) log(level slog.Level, msg string) {
	done := p.done.Load()
	elapsed := time.Since(p.start)
	rate := float64(done) / elapsed.Seconds()
	var eta time.Duration
	if left := p.total - int(done); left > 0 && rate > 0 {
		eta = time.Duration(float64(left) / rate * float64(time.Second))
	}
	p.logger.Log(context.Background(), level, p.task+" "+msg,
		"done", done, "total", p.total, "failed", p.failed.Load(),
		"rate_per_s", math.Round(rate*10)/10, "eta", eta.Round(time.Second), "elapsed", elapsed.Round(time.Millisecond))
}

// suffixed is a row whose Scan also fills dest after the caller's
// destinations: Each's own columns follow Row.Columns.
type suffixed struct {
	pgx.Row
	dest []any
}

func (r suffixed) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.dest...)...) }
