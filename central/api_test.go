package central_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestProjectsMeAndKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")

	r := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200)
	if r.Header.Get("X-Request-Id") == "" || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers of a success: %v", r.Header)
	}
	me := r.JSON(t)
	if me["id"] != p.ID || me["plan"] != "build" || me["default_language"] != "en" {
		t.Fatalf("projects/me: %v", me)
	}
	for _, f := range []string{"name", "slug", "industry", "target_languages", "timezone", "created_at"} {
		if _, ok := me[f]; !ok {
			t.Fatalf("projects/me lacks %s: %v", f, me)
		}
	}

	// PATCH
	got := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"name": "Renamed", "timezone": "Europe/Berlin"}).Expect(t, 200).JSON(t)
	if got["name"] != "Renamed" || got["timezone"] != "Europe/Berlin" {
		t.Fatalf("patch: %v", got)
	}
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"timezone": "Mars/Olympus"}).Problem(t, 422, "validation_failed")
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"colour": "red"}).Problem(t, 400, "bad_request")
	env.Do("PATCH", "/v1/projects/me", p.Key, "{not json").Problem(t, 400, "bad_request")

	// create a key: secret once, masked form, then listed without secret
	k := env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": "ci", "scopes": []string{"content:*", "blog:read"}}).Expect(t, 201).JSON(t)
	secret, _ := k["secret"].(string)
	if !strings.HasPrefix(secret, "pln_live_") || len(secret) != 41 || k["prefix"] != "pln_live_" || k["masked"] != "pln_live_…"+secret[37:] {
		t.Fatalf("created key: %v", k)
	}
	list := env.Do("GET", "/v1/projects/me/api-keys", p.Key, nil).Expect(t, 200)
	if strings.Contains(string(list.Body), secret) || strings.Contains(string(list.Body), `"secret"`) {
		t.Fatalf("list leaks a secret: %s", list.Body)
	}

	// the new key works, and lacks project scopes
	env.Do("GET", "/v1/projects/me", secret, nil).Problem(t, 403, "forbidden")
	m := env.Do("POST", "/v1/projects/me/api-keys", secret, map[string]any{"name": "x", "scopes": []string{"*"}}).Problem(t, 403, "forbidden")
	if !strings.Contains(fmt.Sprint(m["detail"]), "project:admin") {
		t.Fatalf("403 detail must name the scope: %v", m)
	}

	// errors of key creation
	env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": "x"}).Problem(t, 400, "bad_request")
	env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": "x", "scopes": []string{"nope:read"}}).Problem(t, 422, "validation_failed")
	limited := p.NewKey(false, "project:admin", "content:read")
	env.Do("POST", "/v1/projects/me/api-keys", limited, map[string]any{"name": "x", "scopes": []string{"content:write"}}).Problem(t, 403, "forbidden")
	env.Do("POST", "/v1/projects/me/api-keys", limited, map[string]any{"name": "x", "scopes": []string{"content:read"}}).Expect(t, 201)

	// revoke: 204, then 401 at once on this instance, then 404 on repeat
	env.Do("DELETE", "/v1/api-keys/"+k["id"].(string), p.Key, nil).Expect(t, 204)
	env.Do("GET", "/v1/projects/me", secret, nil).Problem(t, 401, "unauthorized")
	env.Do("DELETE", "/v1/api-keys/"+k["id"].(string), p.Key, nil).Problem(t, 404, "not_found")
}

