package webhooks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/id"
)

func TestEndpointResource(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	const url = "https://hooks.example.com/plinth"

	created := env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": url, "events": []string{"order.paid", "order.paid", "blog_post.published"}}).Expect(t, 201).JSON(t)
	eid, _ := created["id"].(string)
	secret, _ := created["signing_secret"].(string)
	if !id.Valid("whe_", eid) || !strings.HasPrefix(secret, "whsec_") || len(secret) != 38 || created["url"] != url ||
		created["is_active"] != true || created["last_delivery_status"] != "none" ||
		fmt.Sprint(created["events"]) != "[order.paid blog_post.published]" {
		t.Fatalf("created: %v", created)
	}
	ts, _ := created["created_at"].(string)
	if _, err := time.Parse(time.RFC3339, ts); err != nil || !strings.HasSuffix(ts, "Z") {
		t.Fatalf("created_at %q", ts)
	}

	// the secret never shows again
	got := env.Do("GET", "/v1/webhook-endpoints/"+eid, p.Key, nil).Expect(t, 200)
	if strings.Contains(string(got.Body), "signing_secret") || strings.Contains(string(got.Body), secret) {
		t.Fatalf("GET leaks the secret: %s", got.Body)
	}
	if m := got.JSON(t); m["id"] != eid || m["url"] != url {
		t.Fatalf("get: %v", m)
	}

	// list: newest first, paginated, no secrets
	second := env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": url + "/2", "events": []string{"content.changed"}}).Expect(t, 201).JSON(t)
	l1 := env.Do("GET", "/v1/webhook-endpoints?limit=1", p.Key, nil).Expect(t, 200)
	if strings.Contains(string(l1.Body), "signing_secret") {
		t.Fatalf("list leaks secrets: %s", l1.Body)
	}
	page := l1.JSON(t)
	data := page["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != second["id"] || page["has_more"] != true {
		t.Fatalf("page 1: %v", page)
	}
	page = env.Do("GET", "/v1/webhook-endpoints?limit=1&cursor="+page["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
	data = page["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != eid || page["has_more"] != false || page["next_cursor"] != nil {
		t.Fatalf("page 2: %v", page)
	}

	// PATCH
	upd := env.Do("PATCH", "/v1/webhook-endpoints/"+eid, p.Key, map[string]any{"events": []string{"order.created"}, "is_active": false}).Expect(t, 200).JSON(t)
	if fmt.Sprint(upd["events"]) != "[order.created]" || upd["is_active"] != false || upd["url"] != url || upd["signing_secret"] != nil {
		t.Fatalf("patched: %v", upd)
	}
	upd = env.Do("PATCH", "/v1/webhook-endpoints/"+eid, p.Key, map[string]any{"url": url + "/v2"}).Expect(t, 200).JSON(t)
	if upd["url"] != url+"/v2" || upd["is_active"] != false {
		t.Fatalf("patched url: %v", upd)
	}

	// rotate: a new secret, shown once
	rot := env.Do("POST", "/v1/webhook-endpoints/"+eid+"/rotate-secret", p.Key, nil).Expect(t, 200).JSON(t)
	if s, _ := rot["signing_secret"].(string); !strings.HasPrefix(s, "whsec_") || s == secret || rot["id"] != eid {
		t.Fatalf("rotated: %v", rot)
	}

	// errors
	for _, c := range []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
		field  string
	}{
		{"missing url", "POST", "", map[string]any{"events": []string{"order.paid"}}, 400, "bad_request", ""},
		{"missing events", "POST", "", map[string]any{"url": url}, 400, "bad_request", ""},
		{"unknown field", "POST", "", map[string]any{"url": url, "events": []string{"order.paid"}, "secret": "x"}, 400, "bad_request", ""},
		{"not json", "POST", "", "{", 400, "bad_request", ""},
		{"unknown topic", "POST", "", map[string]any{"url": url, "events": []string{"order.exploded"}}, 422, "validation_failed", "events"},
		{"no topics", "POST", "", map[string]any{"url": url, "events": []string{}}, 422, "validation_failed", "events"},
		{"events not an array", "POST", "", map[string]any{"url": url, "events": "order.paid"}, 422, "validation_failed", "events"},
		{"relative url", "POST", "", map[string]any{"url": "/hook", "events": []string{"order.paid"}}, 422, "validation_failed", "url"},
		{"ftp url", "POST", "", map[string]any{"url": "ftp://example.com/", "events": []string{"order.paid"}}, 422, "validation_failed", "url"},
		{"long url", "POST", "", map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2048), "events": []string{"order.paid"}}, 422, "validation_failed", "url"},
		{"patch private url", "PATCH", "/" + eid, map[string]any{"url": "https://10.0.0.1/"}, 422, "validation_failed", "url"},
		{"patch empty events", "PATCH", "/" + eid, map[string]any{"events": []string{}}, 422, "validation_failed", "events"},
		{"patch unknown field", "PATCH", "/" + eid, map[string]any{"signing_secret": "whsec_x"}, 400, "bad_request", ""},
		{"unknown id", "GET", "/" + id.New("whe_"), nil, 404, "not_found", ""},
		{"malformed id", "GET", "/123", nil, 404, "not_found", ""},
		{"patch unknown", "PATCH", "/" + id.New("whe_"), map[string]any{"is_active": true}, 404, "not_found", ""},
		{"rotate unknown", "POST", "/" + id.New("whe_") + "/rotate-secret", nil, 404, "not_found", ""},
		{"deliveries of unknown", "GET", "/" + id.New("whe_") + "/deliveries", nil, 404, "not_found", ""},
		{"bad status filter", "GET", "/" + eid + "/deliveries?status=done", nil, 422, "validation_failed", "status"},
		{"bad limit", "GET", "?limit=0", nil, 422, "validation_failed", "limit"},
		{"wrong method", "PUT", "/" + eid, nil, 400, "bad_request", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := env.Do(c.method, "/v1/webhook-endpoints"+c.path, p.Key, c.body).Problem(t, c.status, c.code)
			if c.field != "" {
				if errs, _ := m["errors"].(map[string]any); errs[c.field] == nil {
					t.Fatalf("errors lack %s: %v", c.field, m)
				}
			}
		})
	}

	// scopes: webhooks:read lists, only webhooks:write changes
	reader := p.NewKey(false, "webhooks:read")
	env.Do("GET", "/v1/webhook-endpoints", reader, nil).Expect(t, 200)
	env.Do("GET", "/v1/webhook-endpoints/"+eid+"/deliveries", reader, nil).Expect(t, 200)
	m := env.Do("POST", "/v1/webhook-endpoints", reader, map[string]any{"url": url, "events": []string{"order.paid"}}).Problem(t, 403, "forbidden")
	if !strings.Contains(m["detail"].(string), "webhooks:write") {
		t.Fatalf("403 detail: %v", m)
	}
	env.Do("POST", "/v1/webhook-endpoints/"+eid+"/rotate-secret", reader, nil).Problem(t, 403, "forbidden")
	env.Do("DELETE", "/v1/webhook-endpoints/"+eid, reader, nil).Problem(t, 403, "forbidden")
	env.Do("GET", "/v1/webhook-endpoints", p.NewKey(false, "content:read"), nil).Problem(t, 403, "forbidden")
	env.Do("GET", "/v1/webhook-endpoints", "", nil).Problem(t, 401, "unauthorized")
	writer := p.NewKey(false, "webhooks:*")
	env.Do("PATCH", "/v1/webhook-endpoints/"+eid, writer, map[string]any{"is_active": true}).Expect(t, 200)

	// another project sees none of it
	q := env.NewProject("build")
	env.Do("GET", "/v1/webhook-endpoints/"+eid, q.Key, nil).Problem(t, 404, "not_found")
	if l := env.Do("GET", "/v1/webhook-endpoints", q.Key, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("other project lists %v", l)
	}

	// DELETE
	res := env.Do("DELETE", "/v1/webhook-endpoints/"+eid, p.Key, nil).Expect(t, 204)
	if len(res.Body) != 0 {
		t.Fatalf("204 with a body: %s", res.Body)
	}
	env.Do("GET", "/v1/webhook-endpoints/"+eid, p.Key, nil).Problem(t, 404, "not_found")
	env.Do("DELETE", "/v1/webhook-endpoints/"+eid, p.Key, nil).Problem(t, 404, "not_found")
}

