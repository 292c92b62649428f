package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestAdminAPICommands: the admin token commands and the CLI mirror of the
// admin API act on the same database as the running server.
func TestAdminAPICommands(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("enterprise")
	getenv := func(k string) string {
		return map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage}[k]
	}
	cli := func(args ...string) map[string]any {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, getenv, &out, &errOut); err != nil {
			t.Fatalf("plinth %v: %v: %s", args, err, errOut.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("plinth %v printed %q", args, out.String())
		}
		return m
	}
	fails := func(args ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, getenv, &out, &errOut); err == nil {
			t.Errorf("plinth %v: no error", args)
		}
	}

	// The CLI is another instance: the server learns of its changes by
	// the central LISTEN notification, a moment after the command ends.
	// await repeats a request until it answers status (at most 5 s).
	await := func(path, key string, status int) *apitest.Resp {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			r := env.Do("GET", path, key, nil)
			if r.Status == status || time.Now().After(deadline) {
				return r.Expect(t, status)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	tok := cli("admin-token", "create", "--name", "ops", "--scopes", "projects:*,tenants:read")
	if len(tok) != 5 || !regexp.MustCompile(`^pln_admin_[0-9A-Za-z]{32}$`).MatchString(fmt.Sprint(tok["secret"])) ||
		!regexp.MustCompile(`^adm_`).MatchString(fmt.Sprint(tok["id"])) || tok["name"] != "ops" || tok["created_at"] == nil {
		t.Fatalf("admin-token create printed %v", tok)
	}
	secret := tok["secret"].(string)
	env.Do("GET", "/admin/api/projects/"+p.ID, secret, nil).Expect(t, 200)
	env.Do("GET", "/admin/api/tenants/1/users", secret, nil).Problem(t, 403, "forbidden")
	fails("admin-token", "create", "--name", "bad", "--scopes", "posts:write")
	if l := cli("admin-token", "list"); len(l["data"].([]any)) != 1 {
		t.Fatalf("admin-token list %v", l)
	}
	// --expires-in: days or a duration; the token shows when it expires.
	short := cli("admin-token", "create", "--name", "audit", "--scopes", "tenants:read", "--expires-in", "90d")
	until, err := time.Parse(time.RFC3339Nano, fmt.Sprint(short["expires_at"]))
	if want := time.Now().Add(90 * 24 * time.Hour); err != nil || until.Before(want.Add(-time.Minute)) || until.After(want) {
		t.Fatalf("admin-token create --expires-in 90d printed %v", short)
	}
	env.Do("GET", "/admin/api/tenants", short["secret"].(string), nil).Expect(t, 200)
	for _, bad := range []string{"0d", "-3h", "soon", "90", "99999999d"} {
		fails("admin-token", "create", "--name", "bad", "--scopes", "tenants:read", "--expires-in", bad)
	}
	cli("admin-token", "revoke", "--id", short["id"].(string))

	// Limits set by the CLI show on the next request.
	if got := cli("project", "set", "--project", p.ID, "--rate-rpm", "9"); got["rate_rpm"] != float64(9) {
		t.Fatalf("project set %v", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).Header.Get("X-RateLimit-Limit") != "9" {
		if time.Now().After(deadline) {
			t.Fatal("the limit set by the CLI did not show")
		}
		time.Sleep(10 * time.Millisecond)
	}
	fails("project", "set", "--project", p.ID, "--rate-rpm", "lots")
	if got := cli("project", "suspend", "--project", p.ID, "--reason", "chargeback"); got["status"] != "suspended" {
		t.Fatalf("suspend %v", got)
	}
	await("/v1/projects/me", p.Key, 403).Problem(t, 403, "forbidden")
	if l := cli("project", "list", "--status", "suspended"); len(l["data"].([]any)) != 1 {
		t.Fatalf("project list %v", l)
	}
	cli("project", "resume", "--project", p.ID)
	await("/v1/projects/me", p.Key, 200)
	if got := cli("project", "get", "--project", p.ID); got["status"] != "active" || got["tenant_id"] != float64(env.TenantID()) {
		t.Fatalf("project get %v", got)
	}

	tid := fmt.Sprint(env.TenantID())
	if got := cli("tenant", "get", "--id", tid); got["projects"] != float64(1) {
		t.Fatalf("tenant get %v", got)
	}
	if l := cli("tenant", "list", "--limit", "1"); l["has_more"] != false || len(l["data"].([]any)) != 1 {
		t.Fatalf("tenant list %v", l)
	}
	users := cli("user", "list", "--tenant", tid)["data"].([]any)
	uid := fmt.Sprint(users[0].(map[string]any)["id"])
	if pw := cli("user", "reset-password", "--tenant", tid, "--user", uid); len(fmt.Sprint(pw["password"])) < 8 {
		t.Fatalf("reset-password %v", pw)
	}
	fails("user", "remove", "--tenant", tid, "--user", uid) // the last user

	if got := cli("project", "delete", "--project", p.ID); got["status"] != "deleting" {
		t.Fatalf("project delete %v", got)
	}
	await("/v1/projects/me", p.Key, 401).Problem(t, 401, "unauthorized")
	// --export starts the export the drop will wait for.
	q := env.NewProject("build")
	got := cli("project", "delete", "--project", q.ID, "--export")
	exp, _ := got["export"].(map[string]any)
	if got["status"] != "deleting" || exp["status"] != "pending" || exp["project_id"] != q.ID {
		t.Fatalf("project delete --export %v", got)
	}
	if e, err := env.Server.Central.Export(context.Background(), exp["id"].(string)); err != nil || e.ProjectID != q.ID {
		t.Fatalf("export %+v %v", e, err)
	}
	if jobs := env.RiverJobs(t, "project_drop", map[string]any{"deleted_project": q.ID, "export_id": exp["id"]}); len(jobs) != 1 {
		t.Fatalf("drop jobs %+v", jobs)
	}

	cli("admin-token", "revoke", "--id", tok["id"].(string))
	await("/admin/api/projects", secret, 401).Problem(t, 401, "unauthorized")
	fails("admin-token", "revoke", "--id", tok["id"].(string))
}
