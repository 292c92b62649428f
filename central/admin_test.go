package central_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
)

// adminToken mints an admin token with scopes.
func adminToken(t *testing.T, env *apitest.Env, scopes ...string) string {
	t.Helper()
	tok, err := env.Server.Central.MintAdminToken(context.Background(), "test", scopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Secret
}

// everyAdminScope lists every concrete admin scope.
func everyAdminScope() []string {
	var out []string
	for res, perms := range central.AdminPermissions {
		for _, p := range perms {
			out = append(out, res+":"+p)
		}
	}
	return out
}

// TestAdminAuth: the admin API takes admin tokens only, and /v1 project
// keys only; a revoked admin token is refused at once.
func TestAdminAuth(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	admin := adminToken(t, env, "*")

	env.Do("GET", "/admin/api/projects", admin, nil).Expect(t, 200)
	env.Do("GET", "/admin/api/projects", p.Key, nil).Problem(t, 401, "unauthorized")
	env.Do("GET", "/admin/api/projects", "", nil).Problem(t, 401, "unauthorized")
	env.Do("GET", "/v1/projects/me", admin, nil).Problem(t, 401, "unauthorized")
	env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)

	// Every admin answer carries the token's own bucket.
	res := env.Do("GET", "/admin/api/tenants", admin, nil).Expect(t, 200)
	if res.Header.Get("X-RateLimit-Limit") != "120" || res.Header.Get("X-Request-Id") == "" {
		t.Fatalf("headers %v", res.Header)
	}

	list, err := env.Server.Central.AdminTokens(context.Background())
	if err != nil || len(list) != 1 {
		t.Fatalf("tokens %v %v", list, err)
	}
	if err := env.Server.Central.RevokeAdminToken(context.Background(), list[0].ID); err != nil {
		t.Fatal(err)
	}
	env.Do("GET", "/admin/api/projects", admin, nil).Problem(t, 401, "unauthorized")
}

