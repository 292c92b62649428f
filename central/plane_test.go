package central_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
)

// TestForEachProject: every migrated project is bound with its full row
// (project columns, schema, shard), one that never finished provisioning
// is left out, and one project's failure is reported by its id while the
// others are still visited.
func TestForEachProject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	c, err := central.Open(ctx, db.Pool, "plane-secret", time.Minute, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tn, _, err := c.CreateTenant(ctx, "Plane", "plane.test", "plane@example.com", "password-123")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*tenant.Project{}
	for _, name := range []string{"Alpha", "Beta", "Gamma"} {
		p, err := c.CreateProject(ctx, central.ProjectParams{TenantID: tn.ID, Name: name, Plan: "build", TargetLanguages: []string{"fr"}})
		if err != nil {
			t.Fatal(err)
		}
		want[p.ID] = p
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO central.projects (id, seq, tenant_id, name, slug) VALUES ('prj_unprovisioned', 900, $1, 'U', 'u')`, tn.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO central.placements (project_id, schema_name) VALUES ('prj_unprovisioned', 'project_900')`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]*tenant.Project{}
	var broken string
	for id := range want {
		broken = id
		break
	}
	err = c.ForEachProject(ctx, "test walk", 2, func(ctx context.Context, s *tenant.Scope) error {
		mu.Lock()
		got[s.Project.ID] = s.Project
		mu.Unlock()
		if s.Project.ID == broken {
			return errors.New("backfill failed")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "(project "+broken+"): backfill failed") || strings.Count(err.Error(), "backfill failed") != 1 {
		t.Fatalf("err %v, want only %s's failure", err, broken)
	}
	if len(got) != len(want) {
		t.Fatalf("visited %d projects, want the %d migrated", len(got), len(want))
	}
	for id, w := range want {
		g := got[id]
		if g == nil || g.Name != w.Name || g.Slug != w.Slug || g.TenantID != tn.ID || g.Plan != "build" || g.Schema != w.Schema ||
			g.Shard != "default" || len(g.TargetLanguages) != 1 || g.CreatedAt.IsZero() {
			t.Fatalf("project %s bound as %+v, want %+v", id, g, w)
		}
	}
}
