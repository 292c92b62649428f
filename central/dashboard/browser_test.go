package dashboard_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// chromiumPath is Debian's chromium; no downloaded browser builds.
const chromiumPath = "/usr/bin/chromium"

// browser starts headless Chromium for the test: under CI=true a missing
// browser fails the test, elsewhere it skips it.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required under CI: %v", err)
		}
		t.Skipf("no chromium at %s: %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath), chromedp.NoSandbox,
		chromedp.Headless, chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// tab is a fresh browser context (its own cookies) in the browser of ctx,
// with a deadline for its steps.
func tab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tc, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tc); err != nil {
		t.Fatal(err)
	}
	tc, cancelT := context.WithTimeout(tc, 60*time.Second)
	t.Cleanup(cancelT)
	return tc
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// navigate loads a page and returns its HTTP status.
func navigate(t *testing.T, ctx context.Context, url string) int64 {
	t.Helper()
	res, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// submit clicks a button that sends a form and waits for the next page,
// returning its status.
func submit(t *testing.T, ctx context.Context, button string) int64 {
	t.Helper()
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(button)))
	if err != nil {
		t.Fatalf("submit %s: %v", button, err)
	}
	return res.Status
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return run(t, ctx, chromedp.Text(chromedp.CSS(sel)))
}

func html(t *testing.T, ctx context.Context) string {
	t.Helper()
	return run(t, ctx, chromedp.OuterHTML(chromedp.CSS("html")))
}

// screenshot writes docs/dashboard/<name>-desktop.png and -phone.png when
// PLINTH_SCREENSHOTS=1, so ordinary runs leave the tree alone.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("PLINTH_SCREENSHOTS") != "1" {
		return
	}
	for _, size := range []struct {
		suffix string
		w, h   int64
		mobile bool
	}{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}} {
		vp := []chromedp.EmulateViewportOption{}
		if size.mobile {
			vp = append(vp, chromedp.EmulateMobile, chromedp.EmulateScale(2))
		}
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h, vp...))
		png := run(t, ctx, chromedp.FullScreenshot(100)) // 100: PNG; below it, JPEG
		path := filepath.Join("..", "..", "docs", "dashboard", name+"-"+size.suffix+".png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
}

// signIn goes through the sign-in form: email, then (when the email is in
// several workspaces) the workspace, then the password.
func signIn(t *testing.T, ctx context.Context, base, email, workspace, password string) int64 {
	t.Helper()
	navigate(t, ctx, base+"/dashboard/login")
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#email"), email))
	submit(t, ctx, "#next")
	if workspace != "" {
		do(t, ctx, chromedp.Click(chromedp.CSS(`input[name=tenant_id][value="`+workspace+`"]`)))
	}
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#password"), password))
	return submit(t, ctx, "#sign-in")
}

