package central_test

import (
	"context"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning"
)

// TestCreateProjectConcurrentNames: projects of one name created at once
// in one workspace all succeed, each with its own slug and schema.
func TestCreateProjectConcurrentNames(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	const n = 8
	g, gctx := errgroup.WithContext(ctx)
	slugs := make([]string, n)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			p, err := env.Server.Central.CreateProject(gctx, central.ProjectParams{TenantID: env.TenantID(), Name: "Same Name"})
			if err == nil {
				slugs[i] = p.Slug
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range slugs {
		if seen[s] {
			t.Fatalf("slug %q given twice: %v", s, slugs)
		}
		seen[s] = true
	}
	if !seen["same-name"] || !seen["same-name-8"] {
		t.Fatalf("slugs %v, want same-name … same-name-8", slugs)
	}
	latest, _ := provisioning.LatestTenantVersion()
	var ok int
	if err := env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.placements WHERE schema_version = $1 AND to_regclass(schema_name || '.credit_pools') IS NOT NULL`, latest).Scan(&ok); err != nil || ok != n {
		t.Fatalf("%d of %d schemas provisioned (%v)", ok, n, err)
	}
}
