package central_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestErrorPaths walks every error of the core endpoints: status, code,
// problem+json, instance equal to X-Request-Id (all in Problem), and what
// the detail or errors map must name.
func TestErrorPaths(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	other := env.NewProject("build")
	readOnly := p.NewKey(false, "project:read")
	writer := p.NewKey(false, "project:write")
	admin := p.NewKey(false, "project:admin")
	contentOnly := p.NewKey(false, "content:*")

	ctx := context.Background()
	otherKeys, err := env.Server.Central.ListKeys(ctx, other.ID)
	if err != nil || len(otherKeys) != 1 {
		t.Fatalf("other project's keys: %v %v", otherKeys, err)
	}
	revoked, err := env.Server.Central.MintKey(ctx, p.ID, "gone", []string{"*"}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Server.Central.RevokeKey(ctx, p.ID, revoked.ID); err != nil {
		t.Fatal(err)
	}
	big := `{"name":"` + strings.Repeat("a", 1<<20) + `"}`

	type tc struct {
		name    string
		req     apitest.Request
		status  int
		code    string
		detail  string   // the detail must contain this
		fields  []string // the 422 errors map must name these
		headers map[string]string
	}
	bearer := map[string]string{"WWW-Authenticate": `Bearer realm="plinth"`}
	cases := []tc{
		// routing
		{name: "unknown route", req: apitest.Request{Method: "GET", Path: "/v1/nope", Key: p.Key}, status: 404, code: "not_found"},
		{name: "unknown route without key", req: apitest.Request{Method: "GET", Path: "/nope"}, status: 404, code: "not_found"},
		{name: "health wrong method", req: apitest.Request{Method: "POST", Path: "/v1/health"}, status: 400, code: "bad_request", headers: map[string]string{"Allow": "GET"}},
		{name: "projects/me wrong method", req: apitest.Request{Method: "PUT", Path: "/v1/projects/me", Key: p.Key}, status: 400, code: "bad_request", headers: map[string]string{"Allow": "GET, PATCH"}},
		{name: "api-keys wrong method", req: apitest.Request{Method: "DELETE", Path: "/v1/projects/me/api-keys", Key: p.Key}, status: 400, code: "bad_request", headers: map[string]string{"Allow": "GET, POST"}},
		{name: "key wrong method", req: apitest.Request{Method: "GET", Path: "/v1/api-keys/" + revoked.ID, Key: p.Key}, status: 400, code: "bad_request", headers: map[string]string{"Allow": "DELETE"}},
		{name: "caller request id is the instance", req: apitest.Request{Method: "GET", Path: "/v1/nope", Header: map[string]string{"X-Request-Id": "caller-id.42"}}, status: 404, code: "not_found", headers: map[string]string{"X-Request-Id": "caller-id.42"}},

		// 401 on every authenticated endpoint
		{name: "GET me no key", req: apitest.Request{Method: "GET", Path: "/v1/projects/me"}, status: 401, code: "unauthorized", headers: bearer},
		{name: "PATCH me no key", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Body: map[string]any{}}, status: 401, code: "unauthorized", headers: bearer},
		{name: "list keys no key", req: apitest.Request{Method: "GET", Path: "/v1/projects/me/api-keys"}, status: 401, code: "unauthorized", headers: bearer},
		{name: "create key no key", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Body: map[string]any{"name": "x", "scopes": []string{"*"}}}, status: 401, code: "unauthorized", headers: bearer},
		{name: "revoke no key", req: apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + revoked.ID}, status: 401, code: "unauthorized", headers: bearer},
		{name: "revoked key", req: apitest.Request{Method: "GET", Path: "/v1/projects/me", Key: revoked.Secret}, status: 401, code: "unauthorized", detail: "revoked", headers: bearer},
		{name: "query key is no key", req: apitest.Request{Method: "GET", Path: "/v1/projects/me?api_key=" + p.Key}, status: 401, code: "unauthorized", headers: bearer},
		{name: "test prefix unknown", req: apitest.Request{Method: "GET", Path: "/v1/projects/me", Key: "pln_test_" + strings.Repeat("b", 32)}, status: 401, code: "unauthorized", headers: bearer},
		{name: "live key posing as test", req: apitest.Request{Method: "GET", Path: "/v1/projects/me", Key: "pln_test_" + strings.TrimPrefix(p.Key, "pln_live_")}, status: 401, code: "unauthorized", headers: bearer},

		// 403 naming the scope
		{name: "GET me without project:read", req: apitest.Request{Method: "GET", Path: "/v1/projects/me", Key: contentOnly}, status: 403, code: "forbidden", detail: "project:read"},
		{name: "PATCH me without project:write", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: readOnly, Body: map[string]any{"name": "x"}}, status: 403, code: "forbidden", detail: "project:write"},
		{name: "PATCH plan", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: map[string]any{"plan": "scale"}}, status: 403, code: "forbidden", detail: "operator"},
		{name: "list keys without project:admin", req: apitest.Request{Method: "GET", Path: "/v1/projects/me/api-keys", Key: readOnly}, status: 403, code: "forbidden", detail: "project:admin"},
		{name: "create key without project:admin", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: writer, Body: map[string]any{"name": "x", "scopes": []string{"project:read"}}}, status: 403, code: "forbidden", detail: "project:admin"},
		{name: "create key beyond own scopes", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: admin, Body: map[string]any{"name": "x", "scopes": []string{"project:*"}}}, status: 403, code: "forbidden", detail: "subset"},
		{name: "create * key from a narrower key", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: admin, Body: map[string]any{"name": "x", "scopes": []string{"*"}}}, status: 403, code: "forbidden"},
		{name: "revoke without project:admin", req: apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + revoked.ID, Key: writer}, status: 403, code: "forbidden", detail: "project:admin"},

		// PATCH /projects/me bodies
		{name: "PATCH no content type", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: `{"name":"x"}`, Header: map[string]string{"Content-Type": ""}}, status: 400, code: "bad_request", detail: "application/json"},
		{name: "PATCH wrong content type", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: `name=x`, Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, status: 400, code: "bad_request", detail: "application/json"},
		{name: "PATCH invalid JSON", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: `{"name":`}, status: 400, code: "bad_request", detail: "JSON"},
		{name: "PATCH empty body", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: ``}, status: 400, code: "bad_request"},
		{name: "PATCH array body", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: `[{"name":"x"}]`}, status: 400, code: "bad_request", detail: "object"},
		{name: "PATCH trailing data", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: `{"name":"x"} {"name":"y"}`}, status: 400, code: "bad_request"},
		{name: "PATCH unknown field", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: map[string]any{"name": "x", "colour": "red"}}, status: 400, code: "bad_request", detail: `"colour"`},
		{name: "PATCH over 1 MiB", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: big}, status: 413, code: "bad_request", detail: "1 MiB"},
		{name: "PATCH wrong type", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: map[string]any{"name": 5}}, status: 422, code: "validation_failed", fields: []string{"name"}},
		{name: "PATCH bad values", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: map[string]any{
			"name": " ", "industry": strings.Repeat("i", 101), "default_language": "english", "target_languages": []string{"fr", "??"},
			"timezone": "Mars/Olympus"}}, status: 422, code: "validation_failed",
			fields: []string{"name", "industry", "default_language", "target_languages", "timezone"}},
		{name: "PATCH name too long", req: apitest.Request{Method: "PATCH", Path: "/v1/projects/me", Key: p.Key, Body: map[string]any{"name": strings.Repeat("n", 256)}}, status: 422, code: "validation_failed", fields: []string{"name"}},

		// POST /projects/me/api-keys bodies
		{name: "create key missing name", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"scopes": []string{"*"}}}, status: 400, code: "bad_request", detail: `"name"`},
		{name: "create key null name", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: `{"name":null,"scopes":["*"]}`}, status: 400, code: "bad_request", detail: `"name"`},
		{name: "create key missing scopes", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "x"}}, status: 400, code: "bad_request", detail: `"scopes"`},
		{name: "create key unknown field", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "x", "scopes": []string{"*"}, "expires": "never"}}, status: 400, code: "bad_request", detail: `"expires"`},
		{name: "create key wrong content type", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: `{"name":"x","scopes":["*"]}`, Header: map[string]string{"Content-Type": "text/plain"}}, status: 400, code: "bad_request"},
		{name: "create key invalid JSON", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: `{name: x}`}, status: 400, code: "bad_request"},
		{name: "create key over 1 MiB", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: big}, status: 413, code: "bad_request"},
		{name: "create key scopes wrong type", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "x", "scopes": "*"}}, status: 422, code: "validation_failed", fields: []string{"scopes"}},
		{name: "create key test wrong type", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "x", "scopes": []string{"*"}, "test": "yes"}}, status: 422, code: "validation_failed", fields: []string{"test"}},
		{name: "create key empty name", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "", "scopes": []string{"*"}}}, status: 422, code: "validation_failed", fields: []string{"name"}},
		{name: "create key long name", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": strings.Repeat("k", 101), "scopes": []string{"*"}}}, status: 422, code: "validation_failed", fields: []string{"name"}},
		{name: "create key no scopes", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "x", "scopes": []string{}}}, status: 422, code: "validation_failed", fields: []string{"scopes"}},
		{name: "create key unknown scopes", req: apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": "x", "scopes": []string{"blog:delete", "nope:*", "content", ""}}}, status: 422, code: "validation_failed", fields: []string{"scopes"}},

		// DELETE /api-keys/{key_id}
		{name: "revoke unknown key", req: apitest.Request{Method: "DELETE", Path: "/v1/api-keys/key_" + strings.Repeat("0", 24), Key: p.Key}, status: 404, code: "not_found"},
		{name: "revoke malformed id", req: apitest.Request{Method: "DELETE", Path: "/v1/api-keys/nope", Key: p.Key}, status: 404, code: "not_found"},
		{name: "revoke another project's key", req: apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + otherKeys[0].ID, Key: p.Key}, status: 404, code: "not_found"},
		{name: "revoke a revoked key", req: apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + revoked.ID, Key: p.Key}, status: 404, code: "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := env.Send(c.req)
			m := r.Problem(t, c.status, c.code)
			if c.detail != "" && !strings.Contains(fmt.Sprint(m["detail"]), c.detail) {
				t.Fatalf("detail %q must contain %q", m["detail"], c.detail)
			}
			errs, _ := m["errors"].(map[string]any)
			if c.status == 422 && len(errs) != len(c.fields) {
				t.Fatalf("errors %v, want exactly %v", errs, c.fields)
			}
			if c.status != 422 && m["errors"] != nil {
				t.Fatalf("errors map on %d: %v", c.status, m["errors"])
			}
			for _, f := range c.fields {
				if msgs, ok := errs[f].([]any); !ok || len(msgs) == 0 {
					t.Fatalf("errors lacks %s: %v", f, m["errors"])
				}
			}
			for k, v := range c.headers {
				if got := r.Header.Get(k); got != v {
					t.Fatalf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}

	// None of the failed writes had an effect.
	me := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).JSON(t)
	if me["name"] != p.Name || me["plan"] != "build" || me["timezone"] != "UTC" {
		t.Fatalf("a failed PATCH changed the project: %v", me)
	}
	keys, err := env.Server.Central.ListKeys(ctx, p.ID)
	if err != nil || len(keys) != 5 {
		t.Fatalf("a failed create changed the keys: %d keys, %v", len(keys), err)
	}
	if k, _ := env.Server.Central.ListKeys(ctx, other.ID); len(k) != 1 {
		t.Fatalf("the other project's key was revoked")
	}
}

