package tenant_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant"
)

// TestRead: Scope.Read queries the project's schema in one round trip,
// reports errors, and leaves no search_path or transaction behind on the
// pooled connection.
func TestRead(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a, b := env.NewProject("build"), env.NewProject("build")
	env.Do("PUT", "/v1/content/k", a.Key, map[string]any{"value": "from a"}).Expect(t, 200)
	env.Do("PUT", "/v1/content/k", b.Key, map[string]any{"value": "from b"}).Expect(t, 200)

	cfg, err := pgxpool.ParseConfig(env.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // every call below gets the same connection
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	read := func(p *apitest.Project, sql string, args ...any) (string, error) {
		s, err := tenant.NewScope(pool, p.Project, nil)
		if err != nil {
			t.Fatal(err)
		}
		var v string
		err = s.Read(ctx, sql, args, func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&v); err != nil {
					return err
				}
			}
			return nil
		})
		return v, err
	}
	for _, c := range []struct {
		p    *apitest.Project
		want string
	}{{a, "from a"}, {b, "from b"}, {a, "from a"}} {
		got, err := read(c.p, `SELECT value FROM content_values WHERE key = $1 AND ($2::text[] IS NULL OR lang = ANY ($2))`, "k", []string{"en"})
		if err != nil || got != c.want {
			t.Fatalf("read %s: %q %v", c.p.ID, got, err)
		}
	}
	if _, err := read(a, `SELECT (1/0)::text`); err == nil {
		t.Fatal("a failing query must return its error")
	}
	if _, err := read(a, `SELECT value FROM content_values WHERE key = $1`, struct{}{}); err == nil {
		t.Fatal("an argument that cannot be sent is an error")
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if st := c.Conn().PgConn().TxStatus(); st != 'I' {
		t.Fatalf("the connection was left in transaction status %c", st)
	}
	var path string
	if err := c.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	if path != `"$user", public` {
		t.Fatalf("the connection kept search_path %q", path)
	}
}
