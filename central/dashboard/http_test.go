package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// client is a browser stand-in with a cookie jar that does not follow
// redirects, so a test sees each answer.
func client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	res, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field in %s", page)
	}
	return m[1]
}

// otherToken is a CSRF token of the same length and alphabet as tok that
// differs from it at every position: wrong by construction (a token with
// one letter replaced at random is tok itself when that letter was
// already there).
func otherToken(tok string) string {
	b := []byte(tok)
	for i, c := range b {
		if c == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
	}
	return string(b)
}

func TestHeadersCookiesAndCSRF(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	if _, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password"); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	res, page := get(t, c, env.URL+"/dashboard/login")
	if res.StatusCode != 200 {
		t.Fatalf("login page: %d", res.StatusCode)
	}
	for h, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-inline") ||
		!strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP: %q", csp)
	}
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]|\son[a-z]+=`).MatchString(page) {
		t.Error("the page has inline script")
	}
	tok := csrfOf(t, page)

	// A form without the token, or with another, is refused and signs no one in.
	for _, bad := range []string{"", otherToken(tok)} {
		res, _ := post(t, c, env.URL+"/dashboard/login", url.Values{"csrf": {bad}, "email": {"dev@studio.test"}, "password": {"studio-password"}})
		if res.StatusCode != 403 || len(res.Cookies()) != 0 {
			t.Fatalf("CSRF %q: %d %v", bad, res.StatusCode, res.Cookies())
		}
	}

	res, _ = post(t, c, env.URL+"/dashboard/login", url.Values{"csrf": {tok}, "email": {"dev@studio.test"}, "password": {"studio-password"}})
	if res.StatusCode != 303 || res.Header.Get("Location") != "/dashboard/" {
		t.Fatalf("sign in: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == "plinth_dashboard" {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/dashboard" || session.Secure {
		t.Fatalf("session cookie over plain HTTP: %+v", session)
	}
	// It is the central token: the API takes it.
	if me := env.Do("GET", "/central/api/me", session.Value, nil).Expect(t, 200).JSON(t); me["tenant"].(map[string]any)["name"] != "Studio" {
		t.Fatalf("me: %v", me)
	}
	// Behind a TLS-terminating proxy the cookie is Secure.
	req, _ := http.NewRequest("POST", env.URL+"/dashboard/login", strings.NewReader(url.Values{"csrf": {tok}, "email": {"dev@studio.test"}, "password": {"studio-password"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if cs := res.Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Fatalf("cookies over HTTPS: %+v", cs)
	}

	// Signed in, a state-changing form still needs the token.
	res, _ = post(t, c, env.URL+"/dashboard/projects", url.Values{"name": {"Sneaky"}})
	if res.StatusCode != 403 {
		t.Fatalf("project without CSRF: %d", res.StatusCode)
	}
	if list := env.Do("GET", "/central/api/projects", session.Value, nil).Expect(t, 200).JSON(t); len(list["data"].([]any)) != 0 {
		t.Fatalf("a project was created without the token: %v", list)
	}

	// The assets are embedded and served with the same headers.
	for _, p := range []string{"/dashboard/static/dashboard.css", "/dashboard/static/dashboard.js", "/dashboard/static/htmx-2.0.4.min.js"} {
		res, body := get(t, c, env.URL+p)
		if res.StatusCode != 200 || len(body) < 100 || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("%s: %d, %d bytes", p, res.StatusCode, len(body))
		}
	}
}

func TestLockoutShowsWhenToRetry(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	if _, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password"); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	_, page := get(t, c, env.URL+"/dashboard/login")
	tok := csrfOf(t, page)
	form := url.Values{"csrf": {tok}, "email": {"dev@studio.test"}, "password": {"wrong"}}
	for range 5 {
		res, page := post(t, c, env.URL+"/dashboard/login", form)
		if res.StatusCode != 422 || !strings.Contains(page, "The email or password is not correct.") {
			t.Fatalf("wrong password: %d %s", res.StatusCode, page)
		}
	}
	res, page := post(t, c, env.URL+"/dashboard/login", form)
	if res.StatusCode != 429 || !regexp.MustCompile(`Too many attempts\. Try again in \d+ minutes \(after \d\d:\d\d UTC\)\.`).MatchString(page) {
		t.Fatalf("lockout: %d %s", res.StatusCode, page)
	}
}

// The host's root and /central lead to the dashboard, and from there to
// the sign-in page; the API's own 404s are unchanged.
func TestRootLeadsToDashboard(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c := client(t)
	for _, p := range []string{"/", "/central", "/central/"} {
		res, _ := get(t, c, env.URL+p)
		if res.StatusCode != 302 || res.Header.Get("Location") != "/dashboard/" {
			t.Fatalf("GET %s: %d to %q", p, res.StatusCode, res.Header.Get("Location"))
		}
	}
	res, _ := get(t, c, env.URL+"/dashboard/")
	if res.StatusCode != 303 || res.Header.Get("Location") != "/dashboard/login" {
		t.Fatalf("GET /dashboard/ signed out: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	env.Do("GET", "/central/api/nope", "", nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/nope", "", nil).Problem(t, 404, "not_found")
}
