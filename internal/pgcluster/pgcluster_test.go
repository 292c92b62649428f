package pgcluster_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/pgcluster"
	"github.com/plinth-dev/plinth/internal/pgtest"
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
		})
	}
}
