package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
)

// serve runs one request through Base and a router holding h at /x.
func serve(t *testing.T, h http.HandlerFunc, req *http.Request, maxBody int64) (*apitest.Resp, string) {
	t.Helper()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	r := httpapi.NewRouter()
	r.Use(httpapi.Base("https://e.test/errors", logger, maxBody))
	r.Handle("/x", h)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return &apitest.Resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}, logs.String()
}

func problem(t *testing.T, r *apitest.Resp, status int, code string) map[string]any {
	t.Helper()
	m, err := r.CheckProblem(status, code)
	if err != nil {
		t.Fatal(err)
	}
	if m["type"] != "https://e.test/errors/"+code {
		t.Fatalf("type %v", m["type"])
	}
	return m
}

func TestPanicRecovery(t *testing.T) {
	res, logs := serve(t, func(w http.ResponseWriter, r *http.Request) {
		panic("database password is hunter2")
	}, httptest.NewRequest("GET", "/x", nil), 1<<20)
	m := problem(t, res, 500, "internal_error")
	if strings.Contains(string(res.Body), "hunter2") || strings.Contains(string(res.Body), "panic") || m["detail"] != nil {
		t.Fatalf("500 leaks its cause: %s", res.Body)
	}
	rid := res.Header.Get("X-Request-Id")
	if !strings.HasPrefix(rid, "req_") || !strings.Contains(logs, "hunter2") || !strings.Contains(logs, rid) {
		t.Fatalf("the cause must be logged with the request id %q: %s", rid, logs)
	}

	// http.ErrAbortHandler keeps its meaning: the server aborts the response.
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	serve(t, func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }, httptest.NewRequest("GET", "/x", nil), 0)
	t.Fatal("ErrAbortHandler was swallowed")
}

func TestRequestID(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, httpapi.RequestID(r.Context()))
	}
	for _, c := range []struct {
		sent string
		kept bool
	}{
		{"", false},
		{"abc-123_X.y:z", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"has space", false},
		{"quote\"", false},
		{"ünicode", false},
	} {
		req := httptest.NewRequest("GET", "/x", nil)
		if c.sent != "" {
			req.Header.Set("X-Request-Id", c.sent)
		}
		res, _ := serve(t, ok, req, 0)
		got := res.Header.Get("X-Request-Id")
		if string(res.Body) != got {
			t.Fatalf("context id %q, header %q", res.Body, got)
		}
		if c.kept && got != c.sent || !c.kept && (got == c.sent || !strings.HasPrefix(got, "req_") || len(got) != 28) {
			t.Fatalf("sent %q, got %q (kept=%v)", c.sent, got, c.kept)
		}
	}
}

