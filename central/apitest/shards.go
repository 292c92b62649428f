package apitest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/pgcluster"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// ShardServer starts a PostgreSQL server of the test's own with the
// given wal_level (a shard needs logical; replica is refused), set
// explicitly whatever the test cluster's is, and stops it when the test
// ends. Start it before the Env that adds it as a shard, so that it stops
// after that server. Its database postgres is the shard's; Restart
// applies a change of Settings.
func ShardServer(t testing.TB, walLevel string) *pgcluster.Cluster {
	t.Helper()
	dir := filepath.Join(pgtest.TempDir(t), "shard")
	c, err := pgcluster.New(dir)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a shard server: %v", err)
		}
		t.Skipf("no PostgreSQL server binaries for a shard server: %v", err)
	}
	c.MaxConnections = 100
	c.Settings = []string{"wal_level=" + walLevel}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Start(ctx); err != nil {
		t.Fatalf("start a shard server: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}
