package central_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/payments/stripetest"
	"github.com/plinth-dev/plinth/provisioning/archive"
)

// The bad-input sweep sends every operation of the served OpenAPI document
// a battery of malformed input: path values, query values, cursors and
// headers with NUL, invalid UTF-8, huge numbers and long text; bodies of
// the wrong type, with those values in every field, deeply nested, of the
// wrong content type; malformed multipart. None may answer 5xx, and every
// 4xx is problem+json with X-Request-Id. The battery is small per
// operation (a few thousand requests in all) so it runs in every `make
// test`.

// badValues are raw JSON fragments put in place of a field of a body, by
// the type the field has: the malformed values of its type and one of
// another type (which a field decoded as any, or kept as raw JSON, takes).
var badValues = map[string]map[string]string{
	"string": {"nul": `"a\u0000b"`, "invalid": "\"a\xffb\"", "long": `"` + strings.Repeat("a", 10000) + `"`, "1e400": `1e400`},
	"number": {"huge": `99999999999999999999`, "-huge": `-99999999999999999999`, "1e400": `1e400`, "nul": `"\u0000"`},
	"object": {"nul key": `{"k\u0000":"v"}`, "invalid key": "{\"\xff\":1}", "nul": `"\u0000"`},
	"array":  {"nul": `["\u0000"]`, "1e400": `[1e400]`},
	"other":  {"nul": `"\u0000"`, "huge": `99999999999999999999`},
}

// badParams are raw (already URL-encoded) path and query values.
var badParams = map[string]string{
	"nul":       "a%00",
	"invalid":   "%FF",
	"overlong":  "%C0%AF",
	"huge":      "99999999999999999999",
	"1e400":     "1e400",
	"long":      strings.Repeat("a", 10000),
	"backslash": "a%5C",
}

// badCursors are cursors this API never issued, encoded as it encodes its
// own, so they pass the base64 step and reach the list's decoder.
var badCursors = map[string]string{
	"nul":     "prj_\x00",
	"invalid": "\xff\xfe",
	"huge":    "99999999999999999999",
	"long":    strings.Repeat("a", 2000),
	"pipe":    "2026-01-01T00:00:00Z|\x00",
}

// badHeaders are values of the documented request headers.
var badHeaders = map[string]string{
	"invalid": "a\xffb",
	"long":    strings.Repeat("a", 10000),
}

// sweepRequest is one request of the sweep and what it tries.
type sweepRequest struct {
	op, what    string
	method, url string
	header      http.Header
	body        []byte
	// documented holds the operation's responses by status.
	documented map[string]any
	// want, when set, is the one status the request may get (a crafted
	// archive's refusal).
	want int
}

// sweepOp is one operation of the document.
type sweepOp struct {
	method, path string
	op           map[string]any
	params       []map[string]any
	keyless      bool // security: [] (login, callbacks, the public surface)
	dashboard    bool // a dashboard token, not an API key
	public       bool // the project named by X-Service-Project-Key
	admin        bool // an admin token (the import of archives)
}

func (o sweepOp) name() string { return o.method + " " + o.path }

type sweep struct {
	t         *testing.T
	env       *apitest.Env
	doc       map[string]any
	key       string
	token     string
	projectID string
	// seeds holds, by collection path template, the object a create
	// returned: the values of path parameters below it.
	seeds map[string]map[string]any
	// clients counts the keyless requests built (each its own address).
	clients int
	// adminToken is the admin token of the import route (exports:write
	// and projects:write) and the shard routes (shards:admin), and
	// crafted the archives the import is sent besides the battery
	// (craftedArchives).
	adminToken string
	crafted    []crafted
	tenantID   int64
}

// importPath is the admin route of archive imports, which the sweep
// sends with an admin token and crafted archives (issue 33); the other
// admin routes get the battery with an API key (401).
const importPath = "/admin/api/projects/import"

// shardsPath starts the shard routes of the admin API, which the sweep
// sends with the admin token too (shards:admin): their battery reaches
// the handlers, and a shard's URL is checked before it is dialled.
const shardsPath = "/admin/api/shards"

