package central_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
)

// beginCounter counts the transactions a pool opens: pgx sends BEGIN
// (Scope.Tx's "BEGIN; SET LOCAL ...") as a statement of its own.
type beginCounter struct{ n atomic.Int64 }

func (b *beginCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(d.SQL)), "BEGIN") {
		b.n.Add(1)
	}
	return ctx
}

func (b *beginCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Scope.Tx begins in the pipeline of its first statement (pgx's
// Batch.BeginTx): the batch's BEGIN counts too.
func (b *beginCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (b *beginCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(d.SQL)), "BEGIN") {
		b.n.Add(1)
	}
}

func (b *beginCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// countingServer starts a server on env's database whose pool, of at
// most maxConns connections, counts its round trips on the wire and the
// transactions it opens.
func countingServer(t *testing.T, env *apitest.Env, maxConns int32) (*central.Server, *pgtest.RoundTrips, *beginCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(env.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	rt := pgtest.Count(cfg)
	begins := &beginCounter{}
	cfg.ConnConfig.Tracer = begins
	cfg.MaxConns = maxConns
	tenant.ConfigurePool(cfg)
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	srv, err := central.NewServer(ctx, env.Config, pool, slog.New(slog.DiscardHandler), central.Options{Queue: queue.Options{TestOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv, rt, begins
}

// writingReads are the GET routes with a side effect that needs a
// transaction, allowed to open one.
var writingReads = map[string]string{
	"/v1/payments/connect":                    "refreshes the Stripe account and stores what changed",
	"/v1/social-accounts/callback/{platform}": "consumes the OAuth state and stores the account",
}

// twoTripReads are GET routes that take two round trips, each with why:
// debts to fold into one statement, listed so that no other read grows.
var twoTripReads = map[string]string{
	"/v1/pages/{id_or_slug}/versions":     "resolves the page (an id or a slug), then reads its versions",
	"/v1/components/{slug}/versions":      "resolves the component's id from its slug, then reads its versions",
	"/v1/blog-posts/{ref}/versions":       "resolves the post (an id or a slug), then reads its versions",
	"/v1/pages/{id_or_slug}/versions/{n}": "resolves the page, then reads the version",
	"/v1/components/{slug}/versions/{n}":  "resolves the component, then reads the version",
	"/v1/blog-posts/{ref}/versions/{n}":   "resolves the post, then reads the version",
}

// TestReadPathsOneRoundTrip walks every GET route of the OpenAPI document
// with a full-access key (and the project id on the public surface)
// against a server whose pool counts round trips on the wire and the
// transactions it opens: a GET opens no transaction and takes at most one
// round trip to PostgreSQL (but for writingReads, which write). A handler
// that went back to Scope.Tx fails it with its BEGIN.
func TestReadPathsOneRoundTrip(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("scale")
	// Something to find on the routes that read one resource, so that a
	// read's later queries (a post's translations, a product's variants)
	// run too.
	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Bonjour", "lang": "fr"}).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Hello", "content": "<p>Hi</p>", "language_code": "en"}).Expect(t, 201)
	env.Do("PUT", "/v1/blog-posts/hello/translations/fr", p.Key, map[string]any{"title": "Bonjour"}).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts/hello/publish", p.Key, nil).Expect(t, 200)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "hello", "path": "/", "status": "published"}).Expect(t, 201)
	// The sitemap needs the site's address to read anything.
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"site_url": "https://example.com"}).Expect(t, 200)
	env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Hello", "slug": "hello", "props": map[string]any{"title": "Hi"}}).Expect(t, 201)
	idOf := func(m map[string]any) string { return strconv.FormatInt(int64(m["id"].(float64)), 10) }
	product := idOf(env.Do("POST", "/v1/products", p.Key, map[string]any{"name": "Bread", "price": 300, "status": "active"}).Expect(t, 201).JSON(t))
	variant := idOf(env.Do("POST", "/v1/products/"+product+"/variants", p.Key, map[string]any{"name": "Silver"}).Expect(t, 201).JSON(t))
	order := idOf(env.Do("POST", "/v1/orders", p.Key, map[string]any{"items": []any{map[string]any{"product_id": json.Number(product), "quantity": 1}}}).Expect(t, 201).JSON(t))
	service := idOf(env.Do("POST", "/v1/booking/services", p.Key, map[string]any{"name": "Haircut"}).Expect(t, 201).JSON(t))
	// The id a route's {id} names, by the route's start; the query a route
	// needs to read at all.
	ids := map[string]string{"/v1/products/": product, "/v1/public/products/": product, "/v1/orders/": order, "/v1/booking/services/": service}
	queries := map[string]string{"/v1/content/bulk": "keys=hero.title,nope", "/v1/public/content/bulk": "keys=hero.title,nope",
		"/v1/booking/availability": "service_id=" + service, "/v1/public/booking/availability": "service_id=" + service,
		// dates: the range is read in the booking timezone
		"/v1/bookings": "from=2020-01-01&to=2100-12-31"}

	srv, rt, begins := countingServer(t, env, 4)

	fill := func(route string) string {
		id := "1"
		for prefix, v := range ids {
			if strings.HasPrefix(route, prefix) {
				id = v
			}
		}
		return strings.NewReplacer("{key}", "hero.title", "{slug}", "hello", "{ref}", "hello", "{id_or_slug}", id,
			"{project}", p.ID, "{platform}", "linkedin", "{id}", id, "{variant_id}", variant, "{delivery_id}", "1").Replace(route)
	}
	paths := central.OpenAPIDocument()["paths"].(map[string]any)
	var routes []string
	for path, ops := range paths {
		if _, ok := ops.(map[string]any)["get"]; ok {
			routes = append(routes, path)
		}
	}
	sort.Strings(routes)
	if len(routes) < 40 {
		t.Fatalf("the document lists %d GET routes; the walk is broken", len(routes))
	}
	do := func(route string) (status int, trips, txs int64) {
		q := []string{}
		if v, ok := queries[route]; ok {
			q = append(q, v)
		}
		if strings.HasPrefix(route, "/v1/public/") {
			q = append(q, "project_id="+p.ID)
		}
		url := fill(route) + "?" + strings.Join(q, "&")
		req := httptest.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+p.Key)
		rec := httptest.NewRecorder()
		t0, b0 := rt.Count(), begins.n.Load()
		srv.Handler.ServeHTTP(rec, req)
		return rec.Code, rt.Count() - t0, begins.n.Load() - b0
	}
	seen := map[string]bool{}
	for _, route := range routes {
		if route == "/v1/health" || route == "/v1/openapi.json" || strings.HasSuffix(route, "/stream") {
			continue // no project data; a stream stays open
		}
		// The first request resolves the key and project (cached after);
		// of the next three the fewest round trips count, so that work of
		// the server's own between requests is not charged to a route.
		do(route)
		status, trips, txs := do(route)
		for range 2 {
			_, n, b := do(route)
			trips, txs = min(trips, n), min(txs, b)
		}
		if status == http.StatusOK {
			seen[route] = true
		}
		if why, ok := writingReads[route]; ok {
			t.Logf("GET %s: %d, %d round trips, %d transactions (allowed: %s)", route, status, trips, txs, why)
			continue
		}
		t.Logf("GET %s: %d, %d round trips, %d transactions", route, status, trips, txs)
		if txs > 0 {
			t.Errorf("GET %s (%d) opened %d transactions; a read opens none (Scope.Reader, Scope.Read)", route, status, txs)
		}
		if why, ok := twoTripReads[route]; ok && trips <= 2 {
			t.Logf("GET %s: two round trips allowed: %s", route, why)
		} else if trips > 1 {
			t.Errorf("GET %s (%d) took %d round trips; a read takes one (Scope.Read, Scope.ReadBatch)", route, status, trips)
		}
	}
	for _, route := range []string{"/v1/content/{key}", "/v1/blog-posts/{ref}", "/v1/public/blog-posts/{slug}", "/v1/public/content/{key}",
		"/v1/public/content/bulk", "/v1/products/{id}", "/v1/public/products/{id_or_slug}", "/v1/orders/{id}", "/v1/booking/services/{id}",
		"/v1/products/{id}/variants/{variant_id}", "/v1/pages/{id_or_slug}", "/v1/components/{slug}", "/v1/booking/availability",
		"/v1/public/sitemap.xml", "/v1/projects/me/usage", "/v1/products/{id}/variants", "/v1/public/products"} {
		if !seen[route] {
			t.Errorf("GET %s did not find the seeded data: the walk reads nothing", route)
		}
	}
}
