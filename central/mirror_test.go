package central_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ratelimit"
)

// The dashboard's project routes are the pillars' /v1 routes: what the
// dashboard writes the API reads and the other way round, and the
// project's rate limit counts both.
func TestDashboardMirrorsServeTheV1Routes(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) } // frozen: the bucket refills only when the test says
	env := apitest.New(t, apitest.WithRateLimits(ratelimit.NewMemory(clock), clock))
	ws := newWorkspace(t, env, "Studio", "dev@studio.test", "studio-password")
	tok := loginToken(t, env, "dev@studio.test", "studio-password")
	p := env.CreateProject(central.ProjectParams{TenantID: ws.Tenant.ID, Name: "Bakery"}) // free: 30/min, burst 60
	base := "/central/api/projects/" + p.ID

	// Created from the dashboard, the endpoint is the API's, with its
	// secret shown once.
	e := env.Do("POST", base+"/webhook-endpoints", tok, map[string]any{"url": "https://hooks.example/in", "events": []string{"content.changed"}}).
		Expect(t, 201).JSON(t)
	eid, _ := e["id"].(string)
	if sec, _ := e["signing_secret"].(string); !strings.HasPrefix(eid, "whe_") || sec == "" || e["is_active"] != true {
		t.Fatalf("created endpoint: %v", e)
	}
	if got := env.Do("GET", "/v1/webhook-endpoints/"+eid, p.Key, nil).Expect(t, 200).JSON(t); got["url"] != "https://hooks.example/in" {
		t.Fatalf("the API reads %v", got)
	}
	if got := env.Do("PATCH", base+"/webhook-endpoints/"+eid, tok, map[string]any{"is_active": false}).Expect(t, 200).JSON(t); got["is_active"] != false {
		t.Fatalf("disabled: %v", got)
	}
	if got := env.Do("GET", base+"/webhook-endpoints/"+eid, tok, nil).Expect(t, 200).JSON(t); got["is_active"] != false || got["signing_secret"] != nil {
		t.Fatalf("the API reads the endpoint as %v", got)
	}
	rotated := env.Do("POST", base+"/webhook-endpoints/"+eid+"/rotate-secret", tok, nil).Expect(t, 200).JSON(t)
	if rotated["signing_secret"] == e["signing_secret"] || rotated["signing_secret"] == nil {
		t.Fatalf("rotated: %v", rotated)
	}
	list := env.Do("GET", base+"/webhook-endpoints", tok, nil).Expect(t, 200).JSON(t)
	if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["signing_secret"] != nil {
		t.Fatalf("list: %v", list)
	}
	env.Do("GET", base+"/webhook-endpoints/"+eid+"/deliveries?status=lost", tok, nil).Problem(t, 422, "validation_failed") // the pillar's own check
	env.Do("GET", base+"/webhook-endpoints/"+eid+"/deliveries", tok, nil).Expect(t, 200)
	env.Do("POST", base+"/webhook-endpoints", tok, map[string]any{"url": "ftp://x", "events": []string{"content.changed"}}).Problem(t, 422, "validation_failed")

	// Jobs and form submissions, JSON and CSV.
	env.Do("GET", base+"/jobs", tok, nil).Expect(t, 200)
	env.Send(apitest.Request{Method: "POST", Path: "/v1/public/forms/newsletter?project_id=" + p.ID, Body: map[string]any{"email": "ann@example.com", "name": "Ann"}}).Expect(t, 201)
	subs := env.Do("GET", base+"/form-submissions", tok, nil).Expect(t, 200).JSON(t)
	if data := subs["data"].([]any); len(data) != 1 || data[0].(map[string]any)["email"] != "ann@example.com" {
		t.Fatalf("submissions: %v", subs)
	}
	csv := env.Send(apitest.Request{Method: "GET", Path: base + "/form-submissions", Key: tok, Header: map[string]string{"Accept": "text/csv"}}).Expect(t, 200)
	if !strings.HasPrefix(csv.Header.Get("Content-Type"), "text/csv") || !strings.Contains(string(csv.Body), "ann@example.com,Ann,") {
		t.Fatalf("CSV: %s %q", csv.Header.Get("Content-Type"), csv.Body)
	}

	// One bucket: a dashboard request takes from the project's, and once
	// keys have emptied it the dashboard is refused too.
	before := env.Do("GET", "/v1/webhook-endpoints", p.Key, nil).Expect(t, 200)
	after := env.Do("GET", base+"/webhook-endpoints", tok, nil).Expect(t, 200)
	b, _ := strconv.Atoi(before.Header.Get("X-RateLimit-Remaining"))
	a, _ := strconv.Atoi(after.Header.Get("X-RateLimit-Remaining"))
	if a != b-1 || after.Header.Get("X-RateLimit-Limit") != "30" {
		t.Fatalf("remaining %d then %d (limit %s)", b, a, after.Header.Get("X-RateLimit-Limit"))
	}
	for i := 0; i < 100 && env.Do("GET", "/v1/webhook-endpoints", p.Key, nil).Status != 429; i++ {
	}
	env.Do("GET", base+"/jobs", tok, nil).Problem(t, 429, "rate_limited")
}

