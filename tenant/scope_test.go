package tenant_test

import (
	"testing"

	"github.com/plinth-dev/plinth/tenant"
)

func TestGrants(t *testing.T) {
	for _, c := range []struct {
		held  []string
		scope string
		want  bool
	}{
		{[]string{"*"}, "commerce:admin", true},
		{[]string{"content:*"}, "content:write", true},
		{[]string{"content:*"}, "contents:read", false},
		{[]string{"content:*"}, "blog:read", false},
		{[]string{"content:read"}, "content:read", true},
		{[]string{"content:read"}, "content:write", false},
		{[]string{"blog:read", "blog:write"}, "blog:write", true},
		{[]string{"content"}, "content:read", false},
		{nil, "content:read", false},
	} {
		if got := tenant.Grants(c.held, c.scope); got != c.want {
			t.Errorf("Grants(%v, %q) = %v, want %v", c.held, c.scope, got, c.want)
		}
	}
	s := &tenant.Scope{Project: &tenant.Project{ID: "prj_x"}}
	if s.Allows("content:read") || s.Require("content:read") == nil {
		t.Fatal("a scope without a key (public surface, jobs) allows nothing")
	}
}