func TestBrowserKeysFlow(t *testing.T) {
	ctx := browser(t) // first: without a browser there is nothing to start
	env := apitest.New(t)
	c := env.Server.Central
	bg := context.Background()
	if _, _, err := c.CreateTenant(bg, "Studio", "studio.test", "dev@studio.test", "studio-password"); err != nil {
		t.Fatal(err)
	}
	other, _, err := c.CreateTenant(bg, "Elsewhere", "elsewhere.test", "dev@elsewhere.test", "elsewhere-password")
	if err != nil {
		t.Fatal(err)
	}
	foreign := env.CreateProject(centralParams(other.ID, "Not yours"))
	tc := tab(t, ctx)

	// Not signed in: the dashboard sends the browser to the sign-in page.
	navigate(t, tc, env.URL+"/dashboard/")
	if loc := run(t, tc, chromedp.Location()); !strings.HasSuffix(loc, "/dashboard/login") {
		t.Fatalf("signed out /dashboard/ is at %s", loc)
	}
	screenshot(t, tc, "sign-in")

	// One workspace: no chooser; a wrong password shows auth.failed.
	navigate(t, tc, env.URL+"/dashboard/login")
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#email"), "dev@studio.test"))
	submit(t, tc, "#next")
	if n := run(t, tc, chromedp.Nodes(chromedp.CSSAll(`input[name=tenant_id]`), chromedp.AtLeast(0))); len(n) != 0 {
		t.Fatalf("a one-workspace email gets a chooser of %d", len(n))
	}
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#password"), "wrong-password"))
	if st := submit(t, tc, "#sign-in"); st != 422 {
		t.Fatalf("wrong password: %d", st)
	}
	if got := text(t, tc, "#login-error"); got != "The email or password is not correct." {
		t.Fatalf("wrong password message: %q", got)
	}
	if m := run(t, tc, chromedp.AttributeValue(chromedp.CSS("#login-error"), "data-message")); m.Value != "auth.failed" {
		t.Fatalf("message key %q", m.Value)
	}
	if st := signIn(t, tc, env.URL, "dev@studio.test", "", "studio-password"); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	if ws := text(t, tc, ".workspace"); ws != "Studio" {
		t.Fatalf("workspace %q", ws)
	}
	// The session cookie is HttpOnly and SameSite=Strict.
	if cookies := run(t, tc, chromedp.Evaluate[string]("document.cookie")); strings.Contains(cookies, "plinth_dashboard") {
		t.Fatalf("the session cookie is readable by scripts: %q", cookies)
	}
	screenshot(t, tc, "projects-empty")

	// Create a project.
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#name"), "Bakery"),
		chromedp.SendKeys(chromedp.CSS("#target_languages"), "fr, de"),
		chromedp.SendKeys(chromedp.CSS("#timezone"), "Europe/Paris"))
	if st := submit(t, tc, "#create-project"); st != 200 {
		t.Fatalf("create project: %d", st)
	}
	if got := text(t, tc, "#project-name"); got != "Bakery" {
		t.Fatalf("project page of %q", got)
	}
	projectURL := run(t, tc, chromedp.Location())
	if n := run(t, tc, chromedp.Nodes(chromedp.CSSAll("#usage-chart"), chromedp.AtLeast(0))); len(n) != 0 {
		t.Fatal("a chart of no usage")
	}

	// Usage: charges through the credit ledger show as bars, the longest
	// for the operation that used most.
	pid := projectURL[strings.LastIndex(projectURL, "/")+1:]
	charge(t, env, pid, "blog_post", 10)
	charge(t, env, pid, "content_update", 2)
	charge(t, env, pid, "content_update", 2)
	navigate(t, tc, projectURL)
	widths := run(t, tc, chromedp.Evaluate[map[string]float64](`Object.fromEntries([...document.querySelectorAll("#usage-chart g.bar")].map(g => [g.querySelector("text").textContent, +g.querySelector("rect").getAttribute("width")]))`))
	if len(widths) != 2 || widths["blog_post"] != 380 || widths["content_update"] != 152 {
		t.Fatalf("usage bars: %v", widths)
	}
	if got := text(t, tc, "#usage-title + p"); !strings.Contains(got, "14 of") {
		t.Fatalf("usage summary: %q", got)
	}
	navigate(t, tc, env.URL+"/dashboard/")
	if got := text(t, tc, "#projects tbody"); !strings.Contains(got, "Bakery") || !strings.Contains(got, "free") || !strings.Contains(got, "Europe/Paris") ||
		!strings.Contains(got, "14 / ") {
		t.Fatalf("projects list: %q", got)
	}
	screenshot(t, tc, "projects")

	// Create a key: the default scopes are checked; add project:read.
	navigate(t, tc, projectURL)
	for _, s := range []string{"content:read", "content:write", "blog:read", "blog:write", "social:read", "social:write"} {
		if !run(t, tc, chromedp.Evaluate[bool](`document.querySelector('input[name=scopes][value="`+s+`"]').checked`)) {
			t.Fatalf("default scope %s is not checked", s)
		}
	}
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#key-name"), "Website"),
		chromedp.Click(chromedp.CSS(`input[name=scopes][value="project:read"]`)))
	if st := submit(t, tc, "#create-key"); st != 201 {
		t.Fatalf("create key: %d", st)
	}
	secret := run(t, tc, chromedp.Value(chromedp.CSS("#new-key-secret")))
	if !strings.HasPrefix(secret, "pln_live_") {
		t.Fatalf("secret %q", secret)
	}
	if warn := text(t, tc, "#new-key"); !strings.Contains(warn, "shown only this once") {
		t.Fatalf("no warning: %q", warn)
	}
	screenshot(t, tc, "key-created")
	if got := env.Do("GET", "/v1/projects/me", secret, nil).Expect(t, 200).JSON(t); got["name"] != "Bakery" {
		t.Fatalf("the new key reads %v", got)
	}

	// Reloaded, the page shows the key masked and never its secret.
	navigate(t, tc, projectURL)
	page := html(t, tc)
	if strings.Contains(page, secret) || strings.Contains(page, secret[len(secret)-12:]) {
		t.Fatal("the secret is shown after creation")
	}
	if got := text(t, tc, "#keys tbody"); !strings.Contains(got, "Website") || !strings.Contains(got, "pln_live_") || !strings.Contains(got, "project:read") {
		t.Fatalf("keys table: %q", got)
	}
	screenshot(t, tc, "project")

	// Revoke it: a confirmation first, then the API refuses the key.
	submit(t, tc, `button[aria-label="Revoke Website"]`)
	if got := text(t, tc, "#revoke-confirm"); !strings.Contains(got, "Revoke “Website”") {
		t.Fatalf("confirmation: %q", got)
	}
	env.Do("GET", "/v1/projects/me", secret, nil).Expect(t, 200) // not yet
	submit(t, tc, "#confirm-revoke")
	if got := text(t, tc, "main"); strings.Contains(got, "Website") {
		t.Fatalf("revoked key still listed: %q", got)
	}
	env.Do("GET", "/v1/projects/me", secret, nil).Problem(t, 401, "unauthorized")

	// Another workspace's project is 404, like an unknown one.
	if st := navigate(t, tc, env.URL+"/dashboard/projects/"+foreign.ID); st != 404 {
		t.Fatalf("another workspace's project: %d", st)
	}
	if strings.Contains(html(t, tc), "Not yours") {
		t.Fatal("the 404 names the other workspace's project")
	}

	// Sign out (from the 404 page, which keeps the header): the dashboard
	// asks for a sign-in again.
	submit(t, tc, "#sign-out")
	navigate(t, tc, env.URL+"/dashboard/")
	if loc := run(t, tc, chromedp.Location()); !strings.HasSuffix(loc, "/dashboard/login") {
		t.Fatalf("after sign-out /dashboard/ is at %s", loc)
	}
}

