package central_test

import (
	"log/slog"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// TestPrivateClusterIsDurable: the cluster `plinth serve` runs without
// DATABASE_URL keeps PostgreSQL's crash safety, for it holds the
// operator's data (internal/pgcluster's TestDurable shows what Durable
// turns on).
func TestPrivateClusterIsDurable(t *testing.T) {
	t.Parallel()
	dir := pgtest.TempDir(t)
	c, err := central.PrivateCluster(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Durable || c.Dir != dir {
		t.Fatalf("private cluster: Durable %t in %s, want durable in %s", c.Durable, c.Dir, dir)
	}
}
