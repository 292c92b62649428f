package central_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

func TestDashboardProjectsAndKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_DASHBOARD_PLANS", "free,build"))
	ctx := context.Background()
	newWorkspace(t, env, "Studio", "dev@studio.test", "studio-password")
	tok := loginToken(t, env, "dev@studio.test", "studio-password")

	list := env.Do("GET", "/central/api/projects", tok, nil).Expect(t, 200)
	if got := strings.TrimSpace(string(list.Body)); got != `{"data":[],"has_more":false,"next_cursor":null}` {
		t.Fatalf("empty list: %s", got)
	}

	// creating a project provisions its schema
	p := env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "Shop", "plan": "build", "target_languages": []string{"fr"}, "timezone": "Europe/Paris"}).Expect(t, 201).JSON(t)
	pid, _ := p["id"].(string)
	if !strings.HasPrefix(pid, "prj_") || p["name"] != "Shop" || p["slug"] != "shop" || p["plan"] != "build" || p["timezone"] != "Europe/Paris" || p["default_language"] != "en" {
		t.Fatalf("created project: %v", p)
	}
	var schema string
	var version int64
	if err := env.Server.Pool.QueryRow(ctx, `SELECT pl.schema_name, pl.schema_version FROM central.placements pl WHERE pl.project_id = $1`, pid).Scan(&schema, &version); err != nil || version == 0 {
		t.Fatalf("placement: %q %d %v", schema, version, err)
	}
	var tables int
	if err := env.Server.Pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("schema %s has %d tables: %v", schema, tables, err)
	}
	env.Do("POST", "/central/api/projects", tok, map[string]any{"plan": "build"}).Problem(t, 400, "bad_request")
	env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "X", "timezone": "Mars/Olympus"}).Problem(t, 422, "validation_failed")
	env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "X", "plan": ""}).Problem(t, 422, "validation_failed")
	env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "X", "colour": "red"}).Problem(t, 400, "bad_request")

	// newest first, paged
	second := env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "Blog"}).Expect(t, 201).JSON(t)
	if second["plan"] != "free" {
		t.Fatalf("default plan: %v", second)
	}
	all := env.Do("GET", "/central/api/projects", tok, nil).Expect(t, 200).JSON(t)
	data := all["data"].([]any)
	if len(data) != 2 || data[0].(map[string]any)["id"] != second["id"] || data[1].(map[string]any)["id"] != pid {
		t.Fatalf("list: %v", all)
	}
	page1 := env.Do("GET", "/central/api/projects?limit=1", tok, nil).Expect(t, 200).JSON(t)
	cur, _ := page1["next_cursor"].(string)
	if page1["has_more"] != true || cur == "" || page1["data"].([]any)[0].(map[string]any)["id"] != second["id"] {
		t.Fatalf("page 1: %v", page1)
	}
	page2 := env.Do("GET", "/central/api/projects?limit=1&cursor="+url.QueryEscape(cur), tok, nil).Expect(t, 200).JSON(t)
	if page2["has_more"] != false || page2["next_cursor"] != nil || page2["data"].([]any)[0].(map[string]any)["id"] != pid {
		t.Fatalf("page 2: %v", page2)
	}
	env.Do("GET", "/central/api/projects?cursor=bm9wZQ", tok, nil).Problem(t, 422, "validation_failed")

	// a key with the default dashboard scopes, secret shown once
	keys := "/central/api/projects/" + pid + "/api-keys"
	k := env.Do("POST", keys, tok, map[string]any{"name": "site"}).Expect(t, 201).JSON(t)
	secret, _ := k["secret"].(string)
	if !strings.HasPrefix(secret, "pln_live_") || k["masked"] != "pln_live_…"+secret[len(secret)-4:] || fmt.Sprint(k["scopes"]) != fmt.Sprint(central.DefaultDashboardScopes) {
		t.Fatalf("created key: %v", k)
	}
	s, err := env.Server.Central.Resolve(ctx, secret)
	if err != nil || s.Project.ID != pid || !slices.Equal(s.Key.Scopes, central.DefaultDashboardScopes) {
		t.Fatalf("the new key resolves to %v: %v", s, err)
	}
	env.Do("GET", "/v1/projects/me", secret, nil).Problem(t, 403, "forbidden") // no project:read by default

	k2 := env.Do("POST", keys, tok, map[string]any{"name": "admin", "scopes": []string{"project:read"}, "test": true}).Expect(t, 201).JSON(t)
	secret2 := k2["secret"].(string)
	if !strings.HasPrefix(secret2, "pln_test_") {
		t.Fatalf("test key: %v", k2)
	}
	me := env.Do("GET", "/v1/projects/me", secret2, nil).Expect(t, 200).JSON(t)
	if me["id"] != pid {
		t.Fatalf("/v1/projects/me with the dashboard's key: %v", me)
	}
	env.Do("POST", keys, tok, map[string]any{"name": "x", "scopes": []string{"nope:read"}}).Problem(t, 422, "validation_failed")
	env.Do("POST", keys, tok, map[string]any{"name": "x", "scopes": []string{}}).Problem(t, 422, "validation_failed")
	env.Do("POST", keys, tok, map[string]any{"scopes": []string{"*"}}).Problem(t, 400, "bad_request")

	l := env.Do("GET", keys, tok, nil).Expect(t, 200)
	if strings.Contains(string(l.Body), secret) || strings.Contains(string(l.Body), `"secret"`) {
		t.Fatalf("list leaks a secret: %s", l.Body)
	}
	kl := l.JSON(t)["data"].([]any)
	if len(kl) != 2 || kl[0].(map[string]any)["id"] != k2["id"] || kl[1].(map[string]any)["id"] != k["id"] {
		t.Fatalf("key list: %s", l.Body)
	}

	// revoke: 204, the key stops working at once, a repeat is 404
	env.Do("DELETE", keys+"/"+k2["id"].(string), tok, nil).Expect(t, 204)
	env.Do("GET", "/v1/projects/me", secret2, nil).Problem(t, 401, "unauthorized")
	env.Do("DELETE", keys+"/"+k2["id"].(string), tok, nil).Problem(t, 404, "not_found")
	if n := len(env.Do("GET", keys, tok, nil).Expect(t, 200).JSON(t)["data"].([]any)); n != 1 {
		t.Fatalf("%d keys after the revoke, want 1", n)
	}

	// unknown routes and methods under /central/api answer like the rest
	env.Do("GET", "/central/api/nope", tok, nil).Problem(t, 404, "not_found")
	if r := env.Do("PUT", "/central/api/projects", tok, map[string]any{}); r.Header.Get("Allow") == "" {
		t.Fatalf("wrong method: %d %v", r.Status, r.Header)
	} else {
		r.Problem(t, 400, "bad_request")
	}
}

