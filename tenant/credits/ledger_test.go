package credits_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

func TestPeriods(t *testing.T) {
	t.Parallel()
	d := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct{ created, now, start, next string }{
		{"2025-01-15T10:00:00Z", "2025-03-20T08:00:00Z", "2025-03-15T00:00:00Z", "2025-04-15T00:00:00Z"},
		{"2025-01-15T10:00:00Z", "2025-03-14T23:59:59Z", "2025-02-15T00:00:00Z", "2025-03-15T00:00:00Z"},
		{"2025-01-31T10:00:00Z", "2025-02-28T12:00:00Z", "2025-02-28T00:00:00Z", "2025-03-31T00:00:00Z"}, // short month: its last day
		{"2025-01-31T10:00:00Z", "2025-03-30T12:00:00Z", "2025-02-28T00:00:00Z", "2025-03-31T00:00:00Z"},
		{"2024-12-10T00:00:00Z", "2025-01-05T00:00:00Z", "2024-12-10T00:00:00Z", "2025-01-10T00:00:00Z"}, // across a year
	}
	for _, c := range cases {
		start := credits.PeriodStart(d(c.created), d(c.now))
		if !start.Equal(d(c.start)) {
			t.Errorf("created %s, now %s: start %v, want %s", c.created, c.now, start, c.start)
		}
		if next := credits.NextPeriod(d(c.created), start); !next.Equal(d(c.next)) {
			t.Errorf("created %s: next %v, want %s", c.created, next, c.next)
		}
	}
}

func tx(t *testing.T, s *tenant.Scope, fn func(pgx.Tx) error) error {
	t.Helper()
	return s.Tx(context.Background(), fn)
}