// TestAdminScopes: every route needs its scope. A token with every scope
// but that one is 403 naming it; a token with only that one gets past
// the check (a tenants:read token cannot suspend).
func TestAdminScopes(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	doomed := env.NewProject("build")
	tid := env.TenantID()
	var uid int64
	if err := env.DB.Pool.QueryRow(context.Background(), `SELECT id FROM central.users WHERE tenant_id = $1`, tid).Scan(&uid); err != nil {
		t.Fatal(err)
	}
	tp := fmt.Sprintf("/admin/api/tenants/%d", tid)
	pp := "/admin/api/projects/" + p.ID
	cases := []struct {
		method, path string
		body         any
		scope        string
		also         []string // what the route's middleware needs besides
	}{
		{"GET", "/admin/api/tenants", nil, "tenants:read", nil},
		{"POST", "/admin/api/tenants", map[string]any{"name": "New", "domain": "new-" + p.ID + ".test", "owner_email": "o@example.com", "owner_password": "password-1"}, "tenants:write", nil},
		{"GET", tp, nil, "tenants:read", nil},
		{"PATCH", tp, map[string]any{"name": "Renamed"}, "tenants:write", nil},
		{"DELETE", tp, nil, "tenants:write", nil}, // 409: it has projects
		{"GET", tp + "/users", nil, "users:read", nil},
		{"POST", tp + "/users", map[string]any{"email": "second@example.com", "password": "password-2"}, "users:write", nil},
		{"DELETE", tp + "/users/999999", nil, "users:write", nil},
		{"POST", fmt.Sprintf("%s/users/%d/reset-password", tp, uid), map[string]any{"password": "password-3"}, "users:write", nil},
		{"GET", "/admin/api/projects", nil, "projects:read", nil},
		{"POST", "/admin/api/projects", map[string]any{"tenant_id": tid, "name": "Made by admin"}, "projects:write", nil},
		{"GET", pp, nil, "projects:read", nil},
		{"PATCH", pp, map[string]any{"name": "Renamed"}, "projects:write", nil},
		{"PATCH", pp, map[string]any{"plan": "scale"}, "projects:admin", []string{"projects:write"}},
		{"POST", pp + "/suspend", map[string]any{"reason": "abuse"}, "projects:admin", nil},
		{"POST", pp + "/resume", nil, "projects:admin", nil},
		{"POST", pp + "/credits", map[string]any{"amount": 5}, "credits:write", nil},
		{"DELETE", "/admin/api/projects/" + doomed.ID, nil, "projects:admin", nil},
		// Exports and imports (admin_exports.go); an unknown export is
		// 404 once the scope passes.
		{"POST", pp + "/exports", nil, "exports:write", nil},
		{"GET", "/admin/api/exports/exp_000000000000000000000000", nil, "exports:read", nil},
		{"GET", "/admin/api/exports/exp_000000000000000000000000/download", nil, "exports:read", nil},
		{"POST", "/admin/api/projects/import", nil, "exports:write", []string{"projects:write"}},
		{"POST", "/admin/api/projects/import", nil, "projects:write", []string{"exports:write"}},
		// Shards (admin_shards.go): an unknown shard is 404, a bad body
		// 422, once the scope passes; shards:read is checked below (a
		// token with shards:admin may read too).
		{"POST", "/admin/api/shards", map[string]any{"name": "x", "url": "not a url"}, "shards:admin", nil},
		{"POST", "/admin/api/shards/nope/drain", nil, "shards:admin", nil},
		{"POST", "/admin/api/shards/nope/retire", nil, "shards:admin", nil},
		{"POST", "/admin/api/projects", map[string]any{"tenant_id": tid, "name": "Placed", "shard": "default"}, "shards:admin", []string{"projects:write"}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path+" "+tc.scope, func(t *testing.T) {
			var others []string
			for _, s := range everyAdminScope() {
				if s != tc.scope {
					others = append(others, s)
				}
			}
			m := env.Do(tc.method, tc.path, adminToken(t, env, others...), tc.body).Problem(t, 403, "forbidden")
			if !strings.Contains(fmt.Sprint(m["detail"]), tc.scope) {
				t.Fatalf("detail %v does not name %s", m["detail"], tc.scope)
			}
			res := env.Do(tc.method, tc.path, adminToken(t, env, append([]string{tc.scope}, tc.also...)...), tc.body)
			if res.Status == 401 || res.Status == 403 || res.Status >= 500 {
				t.Fatalf("with %s: %d %s", tc.scope, res.Status, res.Body)
			}
		})
	}
	// shards:read, or shards:admin which implies it; nothing else.
	for _, path := range []string{"/admin/api/shards", "/admin/api/shards/default"} {
		for _, scope := range []string{"shards:read", "shards:admin", "shards:*"} {
			env.Do("GET", path, adminToken(t, env, scope), nil).Expect(t, 200)
		}
		var others []string
		for _, s := range everyAdminScope() {
			if !strings.HasPrefix(s, "shards:") {
				others = append(others, s)
			}
		}
		m := env.Do("GET", path, adminToken(t, env, others...), nil).Problem(t, 403, "forbidden")
		require.Contains(t, fmt.Sprint(m["detail"]), "shards:read")
	}
	// The named case of the issue.
	env.Do("POST", pp+"/suspend", adminToken(t, env, "tenants:read"), map[string]any{"reason": "x"}).Problem(t, 403, "forbidden")
}

