package usage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/credits"
)

func widget(t *testing.T, env *apitest.Env, key, op string, cost int64) {
	t.Helper()
	env.Do("POST", "/v1/test/widgets", key, map[string]any{"name": op, "op": op, "cost": cost}).Expect(t, 201)
}

type report struct {
	PeriodStart      string `json:"period_start"`
	PeriodEnd        string `json:"period_end"`
	Plan             string `json:"plan"`
	PlanCredits      int64  `json:"plan_credits"`
	TopupCredits     int64  `json:"topup_credits"`
	CreditsUsed      int64  `json:"credits_used"`
	CreditsRemaining int64  `json:"credits_remaining"`
	Breakdown        []struct {
		Op      string `json:"op"`
		Count   int64  `json:"count"`
		Credits int64  `json:"credits"`
	} `json:"breakdown"`
}

func get(t *testing.T, env *apitest.Env, key, query string) report {
	t.Helper()
	var r report
	env.Do("GET", "/v1/projects/me/usage"+query, key, nil).Expect(t, 200).Decode(t, &r)
	return r
}

func TestUsageReport(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWidgets(nil))
	p := env.NewProject("build")
	p.EnableWidgets()

	empty := get(t, env, p.Key, "")
	if empty.Plan != "build" || empty.PlanCredits != 10000 || empty.CreditsUsed != 0 || empty.CreditsRemaining != 10000 ||
		empty.TopupCredits != 0 || empty.Breakdown == nil || len(empty.Breakdown) != 0 {
		t.Fatalf("fresh project: %+v", empty)
	}

	for i := 0; i < 3; i++ {
		widget(t, env, p.Key, "content_update", credits.Unit)
	}
	widget(t, env, p.Key, "blog_post", 60*credits.Unit)
	for i := 0; i < 3; i++ {
		widget(t, env, p.Key, "webhook_delivery", credits.WebhookDelivery) // 0.02 each
	}
	u := get(t, env, p.Key, "?period=current")
	// 3 + 60 + 0.06 = 63.06 credits: used rounds up, remaining down
	if u.CreditsUsed != 64 || u.CreditsRemaining != 9936 {
		t.Fatalf("used %d remaining %d, want 64 and 9936", u.CreditsUsed, u.CreditsRemaining)
	}
	want := []struct {
		op             string
		count, credits int64
	}{{"blog_post", 1, 60}, {"content_update", 3, 3}, {"webhook_delivery", 3, 1}}
	if len(u.Breakdown) != len(want) {
		t.Fatalf("breakdown %+v", u.Breakdown)
	}
	for i, w := range want {
		if b := u.Breakdown[i]; b.Op != w.op || b.Count != w.count || b.Credits != w.credits {
			t.Fatalf("breakdown[%d] = %+v, want %+v", i, b, w)
		}
	}
	// period bounds: RFC 3339 UTC, one month apart, around now
	start, err1 := time.Parse(time.RFC3339, u.PeriodStart)
	end, err2 := time.Parse(time.RFC3339, u.PeriodEnd)
	if err1 != nil || err2 != nil || !strings.HasSuffix(u.PeriodStart, "Z") || !strings.HasSuffix(u.PeriodEnd, "Z") {
		t.Fatalf("period %q..%q", u.PeriodStart, u.PeriodEnd)
	}
	if now := time.Now(); start.After(now) || !end.After(now) || !start.Equal(credits.PeriodStart(p.CreatedAt, now)) ||
		!end.Equal(credits.NextPeriod(p.CreatedAt, start)) {
		t.Fatalf("period %v..%v does not contain now", start, end)
	}

	// top-ups: counted apart, spent only after the allowance
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error { return credits.TopUp(context.Background(), tx, p.Scope, 500) })
	if err != nil {
		t.Fatal(err)
	}
	u = get(t, env, p.Key, "")
	if u.TopupCredits != 500 || u.CreditsRemaining != 10436 || u.CreditsUsed != 64 {
		t.Fatalf("after a top-up: %+v", u)
	}
	for _, b := range u.Breakdown {
		if b.Op == "topup" {
			t.Fatal("a top-up is not usage")
		}
	}

	// previous period: empty, ending where the current one starts
	prev := get(t, env, p.Key, "?period=previous")
	if prev.PeriodEnd != u.PeriodStart || prev.CreditsUsed != 0 || len(prev.Breakdown) != 0 || prev.PlanCredits != 10000 {
		t.Fatalf("previous: %+v", prev)
	}
	if ps, _ := time.Parse(time.RFC3339, prev.PeriodStart); !ps.Before(start) || start.Sub(ps) > 31*24*time.Hour {
		t.Fatalf("previous period starts %v", ps)
	}

	// the test pool: same allowance, its own usage, no top-ups
	test := p.NewKey(true, "*")
	widget(t, env, test, "content_update", 2*credits.Unit)
	tu := get(t, env, test, "")
	if tu.CreditsUsed != 2 || tu.PlanCredits != 10000 || tu.TopupCredits != 0 || tu.CreditsRemaining != 9998 || len(tu.Breakdown) != 1 {
		t.Fatalf("test pool: %+v", tu)
	}
	if get(t, env, p.Key, "").CreditsUsed != 64 {
		t.Fatal("test-key usage leaked into the live pool")
	}

	// errors
	env.Do("GET", "/v1/projects/me/usage?period=last", p.Key, nil).Problem(t, 422, "validation_failed")
	m := env.Do("GET", "/v1/projects/me/usage?period=last", p.Key, nil).JSON(t)
	if errs, _ := m["errors"].(map[string]any); errs["period"] == nil {
		t.Fatalf("422 must name period: %v", m)
	}
	env.Do("GET", "/v1/projects/me/usage", p.NewKey(false, "content:read"), nil).Problem(t, 403, "forbidden")
	env.Do("GET", "/v1/projects/me/usage", "", nil).Problem(t, 401, "unauthorized")
}

// TestPreviousPeriod: charges of the previous period are reported there,
// not in the current one.
func TestPreviousPeriod(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWidgets(nil))
	p := env.NewProject("hobby")
	p.EnableWidgets()
	widget(t, env, p.Key, "content_update", credits.Unit)
	widget(t, env, p.Key, "page_update", credits.Unit)
	// move the page_update into the previous period
	cur := credits.PeriodStart(p.CreatedAt, time.Now())
	prevStart := credits.PeriodStart(p.CreatedAt, cur.Add(-time.Nanosecond))
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE credit_ledger SET period_start = $1 WHERE op = 'page_update'`, prevStart)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	prev := get(t, env, p.Key, "?period=previous")
	if prev.CreditsUsed != 1 || len(prev.Breakdown) != 1 || prev.Breakdown[0].Op != "page_update" || prev.CreditsRemaining != 1999 {
		t.Fatalf("previous: %+v", prev)
	}
	if cu := get(t, env, p.Key, "?period=current"); cu.CreditsUsed != 1 || cu.Breakdown[0].Op != "content_update" {
		t.Fatalf("current: %+v", cu)
	}
}
