package credits_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

func setup(t *testing.T, plan string) (*apitest.Env, *apitest.Project) {
	t.Helper()
	env := apitest.New(t, apitest.WithWidgets(nil))
	p := env.NewProject(plan)
	p.EnableWidgets()
	return env, p
}

// freeWithTopUp is a new project on the free plan (100 credits) with
// credit of top-ups on its live pool.
func freeWithTopUp(t *testing.T, credit int64) *apitest.Project {
	t.Helper()
	_, p := setup(t, "free")
	topUp(t, p.Scope, credit)
	return p
}

func widget(env *apitest.Env, key, op string, cost int64, idem string) *apitest.Resp {
	return env.Send(widgetRequest(key, op, cost, idem))
}

// widgetRequest is the request of widget, for env.TrySend off the test
// goroutine.
func widgetRequest(key, op string, cost int64, idem string) apitest.Request {
	return apitest.PostWidget(key, idem, map[string]any{"name": op, "op": op, "cost": cost})
}

// sendAtOnce sends req n times concurrently and returns the answers in
// order; a request that fails to send fails the test, on the test
// goroutine once all are back.
func sendAtOnce(t *testing.T, env *apitest.Env, req apitest.Request, n int) []*apitest.Resp {
	t.Helper()
	resps := make([]*apitest.Resp, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := env.TrySend(req)
			if err != nil {
				t.Error(err)
				return
			}
			resps[i] = r
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return resps
}

// tally counts the 201s and the answers of status refused among resps,
// checking each of the latter with check; any other status fails the test.
func tally(t *testing.T, resps []*apitest.Resp, refused int, check func(*apitest.Resp)) (ok, no int) {
	t.Helper()
	for _, r := range resps {
		switch r.Status {
		case 201:
			ok++
		case refused:
			check(r)
			no++
		default:
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
	return ok, no
}

func charge(t *testing.T, s *tenant.Scope, op string, cost int64, ref string) {
	t.Helper()
	err := s.Tx(context.Background(), func(tx pgx.Tx) error { return credits.Charge(context.Background(), tx, s, op, cost, ref) })
	if err != nil {
		t.Fatal(err)
	}
}

// topUp adds credits of top-up to the scope's pool.
func topUp(t *testing.T, s *tenant.Scope, credit int64) {
	t.Helper()
	err := s.Tx(context.Background(), func(tx pgx.Tx) error { return credits.TopUp(context.Background(), tx, s, credit) })
	if err != nil {
		t.Fatal(err)
	}
}

// refund refunds the charges made under ref.
func refund(t *testing.T, s *tenant.Scope, ref string) {
	t.Helper()
	err := s.Tx(context.Background(), func(tx pgx.Tx) error { return credits.Refund(context.Background(), tx, s, ref) })
	if err != nil {
		t.Fatal(err)
	}
}

func balance(t *testing.T, s *tenant.Scope) int64 {
	t.Helper()
	var b int64
	err := s.Tx(context.Background(), func(tx pgx.Tx) error {
		var err error
		b, err = credits.Balance(context.Background(), tx, s)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConcurrentWritesAtBalanceFive is the must-show: with 5 credits
// left, 20 concurrent 1-credit writes give exactly 5 successes and 15
// 402s; the balance never goes negative; GETs never change usage.
func TestConcurrentWritesAtBalanceFive(t *testing.T) {
	t.Parallel()
	env, p := setup(t, "free") // 100 credits
	charge(t, p.Scope, "content_update", 95*credits.Unit, "")
	usage := func() []byte { return env.Do("GET", "/v1/projects/me/usage", p.Key, nil).Expect(t, 200).Body }
	before := usage()

	resps := sendAtOnce(t, env, widgetRequest(p.Key, "content_update", credits.Unit, ""), 20)
	ok, short := tally(t, resps, 402, func(r *apitest.Resp) {
		m := r.Problem(t, 402, "insufficient_credits")
		if m["cost"] != float64(1) || m["balance"] != float64(0) {
			t.Fatalf("402 must carry integer cost 1 and balance 0: %s", r.Body)
		}
	})
	if ok != 5 || short != 15 {
		t.Fatalf("%d successes and %d 402s, want 5 and 15", ok, short)
	}
	if w := p.Count(`SELECT count(*) FROM widgets`); w != 5 {
		t.Fatalf("%d widgets written, want 5 (a refused write leaves nothing)", w)
	}
	if b := balance(t, p.Scope); b != 0 {
		t.Fatalf("balance %d, want 0", b)
	}
	if neg := p.Count(`SELECT count(*) FROM credit_pools WHERE plan_used > 100 * 100 OR topup_balance < 0`); neg != 0 {
		t.Fatal("the balance went negative")
	}
	// GETs never change usage
	after := usage()
	entries := p.Count(`SELECT count(*) FROM credit_ledger`)
	for i := 0; i < 5; i++ {
		env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
		if u := usage(); string(u) != string(after) {
			t.Fatalf("a GET changed usage: %s then %s", after, u)
		}
	}
	if p.Count(`SELECT count(*) FROM credit_ledger`) != entries {
		t.Fatal("a GET wrote to the ledger")
	}
	if string(before) == string(after) {
		t.Fatal("the writes did not show in usage")
	}
}

// TestAICeiling: AI charges of one pool are capped at 300 credits per
// minute, exactly under concurrency, with a 429 whose Retry-After is
// longer than a request-limit wait; other operations are not capped.
func TestAICeiling(t *testing.T) {
	t.Parallel()
	env, p := setup(t, "scale")
	resps := sendAtOnce(t, env, widgetRequest(p.Key, "blog_post", 60*credits.Unit, ""), 10)
	ok, limited := tally(t, resps, 429, func(r *apitest.Resp) {
		r.Problem(t, 429, "rate_limited")
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < credits.MinAIRetryAfter || ra > 60 {
			t.Fatalf("AI ceiling Retry-After %q", r.Header.Get("Retry-After"))
		}
	})
	if ok != 5 || limited != 5 {
		t.Fatalf("%d blog posts charged and %d limited, want 5 and 5 (300 credits a minute)", ok, limited)
	}
	if w := p.Count(`SELECT count(*) FROM widgets`); w != 5 {
		t.Fatalf("%d writes kept, want 5", w)
	}
	// other operations are not capped, nor is the test pool by the live one
	widget(env, p.Key, "content_update", credits.Unit, "").Expect(t, 201)
	test := p.NewKey(true, "*")
	widget(env, test, "image", 10*credits.Unit, "").Expect(t, 201)

	// a limited request with an Idempotency-Key is not stored: once the
	// window has moved on, the same key runs
	widget(env, p.Key, "translate_language", 7*credits.Unit, "ai-1").Problem(t, 429, "rate_limited")
	age(t, p.Scope, 61*time.Second)
	r := widget(env, p.Key, "translate_language", 7*credits.Unit, "ai-1").Expect(t, 201)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a 429 was replayed")
	}

	// a single operation dearer than the ceiling runs when the window is empty
	age(t, p.Scope, 61*time.Second)
	widget(env, p.Key, "video_premium", 305*credits.Unit, "").Expect(t, 201)
	widget(env, p.Key, "social_post", 5*credits.Unit, "").Problem(t, 429, "rate_limited")
	// refunds give the window back
	age(t, p.Scope, 61*time.Second)
	charge(t, p.Scope, "website", 200*credits.Unit, "job_1")
	charge(t, p.Scope, "website", 100*credits.Unit, "job_2")
	widget(env, p.Key, "image", 10*credits.Unit, "").Problem(t, 429, "rate_limited")
	refund(t, p.Scope, "job_1")
	widget(env, p.Key, "image", 10*credits.Unit, "").Expect(t, 201)
}

// age moves every ledger entry of the project back by d.
func age(t *testing.T, s *tenant.Scope, d time.Duration) {
	t.Helper()
	err := s.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE credit_ledger SET created_at = created_at - $1 * interval '1 millisecond'`, d.Milliseconds())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestIsAI(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"blog_post", "social_post", "image", "translate_language", "content_plan", "website", "video", "video_premium"} {
		if !credits.IsAI(op) {
			t.Errorf("%s must count against the AI ceiling", op)
		}
	}
	for _, op := range []string{"content_update", "page_update", "image_register", "webhook_delivery", "topup"} {
		if credits.IsAI(op) {
			t.Errorf("%s is not AI work", op)
		}
	}
}

// TestChargesUnderLoad: 10,000 one-hundredth charges, each with its
// write, from 32 connections at once against a balance of 6,000
// hundredths (3,000 of plan allowance, 3,000 of top-ups): exactly 6,000
// commit, with their writes, the allowance spent before the top-ups, and
// the 4,000 others get 402 and leave nothing; the balance ends at zero,
// never below.
func TestChargesUnderLoad(t *testing.T) {
	t.Parallel()
	env, p := setup(t, "free") // 100 credits: 10,000 hundredths
	charge(t, p.Scope, "test_drain", 70*credits.Unit, "")
	topUp(t, p.Scope, 30)
	const writers, writes = 32, 10000

	cfg, err := pgxpool.ParseConfig(env.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = writers
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := tenant.NewScope(pool, p.Project, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ok, short atomic.Int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := next.Add(1); i <= writes; i = next.Add(1) {
				err := s.Tx(ctx, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO widgets (name) VALUES ($1)`, strconv.FormatInt(i, 10)); err != nil {
						return err
					}
					return credits.Charge(ctx, tx, s, "content_update", 1, "")
				})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, credits.ErrInsufficient):
					short.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if ok.Load() != 6000 || short.Load() != 4000 {
		t.Fatalf("%d charges made and %d refused, want 6000 and 4000", ok.Load(), short.Load())
	}
	if w := p.Count(`SELECT count(*) FROM widgets`); w != 6000 {
		t.Fatalf("%d widgets written, want 6000 (a refused write leaves nothing)", w)
	}
	if b := balance(t, p.Scope); b != 0 {
		t.Fatalf("balance %d, want 0", b)
	}
	if n := p.Count(`SELECT count(*) FROM credit_ledger WHERE op = 'content_update' AND amount = 1 AND from_plan + from_topup = 1`); n != 6000 {
		t.Fatalf("%d ledger rows of the writes, want 6000", n)
	}
	if n := p.Count(`SELECT sum(from_plan)::int FROM credit_ledger WHERE op = 'content_update'`); n != 3000 {
		t.Fatalf("%d hundredths taken from the allowance, want 3000 (all of it, before top-ups)", n)
	}
	if n := p.Count(`SELECT count(*) FROM credit_pools WHERE pool = 'live' AND plan_used = 100 * 100 AND topup_balance = 0`); n != 1 {
		t.Fatal("the pool does not show the allowance and the top-ups spent")
	}
}