// Every mirrored route answers 404 for another workspace's project, and
// for an unknown one, before anything of the project is read or changed.
func TestDashboardMirrorsOtherWorkspace(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	newWorkspace(t, env, "Studio", "dev@studio.test", "studio-password")
	tok := loginToken(t, env, "dev@studio.test", "studio-password")
	foreign := env.NewProject("build") // the env's own workspace, not Studio
	e := env.Do("POST", "/v1/webhook-endpoints", foreign.Key, map[string]any{"url": "https://hooks.example/in", "events": []string{"content.changed"}}).
		Expect(t, 201).JSON(t)
	eid := e["id"].(string)
	env.Do("POST", "/v1/pages", foreign.Key, map[string]any{"title": "Home", "slug": "home"}).Expect(t, 201)
	env.Do("PATCH", "/v1/pages/home?draft=true", foreign.Key, map[string]any{"title": "Home v2"}).Expect(t, 200)
	rel := env.Do("POST", "/v1/releases", foreign.Key, map[string]any{"name": "Spring", "items": []map[string]any{{"type": "page", "id": "home"}}}).
		Expect(t, 201).JSON(t)
	rid := fmt.Sprint(rel["id"])
	for _, pid := range []string{foreign.ID, "prj_00000000000000000000000000"} {
		base := "/central/api/projects/" + pid
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/webhook-endpoints", nil},
			{"POST", "/webhook-endpoints", map[string]any{"url": "https://evil.example/in", "events": []string{"content.changed"}}},
			{"GET", "/webhook-endpoints/" + eid, nil},
			{"PATCH", "/webhook-endpoints/" + eid, map[string]any{"is_active": false}},
			{"POST", "/webhook-endpoints/" + eid + "/rotate-secret", nil},
			{"GET", "/webhook-endpoints/" + eid + "/deliveries", nil},
			{"POST", "/webhook-endpoints/" + eid + "/deliveries/whd_00000000000000000000000000/redeliver", nil},
			{"GET", "/jobs", nil},
			{"GET", "/form-submissions", nil},
			{"GET", "/pages", nil},
			{"GET", "/blog-posts", nil},
			{"GET", "/pages/home", nil},
			{"GET", "/pages/home/versions", nil},
			{"GET", "/pages/home/versions/1", nil},
			{"POST", "/pages/home/versions/1/restore", nil},
			{"POST", "/pages/home/publish", nil},
			{"POST", "/brand/publish", nil},
			{"GET", "/releases", nil},
			{"POST", "/releases/" + rid + "/publish", nil},
			{"POST", "/releases/" + rid + "/cancel", nil},
		} {
			t.Run(tc.method+" "+pid[:8]+tc.path, func(t *testing.T) {
				// The workspace check's 404, not the router's nor the pillar's.
				got := env.Do(tc.method, base+tc.path, tok, tc.body).Problem(t, 404, "not_found")
				if got["detail"] != "no project "+pid+" in this workspace" {
					t.Fatalf("404 of %v", got)
				}
			})
		}
	}
	// Nothing changed: one endpoint, active, with the secret it had.
	list := env.Do("GET", "/v1/webhook-endpoints", foreign.Key, nil).Expect(t, 200).JSON(t)
	if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["is_active"] != true {
		t.Fatalf("the other workspace's endpoints: %v", list)
	}
	if got := env.Do("GET", "/v1/pages/home", foreign.Key, nil).Expect(t, 200).JSON(t); got["title"] != "Home" || got["has_draft"] != true {
		t.Fatalf("the other workspace's page: %v", got)
	}
	if got := env.Do("GET", "/v1/releases/"+rid, foreign.Key, nil).Expect(t, 200).JSON(t); got["status"] != "pending" {
		t.Fatalf("the other workspace's release: %v", got)
	}
	// Without a token, the routes are the dashboard's 401.
	env.Do("GET", "/central/api/projects/"+foreign.ID+"/jobs", "", nil).Problem(t, 401, "unauthorized")
}