// TestDashboardIsolation: a user of tenant A reaches none of tenant B's
// projects or keys, and B's keys survive A's attempts.
func TestDashboardIsolation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	newWorkspace(t, env, "TenantA", "a@a.test", "password-a")
	newWorkspace(t, env, "TenantB", "b@b.test", "password-b")
	tokA := loginToken(t, env, "a@a.test", "password-a")
	tokB := loginToken(t, env, "b@b.test", "password-b")

	pa := env.Do("POST", "/central/api/projects", tokA, map[string]any{"name": "A site"}).Expect(t, 201).JSON(t)["id"].(string)
	pb := env.Do("POST", "/central/api/projects", tokB, map[string]any{"name": "B site"}).Expect(t, 201).JSON(t)["id"].(string)
	kb := env.Do("POST", "/central/api/projects/"+pb+"/api-keys", tokB, map[string]any{"name": "b", "scopes": []string{"project:read"}}).Expect(t, 201).JSON(t)
	kbID, kbSecret := kb["id"].(string), kb["secret"].(string)
	ka := env.Do("POST", "/central/api/projects/"+pa+"/api-keys", tokA, map[string]any{"name": "a"}).Expect(t, 201).JSON(t)["id"].(string)

	// each sees only its own projects
	for tok, want := range map[string]string{tokA: pa, tokB: pb} {
		data := env.Do("GET", "/central/api/projects", tok, nil).Expect(t, 200).JSON(t)["data"].([]any)
		if len(data) != 1 || data[0].(map[string]any)["id"] != want {
			t.Fatalf("projects: %v, want only %s", data, want)
		}
	}

	// A on B's project: 404, like a project that does not exist
	unknown := "prj_000000000000000000000000"
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/central/api/projects/" + pb, nil},
		{"GET", "/central/api/projects/" + unknown, nil},
		{"GET", "/central/api/projects/" + pb + "/usage", nil},
		{"GET", "/central/api/projects/" + pb + "/api-keys", nil},
		{"POST", "/central/api/projects/" + pb + "/api-keys", map[string]any{"name": "sneaky", "scopes": []string{"*"}}},
		{"DELETE", "/central/api/projects/" + pb + "/api-keys/" + kbID, nil},
		{"DELETE", "/central/api/projects/" + pa + "/api-keys/" + kbID, nil},
		{"GET", "/central/api/projects/" + unknown + "/api-keys", nil},
		{"GET", "/central/api/projects/not-an-id/api-keys", nil},
	} {
		m := env.Do(tc.method, tc.path, tokA, tc.body).Problem(t, 404, "not_found")
		if strings.Contains(fmt.Sprint(m["detail"]), "B site") {
			t.Fatalf("%s %s leaks: %v", tc.method, tc.path, m)
		}
	}
	if got := env.Do("GET", "/central/api/projects/"+pa, tokA, nil).Expect(t, 200).JSON(t); got["id"] != pa {
		t.Fatalf("own project: %v", got)
	}
	if got := env.Do("GET", "/central/api/projects/"+pa+"/usage", tokA, nil).Expect(t, 200).JSON(t); got["credits_used"] != float64(0) || got["plan"] != "free" {
		t.Fatalf("own project's usage: %v", got)
	}
	env.Do("GET", "/central/api/projects/"+pa+"/usage?period=next", tokA, nil).Problem(t, 422, "validation_failed")
	// B's 404 reads like an unknown project's, the id aside
	mb := withoutInstance(env.Do("GET", "/central/api/projects/"+pb+"/api-keys", tokA, nil).JSON(t))
	mu := withoutInstance(env.Do("GET", "/central/api/projects/"+unknown+"/api-keys", tokA, nil).JSON(t))
	if strings.ReplaceAll(fmt.Sprint(mb), pb, unknown) != fmt.Sprint(mu) {
		t.Fatalf("404 bodies differ:\n%v\n%v", mb, mu)
	}

	// B's keys are untouched: one key, still working; A's key list is A's
	bl := env.Do("GET", "/central/api/projects/"+pb+"/api-keys", tokB, nil).Expect(t, 200).JSON(t)["data"].([]any)
	if len(bl) != 1 || bl[0].(map[string]any)["id"] != kbID {
		t.Fatalf("B's keys after A's attempts: %v", bl)
	}
	env.Do("GET", "/v1/projects/me", kbSecret, nil).Expect(t, 200)
	al := env.Do("GET", "/central/api/projects/"+pa+"/api-keys", tokA, nil).Expect(t, 200).JSON(t)["data"].([]any)
	if len(al) != 1 || al[0].(map[string]any)["id"] != ka {
		t.Fatalf("A's keys: %v", al)
	}
	// and B cannot revoke A's key through B's project either
	env.Do("DELETE", "/central/api/projects/"+pb+"/api-keys/"+ka, tokB, nil).Problem(t, 404, "not_found")
	env.Do("DELETE", "/central/api/projects/"+pa+"/api-keys/"+ka, tokB, nil).Problem(t, 404, "not_found")
}