func TestBadInputSweep(t *testing.T) {
	t.Parallel()
	start := time.Now()
	// Payments are configured (against stripe-mock), so their routes
	// reach their handlers instead of answering 503 not configured.
	mock := stripetest.New(t)
	env := apitest.New(t, apitest.WithEnv("PLINTH_PUBLIC_RATE", "1000000/1000000",
		"STRIPE_SECRET_KEY", "sk_test_sweep", "STRIPE_WEBHOOK_SECRET", "whsec_sweep", "STRIPE_API_BASE", mock.URL))
	ctx := context.Background()
	c := env.Server.Central
	tn, _, err := c.CreateTenant(ctx, "Sweep", "sweep.test", "owner@sweep.test", "sweep-password")
	require.NoError(t, err)
	p := env.CreateProject(central.ProjectParams{TenantID: tn.ID, Name: "Sweep", Plan: "enterprise", TargetLanguages: []string{"fr"}})
	unlimited := 1 << 30
	require.NoError(t, c.SetRateOverride(ctx, p.ID, &unlimited, &unlimited, nil))
	token := loginToken(t, env, "owner@sweep.test", "sweep-password")

	var doc map[string]any
	env.Do("GET", "/v1/openapi.json", "", nil).Expect(t, 200).Decode(t, &doc)
	s := &sweep{t: t, env: env, doc: doc, key: p.Key, token: token, projectID: p.ID, seeds: map[string]map[string]any{},
		adminToken: adminToken(t, env, "exports:write", "projects:write", "shards:admin"), tenantID: tn.ID}
	ops := s.operations()
	s.seed(ops)
	victim := newVictim(t, env)
	source := newSource(t, env)
	s.crafted = append(craftedArchives(t, source, victim), crafted{name: "a text/html image row (kept, neutralised)", status: 201,
		archive: source.with(t, func(_ *archive.Manifest, files map[string][]byte) {
			editRows(t, files, "images", func(row map[string]any) { row["content_type"] = "text/html" })
		})})

	var reqs []sweepRequest
	for _, o := range ops {
		reqs = append(reqs, s.battery(o)...)
	}
	failures, counts := s.send(reqs, 8)
	t.Logf("bad-input sweep: %d requests over %d operations in %v (%d seeded collections); statuses %v",
		len(reqs), len(ops), time.Since(start).Round(time.Millisecond), len(s.seeds), counts)
	if len(failures) > 0 {
		sort.Strings(failures)
		t.Errorf("%d of %d requests failed:\n%s", len(failures), len(reqs), strings.Join(failures, "\n"))
	}
	victim.intact(t, env)
}

