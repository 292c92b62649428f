package tenant_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// twins creates the same table, with the same ids and slugs, in two
// project schemas through their scopes; only the owner column differs.
func twins(t *testing.T, scopes ...*tenant.Scope) {
	t.Helper()
	for _, s := range scopes {
		err := s.Tx(context.Background(), func(tx pgx.Tx) error {
			_, err := tx.Exec(context.Background(), `CREATE TABLE twin (id bigint PRIMARY KEY, slug text UNIQUE, owner text NOT NULL);
				INSERT INTO twin VALUES (1, 'same', '`+s.Project.ID+`'), (2, 'also-same', '`+s.Project.ID+`')`)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// readTwin returns the owners of twin rows and the transaction's schema.
func readTwin(ctx context.Context, s *tenant.Scope) (owners []string, schema string, err error) {
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT owner FROM twin WHERE id IN (1, 2) AND slug IN ('same', 'also-same') ORDER BY id`)
		if err != nil {
			return err
		}
		owners, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return owners, schema, err
}

// TestScopeTxIsolation shows the schema binding itself: two scopes with
// identical tables, ids and slugs, 16 goroutines x 200 transactions
// alternating between them, and each sees only its own rows.
func TestScopeTxIsolation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a, b := env.NewProject(""), env.NewProject("")
	twins(t, a.Scope, b.Scope)
	ctx := context.Background()

	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s := []*tenant.Scope{a.Scope, b.Scope}[(w+i)%2]
				owners, schema, err := readTwin(ctx, s)
				if err == nil && (schema != s.Project.Schema || len(owners) != 2 || owners[0] != s.Project.ID || owners[1] != s.Project.ID) {
					err = fmt.Errorf("scope of %s (%s) read owners %v in schema %s", s.Project.ID, s.Project.Schema, owners, schema)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestScopeTxBinding shows that an unqualified name reaches only the
// scope's schema, and that the binding ends with the transaction: one
// pooled connection serves both projects in turn, commit, rollback and a
// failed statement alike, and is left with its default search_path.
func TestScopeTxBinding(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a, b := env.NewProject(""), env.NewProject("")
	twins(t, a.Scope, b.Scope)
	ctx := context.Background()
	err := a.Scope.Tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE only_a (id int)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	cfg := env.DB.Pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 1, 0
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	sa, err := tenant.NewScope(one, a.Project, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := tenant.NewScope(one, b.Project, nil)
	if err != nil {
		t.Fatal(err)
	}
	var defaultPath string
	if err := one.QueryRow(ctx, `SHOW search_path`).Scan(&defaultPath); err != nil {
		t.Fatal(err)
	}

	// A's table is out of B's reach by its unqualified name.
	err = sb.Tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT * FROM only_a`)
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("B reading only_a: %v, want undefined_table", err)
	}
	if err := sa.Tx(ctx, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, `SELECT * FROM only_a`); return err }); err != nil {
		t.Fatalf("A reading only_a: %v", err)
	}

	// A rolled-back transaction, then B, on the one connection.
	boom := errors.New("boom")
	if err := sa.Tx(ctx, func(tx pgx.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("rollback: %v", err)
	}
	for _, s := range []*tenant.Scope{sb, sa, sb} {
		owners, schema, err := readTwin(ctx, s)
		if err != nil || schema != s.Project.Schema || len(owners) != 2 || owners[0] != s.Project.ID {
			t.Fatalf("scope %s: owners %v schema %s err %v", s.Project.ID, owners, schema, err)
		}
	}

	// Outside Tx the connection has its default search_path, where no
	// project table is visible.
	var path string
	if err := one.QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	if path != defaultPath || strings.Contains(path, "project_") {
		t.Fatalf("search_path after Tx %q, want %q", path, defaultPath)
	}
	if _, err := one.Exec(ctx, `SELECT * FROM twin`); !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("twin outside a scope: %v, want undefined_table", err)
	}

	// A scope with a schema name that is not a project schema never runs.
	bad := *a.Project
	bad.Schema = "public"
	if _, err := tenant.NewScope(one, &bad, nil); err == nil {
		t.Fatal("NewScope accepted schema public")
	}
}

// TestScopeFollowsMovedProject: a transaction that meets its project's
// schema renamed away (the end of a move to another shard) runs again on
// the pool the Locator names, whatever the missing name was: a table, a
// function (what the outbox's guard calls) or a type. Here the "other
// shard" is a second pool on the same server, where the locator puts the
// schema back under its name, as the move's target holds it.
func TestScopeFollowsMovedProject(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	for i, stmt := range []string{
		`SELECT count(*) FROM here_only`,
		`SELECT here_only_fn()`,
		`SELECT NULL::here_only_type`,
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			a := env.NewProject("")
			ident := pgx.Identifier{a.Project.Schema}.Sanitize()
			build := `CREATE TABLE ` + ident + `.here_only (id int);
				CREATE FUNCTION ` + ident + `.here_only_fn() RETURNS int LANGUAGE sql AS 'SELECT 1';
				CREATE TYPE ` + ident + `.here_only_type AS (x int)`
			if _, err := env.DB.Pool.Exec(ctx, build); err != nil {
				t.Fatal(err)
			}
			source, err := pgxpool.NewWithConfig(ctx, env.DB.Pool.Config().Copy())
			if err != nil {
				t.Fatal(err)
			}
			defer source.Close()
			target, err := pgxpool.NewWithConfig(ctx, env.DB.Pool.Config().Copy())
			if err != nil {
				t.Fatal(err)
			}
			defer target.Close()
			moved := false
			s, err := tenant.NewScope(source, a.Project, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.Follow(func(ctx context.Context, id string) (*pgxpool.Pool, error) {
				if !moved {
					return source, nil
				}
				_, err := target.Exec(ctx, `CREATE SCHEMA `+ident+`; `+build)
				return target, err
			})
			run := func() error {
				return s.Tx(ctx, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, stmt)
					return err
				})
			}
			if err := run(); err != nil {
				t.Fatalf("before the move: %v", err)
			}
			// The move's end: the source schema renamed out of the way.
			if _, err := source.Exec(ctx, `ALTER SCHEMA `+ident+` RENAME TO `+pgx.Identifier{"moved_" + a.Project.Schema}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			moved = true
			if err := run(); err != nil {
				t.Fatalf("after the move: %v, want the statement run again on the new shard", err)
			}
			if s.Pool() != target {
				t.Fatal("the scope did not follow its project to the new pool")
			}
		})
	}
}
