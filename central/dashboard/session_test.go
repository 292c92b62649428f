package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
)

// formSignIn signs c in through the pages and returns the session cookie's
// value and the CSRF token of the signed-in pages.
func formSignIn(t *testing.T, env *apitest.Env, c *http.Client, email, password string) (token, csrf string) {
	t.Helper()
	_, page := get(t, c, env.URL+"/dashboard/login")
	csrf = csrfOf(t, page)
	res, _ := post(t, c, env.URL+"/dashboard/login", url.Values{"csrf": {csrf}, "email": {email}, "password": {password}})
	if res.StatusCode != 303 {
		t.Fatalf("sign in: %d", res.StatusCode)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == "plinth_dashboard" {
			token = ck.Value
		}
	}
	if token == "" {
		t.Fatal("no session cookie")
	}
	return token, csrf
}

// getWith sends GET path with the session cookie value tok, from a
// client of its own.
func getWith(t *testing.T, env *apitest.Env, path, tok string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", env.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: "plinth_dashboard", Value: tok})
	res, err := client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestSignOutEndsSession: signing out of the pages ends the session on
// the server: the token of the cookie, kept or copied, no longer opens
// the pages (back to sign-in) nor the API (401). Before, sign-out only
// dropped the browser's cookie, and the token lived its 12 hours.
func TestSignOutEndsSession(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	if _, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password"); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	tok, csrf := formSignIn(t, env, c, "dev@studio.test", "studio-password")
	if res := getWith(t, env, "/dashboard/", tok); res.StatusCode != 200 {
		t.Fatalf("signed in: %d", res.StatusCode)
	}
	res, _ := post(t, c, env.URL+"/dashboard/logout", url.Values{"csrf": {csrf}})
	if res.StatusCode != 303 || res.Header.Get("Location") != "/dashboard/login" {
		t.Fatalf("sign out: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if res := getWith(t, env, "/dashboard/", tok); res.StatusCode != 303 || res.Header.Get("Location") != "/dashboard/login" {
		t.Fatalf("the signed-out cookie opened the dashboard: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	env.Do("GET", "/central/api/me", tok, nil).Problem(t, 401, "unauthorized")
	// Signing out again, with the cookie of an ended session, still
	// signs out.
	res, _ = post(t, c, env.URL+"/dashboard/logout", url.Values{"csrf": {csrf}})
	if res.StatusCode != 303 {
		t.Fatalf("second sign out: %d", res.StatusCode)
	}
}

// secureLogin signs in with X-Forwarded-Proto: https and returns the
// answer's session cookie and Strict-Transport-Security.
func secureLogin(t *testing.T, env *apitest.Env) (*http.Cookie, string) {
	t.Helper()
	c := client(t)
	_, page := get(t, c, env.URL+"/dashboard/login")
	form := url.Values{"csrf": {csrfOf(t, page)}, "email": {"dev@studio.test"}, "password": {"studio-password"}}
	req, _ := http.NewRequest("POST", env.URL+"/dashboard/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 303 {
		t.Fatalf("sign in: %d", res.StatusCode)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == "plinth_dashboard" {
			return ck, res.Header.Get("Strict-Transport-Security")
		}
	}
	t.Fatal("no session cookie")
	return nil, ""
}

// TestForwardedProtoTrust: X-Forwarded-Proto: https makes the cookie
// Secure, and the answer carry HSTS, only from a trusted proxy
// (PLINTH_TRUSTED_PROXIES; the test client connects from loopback,
// trusted by default). From any other peer it is the client's own word:
// a cookie not marked Secure, no HSTS. Before, any client's header made
// the cookie Secure, and HSTS was never sent.
func TestForwardedProtoTrust(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		trusted string
		secure  bool
	}{
		{"trusted proxy", "", true},
		{"untrusted peer", "10.0.0.0/8", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []apitest.Option
			if tc.trusted != "" {
				opts = append(opts, apitest.WithEnv("PLINTH_TRUSTED_PROXIES", tc.trusted))
			}
			env := apitest.New(t, opts...)
			if _, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password"); err != nil {
				t.Fatal(err)
			}
			ck, hsts := secureLogin(t, env)
			want := ""
			if tc.secure {
				want = httpapi.HSTS
			}
			if ck.Secure != tc.secure || hsts != want {
				t.Fatalf("cookie Secure %v, HSTS %q; want %v, %q", ck.Secure, hsts, tc.secure, want)
			}
			// The API's answers alike.
			r := env.Send(apitest.Request{Method: "GET", Path: "/v1/health", Header: map[string]string{"X-Forwarded-Proto": "https"}}).Expect(t, 200)
			if got := r.Header.Get("Strict-Transport-Security"); got != want {
				t.Fatalf("/v1/health HSTS %q, want %q", got, want)
			}
			// Plain HTTP from the trusted proxy: no HSTS.
			if got := env.Do("GET", "/v1/health", "", nil).Header.Get("Strict-Transport-Security"); got != "" {
				t.Fatalf("HSTS over plain HTTP: %q", got)
			}
		})
	}
}

// TestProjectStatusPages: the home page lists a project being deleted as
// such (before, its usage read made the whole page a 500 for the grace
// period), and its page says so; a suspended project's changes are
// refused with a page that says why, and nothing is minted.
func TestProjectStatusPages(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	cen := env.Server.Central
	tn, _, err := cen.CreateTenant(ctx, "Studio", "studio.test", "dev@studio.test", "studio-password")
	if err != nil {
		t.Fatal(err)
	}
	live := env.CreateProject(centralParams(tn.ID, "Live shop"))
	doomed := env.CreateProject(centralParams(tn.ID, "Old shop"))
	paused := env.CreateProject(centralParams(tn.ID, "Paused shop"))
	if _, err := cen.DeleteProject(ctx, doomed.ID, central.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cen.SuspendProject(ctx, paused.ID, "unpaid"); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	_, csrf := formSignIn(t, env, c, "dev@studio.test", "studio-password")

	res, page := get(t, c, env.URL+"/dashboard/")
	if res.StatusCode != 200 || !strings.Contains(page, "Old shop") || !strings.Contains(page, `<span class="badge deleting">being deleted</span>`) ||
		!strings.Contains(page, `<span class="badge suspended">suspended</span>`) || !strings.Contains(page, "Live shop") {
		t.Fatalf("home with a deleting project: %d %s", res.StatusCode, page)
	}
	res, page = get(t, c, env.URL+"/dashboard/projects/"+doomed.ID)
	if res.StatusCode != 200 || !strings.Contains(page, "This project is being deleted") || strings.Contains(page, "create-key") {
		t.Fatalf("the deleting project's page: %d %s", res.StatusCode, page)
	}

	res, page = post(t, c, env.URL+"/dashboard/projects/"+paused.ID+"/keys", url.Values{"csrf": {csrf}, "name": {"site"}, "scopes": {"content:read"}})
	if res.StatusCode != 403 || !strings.Contains(page, "This project is suspended by the platform operator: you can look at it, but not change it.") {
		t.Fatalf("a key of a suspended project: %d %s", res.StatusCode, page)
	}
	res, page = post(t, c, env.URL+"/dashboard/projects/"+paused.ID+"/webhooks",
		url.Values{"csrf": {csrf}, "url": {"https://hooks.example/in"}, "events": {"content.changed"}})
	if res.StatusCode != 403 || !strings.Contains(page, "you can look at it, but not change it") {
		t.Fatalf("a webhook of a suspended project: %d %s", res.StatusCode, page)
	}
	keys, err := cen.ListKeys(ctx, paused.ID)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys of the suspended project: %v %v", keys, err)
	}
	// The live project is changed as before.
	res, _ = post(t, c, env.URL+"/dashboard/projects/"+live.ID+"/keys", url.Values{"csrf": {csrf}, "name": {"site"}, "scopes": {"content:read"}})
	if res.StatusCode != 201 {
		t.Fatalf("a key of the live project: %d", res.StatusCode)
	}
}

// TestPageCountsOnce: a page costs the user one request of the
// dashboard's limit (PLINTH_DASHBOARD_RATE), however many reads of the
// API it makes (the home page of three projects makes eight); past the
// limit, the page says when to retry.
func TestPageCountsOnce(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_DASHBOARD_RATE", "1/2"))
	tn, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		env.CreateProject(centralParams(tn.ID, "Shop "+strconv.Itoa(i)))
	}
	c := client(t)
	formSignIn(t, env, c, "dev@studio.test", "studio-password") // the login endpoints have limits of their own
	for i := range 2 {
		if res, page := get(t, c, env.URL+"/dashboard/"); res.StatusCode != 200 || !strings.Contains(page, "Shop 2") {
			t.Fatalf("home page %d: %d", i, res.StatusCode)
		}
	}
	res, page := get(t, c, env.URL+"/dashboard/")
	if res.StatusCode != 429 || !strings.Contains(page, "Too many requests. Try again in") || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third home page: %d %v %s", res.StatusCode, res.Header, page)
	}
}