// TestEndpointURLsSSRF runs without PLINTH_DEV: every internal destination
// is refused at creation with 422 on url.
func TestEndpointURLsSSRF(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_DEV", ""))
	if env.Config.Dev {
		t.Fatal("dev mode still on")
	}
	p := env.NewProject("build")
	for _, u := range []string{
		"https://127.0.0.1/hook",
		"https://[::1]/hook",
		"https://10.0.0.1/hook",
		"https://172.16.0.1/hook",
		"https://192.168.1.1/hook",
		"https://169.254.169.254/latest/meta-data",
		"https://100.64.0.1/hook",
		"https://[::ffff:127.0.0.1]/hook",
		"https://localhost:8443/hook", // a name resolving to loopback
		"https://0.0.0.0/hook",
		"http://93.184.216.34/hook", // http outside dev mode
	} {
		m := env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": u, "events": []string{"order.paid"}}).Problem(t, 422, "validation_failed")
		if errs, _ := m["errors"].(map[string]any); errs["url"] == nil {
			t.Fatalf("%s: %v", u, m)
		}
	}
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": "https://93.184.216.34/hook", "events": []string{"order.paid"}}).Expect(t, 201)
}

// The signing secret is shown once: an idempotent replay of a creation or
// a rotation returns the endpoint without it, and it is never stored in
// the idempotency table.
func TestSecretNotStoredForReplay(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	create := apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints", Key: p.Key,
		Body:   map[string]any{"url": "https://hooks.example.com/a", "events": []string{"order.paid"}},
		Header: map[string]string{"Idempotency-Key": "hook-1"}}
	first := env.Send(create).Expect(t, 201).JSON(t)
	rotate := apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints/" + first["id"].(string) + "/rotate-secret", Key: p.Key,
		Header: map[string]string{"Idempotency-Key": "rotate-1"}}
	rotated := env.Send(rotate).Expect(t, 200).JSON(t)
	for _, c := range []struct {
		req    apitest.Request
		status int
		secret string
	}{{create, 201, first["signing_secret"].(string)}, {rotate, 200, rotated["signing_secret"].(string)}} {
		replay := env.Send(c.req).Expect(t, c.status)
		if replay.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("not a replay: %v", replay.Header)
		}
		if m := replay.JSON(t); m["id"] != first["id"] || m["signing_secret"] != nil || strings.Contains(string(replay.Body), c.secret) {
			t.Fatalf("replay: %s", replay.Body)
		}
		var stored int
		if err := env.DB.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM `+p.Schema+`.idempotency_keys WHERE convert_from(body, 'UTF8') LIKE '%' || $1 || '%'`, c.secret).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored != 0 {
			t.Fatal("a signing secret is stored in the idempotency table")
		}
	}
}
