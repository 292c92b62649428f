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
	"github.com/plinth-dev/plinth/provisioning/pgtest"
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

// fill creates n projects, eight at a time.
func (bc *benchCentral) fill(b *testing.B, n int) {
	b.Helper()
	g, gctx := errgroup.WithContext(context.Background())
	g.SetLimit(8)
	for i := 0; i < n; i++ {
		g.Go(func() error { _, err := bc.create(gctx); return err })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCreateProject measures central.CreateProject (the central rows,
// the schema and every tenant migration) side by side, alternating, on
// three databases:
//
//   - at_0: no project schema; it held 300, since dropped and vacuumed, so
//     its catalogs have the size and history of a database in service;
//   - at_1000: 1,000 project schemas (1,000 to 1,000+b.N during a run);
//   - new_db: a database just created (tiny catalogs, which autovacuum
//     churns while the first projects arrive).
//
// The number of existing schemas is the only difference between at_0 and
// at_1000; p95_ratio compares them.
func BenchmarkCreateProject(b *testing.B) {
	const existing = 1000
	start := time.Now()
	full, empty := newBenchCentral(b), newBenchCentral(b)
	full.fill(b, existing)
	empty.fill(b, 300)
	b.Logf("setup: %d and %d project schemas in %v", full.schemas(b), empty.schemas(b), time.Since(start).Round(time.Millisecond))

	b.Run(fmt.Sprintf("0_vs_%d_schemas", existing), func(b *testing.B) {
		ctx := context.Background()
		// Back to 0 and 1,000 schemas, dead catalog rows vacuumed; a new
		// database each run (dropped with it).
		empty.reset(b, 0)
		full.reset(b, existing)
		if n, m := empty.schemas(b), full.schemas(b); n != 0 || m != existing {
			b.Fatalf("%d and %d schemas, want 0 and %d", n, m, existing)
		}
		young := newBenchCentral(b)
		b.ResetTimer()
		sides := []*benchCentral{empty, full, young}
		lat := make([][]time.Duration, len(sides))
		// At least 40 samples a side, so that p95 means something even
		// when a slow machine makes b.N small.
		samples := max(b.N, 40)
		start := time.Now()
		for i := 0; i < samples; i++ {
			for j := range sides {
				k := (i + j) % len(sides) // rotate the order
				d, err := sides[k].create(ctx)
				if err != nil {
					b.Fatal(err)
				}
				lat[k] = append(lat[k], d)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(samples), "ns/op")
		for k, name := range []string{"at_0", fmt.Sprintf("at_%d", existing), "new_db"} {
			b.ReportMetric(ms(percentile(lat[k], 0.50)), "p50_ms_"+name)
			b.ReportMetric(ms(percentile(lat[k], 0.95)), "p95_ms_"+name)
		}
		b.ReportMetric(float64(percentile(lat[1], 0.95))/float64(percentile(lat[0], 0.95)), "p95_ratio")
	})
}