// TestBadInputExamples: the requests of the review that answered 500
// (text with NUL or invalid UTF-8 in a path, a query value, a cursor, a
// JSON string or a header the server stores) are refused as the client's
// mistake, naming the field or parameter, and change nothing.
func TestBadInputExamples(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	tn, _, err := env.Server.Central.CreateTenant(ctx, "Examples", "examples.test", "owner@examples.test", "examples-password")
	require.NoError(t, err)
	p := env.CreateProject(central.ProjectParams{TenantID: tn.ID, Name: "Examples", Plan: "build"})
	token := loginToken(t, env, "owner@examples.test", "examples-password")
	pub := map[string]string{"X-Service-Project-Key": p.ID}
	for _, c := range []struct {
		req    apitest.Request
		status int
		detail string
	}{
		{apitest.Request{Method: "GET", Path: "/v1/public/blog-posts/%FF", Header: pub}, 404, ""},
		{apitest.Request{Method: "GET", Path: "/v1/public/pages/a%00", Header: pub}, 404, ""},
		{apitest.Request{Method: "GET", Path: "/v1/public/products?q=%00", Header: pub}, 400, `"q"`},
		{apitest.Request{Method: "PUT", Path: "/v1/content/k", Key: p.Key, Body: `{"value":"a\u0000b"}`}, 400, `"value"`},
		{apitest.Request{Method: "PUT", Path: "/v1/content", Key: p.Key, Body: "{\"updates\":[{\"key\":\"k\",\"value\":\"\xff\"}]}"}, 400, `"updates[0].value"`},
		{apitest.Request{Method: "POST", Path: "/v1/pages", Key: p.Key, Body: `{"title":"T","sections":[{"k\u0000":1}]}`}, 400, `"sections[0].k\x00"`},
		{apitest.Request{Method: "POST", Path: "/central/api/projects", Key: token, Body: `{"name":"\u0000"}`}, 400, `"name"`},
		{apitest.Request{Method: "GET", Path: "/v1/jobs?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("\xff")), Key: p.Key}, 422, ""},
		{apitest.Request{Method: "POST", Path: "/v1/tags", Key: p.Key, Body: `{"name":"t"}`, Header: map[string]string{"Idempotency-Key": "a\xffb"}}, 400, "Idempotency-Key"},
	} {
		res := env.Send(c.req)
		code := map[int]string{400: "bad_request", 404: "not_found", 422: "validation_failed"}[c.status]
		m := res.Problem(t, c.status, code)
		require.Contains(t, fmt.Sprint(m["detail"]), c.detail, "%s %s", c.req.Method, c.req.Path)
	}
	// Nothing was stored.
	env.Do("GET", "/v1/content/k", p.Key, nil).Problem(t, 404, "not_found")
	require.Empty(t, env.Do("GET", "/v1/tags", p.Key, nil).Expect(t, 200).JSON(t)["data"])
	require.Empty(t, env.Do("GET", "/v1/pages", p.Key, nil).Expect(t, 200).JSON(t)["data"])
	var projects struct{ Data []any }
	env.Do("GET", "/central/api/projects", token, nil).Expect(t, 200).Decode(t, &projects)
	require.Len(t, projects.Data, 1)
}

// operations lists the document's operations in path order.
func (s *sweep) operations() []sweepOp {
	paths := s.doc["paths"].(map[string]any)
	var out []sweepOp
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		item := paths[path].(map[string]any)
		for _, method := range []string{"get", "post", "put", "patch", "delete", "options"} {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			o := sweepOp{method: strings.ToUpper(method), path: path, op: op, public: central.IsPublic(path),
				admin: path == importPath || strings.HasPrefix(path, shardsPath)}
			// No security: the document's default, an API key.
			if sec, ok := op["security"].([]any); ok {
				o.keyless = len(sec) == 0
				o.dashboard = len(sec) > 0 && sec[0].(map[string]any)["dashboardJWT"] != nil
			}
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				o.params = append(o.params, s.resolve(p.(map[string]any)))
			}
			out = append(out, o)
		}
	}
	return out
}

// resolve follows a local $ref.
func (s *sweep) resolve(m map[string]any) map[string]any {
	for {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = s.doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[part]
		}
		m = cur.(map[string]any)
	}
}

// seed runs each create operation (a POST documented with 201) with an
// example body built from its schema (the required fields, else every
// field), so the battery's path values name rows that exist and its
// bodies reach the stores. A create that refers to another row (an order
// to a product) runs in a second pass, after the row is seeded.
func (s *sweep) seed(ops []sweepOp) {
	for range 2 {
		for _, o := range ops {
			if o.method != "POST" || s.responses(o)["201"] == nil || o.path == "/central/api/login" || s.seeds[o.path] != nil {
				continue
			}
			schema := s.bodySchema(o, "application/json")
			if schema == nil {
				continue
			}
			for _, full := range []bool{false, true} {
				body, _ := json.Marshal(s.example(schema, "", full, 0))
				r := s.request(o, "seed", s.pathWith(o, nil), "", nil, body, "application/json")
				res, err := s.env.HTTP.Client().Do(r)
				require.NoError(s.t, err)
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				var m map[string]any
				if res.StatusCode == 201 && json.Unmarshal(b, &m) == nil {
					s.seeds[o.path] = m
					break
				}
			}
		}
	}
	for _, o := range ops {
		if o.method == "POST" && s.responses(o)["201"] != nil && s.seeds[o.path] == nil {
			s.t.Logf("not seeded: %s", o.name())
		}
	}
}

func (s *sweep) responses(o sweepOp) map[string]any {
	r, _ := o.op["responses"].(map[string]any)
	return r
}