// charge spends credits of a project's live pool the way a pillar does.
func charge(t *testing.T, env *apitest.Env, projectID, op string, n int64) {
	t.Helper()
	ctx := context.Background()
	sc, err := env.Server.Central.ScopeFor(ctx, projectID)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Tx(ctx, func(tx pgx.Tx) error { return credits.Charge(ctx, tx, sc, op, n*credits.Unit, "") }); err != nil {
		t.Fatal(err)
	}
}

func TestBrowserChooseWorkspace(t *testing.T) {
	ctx := browser(t) // first: without a browser there is nothing to start
	env := apitest.New(t)
	c := env.Server.Central
	bg := context.Background()
	a, _, err := c.CreateTenant(bg, "Agency A", "a.test", "owner@a.test", "owner-password")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := c.CreateTenant(bg, "Agency B", "b.test", "owner@b.test", "owner-password")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a.ID, b.ID} {
		if _, err := c.AddUser(bg, id, "Sam", "sam@agency.test", "sam-password"); err != nil {
			t.Fatal(err)
		}
	}
	env.CreateProject(centralParams(b.ID, "B's site"))
	tc := tab(t, ctx)
	navigate(t, tc, env.URL+"/dashboard/login")
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#email"), "sam@agency.test"))
	submit(t, tc, "#next")
	if got := text(t, tc, "fieldset"); !strings.Contains(got, "Agency A") || !strings.Contains(got, "Agency B") {
		t.Fatalf("chooser: %q", got)
	}
	screenshot(t, tc, "choose-workspace")
	do(t, tc, chromedp.Click(chromedp.CSS(`input[name=tenant_id][value="`+itoa(b.ID)+`"]`)),
		chromedp.SendKeys(chromedp.CSS("#password"), "sam-password"))
	if st := submit(t, tc, "#sign-in"); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	if ws := text(t, tc, ".workspace"); ws != "Agency B" {
		t.Fatalf("workspace %q", ws)
	}
	if got := text(t, tc, "#projects"); !strings.Contains(got, "B's site") {
		t.Fatalf("projects of B: %q", got)
	}
}
