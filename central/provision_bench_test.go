package central_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/pgtest"
)

type benchCentral struct {
	db     *pgtest.DB
	c      *central.Central
	tenant int64
}

func newBenchCentral(b *testing.B) *benchCentral {
	b.Helper()
	ctx := context.Background()
	db := pgtest.New(b)
	c, err := central.Open(ctx, db.Pool, "bench-secret", time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	t, _, err := c.CreateTenant(ctx, "Bench", db.Name+".bench", "bench@example.com", "password-123")
	if err != nil {
		b.Fatal(err)
	}
	return &benchCentral{db: db, c: c, tenant: t.ID}
}

var benchSeq atomic.Int64

func (bc *benchCentral) create(ctx context.Context) (time.Duration, error) {
	name := fmt.Sprintf("Bench site %d", benchSeq.Add(1)) // distinct: no slug probing
	start := time.Now()
	_, err := bc.c.CreateProject(ctx, central.ProjectParams{TenantID: bc.tenant, Name: name, Plan: "build"})
	return time.Since(start), err
}

func (bc *benchCentral) schemas(b *testing.B) int {
	b.Helper()
	var n int
	if err := bc.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'project\_%'`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// reset drops the projects (and schemas) after the first keep.
func (bc *benchCentral) reset(b *testing.B, keep int) {
	b.Helper()
	ctx := context.Background()
	rows, err := bc.db.Pool.Query(ctx, `SELECT pl.schema_name FROM central.placements pl JOIN central.projects p ON p.id = pl.project_id
		ORDER BY p.seq OFFSET $1`, keep)
	if err != nil {
		b.Fatal(err)
	}
	schemas, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range schemas {
		if _, err := bc.db.Pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{s}.Sanitize()+` CASCADE`); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := bc.db.Pool.Exec(ctx, `DELETE FROM central.projects WHERE id IN (SELECT id FROM central.projects ORDER BY seq OFFSET $1)`, keep); err != nil {
		b.Fatal(err)
	}
	if len(schemas) > 0 {
		if _, err := bc.db.Pool.Exec(ctx, `VACUUM pg_class, pg_attribute, pg_type, pg_depend, pg_namespace, pg_index, pg_constraint, pg_attrdef, pg_sequence,
			central.projects, central.placements`); err != nil {
			b.Fatal(err)
		}
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkCreateProject measures central.CreateProject (the central rows,
// the schema and every tenant migration) on a database holding no project
// schema and, side by side, on one holding 1,000, alternating between the
// two; the second database holds 1,000 to 1,000+b.N schemas during a run.
// It reports p50 and p95 of each and the p95 ratio.
func BenchmarkCreateProject(b *testing.B) {
	ctx := context.Background()
	full := newBenchCentral(b)

	const existing = 1000
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := 0; i < existing; i++ {
		g.Go(func() error { _, err := full.create(gctx); return err })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d project schemas in %v", full.schemas(b), time.Since(start).Round(time.Millisecond))

	b.Run(fmt.Sprintf("0_vs_%d_schemas", existing), func(b *testing.B) {
		// A new database each run (dropped with it) for the side at 0;
		// the other loses the projects of the previous run, and its
		// catalogs their dead rows.
		fresh := newBenchCentral(b)
		full.reset(b, existing)
		if n := full.schemas(b); n != existing {
			b.Fatalf("%d schemas, want %d", n, existing)
		}
		b.ResetTimer()
		var at0, atN []time.Duration
		type side struct {
			bc  *benchCentral
			out *[]time.Duration
		}
		// At least 40 samples a side, so that p95 means something even
		// when a slow machine makes b.N small.
		samples := max(b.N, 40)
		start := time.Now()
		for i := 0; i < samples; i++ {
			order := []side{{fresh, &at0}, {full, &atN}}
			if i%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, side := range order {
				d, err := side.bc.create(ctx)
				if err != nil {
					b.Fatal(err)
				}
				*side.out = append(*side.out, d)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(samples), "ns/op")
		b.ReportMetric(ms(percentile(at0, 0.50)), "p50_ms_at_0")
		b.ReportMetric(ms(percentile(at0, 0.95)), "p95_ms_at_0")
		b.ReportMetric(ms(percentile(atN, 0.50)), fmt.Sprintf("p50_ms_at_%d", existing))
		b.ReportMetric(ms(percentile(atN, 0.95)), fmt.Sprintf("p95_ms_at_%d", existing))
		b.ReportMetric(float64(percentile(atN, 0.95))/float64(percentile(at0, 0.95)), "p95_ratio")
	})
}