// TestAllowanceTopupAndTestPool: the allowance is spent first, then
// top-ups; a short balance is a 402 that writes nothing; test keys draw
// from their own pool without top-ups; refunds give credits back.
func TestAllowanceTopupAndTestPool(t *testing.T) {
	t.Parallel()
	p := freeWithTopUp(t, 50)
	live := p.Scope
	test, err := tenant.NewScope(live.Pool(), live.Project, &tenant.Key{ID: "key_test", Scopes: []string{"*"}, Test: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	charge(t, live, "content_update", 90*credits.Unit, "")
	if b := balance(t, live); b != 60*credits.Unit {
		t.Fatalf("balance %d, want 60 credits (10 allowance + 50 top-up)", b)
	}
	charge(t, live, "page_update", 20*credits.Unit, "ref-1") // 10 from the allowance, 10 from top-ups
	var planUsed, topup int64
	if err := tx(t, live, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT plan_used, topup_balance FROM credit_pools WHERE pool = 'live'`).Scan(&planUsed, &topup)
	}); err != nil {
		t.Fatal(err)
	}
	if planUsed != 100*credits.Unit || topup != 40*credits.Unit {
		t.Fatalf("plan_used %d, topup %d: the allowance goes first", planUsed, topup)
	}
	// short: 402 with integer cost and balance, nothing written
	before := p.Count(`SELECT count(*) FROM credit_ledger`)
	err = tx(t, live, func(tx pgx.Tx) error { return credits.Charge(ctx, tx, live, "blog_post", 60*credits.Unit, "") })
	if err == nil {
		t.Fatal("a charge above the balance must fail")
	}
	if p.Count(`SELECT count(*) FROM credit_ledger`) != before {
		t.Fatal("a refused charge wrote to the ledger")
	}
	// the test pool is separate, the same size, and has no top-ups
	if b := balance(t, test); b != 100*credits.Unit {
		t.Fatalf("test pool balance %d, want the full 100", b)
	}
	charge(t, test, "content_update", 100*credits.Unit, "")
	if err := tx(t, test, func(tx pgx.Tx) error { return credits.Charge(ctx, tx, test, "content_update", 1, "") }); err == nil {
		t.Fatal("the test pool must not spend top-ups")
	}
	if b := balance(t, live); b != 40*credits.Unit {
		t.Fatalf("test charges touched the live pool: %d", b)
	}
	// a refund returns both parts
	refund(t, live, "ref-1")
	if b := balance(t, live); b != 60*credits.Unit {
		t.Fatalf("after a refund: %d, want 60 credits", b)
	}
}

// TestPeriodRollover: a new period restores the allowance of both pools
// and keeps top-ups.
func TestPeriodRollover(t *testing.T) {
	t.Parallel()
	live := freeWithTopUp(t, 5).Scope
	test, _ := tenant.NewScope(live.Pool(), live.Project, &tenant.Key{ID: "key_test", Test: true})
	ctx := context.Background()
	charge(t, live, "content_update", 100*credits.Unit, "")
	charge(t, test, "content_update", 100*credits.Unit, "")
	if b := balance(t, live); b != 5*credits.Unit {
		t.Fatalf("balance %d", b)
	}
	// the pools were last used a period ago
	prev := credits.PeriodStart(live.Project.CreatedAt, credits.PeriodStart(live.Project.CreatedAt, time.Now()).Add(-time.Nanosecond))
	if err := tx(t, live, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE credit_pools SET period_start = $1`, prev)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b := balance(t, live); b != 105*credits.Unit {
		t.Fatalf("live after rollover: %d, want 100 allowance + 5 top-up", b)
	}
	if b := balance(t, test); b != 100*credits.Unit {
		t.Fatalf("test pool after rollover: %d, want 100", b)
	}
}

// TestChargeEach: a batch is charged in order while the balance allows,
// the allowance first and then top-ups, one ledger row per charge; what
// cannot be paid writes nothing; the test pool never spends top-ups.
func TestChargeEach(t *testing.T) {
	t.Parallel()
	live := freeWithTopUp(t, 1).Scope
	ctx := context.Background()
	charge(t, live, "content_update", 99*credits.Unit+50, "") // 0.50 left in the allowance, 1 in top-ups
	refs := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var n int
	if err := tx(t, live, func(tx pgx.Tx) error {
		var err error
		n, err = credits.ChargeEach(ctx, tx, live, "webhook_delivery", 40, refs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 { // 150 hundredths pay for three of 40
		t.Fatalf("charged %d, want 3", n)
	}
	var planUsed, topup int64
	if err := tx(t, live, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT plan_used, topup_balance FROM credit_pools WHERE pool = 'live'`).Scan(&planUsed, &topup)
	}); err != nil {
		t.Fatal(err)
	}
	if planUsed != 100*credits.Unit || topup != 30 {
		t.Fatalf("plan_used %d, topup %d: want the allowance spent and 30 hundredths of top-ups left", planUsed, topup)
	}
	type row struct {
		Ref       string
		Plan, Top int64
		Amount    int64
		Op        string
	}
	rows, err := live.Pool().Query(ctx, `SELECT ref, from_plan, from_topup, amount, op FROM `+live.Project.Schema+`.credit_ledger WHERE op = 'webhook_delivery' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	want := []row{{"a", 40, 0, 40, "webhook_delivery"}, {"b", 10, 30, 40, "webhook_delivery"}, {"c", 0, 40, 40, "webhook_delivery"}}
	if len(got) != len(want) {
		t.Fatalf("ledger %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ledger row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// the test pool: its allowance only
	test, _ := tenant.NewScope(live.Pool(), live.Project, &tenant.Key{ID: "key_test", Test: true})
	charge(t, test, "content_update", 99*credits.Unit+90, "")
	if err := tx(t, test, func(tx pgx.Tx) error {
		var err error
		n, err = credits.ChargeEach(ctx, tx, test, "webhook_delivery", 2, refs)
		return err
	}); err != nil || n != 5 {
		t.Fatalf("test pool charged %d (%v), want 5", n, err)
	}
	if err := tx(t, live, func(tx pgx.Tx) error {
		_, err := credits.ChargeEach(ctx, tx, live, "image", 1, refs)
		return err
	}); err == nil {
		t.Fatal("ChargeEach accepted an AI operation, which must go through the ceiling")
	}
}

// TestRefundToExpiredPeriod: a charge made in one period and refunded in
// the next gives its top-up part back, but not its plan part: the old
// period's allowance is gone, and the new period's must not grow. The
// refund row keeps the period of the charge it reverses, and a second
// refund of the same ref does nothing.
func TestRefundToExpiredPeriod(t *testing.T) {
	t.Parallel()
	live := freeWithTopUp(t, 20).Scope
	ctx := context.Background()
	charge(t, live, "content_update", 90*credits.Unit, "")
	charge(t, live, "website", 20*credits.Unit, "job_old") // 10 from the allowance, 10 from top-ups

	// All of that happened a period ago.
	created := live.Project.CreatedAt
	cur := credits.PeriodStart(created, time.Now())
	prev := credits.PeriodStart(created, cur.Add(-time.Nanosecond))
	if err := tx(t, live, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE credit_pools SET period_start = $1`, prev); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE credit_ledger SET period_start = $1`, prev)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The new period: a fresh allowance, of which 30 are spent.
	charge(t, live, "page_update", 30*credits.Unit, "")

	type pool struct {
		Start           time.Time
		PlanUsed, Topup int64
	}
	readPool := func() pool {
		t.Helper()
		var v pool
		if err := tx(t, live, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT period_start, plan_used, topup_balance FROM credit_pools WHERE pool = 'live'`).Scan(&v.Start, &v.PlanUsed, &v.Topup)
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	type entry struct {
		Op                  string
		Amount, Plan, Topup int64
		Period              time.Time
	}
	readLedger := func() []entry {
		t.Helper()
		var l []entry
		if err := tx(t, live, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT op, amount, from_plan, from_topup, period_start FROM credit_ledger WHERE ref = 'job_old' ORDER BY id`)
			if err != nil {
				return err
			}
			l, err = pgx.CollectRows(rows, pgx.RowToStructByPos[entry])
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if got := readPool(); !got.Start.Equal(cur) || got.PlanUsed != 30*credits.Unit || got.Topup != 10*credits.Unit {
		t.Fatalf("before the refund: %+v, want period %v, 30 credits used, 10 of top-ups", got, cur)
	}

	refund(t, live, "job_old")
	want := pool{Start: cur, PlanUsed: 30 * credits.Unit, Topup: 20 * credits.Unit}
	if got := readPool(); !got.Start.Equal(want.Start) || got.PlanUsed != want.PlanUsed || got.Topup != want.Topup {
		t.Fatalf("after the refund: %+v, want %+v (the top-up part back, the expired plan part not into the new period)", got, want)
	}
	if b := balance(t, live); b != 90*credits.Unit {
		t.Fatalf("balance %d, want 90 credits (70 of this period's allowance + 20 top-ups)", b)
	}
	wantLedger := []entry{
		{"website", 20 * credits.Unit, 10 * credits.Unit, 10 * credits.Unit, prev},
		{"website", -20 * credits.Unit, -10 * credits.Unit, -10 * credits.Unit, prev}, // the refund stays in the charge's period
	}
	got := readLedger()
	if len(got) != len(wantLedger) {
		t.Fatalf("ledger of job_old: %+v, want %+v", got, wantLedger)
	}
	for i := range wantLedger {
		g, w := got[i], wantLedger[i]
		if g.Op != w.Op || g.Amount != w.Amount || g.Plan != w.Plan || g.Topup != w.Topup || !g.Period.Equal(w.Period) {
			t.Fatalf("ledger row %d of job_old: %+v, want %+v", i, g, w)
		}
	}

	// Refunding again changes nothing.
	refund(t, live, "job_old")
	if got := readPool(); got.PlanUsed != want.PlanUsed || got.Topup != want.Topup {
		t.Fatalf("a second refund changed the pool: %+v", got)
	}
	if n := len(readLedger()); n != 2 {
		t.Fatalf("a second refund wrote to the ledger: %d rows", n)
	}

	// The usage report of this period agrees with the pool.
	u, err := credits.Report(ctx, live, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if u.CreditsUsed != 30 || u.TopupCredits != 20 || u.CreditsRemaining != 90 || u.PlanCredits != 100 {
		t.Fatalf("usage of this period: %+v, want 30 used, 20 top-ups, 90 remaining", u)
	}
}

// TestPlanCreditsOverride: an enterprise project's own allowance
// (tenant.Project.PlanCredits, set by Central.SetRateOverride) replaces
// the plan table's, in charges, balances and the usage report.
func TestPlanCreditsOverride(t *testing.T) {
	t.Parallel()
	env, p := setup(t, "enterprise") // 50,000 credits by the plan table
	ctx := context.Background()
	own := int64(75_000)
	if own == tenant.Plans["enterprise"].Credits {
		t.Fatal("the override must differ from the plan table's allowance")
	}
	if err := env.Server.Central.SetRateOverride(ctx, p.ID, nil, nil, &own); err != nil {
		t.Fatal(err)
	}
	s, err := env.Server.Central.ScopeFor(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Project.PlanCredits == nil || *s.Project.PlanCredits != own {
		t.Fatalf("project PlanCredits %v, want %d", s.Project.PlanCredits, own)
	}
	if a := credits.Allowance(s.Project); a != own*credits.Unit {
		t.Fatalf("Allowance %d, want %d", a, own*credits.Unit)
	}
	if b := balance(t, s); b != own*credits.Unit {
		t.Fatalf("balance %d, want the override's %d credits", b, own)
	}

	// Through the API: 60,000 credits fit the override (not the plan's
	// 50,000); the next 20,000 do not, and the 402 names the balance left.
	widget(env, p.Key, "content_update", 60_000*credits.Unit, "").Expect(t, 201)
	m := widget(env, p.Key, "content_update", 20_000*credits.Unit, "").Problem(t, 402, "insufficient_credits")
	if m["cost"] != float64(20_000) || m["balance"] != float64(15_000) {
		t.Fatalf("402: cost %v, balance %v, want 20000 and 15000", m["cost"], m["balance"])
	}
	charge(t, s, "content_update", 15_000*credits.Unit, "") // exactly what is left
	if b := balance(t, s); b != 0 {
		t.Fatalf("balance %d, want 0", b)
	}

	var u struct {
		Plan             string `json:"plan"`
		PlanCredits      int64  `json:"plan_credits"`
		CreditsUsed      int64  `json:"credits_used"`
		CreditsRemaining int64  `json:"credits_remaining"`
	}
	env.Do("GET", "/v1/projects/me/usage", p.Key, nil).Expect(t, 200).Decode(t, &u)
	if u.Plan != "enterprise" || u.PlanCredits != own || u.CreditsUsed != 75_000 || u.CreditsRemaining != 0 {
		t.Fatalf("usage %+v, want plan_credits %d, all of it used", u, own)
	}
}
