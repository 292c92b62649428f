package tenant_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
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

// TestReadBatchIsolation: reads of two projects interleaved on a pool of
// one connection, as batches of several queries, single reads, failing
// reads and transactions, each see their own project's schema only, and
// the connection is left with neither a transaction nor a search_path.
func TestReadBatchIsolation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a, b := twoProjects(t, env, "k", "j")
	pool, rt := pgtest.CountingPool(t, env.DB)
	ctx := context.Background()
	scope := func(p *apitest.Project) *tenant.Scope {
		s, err := tenant.NewScope(pool, p.Project, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	one := func(dst *string) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(dst); err != nil {
					return err
				}
			}
			return nil
		}
	}
	const value = `SELECT value FROM content_values WHERE key = $1`
	for i := 0; i < 3; i++ {
		for _, p := range []*apitest.Project{a, b, a} {
			s := scope(p)
			var k, j, schema string
			var batch tenant.ReadBatch
			batch.Queue(value, []any{"k"}, one(&k))
			batch.Queue(`SELECT current_schema()`, nil, one(&schema))
			batch.Queue(value, []any{"j"}, one(&j))
			before := rt.Count()
			if err := s.ReadBatch(ctx, &batch); err != nil {
				t.Fatal(err)
			}
			if n := rt.Count() - before; n != 1 {
				t.Fatalf("a batch of three queries took %d round trips, want 1", n)
			}
			if k != "k of "+p.ID || j != "j of "+p.ID || schema != p.Schema {
				t.Fatalf("project %s read %q %q in %s", p.ID, k, j, schema)
			}
			// A failing batch leaves nothing behind for the next reader.
			var bad tenant.ReadBatch
			bad.Queue(value, []any{"k"}, one(&k))
			bad.Queue(`SELECT (1/0)::text`, nil, one(&k))
			if err := s.ReadBatch(ctx, &bad); err == nil {
				t.Fatal("a failing query of a batch must fail the batch")
			}
			// A transaction of the project between reads.
			err := s.Tx(ctx, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, value, "k").Scan(&k)
			})
			if err != nil || k != "k of "+p.ID {
				t.Fatalf("transaction of %s read %q: %v", p.ID, k, err)
			}
		}
	}
	// Statements deallocated behind ReadBatch's back: it prepares them
	// again and answers.
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Conn().DeallocateAll(ctx); err != nil {
		t.Fatal(err)
	}
	c.Release()
	var k string
	if err := scope(b).Read(ctx, value, []any{"k"}, one(&k)); err != nil || k != "k of "+b.ID {
		t.Fatalf("read after DEALLOCATE ALL: %q %v", k, err)
	}
	c, err = pool.Acquire(ctx)
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

