//go:build !race

package central_test

import (
	"context"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestResolveCachedZeroAllocs: resolving a cached key, the first step of
// every authenticated request, allocates nothing (issue 21: the key hash
// comes from pooled HMACs and the cache is read without converting it).
// Not parallel: AllocsPerRun refuses to run beside other tests.
func TestResolveCachedZeroAllocs(t *testing.T) {
	env := apitest.New(t)
	p := env.NewProject("build")
	c, ctx := env.Server.Central, context.Background()
	want, err := c.Resolve(ctx, p.Key)
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(1000, func() {
		if s, err := c.Resolve(ctx, p.Key); err != nil || s != want {
			t.Fatalf("resolve: %v %v", s, err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per cached resolve, want 0", n)
	}
}
