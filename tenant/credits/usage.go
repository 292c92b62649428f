package credits

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/tenant"
)

// UsageItem is one line of the usage breakdown.
type UsageItem struct {
	Op      string `json:"op"`
	Count   int64  `json:"count"`
	Credits int64  `json:"credits"`
}

// Usage is the Usage report of the contract, in whole credits.
type Usage struct {
	PeriodStart      time.Time   `json:"period_start"`
	PeriodEnd        time.Time   `json:"period_end"`
	Plan             string      `json:"plan"`
	PlanCredits      int64       `json:"plan_credits"`
	TopupCredits     int64       `json:"topup_credits"`
	CreditsUsed      int64       `json:"credits_used"`
	CreditsRemaining int64       `json:"credits_remaining"`
	Breakdown        []UsageItem `json:"breakdown"`
}

// Report computes the usage of s's pool (test keys report the test pool)
// for the period containing now, or the one before it when previous is
// set. It reads the ledger only, so reporting never changes usage, and
// in one round trip: the breakdown and the top-up balance are
// independent, so they travel as one ReadBatch.
// credits_used is rounded up; balances are rounded down, as in a 402.
func Report(ctx context.Context, s *tenant.Scope, previous bool, now time.Time) (Usage, error) {
	created := s.Project.CreatedAt
	start := PeriodStart(created, now)
	end := NextPeriod(created, start)
	if previous {
		start, end = PeriodStart(created, start.Add(-time.Nanosecond)), start
	}
	u := Usage{PeriodStart: start, PeriodEnd: end, Plan: s.Project.Plan, PlanCredits: Allowance(s.Project) / Unit}
	var used, planUsed, topup int64
	var b tenant.ReadBatch
	b.Queue(`SELECT op, count(*) FILTER (WHERE amount > 0), sum(amount), sum(from_plan)
		FROM credit_ledger WHERE pool = $1 AND period_start >= $2 AND period_start < $3 AND op <> 'topup'
		GROUP BY op`, []any{pool(s), start, end}, func(rows pgx.Rows) error {
		used, planUsed, u.Breakdown = 0, 0, []UsageItem{}
		for rows.Next() {
			var it UsageItem
			var amount, fromPlan int64
			if err := rows.Scan(&it.Op, &it.Count, &amount, &fromPlan); err != nil {
				return err
			}
			used += amount
			planUsed += fromPlan
			if it.Count > 0 {
				it.Credits = ceil(max(amount, 0))
				u.Breakdown = append(u.Breakdown, it)
			}
		}
		return rows.Err()
	})
	// The top-up balance at the end of the period: top-ups enter the
	// ledger with a negative from_topup, spending with a positive one.
	// The test pool has none.
	if !s.Test() {
		b.Queue(`SELECT COALESCE(-sum(from_topup), 0) FROM credit_ledger WHERE pool = 'live' AND period_start < $1`,
			[]any{end}, func(rows pgx.Rows) error {
				topup = 0
				for rows.Next() {
					if err := rows.Scan(&topup); err != nil {
						return err
					}
				}
				return rows.Err()
			})
	}
	if err := s.ReadBatch(ctx, &b); err != nil {
		return u, err
	}
	sort.Slice(u.Breakdown, func(i, j int) bool {
		a, b := u.Breakdown[i], u.Breakdown[j]
		if a.Credits != b.Credits {
			return a.Credits > b.Credits
		}
		return a.Op < b.Op
	})
	u.CreditsUsed = ceil(max(used, 0))
	u.TopupCredits = max(topup, 0) / Unit
	u.CreditsRemaining = (max(Allowance(s.Project)-planUsed, 0) + max(topup, 0)) / Unit
	return u, nil
}