// TestPlanIsTheOperators: no project key, not even "*", changes the plan
// or a limit (a free project's "*" key asked for scale and got 50,000
// credits); the other fields still change.
func TestPlanIsTheOperators(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("free")
	for _, body := range []map[string]any{
		{"plan": "scale"},
		{"plan": "free"},
		{"name": "Renamed", "plan": "enterprise"},
		{"plan_credits": 50000},
		{"topup_credits": 1000},
		{"rate_rpm": 100000, "rate_burst": 100000},
	} {
		m := env.Do("PATCH", "/v1/projects/me", p.Key, body).Problem(t, 403, "forbidden")
		if !strings.Contains(fmt.Sprint(m["detail"]), "operator") {
			t.Fatalf("%v: the detail must say who changes it: %v", body, m)
		}
	}
	var usage struct {
		Plan        string `json:"plan"`
		PlanCredits int64  `json:"plan_credits"`
	}
	env.Do("GET", "/v1/projects/me/usage?period=current", p.Key, nil).Expect(t, 200).Decode(t, &usage)
	me := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).JSON(t)
	if usage.Plan != "free" || usage.PlanCredits != 100 || me["plan"] != "free" || me["name"] != p.Name {
		t.Fatalf("a refused PATCH changed the project: %+v %v", usage, me)
	}
	got := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"industry": "bakery"}).Expect(t, 200).JSON(t)
	if got["industry"] != "bakery" || got["plan"] != "free" {
		t.Fatalf("patch of the key's fields: %v", got)
	}
}

// TestTestKeysMintTestKeys: a test key, even "*", cannot mint a live key
// (it did, with test false); it mints test keys, and a live key mints
// either.
func TestTestKeysMintTestKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	testKey := p.NewKey(true, "*")
	m := env.Do("POST", "/v1/projects/me/api-keys", testKey, map[string]any{"name": "live", "scopes": []string{"*"}, "test": false}).Problem(t, 403, "forbidden")
	if !strings.Contains(fmt.Sprint(m["detail"]), "test key") {
		t.Fatalf("the detail must say why: %v", m)
	}
	for _, body := range []map[string]any{
		{"name": "implied", "scopes": []string{"content:read"}},
		{"name": "explicit", "scopes": []string{"content:read"}, "test": true},
	} {
		k := env.Do("POST", "/v1/projects/me/api-keys", testKey, body).Expect(t, 201).JSON(t)
		if !strings.HasPrefix(fmt.Sprint(k["secret"]), "pln_test_") || k["prefix"] != "pln_test_" {
			t.Fatalf("%v: minted %v", body, k)
		}
	}
	k := env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": "from live", "scopes": []string{"content:read"}, "test": true}).Expect(t, 201).JSON(t)
	if k["prefix"] != "pln_test_" {
		t.Fatalf("a live key's test key: %v", k)
	}
	keys, err := env.Server.Central.ListKeys(context.Background(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var live int
	for _, k := range keys {
		if k.Prefix == "pln_live_" {
			live++
		}
	}
	if live != 1 {
		t.Fatalf("%d live keys, want only the project's first: %+v", live, keys)
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	for name, h := range map[string]string{
		"missing":   "",
		"malformed": "Bearer nope",
		"unknown":   "Bearer pln_live_" + strings.Repeat("a", 32),
		"scheme":    "Basic abc",
	} {
		r := env.Send(apitest.Request{Method: "GET", Path: "/v1/projects/me", Header: map[string]string{"Authorization": h}})
		r.Problem(t, 401, "unauthorized")
		if r.Header.Get("WWW-Authenticate") != `Bearer realm="plinth"` {
			t.Fatalf("%s: WWW-Authenticate %q", name, r.Header.Get("WWW-Authenticate"))
		}
	}
}

func TestKeyLimit(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("free") // holds 1 key already
	for i := 0; i < 19; i++ {
		env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": fmt.Sprint("k", i), "scopes": []string{"*"}}).Expect(t, 201)
	}
	env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": "21st", "scopes": []string{"*"}}).Problem(t, 409, "key_limit_reached")
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	env.Do("GET", "/v1/no-such-route", p.Key, nil).Problem(t, 404, "not_found")
	r := env.Do("POST", "/v1/health", "", nil)
	r.Problem(t, 400, "bad_request")
	if r.Header.Get("Allow") == "" {
		t.Fatal("wrong method must carry Allow")
	}
	// a caller's request id is kept; a bad one is replaced
	r = env.Send(apitest.Request{Method: "GET", Path: "/v1/health", Header: map[string]string{"X-Request-Id": "abc-123"}})
	if r.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("request id not kept: %q", r.Header.Get("X-Request-Id"))
	}
	r = env.Send(apitest.Request{Method: "GET", Path: "/v1/health", Header: map[string]string{"X-Request-Id": "bad id!"}})
	if r.Header.Get("X-Request-Id") == "bad id!" || r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("invalid request id kept: %q", r.Header.Get("X-Request-Id"))
	}
	h := env.Do("GET", "/v1/health", "", nil).Expect(t, http.StatusOK).JSON(t)
	if h["status"] != "ok" || h["version"] == "" {
		t.Fatalf("health: %v", h)
	}
}