// TestDecode covers the strict decoder behind every JSON body.
func TestDecode(t *testing.T) {
	type body struct {
		Name  string          `json:"name" required:"true"`
		Tags  []string        `json:"tags"`
		Count *int            `json:"count"`
		Meta  map[string]any  `json:"meta"`
		Raw   json.RawMessage `json:"raw"`
	}
	cases := []struct {
		name, ct, body string
		status         int
		detail, field  string
	}{
		{name: "ok", ct: "application/json", body: `{"name":"a","tags":["x"],"count":2}`},
		{name: "charset and +json", ct: "application/merge-patch+json; charset=utf-8", body: `{"name":"a"}`},
		{name: "no content type", body: `{"name":"a"}`, status: 400, detail: "application/json"},
		{name: "wrong content type", ct: "text/plain", body: `{"name":"a"}`, status: 400, detail: "application/json"},
		{name: "bad media type", ct: "application/json; =", body: `{"name":"a"}`, status: 400},
		{name: "invalid", ct: "application/json", body: `{"name":"a"`, status: 400, detail: "not valid JSON"},
		{name: "empty", ct: "application/json", body: "  ", status: 400, detail: "empty"},
		{name: "null", ct: "application/json", body: "null", status: 400, detail: "object"},
		{name: "string", ct: "application/json", body: `"x"`, status: 400, detail: "object"},
		{name: "trailing", ct: "application/json", body: `{"name":"a"}x`, status: 400},
		{name: "unknown field", ct: "application/json", body: `{"name":"a","nmae":"b"}`, status: 400, detail: `"nmae"`},
		{name: "missing required", ct: "application/json", body: `{"tags":[]}`, status: 400, detail: `"name"`},
		{name: "null required", ct: "application/json", body: `{"name":null}`, status: 400, detail: `"name"`},
		{name: "wrong type", ct: "application/json", body: `{"name":"a","count":"two"}`, status: 422, field: "count"},
		{name: "wrong element type", ct: "application/json", body: `{"name":"a","tags":[1]}`, status: 422, field: "tags"},
		// Text PostgreSQL cannot store is refused wherever it is, naming
		// where: encoding/json would pass a NUL on, and invalid UTF-8
		// verbatim in raw JSON.
		{name: "nul", ct: "application/json", body: `{"name":"a\u0000b"}`, status: 400, detail: `"name" contains a NUL`},
		{name: "nul in array", ct: "application/json", body: `{"name":"a","tags":["x","\u0000"]}`, status: 400, detail: `"tags[1]" contains a NUL`},
		{name: "nul nested", ct: "application/json", body: `{"name":"a","meta":{"a":[{},{"b":"\u0000"}]}}`, status: 400, detail: `"meta.a[1].b" contains a NUL`},
		{name: "nul in key", ct: "application/json", body: `{"name":"a","meta":{"k\u0000":1}}`, status: 400, detail: `"meta.k\x00" contains a NUL`},
		{name: "invalid utf-8", ct: "application/json", body: "{\"name\":\"a\xffb\"}", status: 400, detail: `"name" is not valid UTF-8`},
		{name: "invalid utf-8 raw", ct: "application/json", body: "{\"name\":\"a\",\"raw\":{\"x\":[\"\xc0\xaf\"]}}", status: 400, detail: `"raw.x[0]" is not valid UTF-8`},
		{name: "invalid utf-8 key", ct: "application/json", body: "{\"name\":\"a\",\"meta\":{\"\xff\":1}}", status: 400, detail: "not valid UTF-8"},
		{name: "escaped backslash is no nul", ct: "application/json", body: `{"name":"a","meta":{"p":"C:\\u0000"}}`},
		{name: "over 1 MiB", ct: "application/json", body: `{"name":"` + strings.Repeat("a", httpapi.MaxJSONBody) + `"}`, status: 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got body
			h := httpapi.H(func(w http.ResponseWriter, r *http.Request) error {
				if err := httpapi.Decode(r, &got); err != nil {
					return err
				}
				return httpapi.NoContent(w)
			})
			req := httptest.NewRequest("POST", "/x", strings.NewReader(c.body))
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
			res, _ := serve(t, h, req, 11<<20)
			if c.status == 0 {
				if res.Status != 204 || got.Name != "a" {
					t.Fatalf("status %d, decoded %+v: %s", res.Status, got, res.Body)
				}
				return
			}
			code := "bad_request"
			if c.status == 422 {
				code = "validation_failed"
			}
			m := problem(t, res, c.status, code)
			if c.detail != "" && !strings.Contains(fmt.Sprint(m["detail"]), c.detail) {
				t.Fatalf("detail %q lacks %q", m["detail"], c.detail)
			}
			if c.field != "" {
				if errs, _ := m["errors"].(map[string]any); errs[c.field] == nil {
					t.Fatalf("errors %v lack %s", m["errors"], c.field)
				}
			}
		})
	}
}