// TestAdminTenantsUsers: tenants and users through the admin API.
func TestAdminTenantsUsers(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers()) // the project's drop runs
	admin := adminToken(t, env, "tenants:*", "users:*", "projects:*")
	tn := env.Do("POST", "/admin/api/tenants", admin, map[string]any{"name": "Acme", "domain": "Acme-admin.test",
		"owner_email": "boss@acme.test", "owner_password": "password-1"}).Expect(t, 201).JSON(t)
	if tn["domain"] != "acme-admin.test" || tn["users"] != float64(1) || tn["projects"] != float64(0) {
		t.Fatalf("tenant %v", tn)
	}
	tp := fmt.Sprintf("/admin/api/tenants/%v", tn["id"])
	env.Do("POST", "/admin/api/tenants", admin, map[string]any{"name": "Dup", "domain": "acme-admin.test",
		"owner_email": "x@acme.test", "owner_password": "password-1"}).Problem(t, 409, "conflict")
	env.Do("PATCH", tp, admin, map[string]any{"name": "Acme Inc"}).Expect(t, 200)
	if got := env.Do("GET", tp, admin, nil).Expect(t, 200).JSON(t); got["name"] != "Acme Inc" {
		t.Fatalf("renamed %v", got)
	}
	u := env.Do("POST", tp+"/users", admin, map[string]any{"email": "two@acme.test", "password": "password-2"}).Expect(t, 201).JSON(t)
	var page struct {
		Data []map[string]any `json:"data"`
	}
	env.Do("GET", tp+"/users?limit=1", admin, nil).Expect(t, 200).Decode(t, &page)
	if len(page.Data) != 1 || page.Data[0]["email"] != "boss@acme.test" {
		t.Fatalf("users %v", page)
	}
	// A reset password logs in; the old one no longer does.
	pw := env.Do("POST", fmt.Sprintf("%s/users/%v/reset-password", tp, u["id"]), admin, nil).Expect(t, 200).JSON(t)["password"].(string)
	env.Do("POST", "/central/api/login", "", map[string]any{"email": "two@acme.test", "password": pw}).Expect(t, 200)
	env.Do("POST", "/central/api/login", "", map[string]any{"email": "two@acme.test", "password": "password-2"}).Expect(t, 422)

	env.Do("DELETE", fmt.Sprintf("%s/users/%v", tp, u["id"]), admin, nil).Expect(t, 204)
	var owner int64
	if err := env.DB.Pool.QueryRow(context.Background(), `SELECT id FROM central.users WHERE email = 'boss@acme.test'`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	env.Do("DELETE", fmt.Sprintf("%s/users/%d", tp, owner), admin, nil).Problem(t, 409, "conflict") // the last user stays

	// A tenant with a project is not deleted; an empty one is.
	pr := env.Do("POST", "/admin/api/projects", admin, map[string]any{"tenant_id": tn["id"], "name": "Site"}).Expect(t, 201).JSON(t)
	env.Do("DELETE", tp, admin, nil).Problem(t, 409, "conflict")
	env.Do("DELETE", "/admin/api/projects/"+pr["id"].(string)+"?now=true", admin, nil).Expect(t, 202)
	waitGone(t, env, admin, pr["id"].(string))
	env.Do("DELETE", tp, admin, nil).Expect(t, 204)
	env.Do("GET", tp, admin, nil).Problem(t, 404, "not_found")
}

// TestAdminProjectList: paging and the filters by tenant, plan and status.
func TestAdminProjectList(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	admin := adminToken(t, env, "projects:*")
	a := env.NewProject("build")
	b := env.NewProject("scale")
	other := env.CreateProject(central.ProjectParams{TenantID: env.NewTenant(), Name: "Other", Plan: "build"})
	env.Do("POST", "/admin/api/projects/"+b.ID+"/suspend", admin, map[string]any{"reason": "unpaid"}).Expect(t, 200)

	ids := func(path string) []string {
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		}
		var out []string
		for {
			env.Do("GET", path, admin, nil).Expect(t, 200).Decode(t, &page)
			for _, p := range page.Data {
				out = append(out, p.ID)
			}
			if !page.HasMore {
				return out
			}
			sep := "&"
			if !strings.Contains(path, "?") {
				sep = "?"
			}
			path = strings.Split(path, "&cursor=")[0] + sep + "cursor=" + *page.NextCursor
		}
	}
	if got := ids("/admin/api/projects?limit=1"); strings.Join(got, ",") != strings.Join([]string{a.ID, b.ID, other.ID}, ",") {
		t.Fatalf("all %v", got)
	}
	if got := ids(fmt.Sprintf("/admin/api/projects?tenant_id=%d&limit=1", env.TenantID())); len(got) != 2 {
		t.Fatalf("tenant %v", got)
	}
	if got := ids("/admin/api/projects?plan=scale"); len(got) != 1 || got[0] != b.ID {
		t.Fatalf("plan %v", got)
	}
	if got := ids("/admin/api/projects?status=suspended"); len(got) != 1 || got[0] != b.ID {
		t.Fatalf("status %v", got)
	}
	env.Do("GET", "/admin/api/projects?status=gone", admin, nil).Problem(t, 422, "validation_failed")
	got := env.Do("GET", "/admin/api/projects/"+b.ID, admin, nil).Expect(t, 200).JSON(t)
	if got["status"] != "suspended" || got["status_reason"] != "unpaid" || got["shard"] != "default" || got["usage"] == nil {
		t.Fatalf("project %v", got)
	}
}

