package pgcluster_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/pgcluster"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// TestDurable: a Durable cluster (the one `plinth serve` keeps the
// operator's data in) runs with PostgreSQL's crash safety on; a test
// cluster trades it for speed. The second case shows the check can fail.
func TestDurable(t *testing.T) {
	for _, durable := range []bool{true, false} {
		want := map[bool]string{true: "on", false: "off"}[durable]
		t.Run(want, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, err := pgcluster.New(pgtest.TempDir(t))
			if err != nil {
				t.Fatal(err)
			}
			c.Durable = durable
			if _, err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.Stop(); err != nil {
					t.Error(err)
				}
			})
			conn, err := pgx.Connect(ctx, c.URL("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
				var got string
				if err := conn.QueryRow(ctx, "SHOW "+setting).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("Durable %t: %s = %s, want %s", durable, setting, got, want)
				}
			}
			// Every cluster sets the longer autovacuum round, which keeps
			// a shard of thousands of idle schemas idle (issue 18).
			var naptime string
			if err := conn.QueryRow(ctx, "SHOW autovacuum_naptime").Scan(&naptime); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%dmin", int(pgcluster.AutovacuumNaptime.Minutes())); naptime != want {
				t.Errorf("autovacuum_naptime = %s, want %s", naptime, want)
			}
			// Durable or not, every cluster can be a shard and the source
			// or target of a move (logical replication; issue 35).
			for setting, want := range map[string]string{"wal_level": "logical", "max_replication_slots": "32", "max_wal_senders": "32", "max_logical_replication_workers": "24"} {
				var got string
				if err := conn.QueryRow(ctx, "SHOW "+setting).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s = %s, want %s", setting, got, want)
				}
			}
		})
	}
}

// TestUnreachableAsRoot: as root, a directory the postgres user cannot
// search is refused with ErrUnreachable naming it, and no permission
// above the cluster's directory changes.
func TestUnreachableAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the cluster runs as postgres only when plinth runs as root")
	}
	t.Parallel()
	locked := filepath.Join(t.TempDir(), "locked")
	if err := os.Mkdir(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	before := modes(t, locked)
	_, err := pgcluster.New(filepath.Join(locked, "pg"))
	if !errors.Is(err, pgcluster.ErrUnreachable) || !strings.Contains(err.Error(), "is not searchable by user postgres") {
		t.Fatalf("New under a closed directory: %v", err)
	}
	if after := modes(t, locked); !maps.Equal(before, after) {
		t.Fatalf("permissions changed: %v, then %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(locked, "pg")); !os.IsNotExist(err) {
		t.Fatalf("New created the directory it refused: %v", err)
	}
}

// modes maps dir and every directory above it to its mode.
func modes(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		out[d] = fi.Mode()
		if d == "/" {
			return out
		}
	}
}
