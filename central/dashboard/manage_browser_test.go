package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
)

// waitText reloads url until the text of sel satisfies ok, and returns it.
func waitText(t *testing.T, ctx context.Context, url, sel string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		navigate(t, ctx, url)
		got := text(t, ctx, sel)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s of %s stayed %q", sel, url, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A user sees a delivery its receiver refused, with why, and redelivers it
// once the receiver is fixed; the endpoint is created, disabled, enabled
// and its secret rotated from the same page.
func TestBrowserWebhookRedeliver(t *testing.T) {
	ctx := browser(t) // first: without a browser there is nothing to start
	var failing atomic.Bool
	failing.Store(true)
	rc := webhooktest.NewTLS(t, func(*http.Request, int) int {
		if failing.Load() {
			return 500
		}
		return 204
	})
	// Two attempts, 100 ms apart: the delivery fails for good at once.
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()),
		apitest.WithEnv("PLINTH_WEBHOOK_RETRY_DELAYS", "100ms", "PLINTH_WEBHOOK_TIMEOUT", "3s"))
	tn, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password")
	if err != nil {
		t.Fatal(err)
	}
	p := env.CreateProject(central.ProjectParams{TenantID: tn.ID, Name: "Bakery", Plan: "build"})
	tc := tab(t, ctx)
	if st := signIn(t, tc, env.URL, "dev@studio.test", "", "studio-password"); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	hooks := env.URL + "/dashboard/projects/" + p.ID + "/webhooks"
	navigate(t, tc, env.URL+"/dashboard/projects/"+p.ID)
	submit(t, tc, `nav.tabs a[href$="/webhooks"]`)
	if got := text(t, tc, "#no-endpoints"); got != "No webhook endpoints yet." {
		t.Fatalf("empty webhooks page: %q", got)
	}

	// Create: the secret is shown once, with a copy button and a warning.
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#endpoint-url"), rc.URL),
		chromedp.Click(chromedp.CSS(`input[name=events][value="content.changed"]`)))
	if st := submit(t, tc, "#create-endpoint"); st != 201 {
		t.Fatalf("create endpoint: %d", st)
	}
	secret := run(t, tc, chromedp.Value(chromedp.CSS("#new-secret-value")))
	if warn := text(t, tc, "#new-secret"); secret == "" || !strings.Contains(warn, "shown only this once") {
		t.Fatalf("secret %q, warning %q", secret, warn)
	}
	if n := run(t, tc, chromedp.Nodes(chromedp.CSSAll(`#new-secret button.copy[data-copy="new-secret-value"]`), chromedp.AtLeast(0))); len(n) != 1 {
		t.Fatal("no copy button")
	}
	screenshot(t, tc, "webhook-created")
	rc.SetSecret(secret) // the receiver checks every delivery's signature with it
	eid := run(t, tc, chromedp.AttributeValue(chromedp.CSS("#endpoints tbody tr"), "data-id")).Value
	navigate(t, tc, hooks)
	if strings.Contains(html(t, tc), secret) {
		t.Fatal("the secret is shown again")
	}

	// Disable and enable: the API sees each.
	submit(t, tc, `button[aria-label="Disable `+rc.URL+`"]`)
	if got := text(t, tc, "#endpoints .state"); got != "disabled" {
		t.Fatalf("after disabling: %q", got)
	}
	if e := env.Do("GET", "/v1/webhook-endpoints/"+eid, p.Key, nil).Expect(t, 200).JSON(t); e["is_active"] != false {
		t.Fatalf("the API reads %v", e)
	}
	submit(t, tc, `button[aria-label="Enable `+rc.URL+`"]`)
	if got := text(t, tc, "#endpoints .state"); got != "active" {
		t.Fatalf("after enabling: %q", got)
	}

	// An event the receiver refuses: the delivery shows failed, and why.
	webhooktest.Emit(t, env, p, "content.changed", map[string]any{"key": "home.title", "lang": "en", "value": "Fresh bread", "previous_value": nil})
	rc.WaitN(t, 15*time.Second, 2)
	deliveriesURL := hooks + "/" + eid
	waitText(t, tc, deliveriesURL, "#deliveries tbody tr .status", func(s string) bool { return s == "failed" })
	if got := text(t, tc, "#deliveries tbody tr .last-error"); got != "http_status 500" {
		t.Fatalf("last error %q", got)
	}
	if got := text(t, tc, "#deliveries tbody tr .attempts"); got != "2" {
		t.Fatalf("attempts %q", got)
	}
	screenshot(t, tc, "webhook-delivery-failed")

	// The receiver is fixed; redeliver.
	failing.Store(false)
	if st := submit(t, tc, "#deliveries .redeliver"); st != 200 {
		t.Fatalf("redeliver: %d", st)
	}
	nid := text(t, tc, "#redelivered code")
	reqs := rc.WaitN(t, 15*time.Second, 3)
	if got := reqs[2].Delivery(); got != nid || reqs[2].Verified != nil || string(reqs[2].Body) != string(reqs[0].Body) {
		t.Fatalf("the receiver got %s (signature: %v), want the event again as %s", got, reqs[2].Verified, nid)
	}
	waitText(t, tc, deliveriesURL, "#deliveries tbody tr:first-child .status", func(s string) bool { return s == "succeeded" })
	if got := run(t, tc, chromedp.AttributeValue(chromedp.CSS("#deliveries tbody tr:first-child"), "data-id")).Value; got != nid {
		t.Fatalf("newest delivery %s, want %s", got, nid)
	}
	if got := text(t, tc, "#deliveries tbody tr:nth-child(2) .status"); got != "failed" {
		t.Fatalf("the failed delivery is now %q", got)
	}
	screenshot(t, tc, "webhook-redelivered")

	// Rotate: a new secret, shown once, the old one said to keep signing.
	navigate(t, tc, hooks)
	submit(t, tc, `button[aria-label="Rotate the secret of `+rc.URL+`"]`)
	rotated := run(t, tc, chromedp.Value(chromedp.CSS("#new-secret-value")))
	if rotated == "" || rotated == secret || !strings.Contains(text(t, tc, "#new-secret"), "keeps signing for 24 hours") {
		t.Fatalf("rotated secret %q", rotated)
	}
}