// TestAdminLimitsTakeEffect: an enterprise project's own limits set with
// PATCH show in the next request's rate-limit headers; other plans have
// none, and leaving enterprise clears them.
func TestAdminLimitsTakeEffect(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	admin := adminToken(t, env, "projects:*")
	p := env.NewProject("enterprise")
	if h := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).Header; h.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("before: %v", h)
	}
	got := env.Do("PATCH", "/admin/api/projects/"+p.ID, admin, map[string]any{"rate_rpm": 7, "rate_burst": 3, "plan_credits": 123}).Expect(t, 200).JSON(t)
	if got["rate_rpm"] != float64(7) || got["rate_burst"] != float64(3) || got["plan_credits"] != float64(123) {
		t.Fatalf("patched %v", got)
	}
	// The burst of 3 is what is left at most (the request made before may
	// still weigh on the bucket), and it is spent by as many requests.
	h := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).Header
	left, _ := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	if h.Get("X-RateLimit-Limit") != "7" || left > 2 {
		t.Fatalf("after: limit %s remaining %s", h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"))
	}
	for range left {
		env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	}
	// Remaining is the whole requests left: a fraction of one may be
	// there too and be topped up to a whole one (7 a minute: one every
	// 8.6 s) while the test runs, so one more request may pass, not two.
	if r := env.Do("GET", "/v1/projects/me", p.Key, nil); r.Status != 429 {
		r.Expect(t, 200)
		env.Do("GET", "/v1/projects/me", p.Key, nil).Problem(t, 429, "rate_limited")
	}
	// null clears one override: the burst falls back to twice the rate.
	env.Do("PATCH", "/admin/api/projects/"+p.ID, admin, map[string]any{"rate_burst": nil}).Expect(t, 200)
	env.Do("PATCH", "/admin/api/projects/"+p.ID, admin, map[string]any{"plan": "scale"}).Expect(t, 200)
	if h := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).Header; h.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("after leaving enterprise: %v", h.Get("X-RateLimit-Limit"))
	}
	env.Do("PATCH", "/admin/api/projects/"+p.ID, admin, map[string]any{"rate_rpm": 5}).Problem(t, 422, "validation_failed")
	// Project keys still cannot.
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"rate_rpm": 5}).Problem(t, 403, "forbidden")
}

// TestAdminCreditsAndCreate: a top-up adds to the live pool; a project
// created by an admin is provisioned and usable.
func TestAdminCreditsAndCreate(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	admin := adminToken(t, env, "projects:write", "projects:read", "credits:write")
	p := env.NewProject("build")
	before := p.Balance(t)
	got := env.Do("POST", "/admin/api/projects/"+p.ID+"/credits", admin, map[string]any{"amount": 50}).Expect(t, 200).JSON(t)
	if p.Balance(t) != before+5000 || got["added"] != float64(50) {
		t.Fatalf("balance %d → %d, %v", before, p.Balance(t), got)
	}
	env.Do("POST", "/admin/api/projects/"+p.ID+"/credits", admin, map[string]any{"amount": 0}).Problem(t, 422, "validation_failed")
	env.Do("POST", "/admin/api/projects", admin, map[string]any{"tenant_id": env.TenantID(), "name": "Pricey", "plan": "scale"}).Problem(t, 403, "forbidden")
	np := env.Do("POST", "/admin/api/projects", admin, map[string]any{"tenant_id": env.TenantID(), "name": "Fresh"}).Expect(t, 201).JSON(t)
	if np["status"] != "active" || np["plan"] != "free" {
		t.Fatalf("created %v", np)
	}
	env.Do("GET", "/admin/api/projects/"+np["id"].(string), admin, nil).Expect(t, 200)
}

// riverStates lists the states of p's River jobs and how many of them
// snoozed at least once.
func riverStates(t *testing.T, p *apitest.Project) (states []string, snoozed int) {
	t.Helper()
	rows, err := p.Pool().Query(context.Background(), `SELECT state, metadata->>'snoozes' IS NOT NULL FROM river.river_job
		WHERE args->>'project_id' = $1 ORDER BY id`, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var z bool
		if err := rows.Scan(&s, &z); err != nil {
			t.Fatal(err)
		}
		states = append(states, s)
		if z {
			snoozed++
		}
	}
	return states, snoozed
}

// TestSuspendResume: a suspended project's keys are 403 "project
// suspended" and its public surface 404; a job and a webhook delivery
// enqueued before the suspension wait (snoozed, no attempt spent) while
// it lasts, and both complete once after resume.
func TestSuspendResume(t *testing.T) {
	t.Parallel()
	suspendResume(t, "")
}

