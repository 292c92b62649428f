package provisioning_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// placements returns a database whose central schema lists n projects,
// project_1 … project_n, with no schema behind them: Each reads only the
// placement table.
func placements(t *testing.T, n int) *pgtest.DB {
	t.Helper()
	db := pgtest.New(t)
	if _, err := db.Pool.Exec(context.Background(), `INSERT INTO central.tenants (id, name, domain) VALUES (1, 't', 't.test');
		INSERT INTO central.projects (id, seq, tenant_id, name, slug) SELECT 'prj_' || i, i, 1, 'p' || i, 'p' || i FROM generate_series(1, `+fmt.Sprint(n)+`) i;
		INSERT INTO central.placements (project_id, schema_name, migrated_at) SELECT 'prj_' || i, 'project_' || i, now() FROM generate_series(1, `+fmt.Sprint(n)+`) i`); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestEachVisitsOnceBounded: across several pages every selected
// placement is visited exactly once, never more than Concurrency at a
// time yet Concurrency at a time, and the filters leave out a placement
// never migrated and one already at the level.
func TestEachVisitsOnceBounded(t *testing.T) {
	t.Parallel()
	db := placements(t, 40)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `UPDATE central.placements SET migrated_at = NULL WHERE schema_name = 'project_7';
		UPDATE central.placements SET schema_version = 900, migrations_applied = 11 WHERE schema_name = 'project_8'`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var running, peak atomic.Int64
	q := provisioning.Query{Task: "test", Behind: &provisioning.Level{Version: 900, Applied: 11}, Migrated: true, Concurrency: 3, PageSize: 7}
	err := provisioning.Each(ctx, db.Pool, q, provisioning.Placements, func(ctx context.Context, p provisioning.Placement) error {
		n := running.Add(1)
		defer running.Add(-1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		if p.ProjectID != "prj_"+strings.TrimPrefix(p.Schema, "project_") || p.Shard != "default" {
			return fmt.Errorf("placement read as %+v", p)
		}
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		seen[p.Schema]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 38 || seen["project_7"] != 0 || seen["project_8"] != 0 {
		t.Fatalf("visited %d placements (%v), want the 38 behind and migrated", len(seen), seen)
	}
	for s, n := range seen {
		if n != 1 {
			t.Fatalf("%s visited %d times", s, n)
		}
	}
	if p := peak.Load(); p != 3 {
		t.Fatalf("at most %d ran at once, want 3", p)
	}
}

// TestEachFailures: a failing project does not stop the others, each
// failure names its schema and project, and the list is capped.
func TestEachFailures(t *testing.T) {
	t.Parallel()
	db := placements(t, 30)
	var visited atomic.Int64
	err := provisioning.Each(context.Background(), db.Pool, provisioning.Query{Task: "test", Concurrency: 4}, provisioning.Placements,
		func(ctx context.Context, p provisioning.Placement) error {
			visited.Add(1)
			if p.Schema == "project_3" || p.Schema >= "project_2" && p.Schema < "project_3" {
				return errors.New("broken")
			}
			return nil
		})
	// project_2, project_20 … project_29 and project_3 fail: 12 of 30.
	if visited.Load() != 30 || err == nil || !strings.Contains(err.Error(), "12 of 30 failed") ||
		!strings.Contains(err.Error(), "project_3 (project prj_3): broken") {
		t.Fatalf("visited %d, err %v", visited.Load(), err)
	}

	err = provisioning.Each(context.Background(), db.Pool, provisioning.Query{Task: "test", Concurrency: 4}, provisioning.Placements,
		func(ctx context.Context, p provisioning.Placement) error { return errors.New("broken") })
	if err == nil || strings.Count(err.Error(), ": broken") != 20 || !strings.Contains(err.Error(), "and 10 more") {
		t.Fatalf("err %v, want 20 listed and 10 more", err)
	}
}

// TestEachCancel: cancelling stops the walk at once and is reported as
// one stop, not as a failure of every project in flight or left.
func TestEachCancel(t *testing.T) {
	t.Parallel()
	db := placements(t, 50)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var visited atomic.Int64
	err := provisioning.Each(ctx, db.Pool, provisioning.Query{Task: "test", Concurrency: 2, PageSize: 10}, provisioning.Placements,
		func(ctx context.Context, p provisioning.Placement) error {
			n := visited.Add(1)
			if n == 5 {
				cancel()
			}
			if n < 5 {
				return nil
			}
			<-ctx.Done()
			return ctx.Err()
		})
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "project_") || strings.Contains(err.Error(), "failed") {
		t.Fatalf("err %v, want one stop", err)
	}
	if n := visited.Load(); n > 6 {
		t.Fatalf("%d calls after the cancel at the 5th", n)
	}
}
