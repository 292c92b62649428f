package central_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// workspace is a tenant with one user, made directly through central.
type workspace struct {
	central.Tenant
	User     central.User
	Password string
}

func newWorkspace(t *testing.T, env *apitest.Env, name, email, password string) workspace {
	t.Helper()
	ctx := context.Background()
	c := env.Server.Central
	tn, _, err := c.CreateTenant(ctx, name, strings.ToLower(name)+".test", "owner@"+strings.ToLower(name)+".test", "owner-password")
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.AddUser(ctx, tn.ID, "", email, password)
	if err != nil {
		t.Fatal(err)
	}
	return workspace{Tenant: tn, User: u, Password: password}
}

func login(env *apitest.Env, body map[string]any) *apitest.Resp {
	return env.Do("POST", "/central/api/login", "", body)
}

// loginToken logs in and returns the token.
func loginToken(t *testing.T, env *apitest.Env, email, password string) string {
	t.Helper()
	m := login(env, map[string]any{"email": email, "password": password}).Expect(t, 200).JSON(t)
	return m["token"].(string)
}

// withoutInstance drops the per-request member so two problem bodies compare.
func withoutInstance(m map[string]any) map[string]any {
	delete(m, "instance")
	return m
}

func TestLoginMatrix(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	c := env.Server.Central
	alpha := newWorkspace(t, env, "Alpha", "Multi@Example.com", "password-alpha")
	bravo := newWorkspace(t, env, "Bravo", "multi@example.com", "password-bravo")

	// tenants-for-email: both workspaces, any case, oldest first; unknown: []
	start := time.Now()
	r := env.Do("GET", "/central/api/tenants-for-email?email=MULTI@example.COM", "", nil).Expect(t, 200)
	if el := time.Since(start); el < central.TenantsLookupFloor {
		t.Fatalf("tenants-for-email answered in %v, under the floor %v", el, central.TenantsLookupFloor)
	}
	want := fmt.Sprintf(`{"tenants":[{"id":%d,"name":"Alpha","domain":"alpha.test"},{"id":%d,"name":"Bravo","domain":"bravo.test"}]}`, alpha.ID, bravo.ID)
	if got := strings.TrimSpace(string(r.Body)); got != want {
		t.Fatalf("tenants-for-email:\n got %s\nwant %s", got, want)
	}
	for _, q := range []string{"?email=nobody@example.com", "?email=", ""} {
		r := env.Do("GET", "/central/api/tenants-for-email"+q, "", nil).Expect(t, 200)
		if got := strings.TrimSpace(string(r.Body)); got != `{"tenants":[]}` {
			t.Fatalf("tenants-for-email%s: %s", q, got)
		}
	}
	// an email that is not text is a malformed request, refused before the
	// lookup (it tells nothing of the accounts)
	for _, q := range []string{"?email=%FF%FE", "?email=multi%00@example.com"} {
		env.Do("GET", "/central/api/tenants-for-email"+q, "", nil).Problem(t, 400, "bad_request")
	}

	// tenant_id omitted: the workspace whose password verifies
	for _, tc := range []struct {
		password string
		ws       workspace
	}{{"password-alpha", alpha}, {"password-bravo", bravo}} {
		m := login(env, map[string]any{"email": "MULTI@example.com", "password": tc.password}).Expect(t, 200).JSON(t)
		tn, u := m["tenant"].(map[string]any), m["user"].(map[string]any)
		if tn["id"] != float64(tc.ws.ID) || tn["name"] != tc.ws.Name || tn["domain"] != tc.ws.Domain {
			t.Fatalf("%s: tenant %v, want %+v", tc.password, tn, tc.ws.Tenant)
		}
		if u["id"] != float64(tc.ws.User.ID) || u["email"] != tc.ws.User.Email || u["name"] == "" || !strings.HasSuffix(u["created_at"].(string), "Z") {
			t.Fatalf("%s: user %v, want %+v", tc.password, u, tc.ws.User)
		}
		if len(m) != 3 {
			t.Fatalf("login response has members beyond token, tenant, user: %v", m)
		}
		// the token: HS256 under the server secret, 12 h, sub = user, tid = tenant
		claims := jwt.MapClaims{}
		tok, err := jwt.ParseWithClaims(m["token"].(string), claims, func(*jwt.Token) (any, error) { return []byte(env.Config.Secret), nil },
			jwt.WithValidMethods([]string{"HS256"}))
		if err != nil || tok.Header["alg"] != "HS256" {
			t.Fatalf("token: %v %v", err, tok)
		}
		if claims["sub"] != strconv.FormatInt(tc.ws.User.ID, 10) || claims["tid"] != float64(tc.ws.ID) {
			t.Fatalf("claims %v, want sub %d tid %d", claims, tc.ws.User.ID, tc.ws.ID)
		}
		if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 12*3600 || time.Since(time.Unix(int64(iat), 0)) > time.Minute {
			t.Fatalf("token lifetime: iat %v exp %v", iat, exp)
		}
		me := env.Do("GET", "/central/api/me", m["token"].(string), nil).Expect(t, 200).JSON(t)
		if me["tenant"].(map[string]any)["id"] != float64(tc.ws.ID) || me["user"].(map[string]any)["id"] != float64(tc.ws.User.ID) {
			t.Fatalf("me: %v", me)
		}
	}

	// tenant_id given: only that workspace's password
	m := login(env, map[string]any{"email": "multi@example.com", "password": "password-bravo", "tenant_id": bravo.ID}).Expect(t, 200).JSON(t)
	if m["tenant"].(map[string]any)["id"] != float64(bravo.ID) {
		t.Fatalf("tenant_id %d: %v", bravo.ID, m)
	}

	// every wrong credential: the same 422 body
	failed := func(name string, body map[string]any) map[string]any {
		t.Helper()
		p := login(env, body).Problem(t, 422, "validation_failed")
		if p["message"] != "auth.failed" || fmt.Sprint(p["errors"]) != "map[email:[auth.failed]]" {
			t.Fatalf("%s: %v", name, p)
		}
		return withoutInstance(p)
	}
	ref := failed("unknown email", map[string]any{"email": "nobody@example.com", "password": "password-bravo"})
	for name, body := range map[string]map[string]any{
		"wrong password":          {"email": "multi@example.com", "password": "password-charlie"},
		"other workspace":         {"email": "multi@example.com", "password": "password-bravo", "tenant_id": alpha.ID},
		"unknown workspace":       {"email": "multi@example.com", "password": "password-bravo", "tenant_id": 987654},
		"unknown email, tenant":   {"email": "nobody@example.com", "password": "password-bravo", "tenant_id": bravo.ID},
		"empty password":          {"email": "multi@example.com", "password": ""},
		"not an email":            {"email": "multi", "password": "password-bravo"},
		"other workspace's owner": {"email": "owner@alpha.test", "password": "owner-password", "tenant_id": bravo.ID},
		"overlong email":          {"email": strings.Repeat("m", 5000) + "@example.com", "password": "password-bravo"},
	} {
		if got := failed(name, body); fmt.Sprint(got) != fmt.Sprint(ref) {
			t.Fatalf("%s: body differs from the unknown email's:\n%v\n%v", name, got, ref)
		}
	}

	// malformed requests are not credential failures
	login(env, map[string]any{"email": "multi@example.com"}).Problem(t, 400, "bad_request")
	login(env, map[string]any{"email": "multi\x00@example.com", "password": "password-bravo"}).Problem(t, 400, "bad_request")
	p := login(env, map[string]any{"email": "multi@example.com", "password": "x", "tenant_id": "one"}).Problem(t, 422, "validation_failed")
	if _, ok := p["errors"].(map[string]any)["tenant_id"]; !ok {
		t.Fatalf("wrong-typed tenant_id: %v", p)
	}

	// the users are what the database holds
	ts, err := c.TenantsForEmail(ctx, "mUlTi@example.com")
	if err != nil || len(ts) != 2 || ts[0].ID != alpha.ID || ts[1].ID != bravo.ID {
		t.Fatalf("TenantsForEmail: %v %v", ts, err)
	}
}

