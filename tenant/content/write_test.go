package content_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/content"
)

// laterEvents keeps the data of the events emitted with EmitLater, to be
// read after the transaction.
type laterEvents struct{ data []func() (any, bool) }

func (e *laterEvents) Emit(context.Context, pgx.Tx, *tenant.Scope, string, any) error {
	return errors.New("Emit in a value write")
}

func (e *laterEvents) EmitLater(_ context.Context, _ pgx.Tx, _ *tenant.Scope, _ string, data func() (any, bool)) error {
	e.data = append(e.data, data)
	return nil
}

// TestTwoWritesOneTransaction: two value writes in one transaction share
// its one finisher; each answer is a Later, pending in the transaction,
// then its own keys (a key written twice holds the second value, which
// saw the first as previous); each event is made from its own write.
func TestTwoWritesOneTransaction(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ctx := context.Background()
	ev := &laterEvents{}
	var first, second *tenant.Later[[]content.ContentKey]
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		if first, err = content.Write(ctx, tx, p.Scope, ev, []content.ValueChange{{Key: "b.title", Lang: "en", Value: "B1"}, {Key: "a.title", Lang: "en", Value: "A1"}}); err != nil {
			return err
		}
		if second, err = content.Write(ctx, tx, p.Scope, ev, []content.ValueChange{{Key: "b.title", Lang: "en", Value: "B2"}}); err != nil {
			return err
		}
		if _, err := first.Get(); !errors.Is(err, tenant.ErrPending) {
			return errors.New("a write's answer read in its transaction")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	one, err := first.Get()
	if err != nil {
		t.Fatal(err)
	}
	two, err := second.Get()
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 2 || one[0].Key != "b.title" || one[1].Key != "a.title" || one[1].Value != "A1" || len(two) != 1 || two[0].Value != "B2" {
		t.Fatalf("first write answered %+v, second %+v", one, two)
	}
	if len(ev.data) != 3 {
		t.Fatalf("%d events, want 3", len(ev.data))
	}
	d, ok := ev.data[2]()
	c, _ := d.(content.ValueChange)
	if !ok || c.Value != "B2" || c.PreviousValue == nil || *c.PreviousValue != "B1" {
		t.Fatalf("the second write's event: %+v %v", d, ok)
	}
	if p.Balance(t) != p.Project.Limits().Credits*100-300 {
		t.Fatalf("balance %d after 3 values", p.Balance(t))
	}
}