// The jobs page shows a job with its status and progress; the form
// submissions page lists submissions and downloads the CSV export.
func TestBrowserJobsAndSubmissions(t *testing.T) {
	ctx := browser(t) // first: without a browser there is nothing to start
	env := apitest.New(t, apitest.WithWorkers())
	tn, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password")
	if err != nil {
		t.Fatal(err)
	}
	p := env.CreateProject(central.ProjectParams{TenantID: tn.ID, Name: "Bakery", Plan: "build"})
	j := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Sourdough at home"}).Expect(t, 202).JSON(t)
	jobID := j["id"].(string)
	env.WaitJob(t, p.Key, jobID)
	for path, body := range map[string]map[string]any{
		"/v1/public/forms/newsletter": {"email": "ann@example.com", "name": "Ann", "source": "footer"},
		"/v1/public/forms/contact":    {"email": "bob@example.com", "name": "Bob", "subject": "Wedding cake", "message": "Do you bake for 80 guests?"},
	} {
		env.Send(apitest.Request{Method: "POST", Path: path + "?project_id=" + p.ID, Body: body}).Expect(t, 201)
	}

	tc := tab(t, ctx)
	if st := signIn(t, tc, env.URL, "dev@studio.test", "", "studio-password"); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	navigate(t, tc, env.URL+"/dashboard/projects/"+p.ID)
	submit(t, tc, `nav.tabs a[href$="/jobs"]`)
	row := `#jobs tr[data-id="` + jobID + `"]`
	if got := text(t, tc, row); !strings.Contains(got, "blog_post.generate") {
		t.Fatalf("job row: %q", got)
	}
	if got := text(t, tc, row+" .status"); got != "completed" {
		t.Fatalf("job status %q", got)
	}
	if got := run(t, tc, chromedp.Evaluate[float64](`document.querySelector('`+row+` progress').value`)); got != 100 {
		t.Fatalf("progress %v", got)
	}
	if got := text(t, tc, row+" .pct"); got != "100%" {
		t.Fatalf("progress text %q", got)
	}
	screenshot(t, tc, "jobs")

	submit(t, tc, `nav.tabs a[href$="/submissions"]`)
	got := text(t, tc, "#submissions tbody")
	for _, want := range []string{"ann@example.com", "Ann", "newsletter", "bob@example.com", "Wedding cake", "Do you bake for 80 guests?", "contact"} {
		if !strings.Contains(got, want) {
			t.Fatalf("submissions lack %q: %q", want, got)
		}
	}
	screenshot(t, tc, "submissions")

	// The export link downloads the subscribers as CSV.
	if !run(t, tc, chromedp.Evaluate[bool](`document.querySelector('#export-csv').hasAttribute('download')`)) {
		t.Fatal("the export link is no download")
	}
	dl := run(t, tc, chromedp.Evaluate[map[string]any](`fetch(document.querySelector('#export-csv').href).then(async r => `+
		`({status: r.status, type: r.headers.get('content-type'), disposition: r.headers.get('content-disposition'), body: await r.text()}))`, chromedp.EvalAwaitPromise))
	if dl["status"] != float64(200) || !strings.HasPrefix(dl["type"].(string), "text/csv") ||
		dl["disposition"] != `attachment; filename="newsletter-subscribers.csv"` {
		t.Fatalf("download: %v", dl)
	}
	if lines := strings.Split(strings.TrimSpace(dl["body"].(string)), "\n"); len(lines) != 2 || lines[0] != "email,name,source,created_at" ||
		!strings.HasPrefix(lines[1], "ann@example.com,Ann,footer,") {
		t.Fatalf("CSV: %q", dl["body"])
	}
}

