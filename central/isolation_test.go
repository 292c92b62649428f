package central_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// TestIsolation runs two projects in two workspaces with the same name
// and slug and key names, and 16 goroutines x 200 requests alternating
// their keys: every response holds only the caller's project, and the
// other project's key id answers 404.
func TestIsolation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	a := env.CreateProject(central.ProjectParams{TenantID: env.NewTenant(), Name: "Twin site", Plan: "enterprise"})
	b := env.CreateProject(central.ProjectParams{TenantID: env.NewTenant(), Name: "Twin site", Plan: "enterprise"})
	if a.Slug != b.Slug || a.Slug != "twin-site" {
		t.Fatalf("slugs %q and %q: the twins must share one", a.Slug, b.Slug)
	}
	// 1,600 requests per project: lift the request limit out of the way.
	unlimited := 1 << 30
	for _, p := range []*apitest.Project{a, b} {
		if err := env.Server.Central.SetRateOverride(context.Background(), p.ID, &unlimited, &unlimited, nil); err != nil {
			t.Fatal(err)
		}
	}
	keyIDs := map[string]string{}
	for _, p := range []*apitest.Project{a, b} {
		var list struct {
			Data []central.APIKey `json:"data"`
		}
		env.Do("GET", "/v1/projects/me/api-keys", p.Key, nil).Expect(t, 200).Decode(t, &list)
		if len(list.Data) != 1 {
			t.Fatalf("%s holds %d keys, want 1", p.ID, len(list.Data))
		}
		keyIDs[p.ID] = list.Data[0].ID
	}
	other := map[string]*apitest.Project{a.ID: b, b.ID: a}

	env.Isolation(t, []*apitest.Project{a, b}, 16, 200, func(p *apitest.Project, i int) apitest.Probe {
		own := func(r *apitest.Resp) (map[string]any, error) {
			if r.Status != 200 {
				return nil, fmt.Errorf("status %d: %s", r.Status, r.Body)
			}
			var m map[string]any
			if err := json.Unmarshal(r.Body, &m); err != nil {
				return nil, err
			}
			if m["id"] != p.ID || m["slug"] != "twin-site" {
				return nil, fmt.Errorf("got project %v (%v), want %s", m["id"], m["slug"], p.ID)
			}
			return m, nil
		}
		switch i % 4 {
		case 0:
			return apitest.Probe{Request: apitest.Request{Method: "GET", Path: "/v1/projects/me"}, Check: func(r *apitest.Resp) error {
				_, err := own(r)
				return err
			}}
		case 1:
			return apitest.Probe{Request: apitest.Request{Method: "GET", Path: "/v1/projects/me/api-keys"}, Check: func(r *apitest.Resp) error {
				var list struct {
					Data []central.APIKey `json:"data"`
				}
				if r.Status != 200 {
					return fmt.Errorf("status %d: %s", r.Status, r.Body)
				}
				if err := json.Unmarshal(r.Body, &list); err != nil {
					return err
				}
				if len(list.Data) != 1 || list.Data[0].ID != keyIDs[p.ID] {
					return fmt.Errorf("key list %s, want only %s", r.Body, keyIDs[p.ID])
				}
				return nil
			}}
		case 2:
			// The other project's key id, revoked with this key: 404, and
			// (checked below) the other key keeps working.
			return apitest.Probe{Request: apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + keyIDs[other[p.ID].ID]}, Check: func(r *apitest.Resp) error {
				_, err := r.CheckProblem(404, "not_found")
				return err
			}}
		default:
			marker := "industry of " + p.ID
			return apitest.Probe{Request: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Body: map[string]any{"industry": marker}}, Check: func(r *apitest.Resp) error {
				m, err := own(r)
				if err == nil && m["industry"] != marker {
					err = fmt.Errorf("industry %v, want %q", m["industry"], marker)
				}
				return err
			}}
		}
	})

	// Effects: each project kept its own writes and its key.
	for _, p := range []*apitest.Project{a, b} {
		me := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).JSON(t)
		if me["industry"] != "industry of "+p.ID {
			t.Fatalf("%s industry %v", p.ID, me["industry"])
		}
		var revoked *string
		if err := env.DB.Pool.QueryRow(context.Background(), `SELECT revoked_at::text FROM central.api_keys WHERE id = $1`, keyIDs[p.ID]).Scan(&revoked); err != nil || revoked != nil {
			t.Fatalf("key of %s: revoked_at %v, err %v", p.ID, revoked, err)
		}
	}
}
