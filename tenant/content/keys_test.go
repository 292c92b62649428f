package content_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/content"
)

func TestContentKeysAPI(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribe(t, env, p)
	ro := p.NewKey(false, "content:read")
	other := p.NewKey(false, "galleries:*")
	long := strings.Repeat("x", 65537)
	many := make([]map[string]any, 501)
	for i := range many {
		many[i] = map[string]any{"key": "k", "value": "v"}
	}

	run(t, env, p, []apiCase{
		// PUT /content/{key}
		{name: "put first value", method: "PUT", path: "/v1/content/home.title", body: map[string]any{"value": "Welcome"},
			status: 200, credits: 1, events: ev(topicChanged, 1), golden: "content_key_put",
			check: func(t *testing.T, r *apitest.Resp) {
				if d := lastEvent(t, p, topicChanged); d != `{"key": "home.title", "lang": "en", "value": "Welcome", "previous_value": null}` {
					t.Fatalf("event data: %s", d)
				}
			}},
		{name: "put same value: charged, no change", method: "PUT", path: "/v1/content/home.title", body: map[string]any{"value": "Welcome"},
			status: 200, credits: 1},
		{name: "put changed value", method: "PUT", path: "/v1/content/home.title", body: map[string]any{"value": "Welcome!", "lang": "en"},
			status: 200, credits: 1, events: ev(topicChanged, 1),
			check: func(t *testing.T, r *apitest.Resp) {
				if d := lastEvent(t, p, topicChanged); d != `{"key": "home.title", "lang": "en", "value": "Welcome!", "previous_value": "Welcome"}` {
					t.Fatalf("event data: %s", d)
				}
			}},
		{name: "put french", method: "PUT", path: "/v1/content/home.title", body: map[string]any{"value": "Bienvenue", "lang": "fr"},
			status: 200, credits: 1, events: ev(topicChanged, 1), check: body("lang:fr", "value:Bienvenue")},
		{name: "put invalid json", method: "PUT", path: "/v1/content/x", body: "{", status: 400},
		{name: "put missing value", method: "PUT", path: "/v1/content/x", body: map[string]any{"lang": "en"}, status: 400},
		{name: "put unknown field", method: "PUT", path: "/v1/content/x", body: map[string]any{"value": "v", "x": 1}, status: 400},
		{name: "put wrong type", method: "PUT", path: "/v1/content/x", body: map[string]any{"value": 5}, status: 422, check: field("value")},
		{name: "put bad key", method: "PUT", path: "/v1/content/Bad%20Key", body: map[string]any{"value": "v"}, status: 422, check: field("key")},
		{name: "put bad lang", method: "PUT", path: "/v1/content/x", body: map[string]any{"value": "v", "lang": "english!"}, status: 422, check: field("lang")},
		{name: "put too long", method: "PUT", path: "/v1/content/x", body: map[string]any{"value": long}, status: 422, check: field("value")},
		{name: "put without key", method: "PUT", path: "/v1/content/x", key: noKey, body: map[string]any{"value": "v"}, status: 401},
		{name: "put read-only key", method: "PUT", path: "/v1/content/x", key: ro, body: map[string]any{"value": "v"}, status: 403,
			check: body("content:write")},

		// GET /content/{key}
		{name: "get french", method: "GET", path: "/v1/content/home.title?lang=fr", key: ro, status: 200, golden: "content_key"},
		{name: "get falls back to default", method: "GET", path: "/v1/content/home.title?lang=de", status: 200,
			check: body("lang:en", "value:Welcome!")},
		{name: "get default", method: "GET", path: "/v1/content/home.title", status: 200, check: body("lang:en")},
		{name: "get missing", method: "GET", path: "/v1/content/nope", status: 404},
		{name: "get malformed key", method: "GET", path: "/v1/content/No%20Such", status: 404},
		{name: "get bad lang", method: "GET", path: "/v1/content/home.title?lang=x!", status: 422, check: field("lang")},
		{name: "get without key", method: "GET", path: "/v1/content/home.title", key: noKey, status: 401},
		{name: "get other pillar's key", method: "GET", path: "/v1/content/home.title", key: other, status: 403, check: body("content:read")},

		// PUT /content (batch)
		{name: "batch", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []map[string]any{
			{"key": "nav.home", "value": "Home"}, {"key": "nav.home", "value": "Accueil", "lang": "fr"}, {"key": "home.title", "value": "Welcome!"},
		}}, status: 200, credits: 3, events: ev(topicChanged, 2), golden: "content_batch"},
		{name: "batch all or nothing", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []map[string]any{
			{"key": "ok.key", "value": "fine"}, {"key": "Bad Key", "value": "x"},
		}}, status: 422, check: field("updates[1].key")},
		{name: "batch empty", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []any{}}, status: 422, check: field("updates")},
		{name: "batch too many", method: "PUT", path: "/v1/content", body: map[string]any{"updates": many}, status: 422, check: field("updates")},
		{name: "batch twice the same", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []map[string]any{
			{"key": "a", "value": "1"}, {"key": "a", "value": "2", "lang": "en"},
		}}, status: 422, check: field("updates[1].key")},
		{name: "batch item without value", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []map[string]any{{"key": "a"}}}, status: 400},
		{name: "batch missing updates", method: "PUT", path: "/v1/content", body: map[string]any{}, status: 400},
		{name: "batch unknown item field", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []map[string]any{{"key": "a", "value": "1", "x": 1}}}, status: 400},
		{name: "batch without key", method: "PUT", path: "/v1/content", key: noKey, body: map[string]any{"updates": []any{}}, status: 401},
		{name: "batch read-only", method: "PUT", path: "/v1/content", key: ro, body: map[string]any{"updates": []any{}}, status: 403},

		// GET /content/bulk
		{name: "bulk", method: "GET", path: "/v1/content/bulk?keys=home.title,nav.home,nope,home.title&lang=fr", key: ro, status: 200, golden: "content_bulk"},
		{name: "bulk falls back", method: "GET", path: "/v1/content/bulk?keys=home.title&lang=de", status: 200, check: body("home.title:Welcome!", "lang:de")},
		{name: "bulk every key", method: "GET", path: "/v1/content/bulk", status: 200, check: body("nav.home:Home", "home.title:Welcome!", "missing:[]")},
		{name: "bulk bad key", method: "GET", path: "/v1/content/bulk?keys=a,B%20C", status: 422, check: field("keys")},
		{name: "bulk empty keys", method: "GET", path: "/v1/content/bulk?keys=", status: 422, check: field("keys")},
		{name: "bulk too many keys", method: "GET", path: "/v1/content/bulk?keys=" + manyKeys(501), status: 422, check: field("keys")},
		{name: "bulk bad lang", method: "GET", path: "/v1/content/bulk?lang=__", status: 422, check: field("lang")},
		{name: "bulk cursor with keys", method: "GET", path: "/v1/content/bulk?keys=home.title&cursor=aG9tZQ", status: 422, check: field("cursor")},
		{name: "bulk foreign cursor", method: "GET", path: "/v1/content/bulk?cursor=%21%21", status: 422, check: field("cursor")},
		{name: "bulk cursor of no key", method: "GET", path: "/v1/content/bulk?cursor=QmFkIEtleQ", status: 422, check: field("cursor")},
		{name: "bulk without key", method: "GET", path: "/v1/content/bulk", key: noKey, status: 401},
		{name: "bulk other pillar", method: "GET", path: "/v1/content/bulk", key: other, status: 403},

		// POST /content/translate (its own tests cover the job, 402 and 422)
		{name: "translate without key", method: "POST", path: "/v1/content/translate", key: noKey, body: map[string]any{"languages": []string{"fr"}}, status: 401},
		{name: "translate read-only", method: "POST", path: "/v1/content/translate", key: ro, body: map[string]any{"languages": []string{"fr"}}, status: 403},
		{name: "translate bad json", method: "POST", path: "/v1/content/translate", body: "{", status: 400},

		// DELETE /content/{key}
		{name: "delete one language", method: "DELETE", path: "/v1/content/nav.home?lang=fr", status: 204},
		{name: "the other remains", method: "GET", path: "/v1/content/nav.home?lang=fr", status: 200, check: body("lang:en")},
		{name: "delete", method: "DELETE", path: "/v1/content/nav.home", status: 204},
		{name: "delete again", method: "DELETE", path: "/v1/content/nav.home", status: 404},
		{name: "delete bad lang", method: "DELETE", path: "/v1/content/nav.home?lang=!!", status: 422},
		{name: "delete without key", method: "DELETE", path: "/v1/content/home.title", key: noKey, status: 401},
		{name: "delete read-only", method: "DELETE", path: "/v1/content/home.title", key: ro, status: 403},
	})
	if n := query[int](t, p, `SELECT count(*) FROM content_values WHERE key = 'ok.key'`); n != 0 {
		t.Fatal("a refused batch wrote a value")
	}
	if n := ledgerOps(t, p, "content_update"); n != 7 {
		t.Fatalf("%d content_update ledger entries, want one per written value (7)", n)
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("k")
		b.WriteString(strings.Repeat("x", i%5))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(string(rune('a' + i/26%26)))
	}
	return b.String()
}