// TestBodyLimit: the process-wide limit of Base also ends in a 413.
func TestBodyLimit(t *testing.T) {
	h := httpapi.H(func(w http.ResponseWriter, r *http.Request) error {
		var v map[string]any
		return httpapi.Decode(r, &v)
	})
	req := httptest.NewRequest("POST", "/x", strings.NewReader(`{"a":"`+strings.Repeat("a", 100)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	res, _ := serve(t, h, req, 64)
	problem(t, res, 413, "bad_request")
}

func TestAsError(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{httpapi.ErrNotFound, 404, "not_found"},
		{fmt.Errorf("wrapped: %w", httpapi.ErrNotFound), 404, "not_found"},
		{&pgconn.PgError{Code: "23505"}, 409, "conflict"},
		{&pgconn.PgError{Code: "40001"}, 503, "service_unavailable"},
		{&pgconn.PgError{Code: "22003"}, 422, "validation_failed"},
		{&pgconn.PgError{Code: "22021"}, 400, "bad_request"},                        // invalid byte sequence (a NUL in text)
		{fmt.Errorf("put: %w", &pgconn.PgError{Code: "22P05"}), 400, "bad_request"}, // \u0000 in jsonb
		{&pgconn.PgError{Code: "22P02"}, 422, "validation_failed"},
		{&pgconn.PgError{Code: "22008"}, 422, "validation_failed"},
		{&pgconn.PgError{Code: "22025"}, 422, "validation_failed"}, // a bad escape in a LIKE pattern
		{&pgconn.PgError{Code: "22012"}, 422, "validation_failed"}, // any data exception
		{fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23514"}), 422, "validation_failed"},
		{context.DeadlineExceeded, 503, "service_unavailable"},
		// The database cannot be reached or went away: retry, never 500.
		{fmt.Errorf("acquire: %w", &pgconn.ConnectError{}), 503, "service_unavailable"},
		{fmt.Errorf("query: %w", pgconn.ErrConnClosed), 503, "service_unavailable"},
		{fmt.Errorf("read: %w", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), 503, "service_unavailable"},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), 503, "service_unavailable"},
		{&pgconn.PgError{Code: "57P01"}, 503, "service_unavailable"}, // admin_shutdown
		{&pgconn.PgError{Code: "57P03"}, 503, "service_unavailable"}, // cannot_connect_now
		{&pgconn.PgError{Code: "08006"}, 503, "service_unavailable"}, // connection_failure
		{errors.New("disk on fire"), 500, "internal_error"},
		{httpapi.RateLimited(0, "slow down"), 429, "rate_limited"},
		{httpapi.Conflict("key_limit_reached", "x"), 409, "key_limit_reached"},
	}
	for _, c := range cases {
		res, _ := serve(t, httpapi.H(func(http.ResponseWriter, *http.Request) error { return c.err }), httptest.NewRequest("GET", "/x", nil), 0)
		problem(t, res, c.status, c.code)
		if c.status == 500 && strings.Contains(string(res.Body), "fire") {
			t.Fatalf("500 leaks: %s", res.Body)
		}
		if c.status == 503 || c.status == 429 {
			if res.Header.Get("Retry-After") == "" {
				t.Fatalf("%d without Retry-After", c.status)
			}
		}
	}
}

// TestFailures: domain failures carry no HTTP type; the one table maps each
// kind to its status and code, and a failure's detail, fields and extra
// members reach the answer even when wrapped with context.
func TestFailures(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
		detail string
	}{
		{httpapi.ErrNotFound, 404, "not_found", "the resource does not exist"},
		{fmt.Errorf("getPost(7): %w", httpapi.NotFound("no such post")), 404, "not_found", "no such post"},
		{httpapi.ErrConflict, 409, "conflict", "the request conflicts with the resource's state"},
		{httpapi.Conflict("slot_unavailable", "taken"), 409, "slot_unavailable", "taken"},
		{httpapi.Forbidden("blog:write"), 403, "forbidden", "this key lacks the scope blog:write"},
		{httpapi.Fail(httpapi.ErrNoCredits, "costs 5"), 402, "insufficient_credits", "costs 5"},
		{fmt.Errorf("charge: %w", httpapi.Fail(httpapi.ErrUpstream, "the processor is down")), 502, "upstream_unavailable", "the processor is down"},
		{httpapi.Fail(httpapi.ErrUnavailable, "not configured"), 503, "service_unavailable", "not configured"},
		{httpapi.Invalid("name", "is required"), 422, "validation_failed", "the request has invalid fields"},
	}
	for _, c := range cases {
		res, _ := serve(t, httpapi.H(func(http.ResponseWriter, *http.Request) error { return c.err }), httptest.NewRequest("GET", "/x", nil), 0)
		body := problem(t, res, c.status, c.code)
		if body["detail"] != c.detail {
			t.Errorf("%v: detail %q, want %q", c.err, body["detail"], c.detail)
		}
	}
	f := &httpapi.Failure{Kind: httpapi.ErrNoCredits, Detail: "x", Fields: map[string][]string{"a": {"b"}}, Extra: map[string]any{"cost": 3}}
	ae := httpapi.AsError(fmt.Errorf("ctx: %w", f))
	if ae.Status != 402 || ae.Errors["a"][0] != "b" || ae.Extra["cost"] != 3 {
		t.Fatalf("fields and extra lost: %+v", ae)
	}
	if !errors.Is(f, httpapi.ErrNoCredits) || f.Error() != "x: a b" {
		t.Fatalf("a failure is its kind and reads as its detail: %v", f)
	}
}