// TestReadKeepsBinding: on a pool set up by tenant.ConfigurePool, a read
// leaves its project's search_path on the connection, so the next read of
// that project on it sends no binding (fewer bytes than a read after
// another project's), and reads alternating between projects, failing,
// or interleaved with transactions each see their own schema; any other
// acquisition of the connection finds the search_path it started with.
// On a pool not set up so, each read binds for itself and leaves nothing.
func TestReadKeepsBinding(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a, b := twoProjects(t, env, "k")
	ctx := context.Background()
	const value = `SELECT value, current_schema() FROM content_values WHERE key = $1`
	read := func(pool *pgxpool.Pool, p *apitest.Project) {
		t.Helper()
		s, err := tenant.NewScope(pool, p.Project, nil)
		if err != nil {
			t.Fatal(err)
		}
		var k, schema string
		if err := s.Reader().QueryRow(ctx, value, "k").Scan(&k, &schema); err != nil || k != "k of "+p.ID || schema != p.Schema {
			t.Fatalf("project %s read %q in %q: %v", p.ID, k, schema, err)
		}
	}
	startPath := func(pool *pgxpool.Pool) {
		t.Helper()
		var path string
		if err := pool.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&path); err != nil {
			t.Fatal(err)
		}
		if path != `"$user", public` {
			t.Fatalf("another acquisition found search_path %q", path)
		}
	}

	pool, rt := pgtest.CountingPool(t, env.DB)
	read(pool, a)
	read(pool, b) // both statements prepared
	sent := func(p *apitest.Project) int64 {
		before := rt.Sent()
		read(pool, p)
		return rt.Sent() - before
	}
	afterOther := sent(a) // after b's read: binds
	afterSame := sent(a)  // after a's: bound already
	if afterSame >= afterOther {
		t.Fatalf("a read after the same project's sent %d bytes, after another's %d: the binding was sent again", afterSame, afterOther)
	}
	startPath(pool)
	if n := sent(a); n != afterOther {
		t.Fatalf("a read after another acquisition sent %d bytes, want %d (a binding)", n, afterOther)
	}
	for _, p := range []*apitest.Project{b, b, a, b, a, a} {
		read(pool, p)
		// A failing read: its binding is rolled back with it.
		s, _ := tenant.NewScope(pool, p.Project, nil)
		if err := s.Reader().QueryRow(ctx, `SELECT (1/0)::text`).Scan(new(string)); err == nil {
			t.Fatal("1/0 answered")
		}
		read(pool, p)
		if err := s.Tx(ctx, func(tx pgx.Tx) error {
			var schema string
			if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil || schema != p.Schema {
				return fmt.Errorf("transaction of %s in %q: %v", p.ID, schema, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		read(pool, []*apitest.Project{a, b}[rand.IntN(2)])
	}
	startPath(pool)

	// A pool without ConfigurePool: every read binds for itself.
	cfg, err := pgxpool.ParseConfig(env.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	plain, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, p := range []*apitest.Project{a, a, b, a} {
		read(plain, p)
		c, err := plain.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var path string
		err = c.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&path)
		c.Release()
		if err != nil || path != `"$user", public` {
			t.Fatalf("a read on a plain pool left search_path %q: %v", path, err)
		}
	}
}

// TestReader: the Querier of read-only requests answers Query and
// QueryRow as a transaction does (pgx.ErrNoRows included), each in one
// round trip, types parameters from the statement (a string compared with
// a uuid, a named string type), keeps ” apart from NULL, and gives the
// connection back with neither a transaction nor a search_path.
func TestReader(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	for _, k := range []string{"a", "b", "c"} {
		env.Do("PUT", "/v1/content/"+k, p.Key, map[string]any{"value": "value of " + k}).Expect(t, 200)
	}
	pool, rt := pgtest.CountingPool(t, env.DB)
	s, err := tenant.NewScope(pool, p.Project, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := s.Reader()
	trips := func(what string, fn func() error) {
		t.Helper()
		before := rt.Count()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := rt.Count() - before; n != 1 {
			t.Fatalf("%s took %d round trips, want 1", what, n)
		}
	}
	type key string // a named type, as handlers pass
	for range 2 {   // the second time on prepared statements
		var v string
		trips("QueryRow", func() error {
			return q.QueryRow(ctx, `SELECT value FROM content_values WHERE key = $1`, key("b")).Scan(&v)
		})
		if v != "value of b" {
			t.Fatalf("QueryRow read %q", v)
		}
		trips("QueryRow of no row", func() error {
			if err := q.QueryRow(ctx, `SELECT value FROM content_values WHERE key = $1`, "nope").Scan(&v); !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("want pgx.ErrNoRows, got %v", err)
			}
			return nil
		})
		var got []string
		trips("Query", func() error {
			rows, err := q.Query(ctx, `SELECT key FROM content_values WHERE key > $1 ORDER BY key`, "")
			if err != nil {
				return err
			}
			got, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("Query read %v", got)
		}
		var empty, isUUID bool
		trips("typed from the statement", func() error {
			return q.QueryRow(ctx, `SELECT $1 = '', $2 = '00000000-0000-0000-0000-000000000001'::uuid`, "",
				"00000000-0000-0000-0000-000000000001").Scan(&empty, &isUUID)
		})
		if !empty || !isUUID {
			t.Fatalf("'' = '' is %v, the uuid compares %v", empty, isUUID)
		}
	}
	// Rows read to the end give the connection back without Close.
	rows, err := q.Query(ctx, `SELECT key FROM content_values`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Query(ctx, `SELECT (1/0)::text`); err == nil {
		t.Fatal("a failing query must return its error")
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

// twoProjects makes two projects of env, each with a value "<key> of
// <project id>" for every one of keys.
func twoProjects(t *testing.T, env *apitest.Env, keys ...string) (a, b *apitest.Project) {
	t.Helper()
	a, b = env.NewProject("build"), env.NewProject("build")
	for _, p := range []*apitest.Project{a, b} {
		for _, k := range keys {
			env.Do("PUT", "/v1/content/"+k, p.Key, map[string]any{"value": k + " of " + p.ID}).Expect(t, 200)
		}
	}
	return a, b
}