// suspendResume is TestSuspendResume for a project on shard, one of the
// env's own (apitest.WithShards) unless "": its jobs wait and wake on
// that shard's River, its delivery leaves from there.
func suspendResume(t *testing.T, shard string) {
	rc := webhooktest.NewTLS(t, nil)
	opts := []apitest.Option{apitest.WithRootCAs(rc.RootCAs())} // inserts jobs, works none
	if shard != "" {
		opts = append(opts, apitest.WithShards(shard))
	}
	env := apitest.New(t, opts...)
	admin := adminToken(t, env, "projects:admin")
	p := env.NewProject("build")
	if shard != "" {
		p = env.NewProjectOn(shard)
	}
	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.paid")
	rc.SetSecret(secret)
	job := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "A lighthouse", "width": 96, "height": 64}).Expect(t, 202).JSON(t)
	webhooktest.Emit(t, env, p, "order.paid", map[string]any{"id": 1})

	got := env.Do("POST", "/admin/api/projects/"+p.ID+"/suspend", admin, map[string]any{"reason": "abuse report"}).Expect(t, 200).JSON(t)
	if got["status"] != "suspended" {
		t.Fatalf("suspended %v", got)
	}
	m := env.Do("GET", "/v1/projects/me", p.Key, nil).Problem(t, 403, "forbidden")
	if m["detail"] != "project suspended" {
		t.Fatalf("detail %v", m["detail"])
	}
	env.Send(apitest.Request{Method: "GET", Path: "/v1/public/pages", Header: map[string]string{"X-Service-Project-Key": p.ID}}).Problem(t, 404, "not_found")

	// Workers start while it is suspended: each job is tried and snoozed.
	env.Instance(apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	deadline := time.Now().Add(30 * time.Second)
	for {
		states, snoozed := riverStates(t, p)
		if len(states) >= 2 && snoozed == len(states) && strings.Count(strings.Join(states, ","), "scheduled") == len(states) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not snoozed: %v (%d snoozed)", states, snoozed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(rc.Requests()); n != 0 {
		t.Fatalf("%d deliveries while suspended", n)
	}

	env.Do("POST", "/admin/api/projects/"+p.ID+"/resume", admin, nil).Expect(t, 200)
	env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	env.Send(apitest.Request{Method: "GET", Path: "/v1/public/pages", Header: map[string]string{"X-Service-Project-Key": p.ID}}).Expect(t, 200)
	if j := env.WaitJob(t, p.Key, job["id"].(string)); j["status"] != "completed" {
		t.Fatalf("job %v", j)
	}
	rc.WaitN(t, 10*time.Second, 1)
	time.Sleep(300 * time.Millisecond) // a second delivery would show now
	if reqs := rc.Requests(); len(reqs) != 1 || reqs[0].Verified != nil {
		t.Fatalf("deliveries after resume: %d (%v)", len(reqs), reqs)
	}
	var attempts int
	if err := p.Pool().QueryRow(context.Background(), `SELECT max(attempt) FROM river.river_job WHERE args->>'project_id' = $1`, p.ID).Scan(&attempts); err != nil || attempts != 1 {
		t.Fatalf("attempts %d, %v: a snooze must not spend one", attempts, err)
	}
}

