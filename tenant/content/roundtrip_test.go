package content_test

import (
	"context"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/content"
)

// TestReadKeyOneRoundTrip is the must-show of issue 21: the read of GET
// /content/{key} (schema binding, query, no transaction) costs exactly one
// network round trip to PostgreSQL, counted on the wire.
func TestReadKeyOneRoundTrip(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Bonjour", "lang": "fr"}).Expect(t, 200)

	pool, rt := pgtest.CountingPool(t, env.DB)
	s, err := tenant.NewScope(pool, p.Project, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ lang, want string }{{"fr", "Bonjour"}, {"de", "Hello"}, {"en", "Hello"}} {
		before := rt.Count()
		k, err := content.ReadKey(ctx, s, "hero.title", []string{c.lang, "en"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if k.Value != c.want || len(k.AllLocales) != 2 {
			t.Fatalf("read in %s: %+v", c.lang, k)
		}
		if n := rt.Count() - before; n != 1 {
			t.Fatalf("the read in %s took %d round trips, want 1", c.lang, n)
		}
	}
	before := rt.Count()
	if _, err := content.ReadKey(ctx, s, "no.such.key", []string{"en"}, true); err == nil {
		t.Fatal("a missing key must be an error")
	}
	if n := rt.Count() - before; n != 1 {
		t.Fatalf("a missing key took %d round trips, want 1", n)
	}
}