// retryAfter parses a 429's Retry-After.
func retryAfter(t *testing.T, r *apitest.Resp) int {
	t.Helper()
	n, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || n < 1 || n > int(central.LoginFailureWindow.Seconds()) {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	return n
}

func TestLoginFailureLimit(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ws := newWorkspace(t, env, "Limit", "limit@example.com", "right-password")

	for _, email := range []string{"limit@example.com", "nobody@example.com"} {
		for i := 0; i < central.LoginFailureLimit; i++ {
			login(env, map[string]any{"email": email, "password": "wrong-password"}).Problem(t, 422, "validation_failed")
		}
		// known and unknown alike: further attempts 429, the right password too
		retryAfter(t, login(env, map[string]any{"email": email, "password": "wrong-password"}))
		r := login(env, map[string]any{"email": strings.ToUpper(email), "password": "right-password"})
		r.Problem(t, 429, "rate_limited")
		retryAfter(t, r)
	}
	// another email is not affected
	newWorkspace(t, env, "Other", "other@example.com", "other-password")
	loginToken(t, env, "other@example.com", "other-password")

	// a second instance on the same database sees the same failures
	second, err := central.NewServer(context.Background(), env.Config, env.DB.Pool, slog.New(slog.DiscardHandler), central.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(second.Handler)
	defer hs.Close()
	other := *env
	other.URL, other.HTTP = hs.URL, hs
	login(&other, map[string]any{"email": "limit@example.com", "password": "right-password"}).Problem(t, 429, "rate_limited")

	// once the window has passed, the right password works and clears the count
	if _, err := env.Server.Pool.Exec(context.Background(), `UPDATE central.login_failures SET failed_at = failed_at - interval '15 minutes' WHERE email = 'limit@example.com'`); err != nil {
		t.Fatal(err)
	}
	m := login(&other, map[string]any{"email": "limit@example.com", "password": "right-password"}).Expect(t, 200).JSON(t)
	if m["user"].(map[string]any)["id"] != float64(ws.User.ID) {
		t.Fatalf("login after the window: %v", m)
	}
	var n int
	if err := env.Server.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.login_failures WHERE email = 'limit@example.com'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("failures after a success: %d %v", n, err)
	}

	// Retry-After counts down to the moment the oldest failure that counts expires
	for i := 0; i < central.LoginFailureLimit; i++ {
		login(env, map[string]any{"email": "limit@example.com", "password": "wrong-password"}).Problem(t, 422, "validation_failed")
	}
	if _, err := env.Server.Pool.Exec(context.Background(), `UPDATE central.login_failures SET failed_at = now() - interval '14 minutes' WHERE email = 'limit@example.com'`); err != nil {
		t.Fatal(err)
	}
	if s := retryAfter(t, login(env, map[string]any{"email": "limit@example.com", "password": "right-password"})); s < 55 || s > 61 {
		t.Fatalf("Retry-After %d, want about 60", s)
	}
}

func TestLoginFailureLimitConcurrent(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	newWorkspace(t, env, "Race", "race@example.com", "right-password")
	const attempts = 8
	statuses := make(chan int, attempts)
	var wg sync.WaitGroup
	for i := 0; i < attempts; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// TrySend: a fatal helper must not run off the test goroutine.
			// On a loaded machine some attempts find every verification
			// slot busy for a second and are refused 503 (counting for
			// nothing, by design); a client retries those, and so does
			// this one, so every attempt ends counted.
			for try := 0; ; try++ {
				r, err := env.TrySend(apitest.Request{Method: "POST", Path: "/central/api/login",
					Body: map[string]any{"email": "race@example.com", "password": "wrong-password"}})
				if err != nil {
					t.Error(err)
					return
				}
				if r.Status != 503 || try == 30 {
					statuses <- r.Status
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(statuses)
	if t.Failed() {
		t.FailNow()
	}
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[422] != central.LoginFailureLimit || count[429] != attempts-central.LoginFailureLimit {
		t.Fatalf("concurrent attempts: %v, want %d × 422 and the rest 429", count, central.LoginFailureLimit)
	}
}

// sign makes a token under key with the given method and claims.
func sign(t *testing.T, m jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDashboardTokens(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ws := newWorkspace(t, env, "Tokens", "tokens@example.com", "right-password")
	other := newWorkspace(t, env, "Elsewhere", "elsewhere@example.com", "right-password")
	secret := []byte(env.Config.Secret)
	good := loginToken(t, env, "tokens@example.com", "right-password")
	env.Do("GET", "/central/api/me", good, nil).Expect(t, 200)

	now := time.Now()
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"sub": strconv.FormatInt(ws.User.ID, 10), "tid": ws.ID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	// A token made elsewhere with the server secret and these claims is accepted,
	// with sub as a string or a number.
	env.Do("GET", "/central/api/me", sign(t, jwt.SigningMethodHS256, secret, claims(nil)), nil).Expect(t, 200)
	env.Do("GET", "/central/api/me", sign(t, jwt.SigningMethodHS256, secret, claims(func(c jwt.MapClaims) { c["sub"] = ws.User.ID })), nil).Expect(t, 200)

	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	forged := strings.Replace(string(payload), fmt.Sprintf(`"tid":%d`, ws.ID), fmt.Sprintf(`"tid":%d`, other.ID), 1)
	if forged == string(payload) {
		t.Fatalf("payload %s has no tid", payload)
	}
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + parts[2]

	api := env.NewProject("")
	for name, auth := range map[string]string{
		"missing":        "",
		"not bearer":     "Basic " + good,
		"garbage":        "Bearer not-a-token",
		"api key":        "Bearer " + api.Key,
		"expired":        "Bearer " + sign(t, jwt.SigningMethodHS256, secret, claims(func(c jwt.MapClaims) { c["iat"], c["exp"] = now.Add(-13*time.Hour).Unix(), now.Add(-time.Hour).Unix() })),
		"no exp":         "Bearer " + sign(t, jwt.SigningMethodHS256, secret, claims(func(c jwt.MapClaims) { delete(c, "exp") })),
		"no tid":         "Bearer " + sign(t, jwt.SigningMethodHS256, secret, claims(func(c jwt.MapClaims) { delete(c, "tid") })),
		"no sub":         "Bearer " + sign(t, jwt.SigningMethodHS256, secret, claims(func(c jwt.MapClaims) { delete(c, "sub") })),
		"tampered":       "Bearer " + tampered,
		"wrong secret":   "Bearer " + sign(t, jwt.SigningMethodHS256, []byte("another-secret"), claims(nil)),
		"HS512":          "Bearer " + sign(t, jwt.SigningMethodHS512, secret, claims(nil)),
		"alg none":       "Bearer " + sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil)),
		"user not there": "Bearer " + sign(t, jwt.SigningMethodHS256, secret, claims(func(c jwt.MapClaims) { c["sub"] = "987654" })),
		"wrong tenant":   "Bearer " + sign(t, jwt.SigningMethodHS256, secret, claims(func(c jwt.MapClaims) { c["tid"] = other.ID })),
	} {
		for _, path := range []string{"/central/api/me", "/central/api/projects"} {
			r := env.Send(apitest.Request{Method: "GET", Path: path, Header: map[string]string{"Authorization": auth}})
			if r.Status != 401 {
				t.Fatalf("%s on %s: status %d: %s", name, path, r.Status, r.Body)
			}
			r.Problem(t, 401, "unauthorized")
			if r.Header.Get("WWW-Authenticate") != `Bearer realm="plinth"` {
				t.Fatalf("%s: WWW-Authenticate %q", name, r.Header.Get("WWW-Authenticate"))
			}
		}
	}

	// a deleted user's token stops working
	if _, err := env.Server.Pool.Exec(context.Background(), `DELETE FROM central.users WHERE id = $1`, ws.User.ID); err != nil {
		t.Fatal(err)
	}
	env.Do("GET", "/central/api/me", good, nil).Problem(t, 401, "unauthorized")
}
