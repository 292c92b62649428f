// Package credits meters the credits a project spends. Balances and the
// ledger live in the project schema, in hundredths of a credit; every
// charge runs inside the transaction of the write it pays for.
package credits

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Costs in hundredths of a credit.
const (
	Unit            int64 = 100
	WebhookDelivery int64 = 2
)

// Allowance returns the period allowance of p in hundredths: its plan's
// credits, or the project's own (tenant.Project.Limits).
func Allowance(p *tenant.Project) int64 { return p.Limits().Credits * Unit }

// PeriodStart returns the start of the monthly period containing now: the
// period resets on the calendar day the project was created (the last day
// of shorter months), at midnight UTC.
func PeriodStart(created, now time.Time) time.Time {
	created, now = created.UTC(), now.UTC()
	start := anchor(now.Year(), now.Month(), created.Day())
	if start.After(now) {
		y, m := now.Year(), now.Month()-1
		if m < 1 {
			y, m = y-1, 12
		}
		start = anchor(y, m, created.Day())
	}
	return start
}

// NextPeriod returns the start of the period after the one starting at start.
func NextPeriod(created, start time.Time) time.Time {
	y, m := start.Year(), start.Month()+1
	if m > 12 {
		y, m = y+1, 1
	}
	return anchor(y, m, created.UTC().Day())
}

func anchor(y int, m time.Month, day int) time.Time {
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	if day > last {
		day = last
	}
	return time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}

func pool(s *tenant.Scope) string {
	if s.Test() {
		return "test"
	}
	return "live"
}

// ErrInsufficient is the kind of every "balance too low" failure (402).
var ErrInsufficient = httpapi.ErrNoCredits

// Insufficient is the failure of an operation costing cost hundredths
// against a balance of balance hundredths: detail for the client, and both
// in whole credits as members of the answer.
func Insufficient(detail string, cost, balance int64) error {
	return &httpapi.Failure{Kind: ErrInsufficient, Detail: detail,
		Extra: map[string]any{"cost": ceil(cost), "balance": balance / Unit}}
}

type state struct {
	periodStart time.Time
	planUsed    int64
	topup       int64
}

// lock returns the pool row of s locked for this transaction, rolled to
// the current period, in one statement: the upsert creates the row on the
// first charge, or locks it and starts a new period when one has begun.
func lock(ctx context.Context, tx pgx.Tx, s *tenant.Scope, now time.Time) (state, error) {
	var st state
	err := tx.QueryRow(ctx, `INSERT INTO credit_pools AS p (pool, period_start) VALUES ($1, $2)
		ON CONFLICT (pool) DO UPDATE SET
			plan_used = CASE WHEN p.period_start < EXCLUDED.period_start THEN 0 ELSE p.plan_used END,
			period_start = GREATEST(p.period_start, EXCLUDED.period_start)
		RETURNING period_start, plan_used, topup_balance`, pool(s), PeriodStart(s.Project.CreatedAt, now)).
		Scan(&st.periodStart, &st.planUsed, &st.topup)
	return st, err
}

// Charge debits cost hundredths for op inside tx, plan allowance first and
// top-up credits after it. When the balance is short, the transaction
// fails with 402 insufficient_credits with the cost and balance (whole
// credits) and writes nothing. ref ties the charge to a job or resource,
// for Refund.
//
// In a transaction of tenant.Scope.Tx, a charge is made at the end of the
// transaction, with every other charge of it, in one conditional
// statement just before COMMIT (chargeSQL): the pool row, which every
// write of the project updates, is then locked for the commit only, not
// from the charge to the commit, and the project's writes run side by
// side instead of one at a time. Its 402 then comes from the commit
// (Scope.Tx returns it), after the write it would have paid for was made
// and is rolled back with it. Elsewhere, and for AI operations, whose
// per-minute ceiling is checked under the pool's lock, the charge is made
// at once.
func Charge(ctx context.Context, tx pgx.Tx, s *tenant.Scope, op string, cost int64, ref string) error {
	if cost <= 0 {
		return nil
	}
	if !IsAI(op) {
		c, kept := tenant.FinisherOf(tx, nil, func() *charges { return &charges{s: s, obs: observerOf(ctx)} })
		c.ops, c.costs, c.refs = append(c.ops, op), append(c.costs, cost), append(c.refs, ref)
		if !kept {
			return tenant.Finish(ctx, tx, c)
		}
		return nil
	}
	st, err := lock(ctx, tx, s, time.Now())
	if err != nil {
		return err
	}
	planLeft := max(Allowance(s.Project)-st.planUsed, 0)
	topup := st.topup
	if s.Test() {
		topup = 0 // the test pool never bills and has no top-ups
	}
	if cost > planLeft+topup {
		return Insufficient(fmt.Sprintf("this operation costs %s credits and the balance is %s",
			whole(cost, true), whole(planLeft+topup, false)), cost, planLeft+topup)
	}
	if err := aiCeiling(ctx, tx, pool(s), cost); err != nil {
		return err
	}
	fromPlan := min(cost, planLeft)
	return debit(ctx, tx, s, op, cost, st.periodStart, []string{ref}, []int64{fromPlan}, []int64{cost - fromPlan})
}

