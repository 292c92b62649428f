package social_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest/socialtest"
)

func TestPostsCRUD(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"linkedin"})
	p := env.NewProject("build")
	acc := socialtest.Connect(t, env, p.Key, fakes["linkedin"])

	future := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	created := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{
		"title": "  Opening day  ", "content": "Doors open at 9.", "platforms": []string{"instagram"}, "account_ids": []string{acc},
		"media": []string{"https://cdn.test/door.jpg"}, "scheduled_at": future.Format(time.RFC3339),
	}).Expect(t, 201).JSON(t)
	id := created["id"]
	if _, ok := id.(float64); !ok || created["title"] != "Opening day" || created["status"] != "scheduled" ||
		created["scheduled_at"] != future.Format(time.RFC3339) || jsonString(created["platforms"]) != `["instagram","linkedin"]` ||
		jsonString(created["account_ids"]) != `["`+acc+`"]` || jsonString(created["media"]) != `["https://cdn.test/door.jpg"]` ||
		created["published_at"] != nil || jsonString(created["results"]) != "[]" || len(created) != 12 {
		t.Fatalf("created: %v", created)
	}
	for _, f := range []string{"created_at", "updated_at"} {
		if s := created[f].(string); !strings.HasSuffix(s, "Z") {
			t.Fatalf("%s: %s", f, s)
		}
	}
	path := fmt.Sprintf("/v1/social-posts/%v", id)
	if got := env.Do("GET", path, p.Key, nil).Expect(t, 200).JSON(t); jsonString(got) != jsonString(created) {
		t.Fatalf("get: %v", got)
	}

	// PATCH: absent fields stay; scheduled_at null unschedules.
	patched := env.Do("PATCH", path, p.Key, map[string]any{"content": "Doors open at 10.", "scheduled_at": nil}).Expect(t, 200).JSON(t)
	if patched["status"] != "draft" || patched["scheduled_at"] != nil || patched["content"] != "Doors open at 10." || patched["title"] != "Opening day" {
		t.Fatalf("patched: %v", patched)
	}
	patched = env.Do("PATCH", path, p.Key, map[string]any{"scheduled_at": future.Format(time.RFC3339), "platforms": []string{}}).Expect(t, 200).JSON(t)
	if patched["status"] != "scheduled" || jsonString(patched["platforms"]) != `["linkedin"]` {
		t.Fatalf("rescheduled: %v", patched)
	}
	env.Do("PATCH", path, p.Key, map[string]any{"platforms": []string{}, "account_ids": []string{}}).Problem(t, 422, "validation_failed")
	env.Do("PATCH", path, p.Key, map[string]any{"scheduled_at": 5}).Problem(t, 422, "validation_failed")
	env.Do("PATCH", path, p.Key, map[string]any{"title": ""}).Problem(t, 422, "validation_failed")
	env.Do("PATCH", path, p.Key, map[string]any{"status": "published"}).Problem(t, 400, "bad_request")

	// List: newest first, paged, filtered by status.
	for i := range 3 {
		env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": fmt.Sprintf("Post %d", i), "platforms": []string{"twitter"}}).Expect(t, 201)
	}
	l := env.Do("GET", "/v1/social-posts?limit=2", p.Key, nil).Expect(t, 200).JSON(t)
	data := l["data"].([]any)
	if len(data) != 2 || data[0].(map[string]any)["title"] != "Post 2" || l["has_more"] != true {
		t.Fatalf("page 1: %v", l)
	}
	l = env.Do("GET", "/v1/social-posts?limit=2&cursor="+l["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
	data = l["data"].([]any)
	if len(data) != 2 || data[1].(map[string]any)["title"] != "Opening day" || l["has_more"] != false || l["next_cursor"] != nil {
		t.Fatalf("page 2: %v", l)
	}
	if l := env.Do("GET", "/v1/social-posts?status=scheduled", p.Key, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 1 {
		t.Fatalf("scheduled: %v", l)
	}
	env.Do("GET", "/v1/social-posts?status=nope", p.Key, nil).Problem(t, 422, "validation_failed")
	env.Do("GET", "/v1/social-posts?cursor=@@", p.Key, nil).Problem(t, 422, "validation_failed")

	// Delete: 204 no body, then 404 everywhere.
	del := env.Do("DELETE", path, p.Key, nil).Expect(t, 204)
	if len(del.Body) != 0 || del.Header.Get("Content-Type") != "" {
		t.Fatalf("delete: %q %v", del.Body, del.Header)
	}
	for _, m := range []string{"GET", "DELETE", "PATCH"} {
		env.Do(m, path, p.Key, map[string]any{"title": "x"}).Problem(t, 404, "not_found")
	}
	env.Do("POST", path+"/publish", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/social-posts/abc", p.Key, nil).Problem(t, 404, "not_found")

	// Another project sees none of it.
	other := env.NewProject("build")
	if l := env.Do("GET", "/v1/social-posts", other.Key, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("other project: %v", l)
	}
	env.Do("POST", "/v1/social-posts", other.Key, map[string]any{"title": "x", "account_ids": []string{acc}}).Problem(t, 422, "validation_failed")
}

func TestPostValidation(t *testing.T) {
	t.Parallel()
	env, _ := setup(t, nil)
	p := env.NewProject("build")
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"no title", map[string]any{"platforms": []string{"twitter"}}, 400, ""},
		{"unknown field", map[string]any{"title": "x", "platforms": []string{"twitter"}, "colour": "red"}, 400, ""},
		{"not json", "{", 400, ""},
		{"empty title", map[string]any{"title": " ", "platforms": []string{"twitter"}}, 422, "title"},
		{"long title", map[string]any{"title": strings.Repeat("t", 301), "platforms": []string{"twitter"}}, 422, "title"},
		{"long content", map[string]any{"title": "x", "content": strings.Repeat("c", 10001), "platforms": []string{"twitter"}}, 422, "content"},
		{"no target", map[string]any{"title": "x"}, 422, "platforms"},
		{"bad platform", map[string]any{"title": "x", "platforms": []string{"myspace"}}, 422, "platforms"},
		{"repeated platform", map[string]any{"title": "x", "platforms": []string{"twitter", "twitter"}}, 422, "platforms"},
		{"platforms type", map[string]any{"title": "x", "platforms": "twitter"}, 422, "platforms"},
		{"bad account", map[string]any{"title": "x", "account_ids": []string{"acc_nope"}}, 422, "account_ids"},
		{"unknown account", map[string]any{"title": "x", "account_ids": []string{"acc_000000000000000000000000"}}, 422, "account_ids"},
		{"bad media", map[string]any{"title": "x", "platforms": []string{"twitter"}, "media": []string{"ftp://x/y.jpg"}}, 422, "media"},
		{"too much media", map[string]any{"title": "x", "platforms": []string{"twitter"}, "media": strings.Split(strings.Repeat("https://a.test/x.jpg,", 11), ",")[:11]}, 422, "media"},
		{"past schedule", map[string]any{"title": "x", "platforms": []string{"twitter"}, "scheduled_at": past}, 422, "scheduled_at"},
		{"bad schedule", map[string]any{"title": "x", "platforms": []string{"twitter"}, "scheduled_at": "tomorrow"}, 422, "scheduled_at"},
		{"bad type", map[string]any{"type": "robot", "title": "x", "platforms": []string{"twitter"}}, 422, "type"},
		{"ai field on manual", map[string]any{"title": "x", "platforms": []string{"twitter"}, "topic": "y"}, 422, "topic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := env.Do("POST", "/v1/social-posts", p.Key, c.body)
			code := map[int]string{400: "bad_request", 422: "validation_failed"}[c.status]
			m := res.Problem(t, c.status, code)
			if c.field != "" {
				if _, ok := m["errors"].(map[string]any)[c.field]; !ok {
					t.Fatalf("errors: %v", m["errors"])
				}
			}
		})
	}
	var n int
	query(t, p, `SELECT count(*) FROM social_posts`, nil, &n)
	if n != 0 {
		t.Fatalf("%d posts stored by refused requests", n)
	}
}

