package tenant_test

import (
	"context"
	"errors"
	"testing"

	"github.com/plinth-dev/plinth/tenant"
)

// A worker run without the job gate finds no scope and says so, rather
// than resolve its project itself.
func TestJobScopeUnbound(t *testing.T) {
	t.Parallel()
	if s, err := tenant.JobScope(context.Background()); s != nil || !errors.Is(err, tenant.ErrNoJobScope) {
		t.Fatalf("JobScope without the gate: %v, %v", s, err)
	}
	bound := &tenant.Scope{Project: &tenant.Project{ID: "prj_1"}}
	if s, err := tenant.JobScope(tenant.WithJobScope(context.Background(), bound)); s != bound || err != nil {
		t.Fatalf("JobScope after the gate: %v, %v", s, err)
	}
}