// charges are the charges of one transaction (tenant.FinisherOf), made
// together by Finish.
type charges struct {
	s     *tenant.Scope
	obs   Observer // the context's of the transaction's first charge; nil: none
	ops   []string
	costs []int64
	refs  []string
}

// chargeSQL makes the charges $5, $6, $7 (operations, costs and refs, in
// order) on the pool $1, in the period starting at $2 with the allowance
// $3 ($4: the test pool, which spends no top-ups), all or none, in one
// statement. o locks the pool row and reads its latest version, rolled to
// the period; the update and the ledger rows are made only when the
// balance covers the total, each charge taking the plan allowance left
// after the ones before it, then top-ups. When it does not, the statement
// fails (credits_short: SQLSTATE PL402, the balance before the charges in
// its detail), and so does the transaction: the statement travels with
// COMMIT in one pipeline (tenant.Scope.Tx), and a COMMIT after a failed
// statement of its pipeline is never run.
//
// Under READ COMMITTED, o's FOR UPDATE waits for a concurrent charge to
// commit and returns the row it committed, and the UPDATE re-applies to
// that row, so no two charges read the same balance: the guarantee of the
// lock held from the charge to the commit, with the lock held from this
// statement to the commit only, which in a transaction of Scope.Tx is
// the same round trip. The CHECK constraints of credit_pools (plan_used
// and topup_balance never below zero) stand behind it.
const chargeSQL = `WITH o AS (
		SELECT GREATEST(period_start, $2::timestamptz) AS period,
			CASE WHEN period_start < $2 THEN 0 ELSE plan_used END AS used,
			topup_balance AS topup
		FROM credit_pools WHERE pool = $1 FOR UPDATE
	), b AS (
		SELECT period, used, topup, GREATEST($3::bigint - used, 0) AS plan_left,
			CASE WHEN $4::boolean THEN 0 ELSE topup END AS spendable
		FROM o
	), c AS (
		SELECT n, op, cost, ref, (sum(cost) OVER (ORDER BY n))::bigint - cost AS before
		FROM unnest($5::text[], $6::bigint[], $7::text[]) WITH ORDINALITY AS u (op, cost, ref, n)
	), ok AS (
		SELECT b.*, t.total FROM b, (SELECT sum(cost)::bigint AS total FROM c) t WHERE b.plan_left + b.spendable >= t.total
	), u AS (
		UPDATE credit_pools p SET period_start = ok.period,
			plan_used = ok.used + LEAST(ok.total, ok.plan_left),
			topup_balance = ok.topup - (ok.total - LEAST(ok.total, ok.plan_left))
		FROM ok WHERE p.pool = $1
	), l AS (
		INSERT INTO credit_ledger (pool, op, amount, from_plan, from_topup, period_start, ref, created_at)
		SELECT $1, c.op, c.cost, f.plan, c.cost - f.plan, ok.period, NULLIF(c.ref, ''), clock_timestamp()
		FROM ok, c, LATERAL (SELECT LEAST(c.cost, GREATEST(ok.plan_left - c.before, 0)) AS plan) f
		ORDER BY c.n
	)
	SELECT EXISTS (SELECT FROM ok) OR credits_short(COALESCE((SELECT plan_left + spendable FROM b), 0))`

// shortCode is the SQLSTATE credits_short raises.
const shortCode = "PL402"