// bodySchema is the resolved request body schema of content type ct.
func (s *sweep) bodySchema(o sweepOp, ct string) map[string]any {
	rb, ok := o.op["requestBody"].(map[string]any)
	if !ok {
		return nil
	}
	c, ok := s.resolve(rb)["content"].(map[string]any)[ct].(map[string]any)
	if !ok {
		return nil
	}
	return s.resolve(c["schema"].(map[string]any))
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// pathWith fills the path template: a value of bad for its parameter
// (raw, already encoded), else the seeded row's, else "1".
func (s *sweep) pathWith(o sweepOp, bad map[string]string) string {
	return pathParam.ReplaceAllStringFunc(o.path, func(m string) string {
		name := m[1 : len(m)-1]
		if v, ok := bad[name]; ok {
			return v
		}
		return url.PathEscape(s.goodParam(o.path, m, name))
	})
}

// goodParam is the value of a path parameter naming a seeded row: the
// row the create on the path before the parameter returned.
func (s *sweep) goodParam(path, placeholder, name string) string {
	if name == "project" || strings.HasPrefix(path, "/central/api/projects/") && name == "id" {
		return s.projectID
	}
	collection := strings.TrimSuffix(path[:strings.Index(path, placeholder)], "/")
	// A collection under another parameter (/products/{id}/variants) was
	// seeded under its template; the public surface reads the rows the
	// authenticated one created.
	collection = strings.Replace(collection, "/v1/public/", "/v1/", 1)
	m := s.seeds[collection]
	for _, k := range []string{name, strings.TrimSuffix(name, "_id"), "id", "slug", "key"} {
		if v, ok := m[k]; ok && v != nil {
			return fmt.Sprint(jsonScalar(v))
		}
	}
	return "1"
}

func jsonScalar(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

// request builds one request of o with its credentials.
func (s *sweep) request(o sweepOp, what, path, rawQuery string, header http.Header, body []byte, ct string) *http.Request {
	u := s.env.URL + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequest(o.method, u, rd)
	require.NoError(s.t, err, what)
	switch {
	case o.admin:
		r.Header.Set("Authorization", "Bearer "+s.adminToken)
	case o.dashboard:
		r.Header.Set("Authorization", "Bearer "+s.token)
	case o.public:
		if !strings.Contains(rawQuery, "project_id=") {
			r.Header.Set("X-Service-Project-Key", s.projectID)
		}
	case !o.keyless:
		r.Header.Set("Authorization", "Bearer "+s.key)
	default:
		// Keyless requests are charged to the client address's bucket (at
		// the free plan's rate); each comes from its own address, through
		// the loopback proxy the server trusts.
		s.clients++
		r.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.1", s.clients/256%256, s.clients%256))
	}
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	for k, vs := range header {
		r.Header[k] = vs
	}
	return r
}

// battery is the malformed requests of one operation.
func (s *sweep) battery(o sweepOp) []sweepRequest {
	var out []sweepRequest
	add := func(what, path, rawQuery string, header http.Header, body []byte, ct string) {
		r := s.request(o, what, path, rawQuery, header, body, ct)
		out = append(out, sweepRequest{op: o.name(), what: what, method: o.method, url: r.URL.String(), header: r.Header, body: body,
			documented: s.responses(o)})
	}
	// A delete of a seeded row would take it from the requests that
	// follow: deletes only get values that name no row.
	good := s.pathWith(o, nil)
	if o.method == "DELETE" {
		good = pathParam.ReplaceAllString(o.path, "999999")
	}
	var jsonBody []byte
	jsonSchema := s.bodySchema(o, "application/json")
	if jsonSchema != nil {
		jsonBody, _ = json.Marshal(s.example(jsonSchema, "", false, 0))
	}
	ct := ""
	if jsonBody != nil {
		ct = "application/json"
	}

	for _, p := range o.params {
		name, in := p["name"].(string), p["in"].(string)
		for _, label := range slices.Sorted(maps.Keys(badParams)) {
			v := badParams[label]
			switch in {
			case "path":
				add("path "+name+" "+label, s.pathWith(o, map[string]string{name: v}), "", nil, jsonBody, ct)
			case "query":
				add("query "+name+" "+label, good, url.QueryEscape(name)+"="+v, nil, jsonBody, ct)
			}
		}
		switch {
		case in == "query" && name == "cursor":
			for _, label := range slices.Sorted(maps.Keys(badCursors)) {
				add("cursor "+label, good, "cursor="+base64.RawURLEncoding.EncodeToString([]byte(badCursors[label])), nil, jsonBody, ct)
			}
		case in == "header":
			for _, label := range slices.Sorted(maps.Keys(badHeaders)) {
				add("header "+name+" "+label, good, "", http.Header{http.CanonicalHeaderKey(name): {badHeaders[label]}}, jsonBody, ct)
			}
		}
	}
	// A query parameter's name can be malformed too.
	add("query name nul", good, "a%00=1", nil, jsonBody, ct)
	add("query name invalid", good, "%FF=1", nil, jsonBody, ct)

	if jsonSchema != nil {
		s.bodies(good, jsonSchema, add)
	}
	if s.bodySchema(o, "multipart/form-data") != nil {
		s.multipart(good, add)
	}
	if o.path == importPath {
		for _, c := range s.crafted {
			body, ct := importForm(c.archive, "tenant_id", strconv.FormatInt(s.tenantID, 10))
			add("archive: "+c.name, good, "", nil, body, ct)
			out[len(out)-1].want = c.status
		}
	}
	return out
}

// bodies adds the malformed JSON bodies of o: whole bodies of the wrong
// shape, and each field of the example replaced by each bad value.
func (s *sweep) bodies(path string, schema map[string]any, add func(what, path, rawQuery string, header http.Header, body []byte, ct string)) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for what, b := range map[string]string{
		"body truncated": `{"a":`, "body array": `[]`, "body string": `"x"`, "body null": `null`, "body 1e400": `1e400`,
		"body empty object": `{}`, "body deep": deep, "body nul key": `{"\u0000":1}`, "body invalid key": "{\"\xff\":1}",
		"body invalid": "\xff\xfe", "body bom": "\xef\xbb\xbf{}",
	} {
		add(what, path, "", nil, []byte(b), "application/json")
	}
	example, _ := json.Marshal(s.example(schema, "", false, 0))
	add("body as text/plain", path, "", nil, example, "text/plain")
	add("body without content type", path, "", nil, example, "")
	add("body as form", path, "", nil, []byte("a=b"), "application/x-www-form-urlencoded")
	add("body as multipart", path, "", nil, []byte("--x\r\n\r\n--x--\r\n"), "multipart/form-data; boundary=x")

	// Each field, on a body that holds the required fields and that one.
	members := []map[string]any{schema}
	if one, ok := schema["oneOf"].([]any); ok {
		members = nil
		for _, m := range one {
			members = append(members, s.resolve(m.(map[string]any)))
		}
	}
	for mi, member := range members {
		props, _ := member["properties"].(map[string]any)
		base, _ := s.example(member, "", false, 0).(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			body := cloneJSON(base)
			body[name] = s.example(s.resolve(props[name].(map[string]any)), name, true, 1)
			for _, leaf := range leaves(body[name], []any{name}) {
				values := badValues[leafType(leaf.value)]
				for _, label := range slices.Sorted(maps.Keys(values)) {
					b := withRaw(body, leaf.at, values[label])
					add(fmt.Sprintf("body#%d %s %s", mi, pathText(leaf.at), label), path, "", nil, b, "application/json")
				}
			}
			add(fmt.Sprintf("body#%d %s deep", mi, name), path, "", nil, withRaw(body, []any{name}, deep), "application/json")
		}
	}
}

// multipart adds malformed uploads.
func (s *sweep) multipart(path string, add func(what, path, rawQuery string, header http.Header, body []byte, ct string)) {
	part := func(headers, content string) string {
		return "--b\r\n" + headers + "\r\n\r\n" + content + "\r\n"
	}
	// A real image, so the fields beside it reach the store.
	var img bytes.Buffer
	_ = png.Encode(&img, image.NewGray(image.Rect(0, 0, 1, 1)))
	pic := img.String()
	for what, c := range map[string]struct{ body, ct string }{
		"multipart no boundary":      {"x", "multipart/form-data"},
		"multipart garbage":          {"garbage", "multipart/form-data; boundary=b"},
		"multipart truncated":        {"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\r\nxx", "multipart/form-data; boundary=b"},
		"multipart empty":            {"--b--\r\n", "multipart/form-data; boundary=b"},
		"multipart nul filename":     {part(`Content-Disposition: form-data; name="file"; filename="a`+"\x00"+`.png"`, pic) + "--b--\r\n", "multipart/form-data; boundary=b"},
		"multipart invalid filename": {part("Content-Disposition: form-data; name=\"file\"; filename=\"\xff\xfe.png\"", pic) + "--b--\r\n", "multipart/form-data; boundary=b"},
		"multipart invalid field":    {part(`Content-Disposition: form-data; name="file"; filename="a.png"`, pic) + part(`Content-Disposition: form-data; name="alt"`, "\xff\x00") + part(`Content-Disposition: form-data; name="key"`, "a\x00") + "--b--\r\n", "multipart/form-data; boundary=b"},
		"multipart invalid name":     {part("Content-Disposition: form-data; name=\"\xff\"", "x") + "--b--\r\n", "multipart/form-data; boundary=b"},
		"multipart nul field":        {part(`Content-Disposition: form-data; name="file"; filename="a.png"`, pic) + part(`Content-Disposition: form-data; name="alt"`, "a\x00") + "--b--\r\n", "multipart/form-data; boundary=b"},
		"multipart long field":       {part(`Content-Disposition: form-data; name="file"; filename="a.png"`, pic) + part(`Content-Disposition: form-data; name="alt"`, strings.Repeat("a", 10000)) + "--b--\r\n", "multipart/form-data; boundary=b"},
		"multipart bad disposition":  {part(`Content-Disposition: form-data; name=`, "x") + "--b--\r\n", "multipart/form-data; boundary=b"},
	} {
		add(what, path, "", nil, []byte(c.body), c.ct)
	}
}

// send runs reqs on workers goroutines and returns what failed and the
// count of each status.
func (s *sweep) send(reqs []sweepRequest, workers int) ([]string, map[int]int) {
	var (
		mu       sync.Mutex
		failures []string
		counts   = map[int]int{}
		wg       sync.WaitGroup
		next     = make(chan sweepRequest)
	)
	client := s.env.HTTP.Client()
	for range workers {
		wg.Go(func() {
			for sr := range next {
				msg, status := s.one(client, sr)
				mu.Lock()
				counts[status]++
				if msg != "" {
					failures = append(failures, fmt.Sprintf("%s [%s]: %s", sr.op, sr.what, msg))
				}
				mu.Unlock()
			}
		})
	}
	for _, r := range reqs {
		next <- r
	}
	close(next)
	wg.Wait()
	return failures, counts
}

// one sends sr and says what is wrong with the answer ("" when all is well).
func (s *sweep) one(client *http.Client, sr sweepRequest) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if sr.body != nil {
		rd = bytes.NewReader(sr.body)
	}
	r, err := http.NewRequestWithContext(ctx, sr.method, sr.url, rd)
	if err != nil {
		return err.Error(), 0
	}
	r.Header = sr.header
	res, err := client.Do(r)
	if err != nil {
		return err.Error(), 0
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	switch {
	case sr.want != 0 && res.StatusCode != sr.want:
		return fmt.Sprintf("%d, want %d: %.200s", res.StatusCode, sr.want, b), res.StatusCode
	case sr.documented[strconv.Itoa(res.StatusCode)] == nil:
		return fmt.Sprintf("%d is not a status the document lists: %.200s", res.StatusCode, b), res.StatusCode
	case res.StatusCode >= 500:
		return fmt.Sprintf("%d %.200s", res.StatusCode, b), res.StatusCode
	case res.StatusCode >= 400:
		var p struct {
			Code     string `json:"code"`
			Instance string `json:"instance"`
		}
		rid := res.Header.Get("X-Request-Id")
		if res.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(b, &p) != nil || p.Code == "" || rid == "" || p.Instance != rid {
			return fmt.Sprintf("%d is not problem+json with X-Request-Id: %v %.200s", res.StatusCode, res.Header, b), res.StatusCode
		}
	}
	return "", res.StatusCode
}

// example builds a value of schema: the required members of objects (all
// of them when full), the first of an enum or a union, values that pass
// the usual patterns by field name.
func (s *sweep) example(schema map[string]any, name string, full bool, depth int) any {
	schema = s.resolve(schema)
	if depth > 6 {
		return nil
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := schema[k].([]any); ok {
			return s.example(alts[0].(map[string]any), name, full, depth)
		}
	}
	if v, ok := schema["const"]; ok {
		return v
	}
	if enum, ok := schema["enum"].([]any); ok {
		if len(enum) == 0 {
			return "absent" // openapi.Absent: no value is right; a body that holds one must be refused
		}
		if name == "plan" {
			return "enterprise" // the project keeps its plan (and its limits)
		}
		return enum[0]
	}
	typ := schema["type"]
	if ts, ok := typ.([]any); ok {
		typ = ts[0]
		if typ == "null" && len(ts) > 1 {
			typ = ts[1]
		}
	}
	if ref := s.reference(name); ref != nil && (typ == "integer" || typ == "string") {
		return ref
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		required, _ := schema["required"].([]any)
		for k, p := range props {
			if enum, ok := s.resolve(p.(map[string]any))["enum"].([]any); ok && len(enum) == 0 {
				continue // a member the object must not have (openapi.Absent)
			}
			if full || slices.Contains(required, any(k)) {
				out[k] = s.example(p.(map[string]any), k, full, depth+1)
			}
		}
		if props == nil {
			// A map: its keys are often languages (translations).
			out["fr"] = "v"
			if ap, ok := schema["additionalProperties"].(map[string]any); ok {
				out["fr"] = s.example(ap, name, full, depth+1)
			}
		}
		return out
	case "array":
		items, _ := schema["items"].(map[string]any)
		if items == nil {
			return []any{}
		}
		return []any{s.example(items, strings.TrimSuffix(name, "s"), full, depth+1)}
	case "integer":
		if m, ok := schema["minimum"].(float64); ok {
			return int64(m) + 1
		}
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "null":
		return nil
	}
	return exampleString(schema, name)
}

// reference is the id of a seeded row that a field named like
// product_id or service_id refers to, or nil.
func (s *sweep) reference(name string) any {
	base, ok := strings.CutSuffix(name, "_id")
	if !ok {
		return nil
	}
	plural := base + "s"
	if b, ok := strings.CutSuffix(base, "y"); ok {
		plural = b + "ies"
	}
	for path, m := range s.seeds {
		if path[strings.LastIndex(path, "/")+1:] == plural {
			return jsonScalar(m["id"])
		}
	}
	return nil
}

// exampleString is a string a field of this name and format accepts.
func exampleString(schema map[string]any, name string) string {
	switch schema["format"] {
	case "date-time":
		return "2031-01-06T10:00:00Z"
	case "date":
		return "2031-01-06"
	case "email":
		return "sweep@example.com"
	case "uri":
		return "https://example.com/sweep"
	}
	switch {
	case strings.Contains(name, "email"):
		return "sweep@example.com"
	case strings.Contains(name, "url") || strings.Contains(name, "image") || name == "logo" || name == "media":
		return "https://example.com/sweep.png"
	case name == "lang" || strings.Contains(name, "language"):
		return "fr"
	case name == "currency":
		return "usd"
	case name == "timezone":
		return "UTC"
	case name == "path":
		return "/sweep"
	case name == "scope" || name == "scopes":
		return "content:read"
	case name == "event" || name == "events":
		return "order.created"
	case name == "phone":
		return "+15555550100"
	case name == "date":
		return "2031-01-06"
	case name == "start" || name == "end" || strings.HasSuffix(name, "_time"):
		return "10:00"
	}
	return "sweep"
}

// leaf is a value inside a body and where it is.
type leaf struct {
	at    []any
	value any
}

// leaves lists every value inside v (v itself included).
func leaves(v any, at []any) []leaf {
	out := []leaf{{at, v}}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, leaves(x[k], append(slices.Clip(at), k))...)
		}
	case []any:
		if len(x) > 0 {
			out = append(out, leaves(x[0], append(slices.Clip(at), 0))...)
		}
	}
	return out
}

// leafType is the key of badValues for a value of the example.
func leafType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int, int64, float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "other"
}

func pathText(p []any) string {
	var b strings.Builder
	for i, k := range p {
		switch k := k.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(fmt.Sprint(k))
		}
	}
	return b.String()
}

// marker stands for the raw fragment while the body is marshalled.
const marker = "\x01sweep\x01"

// withRaw is body with the value at path replaced by the raw JSON fragment
// raw (which need not be valid JSON, or valid UTF-8).
func withRaw(body map[string]any, path []any, raw string) []byte {
	b := cloneJSON(body)
	var cur any = b
	for i, k := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[k.(string)] = marker
			}
			cur = c[k.(string)]
		case []any:
			if last {
				c[k.(int)] = marker
			}
			cur = c[k.(int)]
		}
	}
	out, _ := json.Marshal(b)
	m, _ := json.Marshal(marker)
	return bytes.Replace(out, m, []byte(raw), 1)
}

// cloneJSON copies a decoded JSON value deeply.
func cloneJSON[T any](v T) T {
	b, _ := json.Marshal(v)
	var out T
	_ = json.Unmarshal(b, &out)
	return out
}