// Scopes: read for GET, write for create/update/delete, publish for publish.
func TestPostScopes(t *testing.T) {
	t.Parallel()
	env, _ := setup(t, nil)
	p := env.NewProject("build")
	post := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": "x", "platforms": []string{"twitter"}}).Expect(t, 201).JSON(t)
	path := fmt.Sprintf("/v1/social-posts/%v", post["id"])
	read, write, pub := p.NewKey(false, "social:read"), p.NewKey(false, "social:write"), p.NewKey(false, "social:publish")
	for _, c := range []struct {
		key, method, path string
		body              any
		status            int
		scope             string
	}{
		{read, "GET", "/v1/social-posts", nil, 200, ""},
		{read, "GET", path, nil, 200, ""},
		{read, "POST", "/v1/social-posts", map[string]any{"title": "y", "platforms": []string{"twitter"}}, 403, "social:write"},
		{read, "PATCH", path, map[string]any{"title": "y"}, 403, "social:write"},
		{write, "GET", path, nil, 403, "social:read"},
		{write, "PATCH", path, map[string]any{"title": "y"}, 200, ""},
		{write, "POST", path + "/publish", nil, 403, "social:publish"},
		{pub, "DELETE", path, nil, 403, "social:write"},
		{pub, "POST", path + "/publish", nil, 202, ""},
	} {
		res := env.Do(c.method, c.path, c.key, c.body)
		if c.status == 403 {
			if m := res.Problem(t, 403, "forbidden"); !strings.HasSuffix(m["detail"].(string), c.scope) {
				t.Fatalf("%s %s: %v", c.method, c.path, m)
			}
			continue
		}
		res.Expect(t, c.status)
	}
	env.Do("POST", path+"/publish", pub, nil).Problem(t, 409, "conflict") // already publishing (no workers here)
	env.Do("DELETE", path, write, nil).Expect(t, 204)
}