// Queue queues the charges: the pool row is created on a project's first
// charge (a no-op after it, which locks nothing), then chargeSQL makes
// them, or fails with 402 when the balance does not cover them.
func (c *charges) Queue(b *pgx.Batch) {
	if len(c.costs) == 0 {
		return
	}
	period := PeriodStart(c.s.Project.CreatedAt, time.Now())
	p := pool(c.s)
	// The pool's row is made by its first charge. The insert is tried
	// only when the statement's snapshot has no row: an INSERT that meets
	// the unique key of a row another charge is updating waits for that
	// transaction to end, outside the row lock's queue, and every commit
	// would wake every such waiter of the project.
	b.Queue(`INSERT INTO credit_pools (pool, period_start) SELECT $1, $2
		WHERE NOT EXISTS (SELECT FROM credit_pools WHERE pool = $1) ON CONFLICT (pool) DO NOTHING`, p, period)
	b.Queue(chargeSQL, p, period, Allowance(c.s.Project), c.s.Test(), c.ops, c.costs, c.refs).QueryRow(func(row pgx.Row) error {
		var made bool
		err := row.Scan(&made)
		if err == nil && c.obs != nil {
			for i, op := range c.ops {
				c.obs(op, c.costs[i])
			}
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != shortCode {
			return err
		}
		balance, perr := strconv.ParseInt(pgErr.Detail, 10, 64)
		if perr != nil {
			return fmt.Errorf("credits: credits_short detail %q: %w", pgErr.Detail, perr)
		}
		var total int64
		for _, cost := range c.costs {
			total += cost
		}
		return Insufficient(fmt.Sprintf("this operation costs %s credits and the balance is %s",
			whole(total, true), whole(balance, false)), total, balance)
	})
}

// Sealed: the charges' statement fails by itself when the balance is
// short, so they may travel with COMMIT (tenant.Scope.Tx).
func (c *charges) Sealed() bool { return true }

// Finish has nothing left to do: chargeSQL made the charges or failed.
func (c *charges) Finish(context.Context, pgx.Tx) error { return nil }

// debit writes charges of cost each, one per ref, split between the plan
// allowance and top-ups as given, with the pool update and the ledger rows
// sent together in one round trip.
func debit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, op string, cost int64, period time.Time, refs []string, fromPlan, fromTopup []int64) error {
	var plan, topup int64
	for i := range refs {
		plan += fromPlan[i]
		topup += fromTopup[i]
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE credit_pools SET plan_used = plan_used + $2, topup_balance = topup_balance - $3 WHERE pool = $1`, pool(s), plan, topup)
	// created_at is the moment of the charge (not of the transaction's
	// start, which may be long before the pool lock was granted), so the
	// AI ceiling's one-minute window is exact.
	b.Queue(`INSERT INTO credit_ledger (pool, op, amount, from_plan, from_topup, period_start, ref, created_at)
		SELECT $1, $2, $3, p, t, $4, NULLIF(r, ''), clock_timestamp() FROM unnest($5::bigint[], $6::bigint[], $7::text[]) AS u (p, t, r)`,
		pool(s), op, cost, period, fromPlan, fromTopup, refs)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if obs := observerOf(ctx); obs != nil {
		obs(op, cost*int64(len(refs)))
	}
	return nil
}

// Observer is told of every debit: the operation and the hundredths of a
// credit it took. It runs inside the charging transaction, which may still
// roll back, so it must only count.
type Observer func(op string, hundredths int64)

type observerKey struct{}

// observerOf is the Observer ctx carries, or nil.
func observerOf(ctx context.Context) Observer {
	obs, _ := ctx.Value(observerKey{}).(Observer)
	return obs
}

// WithObserver returns ctx whose charges are reported to obs. The server
// puts its metrics in the context of every request and job this way, so
// the many callers of Charge need no extra argument.
func WithObserver(ctx context.Context, obs Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, obs)
}

// ChargeEach charges cost for each of refs, in order, while the balance
// allows, inside tx: one lock of the pool, one update and one ledger row
// per charge, whatever the number of refs. It returns how many refs (a
// prefix of refs) were charged; the others could not be paid and nothing
// was written for them. It is for batches of small metered operations
// (webhook delivery attempts); AI operations, which have a per-minute
// ceiling, go through Charge.
func ChargeEach(ctx context.Context, tx pgx.Tx, s *tenant.Scope, op string, cost int64, refs []string) (int, error) {
	if IsAI(op) {
		return 0, fmt.Errorf("credits: ChargeEach of the AI operation %s", op)
	}
	if cost <= 0 || len(refs) == 0 {
		return len(refs), nil
	}
	st, err := lock(ctx, tx, s, time.Now())
	if err != nil {
		return 0, err
	}
	planLeft := max(Allowance(s.Project)-st.planUsed, 0)
	topup := st.topup
	if s.Test() {
		topup = 0
	}
	var fromPlan, fromTopup []int64
	for range refs {
		if cost > planLeft+topup {
			break
		}
		p := min(cost, planLeft)
		planLeft, topup = planLeft-p, topup-(cost-p)
		fromPlan, fromTopup = append(fromPlan, p), append(fromTopup, cost-p)
	}
	n := len(fromPlan)
	if n == 0 {
		return 0, nil
	}
	return n, debit(ctx, tx, s, op, cost, st.periodStart, refs[:n], fromPlan, fromTopup)
}

// Refund reverses every charge made under ref that is not yet refunded,
// returning plan credits to the period they came from (when it is still
// the current one) and top-up credits to the top-up balance.
func Refund(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string) error {
	st, err := lock(ctx, tx, s, time.Now())
	if err != nil {
		return err
	}
	var amount, fromPlan, fromTopup int64
	var period *time.Time
	var op *string
	if err := tx.QueryRow(ctx, `SELECT COALESCE(sum(amount),0), COALESCE(sum(from_plan),0), COALESCE(sum(from_topup),0), max(period_start), max(op)
		FROM credit_ledger WHERE ref = $1 AND pool = $2`, ref, pool(s)).Scan(&amount, &fromPlan, &fromTopup, &period, &op); err != nil {
		return err
	}
	if amount <= 0 || op == nil {
		return nil
	}
	planBack := fromPlan
	if period == nil || period.Before(st.periodStart) {
		planBack = 0 // an old period's allowance is gone
	}
	if _, err := tx.Exec(ctx, `UPDATE credit_pools SET plan_used = GREATEST(plan_used - $2, 0), topup_balance = topup_balance + $3 WHERE pool = $1`,
		pool(s), planBack, fromTopup); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO credit_ledger (pool, op, amount, from_plan, from_topup, period_start, ref, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp())`,
		pool(s), *op, -amount, -fromPlan, -fromTopup, *period, ref)
	return err
}