// FuzzDecodeBytes: any body either decodes or is refused with a 400 or a
// 422, never a panic or a 500.
func FuzzDecodeBytes(f *testing.F) {
	for _, s := range []string{`{"name":"a","tags":["x"],"count":1}`, `{"name":"\u0000"}`, "{\"name\":\"\xff\"}", `{"name":null}`, `[]`, `{"name":"a"} x`, `{"count":"1"}`, ``, `{"tags":[1,{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v struct {
			Name  string   `json:"name" required:"true"`
			Tags  []string `json:"tags"`
			Count *int     `json:"count"`
		}
		err := httpapi.DecodeBytes(b, &v)
		if err == nil {
			return
		}
		if ae := httpapi.AsError(err); ae.Status != 400 && ae.Status != 422 {
			t.Fatalf("%q: %v", b, err)
		}
	})
}

func TestCursorID(t *testing.T) {
	for c, want := range map[string]int64{"": 0, "1": 1, "9007199254740993": 9007199254740993} {
		if n, err := httpapi.CursorID(c); err != nil || n != want {
			t.Errorf("CursorID(%q) = %d, %v; want %d", c, n, err, want)
		}
	}
	for _, c := range []string{"0", "-4", "abc", "1.5", "99999999999999999999"} {
		_, err := httpapi.CursorID(c)
		if ae := httpapi.AsError(err); err == nil || ae.Status != 422 || ae.Errors["cursor"] == nil {
			t.Errorf("CursorID(%q): %v, want 422 on cursor", c, err)
		}
	}
}

// TestListOf: the page is read and its cursor decoded before the query
// runs; limit+1 rows tell whether more exist; bad input is 422.
func TestListOf(t *testing.T) {
	rows := []int64{9, 8, 7, 6, 5}
	query := func(before int64, limit int) ([]int64, error) {
		var out []int64
		for _, r := range rows {
			if (before == 0 || r < before) && len(out) < limit {
				out = append(out, r)
			}
		}
		return out, nil
	}
	list := func(q string) (httpapi.List[int64], error) {
		return httpapi.ListOf(httptest.NewRequest("GET", "/x?"+q, nil), httpapi.CursorID, query, httpapi.IDText)
	}
	l, err := list("limit=2")
	if err != nil || len(l.Data) != 2 || !l.HasMore || l.NextCursor == nil {
		t.Fatalf("first page: %+v, %v", l, err)
	}
	l, err = list("limit=2&cursor=" + *l.NextCursor)
	if err != nil || len(l.Data) != 2 || l.Data[0] != 7 {
		t.Fatalf("second page: %+v, %v", l, err)
	}
	l, err = list("limit=5")
	if err != nil || len(l.Data) != 5 || l.HasMore || l.NextCursor != nil {
		t.Fatalf("whole list: %+v, %v", l, err)
	}
	for _, q := range []string{"limit=0", "limit=101", "cursor=***", "cursor=" + "eA"} {
		if _, err := list(q); httpapi.AsError(err).Status != 422 {
			t.Errorf("%s: %v, want 422", q, err)
		}
	}
	// A cursor this API issued is base64 of UTF-8 text without NUL; a
	// list ordered by text (CursorText) would take anything else to its
	// query.
	text := func(cursor string) error {
		_, err := httpapi.ListOf(httptest.NewRequest("GET", "/x?cursor="+base64.RawURLEncoding.EncodeToString([]byte(cursor)), nil),
			httpapi.CursorText, func(string, int) ([]string, error) { return nil, nil }, func(s string) string { return s })
		return err
	}
	for _, c := range []string{"\x00", "prj_1\x00", "\xff\xfe", "a\xc0\xaf"} {
		if err := text(c); httpapi.AsError(err).Status != 422 || httpapi.AsError(err).Errors["cursor"] == nil {
			t.Errorf("cursor %q: %v, want 422 on cursor", c, err)
		}
	}
	if err := text("2026-01-01T00:00:00Z|prj_é"); err != nil {
		t.Fatalf("a text cursor: %v", err)
	}
}

// TestPathID: only the decimal digits of a positive integer name a row.
func TestPathID(t *testing.T) {
	missing := errors.New("missing")
	for in, want := range map[string]int64{"1": 1, "42": 42, "007": 7, "0": 0, "+5": 0, "-5": 0, " 5": 0, "5.0": 0, "x": 0, "": 0,
		"9223372036854775807": 9223372036854775807, "9223372036854775808": 0} {
		r := httptest.NewRequest("GET", "/", nil)
		rc := chi.NewRouteContext()
		rc.URLParams.Add("id", in)
		r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rc))
		got, err := httpapi.PathID(r, "id", missing)
		if got != want || (want == 0) != (err == missing) {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
}

// TestValidURL: a path that is not UTF-8 text without NUL names no
// resource (404); such a query parameter is a 400 naming it. Both are
// refused before the handler, which would pass the text to PostgreSQL.
func TestValidURL(t *testing.T) {
	reached := 0
	r := httpapi.NewRouter()
	r.Use(httpapi.Base("https://e.test/errors", slog.New(slog.DiscardHandler), 0))
	r.Use(httpapi.ValidURL)
	r.Get("/x/{id}", func(w http.ResponseWriter, r *http.Request) { reached++ })
	for _, c := range []struct {
		target string
		status int
		detail string
	}{
		{"/x/a%00b", 404, ""},
		{"/x/%FF", 404, ""},
		{"/x/%C0%AF", 404, ""},      // an overlong encoding of /
		{"/x/%ED%A0%80", 404, ""},   // a UTF-16 surrogate
		{"/x/a%2F%FF", 404, ""},     // an escaped slash: chi routes on the raw path
		{"/nowhere/%00", 404, ""},   // no route either
		{"/x/1?q=a%00", 400, `"q"`}, // a query value
		{"/x/1?q=ok&lang=%FF", 400, `"lang"`},
		{"/x/1?q=ok&q=%FF", 400, `"q"`}, // a repeated parameter
		{"/x/1?a%00=1", 400, `"a\x00"`}, // a parameter's name
		{"/x/1?%FF", 400, `"\xff"`},
	} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest("GET", c.target, nil))
		res := &apitest.Resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		code := "not_found"
		if c.status == 400 {
			code = "bad_request"
		}
		m := problem(t, res, c.status, code)
		if !strings.Contains(fmt.Sprint(m["detail"]), c.detail) {
			t.Errorf("%s: detail %q lacks %s", c.target, m["detail"], c.detail)
		}
	}
	for _, target := range []string{"/x/caf%C3%A9", "/x/1?q=%E2%82%AC&lang=pt-BR", "/x/1"} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != 200 {
			t.Errorf("%s: %d %s", target, rec.Code, rec.Body)
		}
	}
	if reached != 3 {
		t.Fatalf("the handler ran %d times, want 3 (only for text)", reached)
	}
}

// TestRefusalLogLevel: a deliberate 503 with Retry-After (overload) is a
// warning in the log, a real failure an error.
func TestRefusalLogLevel(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{httpapi.NewError(503, httpapi.CodeServiceUnavailable, "busy").WithHeader("Retry-After", "1"), "level=WARN"},
		{errors.New("disk on fire"), "level=ERROR"},
	} {
		_, logs := serve(t, func(w http.ResponseWriter, r *http.Request) { httpapi.WriteError(w, r, c.err) },
			httptest.NewRequest("GET", "/x", nil), 0)
		if !strings.Contains(logs, c.want) || strings.Count(logs, "level=") != 1 {
			t.Fatalf("%v: want one %s line, got %q", c.err, c.want, logs)
		}
	}
}
