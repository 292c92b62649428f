package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"testing/fstest"
	"time"

	"github.com/plinth-dev/plinth/provisioning"
)

// BenchmarkMigrateAll adds one column to every one of 200 schemas per
// iteration, at several concurrencies: the cost per schema of the
// common migration, which sets DefaultConcurrency.
func BenchmarkMigrateAll(b *testing.B) {
	const n = 2000
	db := provisioned(b, n)
	ctx := context.Background()
	base := fstest.MapFS{}
	for name, f := range tenantFS(b) {
		base[name] = f
	}
	version := 9000 // after every embedded migration
	for _, conc := range []int{8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				version++
				fsys := fstest.MapFS{}
				for name, f := range base {
					fsys[name] = f
				}
				fsys[fmt.Sprintf("%04d_col.sql", version)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("-- +goose Up\nALTER TABLE credit_pools ADD COLUMN c%d text;\n", version))}
				start := time.Now()
				migrated, err := migrateAll(ctx, db.Pool, provisioning.Options{Concurrency: conc, Migrations: fsys})
				took += time.Since(start)
				if err != nil || migrated != n {
					b.Fatalf("migrated %d of %d (%v)", migrated, n, err)
				}
			}
			b.ReportMetric(float64(took.Nanoseconds())/float64(b.N*n), "ns/schema")
		})
	}
}