// waitGone waits until the admin API no longer knows the project.
func waitGone(t *testing.T, env *apitest.Env, admin, projectID string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for env.Do("GET", "/admin/api/projects/"+projectID, admin, nil).Status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("project %s still there after 30 s", projectID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDeleteLeavesNothing: a deleted project's keys stop at once, and
// after the drop nothing of it remains: schema, placement, keys, media,
// River jobs, idempotency rows.
func TestDeleteLeavesNothing(t *testing.T) {
	t.Parallel()
	deleteLeavesNothing(t, "")
}

// deleteLeavesNothing is TestDeleteLeavesNothing for projects on shard,
// one of the env's own (apitest.WithShards) unless "": the drop job runs
// on that shard and drops the schema there.
func deleteLeavesNothing(t *testing.T, shard string) {
	opts := []apitest.Option{apitest.WithWorkers()}
	if shard != "" {
		opts = append(opts, apitest.WithShards(shard))
	}
	env := apitest.New(t, opts...)
	admin := adminToken(t, env, "projects:*")
	var p, keep *apitest.Project
	if shard != "" {
		p, keep = env.NewProjectOn(shard), env.NewProjectOn(shard) // its neighbour keeps everything
	} else {
		p, keep = env.NewProject("build"), env.NewProject("build")
	}
	ctx := context.Background()
	// The project's schema and jobs are on its shard; the rest in central.
	onShard := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := p.Pool().QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	job := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "A lighthouse", "width": 96, "height": 64}).Expect(t, 202).JSON(t)
	env.WaitJob(t, p.Key, job["id"].(string))
	env.Send(apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "k", "scopes": []string{"blog:read"}},
		Header: map[string]string{"Idempotency-Key": "once"}}).Expect(t, 201)
	media := filepath.Join(strings.TrimPrefix(env.Config.Storage, "file://"), p.ID)
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := env.DB.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	schemas := `SELECT count(*) FROM pg_namespace WHERE nspname IN ($1::text, 'deleted_' || $1::text)`
	idem := `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = 'idempotency_keys' AND n.nspname IN ($1::text, 'deleted_' || $1::text)`
	// Each check must see something before, or it proves nothing.
	if _, err := os.Stat(media); err != nil {
		t.Fatalf("no media before: %v", err)
	}
	for what, n := range map[string]int{
		"schema":           onShard(schemas, p.Schema),
		"idempotency rows": onShard(`SELECT count(*) FROM ` + pgx.Identifier{p.Schema, "idempotency_keys"}.Sanitize()),
		"placement":        count(`SELECT count(*) FROM central.placements WHERE project_id = $1`, p.ID),
		"keys":             count(`SELECT count(*) FROM central.api_keys WHERE project_id = $1`, p.ID),
		"river jobs":       onShard(`SELECT count(*) FROM river.river_job WHERE args->>'project_id' = $1`, p.ID),
		"idempotency":      onShard(idem, p.Schema),
	} {
		if n == 0 {
			t.Fatalf("no %s before the delete", what)
		}
	}

	env.Do("DELETE", "/admin/api/projects/"+p.ID+"?now=true", admin, nil).Expect(t, 202)
	env.Do("GET", "/v1/projects/me", p.Key, nil).Problem(t, 401, "unauthorized")
	waitGone(t, env, admin, p.ID)

	for what, n := range map[string]int{
		"schema":      onShard(schemas, p.Schema),
		"project":     count(`SELECT count(*) FROM central.projects WHERE id = $1`, p.ID),
		"placement":   count(`SELECT count(*) FROM central.placements WHERE project_id = $1`, p.ID),
		"keys":        count(`SELECT count(*) FROM central.api_keys WHERE project_id = $1`, p.ID),
		"river jobs":  onShard(`SELECT count(*) FROM river.river_job WHERE args->>'project_id' = $1`, p.ID),
		"idempotency": onShard(idem, p.Schema),
	} {
		if n != 0 {
			t.Errorf("%d %s rows left", n, what)
		}
	}
	if _, err := os.Stat(media); !os.IsNotExist(err) {
		t.Errorf("media left: %v", err)
	}
	env.Send(apitest.Request{Method: "GET", Path: "/v1/public/pages", Header: map[string]string{"X-Service-Project-Key": p.ID}}).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/projects/me", keep.Key, nil).Expect(t, 200)
	if onShard(schemas, keep.Schema) != 1 {
		t.Fatal("the neighbour's schema went too")
	}
}

// TestDeleteGrace: without now, the schema waits renamed and the drop is
// scheduled after PLINTH_DELETE_GRACE; the project shows as deleting.
func TestDeleteGrace(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_DELETE_GRACE", "48h"))
	admin := adminToken(t, env, "projects:*")
	p := env.NewProject("build")
	got := env.Do("DELETE", "/admin/api/projects/"+p.ID, admin, nil).Expect(t, 202).JSON(t)
	if got["status"] != "deleting" {
		t.Fatalf("deleted %v", got)
	}
	env.Do("GET", "/v1/projects/me", p.Key, nil).Problem(t, 401, "unauthorized")
	env.Send(apitest.Request{Method: "GET", Path: "/v1/public/pages", Header: map[string]string{"X-Service-Project-Key": p.ID}}).Problem(t, 404, "not_found")
	env.Do("DELETE", "/admin/api/projects/"+p.ID, admin, nil).Problem(t, 409, "conflict")
	env.Do("POST", "/admin/api/projects/"+p.ID+"/resume", admin, nil).Problem(t, 409, "conflict")
	var renamed, original int
	ctx := context.Background()
	if err := env.DB.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE nspname = 'deleted_' || $1), count(*) FILTER (WHERE nspname = $1)
		FROM pg_namespace`, p.Schema).Scan(&renamed, &original); err != nil || renamed != 1 || original != 0 {
		t.Fatalf("renamed %d original %d %v", renamed, original, err)
	}
	jobs := env.RiverJobs(t, "project_drop", map[string]any{"deleted_project": p.ID})
	if len(jobs) != 1 || time.Until(jobs[0].ScheduledAt) < 47*time.Hour {
		t.Fatalf("drop jobs %+v", jobs)
	}
}