// TopUp adds whole credits to the live pool's top-up balance.
func TopUp(ctx context.Context, tx pgx.Tx, s *tenant.Scope, credits int64) error {
	if credits <= 0 {
		return httpapi.Invalid("amount", "must be a positive integer")
	}
	st, err := lock(ctx, tx, &tenant.Scope{Project: s.Project}, time.Now())
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE credit_pools SET topup_balance = topup_balance + $1 WHERE pool = 'live'`, credits*Unit); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO credit_ledger (pool, op, amount, from_plan, from_topup, period_start) VALUES ('live', 'topup', $1, 0, $1, $2)`,
		-credits*Unit, st.periodStart)
	return err
}

// Balance returns the spendable hundredths of s's pool now. It reads the
// pool without locking it (a write's charge checks the balance again as
// it is made) and writes nothing.
func Balance(ctx context.Context, tx pgx.Tx, s *tenant.Scope) (int64, error) {
	now := time.Now()
	var period time.Time
	var used, topup int64
	err := tx.QueryRow(ctx, `SELECT period_start, plan_used, topup_balance FROM credit_pools WHERE pool = $1`, pool(s)).
		Scan(&period, &used, &topup)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		used, topup = 0, 0 // no charge yet
	case err != nil:
		return 0, err
	case period.Before(PeriodStart(s.Project.CreatedAt, now)):
		used = 0 // a new period has begun since the last charge
	}
	b := max(Allowance(s.Project)-used, 0)
	if !s.Test() {
		b += topup
	}
	return b, nil
}

func ceil(h int64) int64 { return (h + Unit - 1) / Unit }

func whole(h int64, up bool) string {
	if h%Unit == 0 {
		return fmt.Sprint(h / Unit)
	}
	if up {
		return fmt.Sprintf("%.2f", float64(h)/float64(Unit))
	}
	return fmt.Sprintf("%.2f", float64(h)/float64(Unit))
}