// TestErrorType builds type from PLINTH_ERROR_BASE.
func TestErrorType(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_ERROR_BASE", "https://errors.example.test/plinth/"))
	m := env.Do("GET", "/v1/projects/me", "", nil).Problem(t, 401, "unauthorized")
	if m["type"] != "https://errors.example.test/plinth/unauthorized" || m["title"] != "Unauthorized" {
		t.Fatalf("type %v title %v", m["type"], m["title"])
	}
}

// TestTestKeys: a pln_test_ key resolves with Test set, and the keys it
// creates are test keys (TestTestKeysMintTestKeys: only test keys).
func TestTestKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	tk := p.NewKey(true, "*")
	if !strings.HasPrefix(tk, "pln_test_") {
		t.Fatalf("test key %q", tk)
	}
	s, err := env.Server.Central.Resolve(context.Background(), tk)
	if err != nil || !s.Test() || !s.Key.Test || s.Project.ID != p.ID {
		t.Fatalf("resolve test key: %+v %v", s, err)
	}
	live, err := env.Server.Central.Resolve(context.Background(), p.Key)
	if err != nil || live.Test() {
		t.Fatalf("resolve live key: test=%v %v", live.Test(), err)
	}
	me := env.Do("GET", "/v1/projects/me", tk, nil).Expect(t, 200).JSON(t)
	if me["id"] != p.ID {
		t.Fatalf("test key reached %v", me["id"])
	}
	k := env.Do("POST", "/v1/projects/me/api-keys", tk, map[string]any{"name": "t", "scopes": []string{"content:read"}}).Expect(t, 201).JSON(t)
	if k["prefix"] != "pln_test_" || !strings.HasPrefix(fmt.Sprint(k["secret"]), "pln_test_") || !strings.HasPrefix(fmt.Sprint(k["masked"]), "pln_test_…") {
		t.Fatalf("key minted by a test key: %v", k)
	}
	s, err = env.Server.Central.Resolve(context.Background(), k["secret"].(string))
	if err != nil || !s.Test() {
		t.Fatalf("test key minted by a test key resolves test=%v %v", s.Test(), err)
	}
}