// TestLastUsedAt: a key's use is recorded off the request path, and key
// timestamps are RFC 3339 UTC.
func TestLastUsedAt(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	k := env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": "u", "scopes": []string{"project:read"}}).Expect(t, 201).JSON(t)
	if k["last_used_at"] != nil || !strings.HasSuffix(fmt.Sprint(k["created_at"]), "Z") {
		t.Fatalf("new key: %v", k)
	}
	env.Do("GET", "/v1/projects/me", k["secret"].(string), nil).Expect(t, 200)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var list struct {
			Data []map[string]any `json:"data"`
		}
		env.Do("GET", "/v1/projects/me/api-keys", p.Key, nil).Expect(t, 200).Decode(t, &list)
		for _, row := range list.Data {
			if row["id"] == k["id"] && row["last_used_at"] != nil {
				ts := fmt.Sprint(row["last_used_at"])
				if _, err := time.Parse(time.RFC3339, ts); err != nil || !strings.HasSuffix(ts, "Z") {
					t.Fatalf("last_used_at %q", ts)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("last_used_at never set: %v", list.Data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeyLimitConcurrent: mints racing for the last free places never
// exceed 20 active keys.
func TestKeyLimitConcurrent(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("") // holds 1 key
	var wg sync.WaitGroup
	statuses := make([]int, 30)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := env.TrySend(apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key, Body: map[string]any{"name": fmt.Sprint("k", i), "scopes": []string{"*"}}})
			if err == nil {
				statuses[i] = r.Status
				if r.Status == 409 {
					if _, err := r.CheckProblem(409, "key_limit_reached"); err != nil {
						statuses[i] = -1
					}
				}
			}
		}()
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[201] != 19 || count[409] != 11 {
		t.Fatalf("statuses %v, want 19 x 201 and 11 x 409 key_limit_reached", count)
	}
	keys, err := env.Server.Central.ListKeys(context.Background(), p.ID)
	if err != nil || len(keys) != 20 {
		t.Fatalf("%d active keys (%v)", len(keys), err)
	}
	// Revoking one frees a place.
	env.Do("DELETE", "/v1/api-keys/"+keys[0].ID, p.Key, nil).Expect(t, 204)
	env.Do("POST", "/v1/projects/me/api-keys", p.Key, map[string]any{"name": "again", "scopes": []string{"*"}}).Expect(t, 201)
}

// A key's secret is shown once: an idempotent replay of its creation
// returns the key without the secret, and the stored response never holds it.
func TestKeyCreationReplayOmitsSecret(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	req := apitest.Request{Method: "POST", Path: "/v1/projects/me/api-keys", Key: p.Key,
		Body: map[string]any{"name": "once", "scopes": []string{"blog:read"}}, Header: map[string]string{"Idempotency-Key": "mint-1"}}
	first := env.Send(req).Expect(t, 201).JSON(t)
	secret, _ := first["secret"].(string)
	if secret == "" {
		t.Fatalf("creation must show the secret: %v", first)
	}
	replay := env.Send(req).Expect(t, 201)
	if replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second request was not a replay: %v", replay.Header)
	}
	got := replay.JSON(t)
	if got["id"] != first["id"] || got["masked"] != first["masked"] {
		t.Fatalf("replay must describe the same key: %v vs %v", got, first)
	}
	if _, ok := got["secret"]; ok || strings.Contains(string(replay.Body), secret) {
		t.Fatalf("replay leaked the secret: %s", replay.Body)
	}
	var stored int
	if err := env.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM `+p.Schema+`.idempotency_keys WHERE convert_from(body, 'UTF8') LIKE '%' || $1 || '%'`, secret).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatal("the key secret is stored in the idempotency table")
	}
}