// The dashboard reaches every type of item with drafts through the
// mirrors of its /v1 routes: the item with has_draft, its versions, one
// version, a restore, a publish (each answer as the document says, which
// Do checks), written as the user's key; and the releases, published
// with the write scopes of every pillar their items need.
func TestDashboardWorkflowMirrors(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ws := newWorkspace(t, env, "Studio", "dev@studio.test", "studio-password")
	tok := loginToken(t, env, "dev@studio.test", "studio-password")
	p := env.CreateProject(central.ProjectParams{TenantID: ws.Tenant.ID, Name: "Bakery", Plan: "build"}) // more requests than the free plan's burst
	base := "/central/api/projects/" + p.ID
	id := func(m map[string]any) string { return fmt.Sprint(m["id"]) }

	page := id(env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home"}).Expect(t, 201).JSON(t))
	post := id(env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Bread", "content": "<p>Flour.</p>"}).Expect(t, 201).JSON(t))
	env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Hero"}).Expect(t, 201)
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Hi"}).Expect(t, 200)
	env.Do("POST", "/v1/galleries", p.Key, map[string]any{"name": "Summer"}).Expect(t, 201)
	env.Do("PATCH", "/v1/brand", p.Key, map[string]any{"name": "Bakery"}).Expect(t, 200)
	for _, tc := range []struct {
		item, write string // the item's path; its draft write's method
		body        map[string]any
	}{
		{"/pages/" + page, "PATCH", map[string]any{"title": "Home v2"}},
		{"/blog-posts/" + post, "PATCH", map[string]any{"title": "Bread v2"}},
		{"/components/hero", "PATCH", map[string]any{"name": "Hero v2"}},
		{"/content/home.title", "PUT", map[string]any{"value": "Hello"}},
		{"/galleries/summer", "PATCH", map[string]any{"name": "Summer v2"}},
		{"/brand", "PATCH", map[string]any{"name": "Bakery v2"}},
	} {
		t.Run(tc.item, func(t *testing.T) {
			env.Do(tc.write, "/v1"+tc.item+"?draft=true", p.Key, tc.body).Expect(t, 200)
			item := base + tc.item
			if got := unwrap(env.Do("GET", item, tok, nil).Expect(t, 200).JSON(t)); got["has_draft"] != true {
				t.Fatalf("the item before publishing: %v", got)
			}
			vs := env.Do("GET", item+"/versions", tok, nil).Expect(t, 200).JSON(t)["data"].([]any)
			if len(vs) != 1 || vs[0].(map[string]any)["kind"] != "save" {
				t.Fatalf("versions: %v", vs)
			}
			if v := env.Do("GET", item+"/versions/1", tok, nil).Expect(t, 200).JSON(t); v["data"] == nil {
				t.Fatalf("version 1: %v", v)
			}
			env.Do("GET", item+"/versions/9", tok, nil).Problem(t, 404, "not_found")
			env.Do("POST", item+"/versions/1/restore", tok, nil).Expect(t, 200)
			env.Do("POST", item+"/publish", tok, nil).Expect(t, 200)
			if got := unwrap(env.Do("GET", "/v1"+tc.item, p.Key, nil).Expect(t, 200).JSON(t)); got["has_draft"] != false {
				t.Fatalf("the item after publishing: %v", got)
			}
			vs = env.Do("GET", item+"/versions", tok, nil).Expect(t, 200).JSON(t)["data"].([]any)
			for i, kind := range []string{"publish", "restore"} {
				v := vs[i].(map[string]any)
				if v["kind"] != kind || v["actor"] != "dashboard:user:"+strconv.FormatInt(ws.User.ID, 10) {
					t.Fatalf("version %d of %v", i, vs)
				}
			}
		})
	}

	// A release of a page and a post: publishing it needs content:write
	// and blog:write, both of which the mirror's request holds.
	env.Do("PATCH", "/v1/pages/"+page+"?draft=true", p.Key, map[string]any{"title": "Home v3"}).Expect(t, 200)
	env.Do("PATCH", "/v1/blog-posts/"+post+"?draft=true", p.Key, map[string]any{"title": "Bread v3"}).Expect(t, 200)
	items := []map[string]any{{"type": "page", "id": page}, {"type": "blog_post", "id": post}}
	rel := id(env.Do("POST", "/v1/releases", p.Key, map[string]any{"name": "Spring", "items": items}).Expect(t, 201).JSON(t))
	other := id(env.Do("POST", "/v1/releases", p.Key, map[string]any{"name": "Later", "items": items[:1]}).Expect(t, 201).JSON(t))
	if list := env.Do("GET", base+"/releases", tok, nil).Expect(t, 200).JSON(t)["data"].([]any); len(list) != 2 {
		t.Fatalf("releases: %v", list)
	}
	env.Do("GET", base+"/releases?status=lost", tok, nil).Problem(t, 422, "validation_failed")
	if got := env.Do("POST", base+"/releases/"+rel+"/publish", tok, nil).Expect(t, 200).JSON(t); got["status"] != "published" {
		t.Fatalf("published: %v", got)
	}
	if got := env.Do("GET", "/v1/blog-posts/"+post, p.Key, nil).Expect(t, 200).JSON(t); got["title"] != "Bread v3" {
		t.Fatalf("the post after the release: %v", got)
	}
	if got := env.Do("POST", base+"/releases/"+other+"/cancel", tok, nil).Expect(t, 200).JSON(t); got["status"] != "cancelled" {
		t.Fatalf("cancelled: %v", got)
	}
	env.Do("POST", base+"/releases/"+other+"/publish", tok, nil).Problem(t, 409, "conflict")

	// The lists the content page shows, with has_draft.
	pages := env.Do("GET", base+"/pages", tok, nil).Expect(t, 200).JSON(t)["data"].([]any)
	posts := env.Do("GET", base+"/blog-posts", tok, nil).Expect(t, 200).JSON(t)["data"].([]any)
	if len(pages) != 1 || pages[0].(map[string]any)["has_draft"] != false || len(posts) != 1 || posts[0].(map[string]any)["title"] != "Bread v3" {
		t.Fatalf("pages %v, posts %v", pages, posts)
	}
}

// unwrap is a gallery's answer's data, any other item's answer itself.
func unwrap(m map[string]any) map[string]any {
	if d, ok := m["data"].(map[string]any); ok {
		return d
	}
	return m
}
