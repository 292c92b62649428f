package content_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/content"
)

// Topics this pillar emits.
const (
	topicChanged   = content.TopicChanged
	topicGenerated = content.TopicGenerated
)

// noKey sends a request without an Authorization header.
const noKey = "-"

// apiCase is one request of a table-driven API test and what it must do:
// its status, its problem code, the whole credits it charges and the
// events it emits.
type apiCase struct {
	name   string
	method string
	path   string
	key    string // "" the project's "*" key; noKey none
	body   any
	req    *apitest.Request // a prepared body and headers (multipart)
	header map[string]string

	status  int
	code    string // the problem code of an error status
	credits int64  // whole credits charged (0: none)
	events  map[string]int
	golden  string // compare the body with testdata/golden.golden
	check   func(t *testing.T, r *apitest.Resp)
}

// subscribe creates a webhook endpoint of p subscribed to the pillar's
// topics, so that emitted events are recorded (no workers run, so nothing
// is delivered).
func subscribe(t *testing.T, env *apitest.Env, p *apitest.Project) {
	t.Helper()
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{
		"url": "https://127.0.0.1:9/hook", "events": []string{topicChanged, topicGenerated},
	}).Expect(t, 201)
}

// events counts the events of topic recorded for p.
func events(t testing.TB, p *apitest.Project, topic string) int {
	return query[int](t, p, `SELECT count(*) FROM webhook_events WHERE type = $1`, topic)
}

// lastEvent returns the data of the newest event of topic.
func lastEvent(t testing.TB, p *apitest.Project, topic string) string {
	t.Helper()
	var s string
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT payload::jsonb->>'data' FROM webhook_events WHERE type = $1 ORDER BY created_at DESC, id DESC LIMIT 1`, topic).Scan(&s)
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run sends the cases in order against p (state carries from one to the
// next) and checks each one's status, code, charge and events.
func run(t *testing.T, env *apitest.Env, p *apitest.Project, cases []apiCase) {
	t.Helper()
	topics := []string{topicChanged, topicGenerated}
	for _, c := range cases {
		ok := t.Run(c.name, func(t *testing.T) {
			before := spent(t, p)
			evBefore := map[string]int{}
			for _, tp := range topics {
				evBefore[tp] = events(t, p, tp)
			}
			req := apitest.Request{Method: c.method, Path: c.path, Key: c.key, Body: c.body, Header: c.header}
			if c.req != nil {
				req.Body = c.req.Body
				if req.Header == nil {
					req.Header = map[string]string{}
				}
				for k, v := range c.req.Header {
					req.Header[k] = v
				}
			}
			switch req.Key {
			case "":
				req.Key = p.Key
			case noKey:
				req.Key = ""
			}
			r := env.Send(req)
			if c.status >= 400 {
				code := c.code
				if code == "" {
					code = defaultCode[c.status]
				}
				m := r.Problem(t, c.status, code)
				if c.status == 402 && (m["cost"] == nil || m["balance"] == nil) {
					t.Fatalf("402 without cost and balance: %v", m)
				}
				if c.status == 401 && !strings.Contains(r.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("401 without WWW-Authenticate")
				}
			} else {
				r.Expect(t, c.status)
				if c.status == 204 && len(r.Body) != 0 {
					t.Fatalf("204 with a body: %s", r.Body)
				}
			}
			if got := spent(t, p) - before; got != c.credits*100 {
				t.Fatalf("charged %d hundredths, want %d credits", got, c.credits)
			}
			for _, tp := range topics {
				if got := events(t, p, tp) - evBefore[tp]; got != c.events[tp] {
					t.Fatalf("%d %s events, want %d", got, tp, c.events[tp])
				}
			}
			if c.golden != "" {
				golden(t, c.golden, r.Body)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
		if !ok {
			t.FailNow() // later cases depend on earlier ones
		}
	}
}

var defaultCode = map[int]string{
	400: "bad_request", 401: "unauthorized", 402: "insufficient_credits", 403: "forbidden",
	404: "not_found", 409: "conflict", 413: "bad_request", 422: "validation_failed",
}

// field asserts that a 422 names field in its errors map.
func field(name string) func(t *testing.T, r *apitest.Resp) {
	return func(t *testing.T, r *apitest.Resp) {
		t.Helper()
		errs, _ := r.JSON(t)["errors"].(map[string]any)
		if _, ok := errs[name]; !ok {
			t.Fatalf("errors must name %s: %s", name, r.Body)
		}
	}
}

// body asserts that the JSON body, printed with fmt, contains each of want.
func body(want ...string) func(t *testing.T, r *apitest.Resp) {
	return func(t *testing.T, r *apitest.Resp) {
		t.Helper()
		got := fmt.Sprint(r.JSON(t))
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("body lacks %q: %s", w, got)
			}
		}
	}
}

// firstPage asserts the first page of a list: n items, the first with field
// equal to first, and more to come (has_more and a next_cursor). It returns
// the body, whose cursor leads on.
func firstPage(t *testing.T, r *apitest.Resp, n int, field, first string) map[string]any {
	t.Helper()
	m := r.JSON(t)
	d, _ := m["data"].([]any)
	if len(d) != n || d[0].(map[string]any)[field] != first || m["has_more"] != true || m["next_cursor"] == nil {
		t.Fatalf("first page: %v", m)
	}
	return m
}

func ev(topic string, n int) map[string]int { return map[string]int{topic: n} }