// A dashboard user gives a new project one of the plans the operator
// allows (PLINTH_DASHBOARD_PLANS), the first by default; /me lists them,
// and another plan is 403, naming the allowed ones.
func TestDashboardPlans(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env             string
		want, refused   []string
		defaultPlan     string
		allowedInDetail string
	}{
		{"", []string{"free"}, []string{"hobby", "build", "scale", "enterprise"}, "free", "allowed: free"},
		{"hobby,build", []string{"hobby", "build"}, []string{"free", "scale", "enterprise"}, "hobby", "allowed: hobby, build"},
	} {
		t.Run("plans="+tc.env, func(t *testing.T) {
			t.Parallel()
			var opts []apitest.Option
			if tc.env != "" {
				opts = append(opts, apitest.WithEnv("PLINTH_DASHBOARD_PLANS", tc.env))
			}
			env := apitest.New(t, opts...)
			newWorkspace(t, env, "Studio", "dev@studio.test", "studio-password")
			tok := loginToken(t, env, "dev@studio.test", "studio-password")
			me := env.Do("GET", "/central/api/me", tok, nil).Expect(t, 200).JSON(t)
			if fmt.Sprint(me["project_plans"]) != fmt.Sprint(tc.want) {
				t.Fatalf("project_plans %v, want %v", me["project_plans"], tc.want)
			}
			if p := env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "Default"}).Expect(t, 201).JSON(t); p["plan"] != tc.defaultPlan {
				t.Fatalf("default plan %v", p["plan"])
			}
			for _, plan := range tc.want {
				if p := env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "On " + plan, "plan": plan}).Expect(t, 201).JSON(t); p["plan"] != plan {
					t.Fatalf("plan %s: %v", plan, p)
				}
			}
			for _, plan := range tc.refused {
				got := env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "On " + plan, "plan": plan}).Problem(t, 403, "forbidden")
				if !strings.Contains(got["detail"].(string), tc.allowedInDetail) {
					t.Fatalf("plan %s: %v", plan, got)
				}
			}
			env.Do("POST", "/central/api/projects", tok, map[string]any{"name": "Gold", "plan": "gold"}).Problem(t, 422, "validation_failed")
			list := env.Do("GET", "/central/api/projects?limit=100", tok, nil).Expect(t, 200).JSON(t)
			if n := len(list["data"].([]any)); n != 1+len(tc.want) {
				t.Fatalf("%d projects, want %d: a refused one was created", n, 1+len(tc.want))
			}
		})
	}
}
