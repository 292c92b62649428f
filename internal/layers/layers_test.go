package layers

import (
	"slices"
	"strings"
	"testing"
)

// TestCheck feeds Check a made-up module: every import a rule allows,
// which must pass, and one import against each rule, which must be
// reported with that rule's reason and nothing else.
func TestCheck(t *testing.T) {
	t.Parallel()
	m := func(rel string) string { return Module + "/" + rel }
	pkg := func(rel string, imports ...string) Package {
		p := Package{Path: m(rel)}
		for _, imp := range imports {
			if strings.Contains(imp, ".") { // outside the module
				p.Imports = append(p.Imports, imp)
			} else {
				p.Imports = append(p.Imports, m(imp))
			}
		}
		return p
	}
	allowed := []Package{
		pkg("internal/httpapi", "internal/id", "github.com/jackc/pgx/v5"),
		pkg("internal/redistest", "internal/id"),
		pkg("tenant", "internal/httpapi"),
		pkg("tenant/credits", "tenant", "internal/httpapi"),
		pkg("tenant/outbox", "tenant", "tenant/credits", "tenant/webhooks/signature", "internal/queue"),
		pkg("tenant/outbox/faulttest"),
		pkg("tenant/ratelimit", "tenant", "internal/ratelimit"),
		pkg("tenant/blog", "tenant", "tenant/content", "tenant/jobs", "tenant/credits", "internal/ai"),
		pkg("tenant/webhooks", "tenant", "tenant/outbox", "tenant/idempotency"),
		pkg("tenant/webhooks/signature"),
		pkg("provisioning", "migrations"),
		pkg("provisioning/pgtest", "provisioning", "tenant", "migrations", "internal/pgcluster"),
		pkg("central", "tenant", "tenant/blog", "tenant/ratelimit", "provisioning", "internal/ratelimit", "docs"),
		pkg("central/apitest", "central", "provisioning/pgtest", "tenant/credits"),
		pkg("central/apitest/webhooktest", "central/apitest", "tenant/webhooks/signature"),
		pkg("cmd/plinth", "central", "tenant", "internal/config"),
		pkg("cmd/benchhttp", "tenant/blog", "internal/loadgen"),
		pkg("migrations"),
		{Path: "example.com/elsewhere", Imports: []string{m("central")}}, // not ours
	}
	if bad := Check(allowed); len(bad) > 0 {
		t.Errorf("allowed imports reported:\n%v", bad)
	}

	// One import against each rule, and the start of its reason.
	against := []struct {
		from, imp, reason string
	}{
		{"internal/id", "tenant", "internal/ imports only internal/"},
		{"internal/config", "tenant/credits", "internal/ imports only internal/"},
		{"internal/pgtest", "provisioning", "internal/ imports only internal/"},
		{"internal/webhooktest", "central/apitest", "internal/ imports only internal/"},
		{"internal/queue", "migrations", "internal/ imports only internal/"},
		{"tenant", "tenant/credits", "the kernel knows neither the services nor the pillars"},
		{"tenant", "tenant/blog", "the kernel knows neither the services nor the pillars"},
		{"tenant", "central", "nothing under tenant/ imports the control plane"},
		{"tenant/credits", "tenant/usage", "a service beside the kernel imports no pillar"},
		{"tenant/outbox", "central/apitest", "nothing under tenant/ imports the control plane"},
		{"tenant/outbox/faulttest", "tenant/webhooks", "a service beside the kernel imports no pillar"},
		{"tenant/social", "central", "nothing under tenant/ imports the control plane"},
		{"tenant/social/socialtest", "central/apitest", "nothing under tenant/ imports the control plane"},
		{"tenant/webhooks/signature", "tenant/webhooks", "a pillar's library stands alone"},
		{"tenant/webhooks/signature", "tenant/outbox", "a pillar's library stands alone"},
		{"provisioning", "central", "provisioning is below"},
		{"provisioning/pgtest", "tenant/content", "provisioning is below"},
		{"provisioning/archive", "tenant/idempotency", "provisioning is below"},
		{"cmd/plinth", "tenant/blog", "main calls central"},
	}
	for _, a := range against {
		bad := Check(append(slices.Clone(allowed), pkg(a.from, a.imp)))
		if len(bad) != 1 || bad[0].Package != m(a.from) || bad[0].Import != m(a.imp) || !strings.HasPrefix(bad[0].Reason, a.reason) {
			t.Errorf("%s importing %s: reported %v, want it alone, with %q", a.from, a.imp, bad, a.reason)
		}
	}

	// A package under tenant/ on neither list is reported, and held to
	// the rule of a service.
	bad := Check([]Package{pkg("tenant/shards", "tenant", "tenant/blog")})
	want := []string{
		m("tenant/shards") + ": under tenant/ but neither a pillar nor a service",
		m("tenant/shards") + " imports " + m("tenant/blog") + ": a service beside the kernel imports no pillar",
	}
	if len(bad) != len(want) {
		t.Fatalf("unlisted package: %v, want %q", bad, want)
	}
	for i, v := range bad {
		if !strings.HasPrefix(v.String(), want[i]) {
			t.Errorf("unlisted package: %q, want %q...", v, want[i])
		}
	}
}

// TestLists: a package is a pillar or a service, not both.
func TestLists(t *testing.T) {
	t.Parallel()
	for _, s := range Services {
		if slices.Contains(Pillars, s) {
			t.Errorf("%s is listed as a pillar and as a service", s)
		}
	}
}
