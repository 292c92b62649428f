package central_test

import (
	"context"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// TestDashboardDeletingProject: while a project of the workspace is
// being deleted, the project list answers 200 and shows it as deleting;
// the project itself is shown with its status, its keys are none, and
// what reads its data (usage, the mirrored lists) is 404, like a project
// that is gone. Before, the deleting project's usage was a 500, and with
// it the dashboard's home page for the whole grace period.
func TestDashboardDeletingProject(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ws := newWorkspace(t, env, "Going", "going@example.com", "going-password")
	tok := loginToken(t, env, "going@example.com", "going-password")
	kept := env.CreateProject(central.ProjectParams{TenantID: ws.ID, Name: "Kept"})
	doomed := env.CreateProject(central.ProjectParams{TenantID: ws.ID, Name: "Doomed"})
	if _, err := env.Server.Central.DeleteProject(context.Background(), doomed.ID, central.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	list := env.Do("GET", "/central/api/projects", tok, nil).Expect(t, 200).JSON(t)["data"].([]any)
	status := map[string]any{}
	for _, p := range list {
		status[p.(map[string]any)["id"].(string)] = p.(map[string]any)["status"]
	}
	if len(list) != 2 || status[doomed.ID] != "deleting" || status[kept.ID] != "active" {
		t.Fatalf("list: %v", list)
	}
	base := "/central/api/projects/" + doomed.ID
	if p := env.Do("GET", base, tok, nil).Expect(t, 200).JSON(t); p["status"] != "deleting" || p["name"] != "Doomed" {
		t.Fatalf("the deleting project: %v", p)
	}
	if keys := env.Do("GET", base+"/api-keys", tok, nil).Expect(t, 200).JSON(t)["data"].([]any); len(keys) != 0 {
		t.Fatalf("a deleting project's keys: %v", keys)
	}
	for _, path := range []string{"/usage", "/webhook-endpoints", "/jobs", "/form-submissions"} {
		p := env.Do("GET", base+path, tok, nil).Problem(t, 404, "not_found")
		if p["detail"] != "project "+doomed.ID+" is being deleted" {
			t.Fatalf("%s: %v", path, p)
		}
	}
	// a change is refused naming the status
	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api-keys", map[string]any{"name": "late"}},
		{"POST", "/webhook-endpoints", map[string]any{"url": "https://hooks.example/in", "events": []string{"content.changed"}}},
	} {
		p := env.Do(w.method, base+w.path, tok, w.body).Problem(t, 403, "forbidden")
		if p["project_status"] != "deleting" {
			t.Fatalf("%s %s: %v", w.method, w.path, p)
		}
	}
	// the other project is untouched
	env.Do("GET", "/central/api/projects/"+kept.ID+"/usage", tok, nil).Expect(t, 200)
}

// TestDashboardSuspendedProject: a suspended project's status applies to
// the dashboard as to its keys: it is read, not changed. Minting a key
// and creating, changing or rotating a webhook endpoint are 403 forbidden
// naming the status (project_status: suspended); reads are 200; a key
// can still be revoked. Resumed, it is changed again.
func TestDashboardSuspendedProject(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	c := env.Server.Central
	ws := newWorkspace(t, env, "Paused", "paused@example.com", "paused-password")
	tok := loginToken(t, env, "paused@example.com", "paused-password")
	p := env.CreateProject(central.ProjectParams{TenantID: ws.ID, Name: "Shop"})
	base := "/central/api/projects/" + p.ID
	hook := map[string]any{"url": "https://hooks.example/in", "events": []string{"content.changed"}}
	e := env.Do("POST", base+"/webhook-endpoints", tok, hook).Expect(t, 201).JSON(t)
	eid := e["id"].(string)
	k := env.Do("POST", base+"/api-keys", tok, map[string]any{"name": "site"}).Expect(t, 201).JSON(t)

	if _, err := c.SuspendProject(ctx, p.ID, "unpaid"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api-keys", map[string]any{"name": "another"}},
		{"POST", "/webhook-endpoints", hook},
		{"PATCH", "/webhook-endpoints/" + eid, map[string]any{"is_active": false}},
		{"POST", "/webhook-endpoints/" + eid + "/rotate-secret", nil},
	} {
		pr := env.Do(w.method, base+w.path, tok, w.body).Problem(t, 403, "forbidden")
		if pr["project_status"] != "suspended" || pr["detail"] != "project suspended: it can be read, not changed" {
			t.Fatalf("%s %s: %v", w.method, w.path, pr)
		}
	}
	if keys := env.Do("GET", base+"/api-keys", tok, nil).Expect(t, 200).JSON(t)["data"].([]any); len(keys) != 2 {
		t.Fatalf("%d keys, want the two minted before the suspension", len(keys))
	}
	if got := env.Do("GET", base, tok, nil).Expect(t, 200).JSON(t); got["status"] != "suspended" {
		t.Fatalf("project: %v", got)
	}
	for _, path := range []string{"/usage", "/webhook-endpoints", "/webhook-endpoints/" + eid, "/jobs", "/form-submissions"} {
		env.Do("GET", base+path, tok, nil).Expect(t, 200)
	}
	if got := env.Do("GET", base+"/webhook-endpoints/"+eid, tok, nil).Expect(t, 200).JSON(t); got["is_active"] != true {
		t.Fatalf("the refused PATCH changed the endpoint: %v", got)
	}
	// revoking only takes access away: allowed
	env.Do("DELETE", base+"/api-keys/"+k["id"].(string), tok, nil).Expect(t, 204)

	if _, err := c.ResumeProject(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	env.Do("POST", base+"/api-keys", tok, map[string]any{"name": "after"}).Expect(t, 201)
}
