package central_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
)

// TestCheckConfig: a plan of PLINTH_DASHBOARD_PLANS that is not in the
// plan table is refused, naming the variable, the plan and the plans,
// by CheckConfig and by NewServer before it touches anything; the plans
// of the table pass. (internal/config reads the names unchecked.)
func TestCheckConfig(t *testing.T) {
	t.Parallel()
	load := func(plans string) config.Config {
		t.Helper()
		cfg, err := config.Load(func(k string) string {
			return map[string]string{"PLINTH_SECRET": "s", "PLINTH_DASHBOARD_PLANS": plans}[k]
		})
		if err != nil {
			t.Fatalf("%q: %v", plans, err)
		}
		return cfg
	}
	for _, good := range []string{"", "free", "hobby,build", "enterprise, scale"} {
		if err := central.CheckConfig(load(good)); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const want = `PLINTH_DASHBOARD_PLANS: unknown plan "gold" (plans: free, hobby, build, scale, enterprise)`
	for _, bad := range []string{"gold", "free,gold", " hobby , gold,free"} {
		cfg := load(bad)
		if err := central.CheckConfig(cfg); err == nil || err.Error() != want {
			t.Errorf("CheckConfig %q: %v, want %s", bad, err, want)
		}
		if _, err := central.NewServer(context.Background(), cfg, pool, slog.New(slog.DiscardHandler), central.Options{}); err == nil || err.Error() != want {
			t.Errorf("NewServer %q: %v, want %s", bad, err, want)
		}
	}
}
