package central_test

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// chromiumPath is Debian's Chromium (apt package chromium); the test never
// downloads a browser.
const chromiumPath = "/usr/bin/chromium"

// sitePage is a generated site's page in miniature: from its own origin it
// reads what a site renders through the public surface and sends what a
// visitor sends, as a browser does (preflights, CORS), and writes each
// outcome into #results, then shows #done. A step whose fetch the browser
// refuses records the error.
var sitePage = template.Must(template.New("site").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Bakery</title></head>
<body><pre id="results"></pre><div id="done" hidden>done</div>
<script>
const api = {{.API}}, project = {{.Project}}, service = {{.Service}}, day = {{.Day}};
const headers = {"X-Service-Project-Key": project};
async function call(method, path, body) {
  const init = {method, cache: "no-store", headers: {...headers}};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.headers["Idempotency-Key"] = crypto.randomUUID();
    init.body = JSON.stringify(body);
  }
  const r = await fetch(api + path, init);
  return {status: r.status, etag: r.headers.get("ETag"), remaining: r.headers.get("X-RateLimit-Remaining"), body: await r.json()};
}
async function step(out, name, fn) {
  try { out[name] = await fn(); } catch (e) { out[name] = {error: String(e)}; }
}
(async () => {
  const out = {};
  await step(out, "content", async () => { const r = await call("GET", "/v1/public/content/home.title");
    return {status: r.status, value: r.body.value, etag: r.etag, remaining: r.remaining}; });
  // A site revalidating what it read: If-None-Match is preflighted.
  await step(out, "revalidate", async () => {
    const r = await fetch(api + "/v1/public/content/home.title", {cache: "no-store", headers: {...headers, "If-None-Match": out.content.etag}});
    return {status: r.status, value: r.headers.get("ETag") === out.content.etag ? "same etag" : "another etag"}; });
  await step(out, "blog", async () => { const r = await call("GET", "/v1/public/blog-posts/fresh-bread");
    return {status: r.status, value: r.body.title}; });
  await step(out, "gallery", async () => { const r = await call("GET", "/v1/public/galleries/shop");
    return {status: r.status, value: r.body.data.name}; });
  await step(out, "catalogue", async () => { const r = await call("GET", "/v1/public/products");
    return {status: r.status, value: r.body.data.map(p => p.name).join(",")}; });
  let slot = null;
  await step(out, "availability", async () => {
    const r = await call("GET", "/v1/public/booking/availability?service_id=" + service + "&from=" + day + "&to=" + day);
    slot = r.body.data[0].start_at;
    return {status: r.status, value: String(r.body.data.length > 0)}; });
  await step(out, "booking", async () => { const r = await call("POST", "/v1/public/bookings",
      {service_id: service, start_at: slot, customer: {name: "Ann Visitor", email: "ann@example.com"}});
    return {status: r.status, value: r.body.status}; });
  await step(out, "newsletter", async () => { const r = await call("POST", "/v1/public/forms/newsletter", {email: "ann@example.com"});
    return {status: r.status, value: r.body.email}; });
  await step(out, "contact", async () => { const r = await call("POST", "/v1/public/forms/contact",
      {name: "Ann", email: "ann@example.com", message: "Do you bake on Sundays?"});
    return {status: r.status, value: r.body.message}; });
  document.getElementById("results").textContent = JSON.stringify(out);
  document.getElementById("done").hidden = false;
})();
</script></body></html>`))

// outcome is what the page recorded of one step.
type outcome struct {
	Status    int    `json:"status"`
	Value     string `json:"value"`
	ETag      string `json:"etag"`
	Remaining string `json:"remaining"`
	Error     string `json:"error"`
}

// browser starts headless Chromium, or skips the test when it is not
// installed (fails under CI, where it must be).
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Chromium is required under CI: %v", err)
		}
		t.Skipf("no Chromium at %s: %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath), chromedp.Headless)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first run starts the browser, which lives as long as ctx.
	require.NoError(t, chromedp.Do(ctx))
	return ctx
}

// visit loads the page in a fresh tab of the browser and returns what it
// recorded.
func visit(t *testing.T, browserCtx context.Context, pageURL string) map[string]outcome {
	t.Helper()
	tab, cancel := chromedp.NewContext(browserCtx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(tab, 60*time.Second)
	defer cancelT()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.ID("done"))))
	text, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.ID("results")))
	require.NoError(t, err)
	out := map[string]outcome{}
	require.NoError(t, json.Unmarshal([]byte(text), &out), text)
	return out
}

// TestBrowserSite: a page served from another origin reads and posts
// through the public surface in a real browser (Chromium, driven with
// chromedp): with no allowed_origins every step succeeds; with its own
// origin listed, too; with only another origin listed, the browser
// refuses every answer.
func TestBrowserSite(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Welcome to the bakery"}).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "manual", "title": "Fresh bread", "status": "published"}).Expect(t, 201)
	env.Do("POST", "/v1/galleries", p.Key, map[string]any{"name": "Shop", "items": []map[string]any{{"url": "https://img.example/a.jpg"}}}).Expect(t, 201)
	env.Do("POST", "/v1/products", p.Key, map[string]any{"name": "Sourdough loaf", "price": 650, "status": "active"}).Expect(t, 201)
	env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"timezone": "UTC", "weekly_hours": map[string]any{
		"mon": [][]string{{"08:00", "18:00"}}, "tue": [][]string{{"08:00", "18:00"}}, "wed": [][]string{{"08:00", "18:00"}},
		"thu": [][]string{{"08:00", "18:00"}}, "fri": [][]string{{"08:00", "18:00"}}, "sat": [][]string{{"08:00", "18:00"}},
		"sun": [][]string{{"08:00", "18:00"}}}, "min_notice_minutes": 0, "max_days_ahead": 30, "auto_confirm": true}).Expect(t, 200)
	svc := env.Do("POST", "/v1/booking/services", p.Key, map[string]any{"name": "Cake tasting", "duration_minutes": 30}).Expect(t, 201).JSON(t)

	day := time.Now().UTC().AddDate(0, 0, 2).Format("2006-01-02")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = sitePage.Execute(w, map[string]any{"API": env.URL, "Project": p.ID, "Service": svc["id"], "Day": day})
	}))
	t.Cleanup(site.Close)
	require.NotEqual(t, env.URL, site.URL) // two loopback origins: another port

	want := map[string]outcome{
		"content":      {Status: 200, Value: "Welcome to the bakery"},
		"revalidate":   {Status: 304, Value: "same etag"},
		"blog":         {Status: 200, Value: "Fresh bread"},
		"gallery":      {Status: 200, Value: "Shop"},
		"catalogue":    {Status: 200, Value: "Sourdough loaf"},
		"availability": {Status: 200, Value: "true"},
		"booking":      {Status: 201, Value: "confirmed"},
		"newsletter":   {Status: 201, Value: "ann@example.com"},
		"contact":      {Status: 201, Value: "Do you bake on Sundays?"},
	}
	succeeds := func(got map[string]outcome) {
		t.Helper()
		c := got["content"]
		require.NotEmpty(t, c.ETag, "the page reads the exposed ETag")
		require.NotEmpty(t, c.Remaining, "the page reads the exposed rate-limit headers")
		c.ETag, c.Remaining = "", ""
		got["content"] = c
		require.Equal(t, want, got)
	}

	// Any origin.
	succeeds(visit(t, ctx, site.URL))
	// The page's own origin listed.
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"allowed_origins": []string{"https://bakery.example", site.URL}}).Expect(t, 200)
	succeeds(visit(t, ctx, site.URL))
	// Only another origin listed: the browser hands the page no answer.
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"allowed_origins": []string{"https://bakery.example"}}).Expect(t, 200)
	refused := visit(t, ctx, site.URL)
	require.Len(t, refused, len(want))
	for name, o := range refused {
		require.True(t, strings.Contains(o.Error, "Failed to fetch") || strings.Contains(o.Error, "TypeError"), "%s: %+v", name, o)
		require.Zero(t, o.Status, name)
	}
}
