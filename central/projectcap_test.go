package central_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/provisioning/archive"
)

// checkCapped asserts the refusal of a project beyond a cap of 3.
func checkCapped(t *testing.T, p map[string]any) {
	t.Helper()
	if d, _ := p["detail"].(string); !strings.Contains(d, "limit of 3 projects") || !strings.Contains(d, "PLINTH_MAX_PROJECTS_PER_TENANT") || p["limit"] != float64(3) {
		t.Fatalf("refusal: %v", p)
	}
}

// TestProjectCap: a workspace has at most PLINTH_MAX_PROJECTS_PER_TENANT
// projects, whichever way they are created (the dashboard API, the admin
// API, an import); one more is 403 project_limit_reached naming the cap.
// Other workspaces are not affected, and a project being deleted frees
// its place.
func TestProjectCap(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_MAX_PROJECTS_PER_TENANT", "3"))
	ctx := context.Background()
	c := env.Server.Central
	ws := newWorkspace(t, env, "Capped", "cap@example.com", "cap-password")
	tok := loginToken(t, env, "cap@example.com", "cap-password")
	var ids []string
	for i := range 3 {
		p := env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "Site " + strconv.Itoa(i)}).Expect(t, 201).JSON(t)
		ids = append(ids, p["id"].(string))
	}
	checkCapped(t, env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "Fourth"}).Problem(t, 403, "project_limit_reached"))

	admin := adminToken(t, env, "projects:write")
	checkCapped(t, env.Do("POST", "/admin/api/projects", admin, map[string]any{"tenant_id": ws.ID, "name": "Fourth"}).Problem(t, 403, "project_limit_reached"))
	_, err := c.CreateForImport(ctx, archive.Spec{TenantID: ws.ID, Name: "Imported"}, nil)
	if e := httpapi.AsError(err); e.Status != 403 || e.Code != "project_limit_reached" {
		t.Fatalf("an import beyond the cap: %v", err)
	}
	var n int
	if err := env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.projects WHERE tenant_id = $1`, ws.ID).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d projects in the workspace (%v), want 3", n, err)
	}

	// Another workspace has places of its own.
	env.Do("POST", "/admin/api/projects", admin, map[string]any{"tenant_id": env.TenantID(), "name": "Elsewhere"}).Expect(t, 201)

	// A project being deleted no longer counts.
	if _, err := c.DeleteProject(ctx, ids[0], central.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "Replacement"}).Expect(t, 201)
	env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "One too many"}).Problem(t, 403, "project_limit_reached")
}

// TestProjectCapConcurrent: creations racing for a workspace's last
// places get exactly the places there are.
func TestProjectCapConcurrent(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_MAX_PROJECTS_PER_TENANT", "3"))
	ctx := context.Background()
	tid := env.NewTenant()
	const tries = 8
	errs := make([]error, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			_, errs[i] = env.Server.Central.CreateProject(ctx, central.ProjectParams{TenantID: tid, Name: "Racer"})
		})
	}
	wg.Wait()
	created, refused := 0, 0
	for _, err := range errs {
		switch e := httpapi.AsError(err); {
		case err == nil:
			created++
		case e.Status == 403 && e.Code == "project_limit_reached":
			refused++
		default:
			t.Errorf("creation: %v", err)
		}
	}
	if created != 3 || refused != tries-3 {
		t.Fatalf("%d created, %d refused; want 3 and %d", created, refused, tries-3)
	}
}