// The new-project form offers only the plans the operator allows; a plan
// slipped into the form anyway is refused by the API, shown on the form.
func TestBrowserPlans(t *testing.T) {
	ctx := browser(t) // first: without a browser there is nothing to start
	env := apitest.New(t, apitest.WithEnv("PLINTH_DASHBOARD_PLANS", "free,hobby"))
	if _, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password"); err != nil {
		t.Fatal(err)
	}
	tc := tab(t, ctx)
	if st := signIn(t, tc, env.URL, "dev@studio.test", "", "studio-password"); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	// The host's root and /central lead here.
	for _, p := range []string{"/", "/central"} {
		navigate(t, tc, env.URL+p)
		if loc := run(t, tc, chromedp.Location()); loc != env.URL+"/dashboard/" {
			t.Fatalf("%s led to %s", p, loc)
		}
	}
	offered := run(t, tc, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#plan option')].map(o => o.value)`))
	if strings.Join(offered, ",") != "free,hobby" {
		t.Fatalf("plans offered: %v", offered)
	}
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#name"), "Bakery"), chromedp.SetValue(chromedp.CSS("#plan"), "hobby"))
	if st := submit(t, tc, "#create-project"); st != 200 {
		t.Fatalf("create project: %d", st)
	}
	if got := text(t, tc, ".facts"); !strings.Contains(got, "hobby") {
		t.Fatalf("project facts: %q", got)
	}

	navigate(t, tc, env.URL+"/dashboard/")
	do(t, tc, chromedp.SendKeys(chromedp.CSS("#name"), "Big shop"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#plan').add(new Option('scale', 'scale', true, true))`))
	if st := submit(t, tc, "#create-project"); st != 403 {
		t.Fatalf("a plan not offered: %d", st)
	}
	if got := text(t, tc, `[role=alert]`); !strings.Contains(got, "allowed: free, hobby") {
		t.Fatalf("refusal: %q", got)
	}
	if got := text(t, tc, "#projects tbody"); strings.Contains(got, "Big shop") {
		t.Fatalf("the refused project exists: %q", got)
	}
}
