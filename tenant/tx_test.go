package tenant_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant"
)

// sum is a finisher that adds its callers' numbers in PostgreSQL at the
// transaction's end and fills a Later with the total.
type sum struct {
	nums   []int
	queued int // how many times Queue ran
	total  int
	out    tenant.Later[int]
	sealed bool
}

func (f *sum) Queue(b *pgx.Batch) {
	f.queued++
	b.Queue(`SELECT sum(n)::int FROM unnest($1::int[]) AS n`, f.nums).QueryRow(func(row pgx.Row) error {
		return row.Scan(&f.total)
	})
}

func (f *sum) Sealed() bool { return f.sealed }

func (f *sum) Finish(context.Context, pgx.Tx) error {
	f.out.Fill(f.total)
	return nil
}

// other is a second finisher type, for FinisherOf's type as part of the key.
type other struct{ sum }

// failing is a sealed finisher whose statement fails (division by zero).
type failing struct{ sum }

func (f *failing) Queue(b *pgx.Batch) { b.Queue(`SELECT 1/0`) }

// addTo is one caller of the transaction's sum: it adds n to the
// transaction's finisher, counting in made the finishers it makes.
func addTo(tx pgx.Tx, n int, sealed bool, made *int) (*sum, bool) {
	f, kept := tenant.FinisherOf(tx, nil, func() *sum {
		*made++
		return &sum{out: tenant.LaterIn[int](tx), sealed: sealed}
	})
	f.nums = append(f.nums, n)
	return f, kept
}

// TestFinisherOf: every caller in one transaction of Scope.Tx gets the
// same finisher, made once, whose statements are queued once, sealed or
// not; another key or another type is another finisher; outside Scope.Tx
// each caller gets a new one, registered nowhere, that it finishes.
func TestFinisherOf(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	ctx := context.Background()
	for _, sealed := range []bool{true, false} {
		made := 0
		var f, keyed *sum
		var typed *other
		err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
			for n := 1; n <= 5; n++ {
				g, kept := addTo(tx, n, sealed, &made)
				if !kept {
					return errors.New("a transaction of Scope.Tx did not keep the finisher")
				}
				if f != nil && g != f {
					return errors.New("a later caller got another finisher")
				}
				f = g
			}
			keyed, _ = tenant.FinisherOf(tx, "other key", func() *sum { return &sum{nums: []int{100}, sealed: sealed} })
			typed, _ = tenant.FinisherOf(tx, nil, func() *other { return &other{sum{nums: []int{1000}, sealed: sealed}} })
			if keyed == f || &typed.sum == f {
				return errors.New("another key or type answered the same finisher")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("sealed %v: %v", sealed, err)
		}
		if made != 1 || f.queued != 1 || f.total != 15 {
			t.Fatalf("sealed %v: made %d finishers, queued %d times, total %d; want 1, 1, 15", sealed, made, f.queued, f.total)
		}
		if keyed.total != 100 || typed.total != 1000 {
			t.Fatalf("sealed %v: the keyed finisher read %d, the other type %d; want 100, 1000", sealed, keyed.total, typed.total)
		}
	}

	// Outside Scope.Tx: a new finisher per caller, run by the caller.
	tx, err := env.DB.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	made := 0
	a, kept := addTo(tx, 2, true, &made)
	b, keptB := addTo(tx, 3, true, &made)
	if kept || keptB || a == b || made != 2 {
		t.Fatalf("outside Scope.Tx: kept %v %v, same finisher %v, made %d; want false false false 2", kept, keptB, a == b, made)
	}
	if _, err := a.out.Get(); !errors.Is(err, tenant.ErrPending) {
		t.Fatalf("Get before Finish: %v, want ErrPending", err)
	}
	if err := tenant.Finish(ctx, tx, a); err != nil {
		t.Fatal(err)
	}
	if v, err := a.out.Get(); err != nil || v != 2 {
		t.Fatalf("Get after Finish outside Scope.Tx: %d, %v; want 2", v, err)
	}
}

// TestLater: a Later answers ErrPending until its transaction committed,
// even once filled (a commit hook runs after the finishers, before
// COMMIT), then the value; a transaction that rolls back leaves it
// pending.
func TestLater(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		sealed bool  // the finisher is sealed (the end is one pipeline with COMMIT unless a hook runs)
		hook   bool  // a commit hook reads the Later
		fail   error // what the hook, or fn (inFn), answers
		inFn   bool
	}{
		{name: "sealed", sealed: true},
		{name: "unsealed", sealed: false},
		{name: "hook", sealed: true, hook: true},
		{name: "hook fails", sealed: true, hook: true, fail: errors.New("hook says no")},
		{name: "fn fails", sealed: true, fail: errors.New("fn says no"), inFn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			made := 0
			var out *tenant.Later[int]
			var inHook error
			hctx := ctx
			if tc.hook {
				hctx = tenant.WithCommitHook(ctx, func(context.Context, *tenant.Scope, pgx.Tx) error {
					if _, err := out.Get(); !errors.Is(err, tenant.ErrPending) {
						inHook = errors.New("the commit hook read the value before the commit")
					}
					return tc.fail
				})
			}
			later, err := tenant.TxV(hctx, p.Scope, func(tx pgx.Tx) (*tenant.Later[int], error) {
				f, _ := addTo(tx, 20, tc.sealed, &made)
				addTo(tx, 22, tc.sealed, &made)
				out = &f.out
				if _, err := out.Get(); !errors.Is(err, tenant.ErrPending) {
					return nil, errors.New("Get in the transaction answered")
				}
				if tc.inFn {
					return nil, tc.fail
				}
				return out, nil
			})
			if inHook != nil {
				t.Fatal(inHook)
			}
			if tc.fail != nil {
				if !errors.Is(err, tc.fail) {
					t.Fatalf("Tx: %v, want %v", err, tc.fail)
				}
				if _, err := out.Get(); !errors.Is(err, tenant.ErrPending) {
					t.Fatalf("Get after a rollback: %v, want ErrPending", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v, err := later.Get(); err != nil || v != 42 {
				t.Fatalf("Get after the commit: %d, %v; want 42", v, err)
			}
		})
	}

	// A statement of the end that fails rolls the transaction back.
	var out *tenant.Later[int]
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		f, _ := tenant.FinisherOf(tx, nil, func() *failing { return &failing{sum{out: tenant.LaterIn[int](tx), sealed: true}} })
		out = &f.out
		return nil
	})
	if err == nil {
		t.Fatal("a failing end committed")
	}
	if _, err := out.Get(); !errors.Is(err, tenant.ErrPending) {
		t.Fatalf("Get after a failed end: %v, want ErrPending", err)
	}

	// A zero Later, made by no transaction, answers once filled.
	var zero tenant.Later[string]
	if _, err := zero.Get(); !errors.Is(err, tenant.ErrPending) {
		t.Fatalf("an unfilled zero Later: %v, want ErrPending", err)
	}
	zero.Fill("x")
	if v, err := zero.Get(); err != nil || v != "x" {
		t.Fatalf("a filled zero Later: %q, %v", v, err)
	}
}