func TestContentKeysCredits(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("free")
	subscribe(t, env, p)
	drain(t, p, 2)
	run(t, env, p, []apiCase{
		{name: "batch of three with two credits", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []map[string]any{
			{"key": "a", "value": "1"}, {"key": "b", "value": "2"}, {"key": "c", "value": "3"},
		}}, status: 402, check: body("cost:3", "balance:2")},
		{name: "batch of two", method: "PUT", path: "/v1/content", body: map[string]any{"updates": []map[string]any{
			{"key": "a", "value": "1"}, {"key": "b", "value": "2"},
		}}, status: 200, credits: 2, events: ev(topicChanged, 2)},
		{name: "put with nothing left", method: "PUT", path: "/v1/content/a", body: map[string]any{"value": "x"}, status: 402, check: body("cost:1", "balance:0")},
		{name: "reads stay free", method: "GET", path: "/v1/content/a", status: 200, check: body("value:1")},
	})
	if n := query[int](t, p, `SELECT count(*) FROM content_values`); n != 2 {
		t.Fatalf("%d values, want 2: a refused write writes nothing", n)
	}
}

// TestBulkReadPages: a keyed bulk read without keys answers at most
// content.BulkPage values, in key order, and next_cursor leads through
// the rest: every key once, the language fallback holding across pages.
func TestBulkReadPages(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	total := 2*content.BulkPage + 1
	// Written straight to the table: 10,001 values through PUT /content
	// would take 21 requests and as many credits for nothing this test reads.
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO content_values (key, lang, value)
			SELECT format('k%s', lpad(i::text, 6, '0')), l, format('%s-%s', l, i)
			FROM generate_series(1, $1) i, unnest(ARRAY['en', 'fr']) l
			WHERE l = 'en' OR i % 2 = 0`, total)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	seen := map[string]string{}
	path := "/v1/content/bulk?lang=fr"
	var sizes []int
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more pages than the values fill")
		}
		var b content.Bulk
		env.Do("GET", path, p.Key, nil).Expect(t, 200).Decode(t, &b)
		sizes = append(sizes, len(b.Data))
		if b.Lang != "fr" || len(b.Missing) != 0 {
			t.Fatalf("page %d: lang %q, missing %v", pages, b.Lang, b.Missing)
		}
		for k, v := range b.Data {
			if _, dup := seen[k]; dup {
				t.Fatalf("key %s on two pages", k)
			}
			seen[k] = v
		}
		if !b.HasMore {
			if b.NextCursor != nil {
				t.Fatalf("last page with a next cursor %q", *b.NextCursor)
			}
			break
		}
		if b.NextCursor == nil {
			t.Fatal("has_more without next_cursor")
		}
		path = "/v1/content/bulk?lang=fr&cursor=" + url.QueryEscape(*b.NextCursor)
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{content.BulkPage, content.BulkPage, 1}) {
		t.Fatalf("page sizes %v", sizes)
	}
	if len(seen) != total {
		t.Fatalf("%d keys read, want %d", len(seen), total)
	}
	for _, i := range []int{1, 2, content.BulkPage, content.BulkPage + 1, total} {
		want := fmt.Sprintf("en-%d", i)
		if i%2 == 0 {
			want = fmt.Sprintf("fr-%d", i)
		}
		if k := fmt.Sprintf("k%06d", i); seen[k] != want {
			t.Fatalf("%s: %q, want %q", k, seen[k], want)
		}
	}
	// Listed keys are one page, however many the project holds.
	var b content.Bulk
	env.Do("GET", "/v1/content/bulk?keys=k000001,k000002", p.Key, nil).Expect(t, 200).Decode(t, &b)
	if len(b.Data) != 2 || b.HasMore || b.NextCursor != nil {
		t.Fatalf("listed keys: %+v", b)
	}
}
