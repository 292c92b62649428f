package central_test

import (
	"context"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestDeleteRevokesKeys: deleting a project revokes every one of its keys
// in the control plane (revoked_at set), not only refuses them while the
// project is deleting: were the project active again (an undelete, or a
// bug in the status check; here its status is set back by hand), its old
// keys still answer 401.
func TestDeleteRevokesKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_DELETE_GRACE", "48h"))
	admin := adminToken(t, env, "projects:*")
	p := env.NewProject("build")
	keys := []string{p.Key, p.NewKey(false, "*"), p.NewKey(true, "*")}
	for _, k := range keys {
		env.Do("GET", "/v1/projects/me", k, nil).Expect(t, 200)
	}
	ctx := context.Background()
	live := func() (n int) {
		if err := env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.api_keys WHERE project_id = $1 AND revoked_at IS NULL`, p.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := live(); n != len(keys) {
		t.Fatalf("%d live keys before the delete, want %d", n, len(keys))
	}

	env.Do("DELETE", "/admin/api/projects/"+p.ID, admin, nil).Expect(t, 202)
	if n := live(); n != 0 {
		t.Fatalf("%d of the deleted project's keys are not revoked", n)
	}
	if _, err := env.DB.Pool.Exec(ctx, `UPDATE central.projects SET status = 'active' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		env.Do("GET", "/v1/projects/me", k, nil).Problem(t, 401, "unauthorized")
	}
}
