package forms_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

const (
	newsletterPath = "/v1/public/forms/newsletter"
	contactPath    = "/v1/public/forms/contact"
)

// submit posts a public form naming the project by the header.
func submit(env *apitest.Env, p *apitest.Project, path string, body any) *apitest.Resp {
	env.T.Helper()
	return env.Send(apitest.Request{Method: "POST", Path: path, Body: body, Header: map[string]string{"X-Service-Project-Key": p.ID}})
}

// count counts the project's form_submissions rows matching where.
func count(t *testing.T, p *apitest.Project, where string, args ...any) int {
	t.Helper()
	var n int
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT count(*) FROM form_submissions WHERE "+where, args...).Scan(&n)
	})
	require.NoError(t, err)
	return n
}

// subscriber is the admin view of the genuine newsletter subscriber email.
func subscriber(t *testing.T, env *apitest.Env, p *apitest.Project, email string) map[string]any {
	t.Helper()
	l := env.Do("GET", "/v1/form-submissions?type=newsletter&limit=100", p.Key, nil).Expect(t, 200).JSON(t)
	for _, d := range l["data"].([]any) {
		if m := d.(map[string]any); m["email"] == email && m["spam"] == false {
			return m
		}
	}
	t.Fatalf("no subscriber %s", email)
	return nil
}

// checkAck asserts the public answer to a subscription: what was sent,
// and nothing read from the stored row.
func checkAck(t *testing.T, m map[string]any) {
	t.Helper()
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"type", "email", "name", "source"}, keys, "a subscription's answer: %v", m)
	require.Equal(t, "newsletter", m["type"])
}

func checkShape(t *testing.T, m map[string]any) {
	t.Helper()
	for _, f := range []string{"id", "type", "email", "name", "subject", "message", "fields", "source", "spam", "created_at"} {
		if _, ok := m[f]; !ok {
			t.Fatalf("submission lacks %s: %v", f, m)
		}
	}
	id, ok := m["id"].(float64)
	require.True(t, ok && id > 0 && id == float64(int64(id)), "id must be a positive integer: %v", m["id"])
	_, ok = m["fields"].(map[string]any)
	require.True(t, ok, "fields must be an object: %v", m["fields"])
	ts, _ := m["created_at"].(string)
	_, err := time.Parse(time.RFC3339, ts)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(ts, "Z"), "created_at must be UTC with Z: %s", ts)
}

func TestPublicSubmitNamesTheProjectBothWays(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	other := env.NewProject("")

	// by header, no key
	n := submit(env, p, newsletterPath, map[string]any{"email": "ann@example.com", "name": "Ann", "source": "footer"}).Expect(t, 201).JSON(t)
	checkAck(t, n)
	require.Equal(t, "ann@example.com", n["email"])
	require.Equal(t, "Ann", n["name"])
	require.Equal(t, "footer", n["source"])

	// by query parameter, no key
	c := env.Do("POST", contactPath+"?project_id="+url.QueryEscape(p.ID), "", map[string]any{
		"name": "Bob", "email": "bob@example.org", "message": "Hello\nthere", "subject": "Quote",
		"fields": map[string]any{"phone": "+1 555 0100", "budget": 1200, "urgent": true, "services": []string{"a", "b"}, "note": nil},
	}).Expect(t, 201).JSON(t)
	checkShape(t, c)
	require.Equal(t, "contact", c["type"])
	require.Equal(t, "Bob", c["name"])
	require.Equal(t, "Hello\nthere", c["message"])
	require.Equal(t, "Quote", c["subject"])
	require.Nil(t, c["source"])
	require.Equal(t, map[string]any{"phone": "+1 555 0100", "budget": float64(1200), "urgent": true, "services": []any{"a", "b"}, "note": nil}, c["fields"])

	// both landed in p's schema, none in the other project's
	require.Equal(t, 1, count(t, p, "type = 'newsletter' AND email = 'ann@example.com' AND name = 'Ann' AND source = 'footer' AND NOT spam"))
	require.Equal(t, 1, count(t, p, "type = 'contact' AND email = 'bob@example.org' AND subject = 'Quote' AND fields->>'phone' = '+1 555 0100'"))
	require.Equal(t, 0, count(t, other, "true"))

	// and the admin list shows them, newest first, the same as created
	l := env.Do("GET", "/v1/form-submissions", p.Key, nil).Expect(t, 200).JSON(t)
	data := l["data"].([]any)
	require.Len(t, data, 2)
	require.Equal(t, c, data[0])
	sub := data[1].(map[string]any)
	checkShape(t, sub)
	for k, v := range n {
		require.Equal(t, v, sub[k], k)
	}
	require.Equal(t, false, sub["spam"])
	require.Nil(t, sub["subject"])
	require.Nil(t, sub["message"])
	require.Equal(t, false, l["has_more"])
	require.Nil(t, l["next_cursor"])

	// the header wins over the query parameter, as central.PublicProject reads them
	submit(env, p, newsletterPath+"?project_id="+other.ID, map[string]any{"email": "h@example.com"}).Expect(t, 201)
	require.Equal(t, 1, count(t, p, "email = 'h@example.com'"))
	require.Equal(t, 0, count(t, other, "true"))
}

func TestPublicSubmitUnknownProject(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	body := map[string]any{"email": "x@example.com"}
	for name, r := range map[string]apitest.Request{
		"unknown id in header": {Method: "POST", Path: newsletterPath, Body: body, Header: map[string]string{"X-Service-Project-Key": "prj_" + strings.Repeat("a", 24)}},
		"unknown id in query":  {Method: "POST", Path: contactPath + "?project_id=prj_" + strings.Repeat("b", 24), Body: map[string]any{"name": "n", "email": "x@example.com", "message": "m"}},
		"malformed id":         {Method: "POST", Path: newsletterPath + "?project_id=nope", Body: body},
		"a key is not an id":   {Method: "POST", Path: newsletterPath, Body: body, Header: map[string]string{"X-Service-Project-Key": p.Key}},
	} {
		t.Run(name, func(t *testing.T) {
			env.Send(r).Problem(t, 404, "not_found")
		})
	}
	// naming no project at all is a malformed request
	env.Do("POST", newsletterPath, "", body).Problem(t, 400, "bad_request")
	require.Equal(t, 0, count(t, p, "true"))
}

func TestPublicSubmitValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	contactOK := func(kv ...any) map[string]any {
		m := map[string]any{"name": "Ann", "email": "ann@example.com", "message": "Hi"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	manyFields := map[string]any{}
	for i := 0; i < 51; i++ {
		manyFields[fmt.Sprint("f", i)] = "v"
	}
	long := func(n int) string { return strings.Repeat("é", n) } // characters, not bytes

	for _, tc := range []struct {
		name   string
		path   string
		body   any
		status int
		field  string // for 422: the field named in errors
	}{
		{"newsletter missing email", newsletterPath, map[string]any{"name": "Ann"}, 400, ""},
		{"newsletter null email", newsletterPath, map[string]any{"email": nil}, 400, ""},
		{"contact missing email", contactPath, contactOK("email", nil), 400, ""},
		{"contact missing name", contactPath, contactOK("name", nil), 400, ""},
		{"contact missing message", contactPath, contactOK("message", nil), 400, ""},
		{"unknown field", newsletterPath, map[string]any{"email": "a@example.com", "colour": "red"}, 400, ""},
		{"invalid JSON", newsletterPath, "{nope", 400, ""},
		{"email not a string", newsletterPath, map[string]any{"email": 5}, 422, "email"},
		{"empty email", newsletterPath, map[string]any{"email": "  "}, 422, "email"},
		{"email too long", newsletterPath, map[string]any{"email": strings.Repeat("a", 60) + "@" + strings.Repeat("b", 190) + ".com"}, 422, "email"},
		{"name too long", newsletterPath, map[string]any{"email": "a@example.com", "name": long(201)}, 422, "name"},
		{"source too long", newsletterPath, map[string]any{"email": "a@example.com", "source": long(201)}, 422, "source"},
		{"contact empty name", contactPath, contactOK("name", " "), 422, "name"},
		{"contact empty message", contactPath, contactOK("message", ""), 422, "message"},
		{"message too long", contactPath, contactOK("message", long(10001)), 422, "message"},
		{"subject too long", contactPath, contactOK("subject", long(201)), 422, "subject"},
		{"NUL in message", contactPath, contactOK("message", "a\x00b"), 400, "message"}, // refused as the body is decoded
		{"fields not an object", contactPath, contactOK("fields", []string{"a"}), 422, "fields"},
		{"too many fields", contactPath, contactOK("fields", manyFields), 422, "fields"},
		{"nested field", contactPath, contactOK("fields", map[string]any{"x": map[string]any{"y": 1}}), 422, "fields.x"},
		{"nested array field", contactPath, contactOK("fields", map[string]any{"x": []any{[]any{1}}}), 422, "fields.x"},
		{"field value too long", contactPath, contactOK("fields", map[string]any{"x": long(2001)}), 422, "fields.x"},
		{"NUL in field value", contactPath, contactOK("fields", map[string]any{"x": "\x00"}), 400, "fields.x"},
		{"field key too long", contactPath, contactOK("fields", map[string]any{long(101): "v"}), 422, "fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := submit(env, p, tc.path, tc.body)
			if tc.status == 400 {
				m := r.Problem(t, 400, "bad_request")
				require.Contains(t, m["detail"], tc.field)
				return
			}
			m := r.Problem(t, 422, "validation_failed")
			errs, _ := m["errors"].(map[string]any)
			require.Contains(t, errs, tc.field, "errors must name %s: %s", tc.field, r.Body)
		})
	}
	// the limits themselves are accepted
	submit(env, p, contactPath, contactOK("name", long(200), "subject", long(200), "message", long(10000), "source", long(200))).Expect(t, 201)
	fifty := map[string]any{}
	for i := 0; i < 50; i++ {
		fifty[fmt.Sprint("f", i)] = long(2000)
	}
	submit(env, p, contactPath, contactOK("fields", fifty)).Expect(t, 201)
	require.Equal(t, 2, count(t, p, "true"), "only the valid submissions are stored")
}

func TestPublicSubmitBadEmails(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	bad := []string{
		"plainaddress", "@example.com", "ann@", "ann@example", "ann@@example.com", "ann example@example.com",
		"Ann <ann@example.com>", "ann@example.com (Ann)", "ann@-example.com", "ann@example-.com", "ann@example..com",
		"ann@.example.com", "ann@example.com.", "ann@[127.0.0.1]", "ann@127.0.0.1", "ann.@example.com", ".ann@example.com",
		"an..n@example.com", "ann@exa_mple.com", strings.Repeat("a", 65) + "@example.com", "ann@" + strings.Repeat("b", 64) + ".com",
		"ann\r\n@example.com", "ann@exa\nmple.com",
	}
	for _, e := range bad {
		for path, body := range map[string]map[string]any{
			newsletterPath: {"email": e},
			contactPath:    {"email": e, "name": "Ann", "message": "Hi"},
		} {
			r := submit(env, p, path, body)
			m := r.Problem(t, 422, "validation_failed")
			errs, _ := m["errors"].(map[string]any)
			require.Contains(t, errs, "email", "%q on %s: %s", e, path, r.Body)
		}
	}
	require.Equal(t, 0, count(t, p, "true"))

	good := []string{"ann@example.com", "Ann.Lee+news@mail.example.co.uk", "o'hara@example.ie", "zoë@exämple.de", "x@a-b.io", "  padded@example.com  "}
	for _, e := range good {
		r := submit(env, p, newsletterPath, map[string]any{"email": e}).Expect(t, 201).JSON(t)
		require.Equal(t, strings.TrimSpace(e), r["email"])
	}
	require.Equal(t, len(good), count(t, p, "type = 'newsletter'"))
}

func TestHoneypot(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")

	// a filled honeypot still answers 201, stored as spam
	c := submit(env, p, contactPath, map[string]any{"name": "Bot", "email": "bot@example.com", "message": "Buy", "website": "http://spam.example"}).Expect(t, 201).JSON(t)
	require.Equal(t, true, c["spam"])
	require.Equal(t, 1, count(t, p, "id = $1 AND type = 'contact' AND spam", int64(c["id"].(float64))))

	// an empty honeypot is a person
	h := submit(env, p, contactPath, map[string]any{"name": "Ann", "email": "ann@example.com", "message": "Hi", "website": ""}).Expect(t, 201).JSON(t)
	require.Equal(t, false, h["spam"])

	// a genuine subscriber, then a bot posting the same address: the bot's
	// row is kept apart and the subscriber stays untouched; the bot's
	// answer looks like anyone's
	g := submit(env, p, newsletterPath, map[string]any{"email": "ann@example.com", "name": "Ann"}).Expect(t, 201).JSON(t)
	s := submit(env, p, newsletterPath, map[string]any{"email": "ANN@example.com", "name": "Bot", "source": "x", "website": "y"}).Expect(t, 201).JSON(t)
	checkAck(t, g)
	checkAck(t, s)
	require.Equal(t, 1, count(t, p, "type = 'newsletter' AND NOT spam AND name = 'Ann' AND source IS NULL"))
	require.Equal(t, 1, count(t, p, "type = 'newsletter' AND spam AND name = 'Bot'"))

	// the admin list shows spam flagged
	l := env.Do("GET", "/v1/form-submissions?type=newsletter", p.Key, nil).Expect(t, 200).JSON(t)
	data := l["data"].([]any)
	require.Len(t, data, 2)
	require.Equal(t, true, data[0].(map[string]any)["spam"])
	require.Equal(t, false, data[1].(map[string]any)["spam"])
}

func TestNewsletterSubscribingTwiceKeepsOneRow(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")

	submit(env, p, newsletterPath, map[string]any{"email": "Ann@Example.com", "name": "Ann"}).Expect(t, 201)
	again := submit(env, p, newsletterPath, map[string]any{"email": "ann@example.com", "source": "popup"}).Expect(t, 201).JSON(t)
	// the response echoes this request only, never a name stored before
	checkAck(t, again)
	require.Equal(t, "ann@example.com", again["email"])
	require.Nil(t, again["name"])
	require.Equal(t, "popup", again["source"])
	first := subscriber(t, env, p, "Ann@Example.com")

	require.Equal(t, 1, count(t, p, "type = 'newsletter'"))
	// the stored row keeps its name and fills in the new source
	require.Equal(t, 1, count(t, p, "type = 'newsletter' AND email = 'Ann@Example.com' AND name = 'Ann' AND source = 'popup'"))

	// concurrent subscriptions of one address still make one row
	done := make(chan int, 8)
	for i := 0; i < 8; i++ {
		go func() {
			r, err := env.TrySend(apitest.Request{Method: "POST", Path: newsletterPath, Body: map[string]any{"email": "race@example.com"}, Header: map[string]string{"X-Service-Project-Key": p.ID}})
			if err != nil {
				t.Error(err)
				done <- 0
				return
			}
			done <- r.Status
		}()
	}
	for i := 0; i < 8; i++ {
		require.Equal(t, 201, <-done)
	}
	require.Equal(t, 1, count(t, p, "lower(email) = 'race@example.com'"))

	// a contact message from the same address is its own row, every time
	for i := 0; i < 2; i++ {
		submit(env, p, contactPath, map[string]any{"name": "Ann", "email": "ann@example.com", "message": "Hi"}).Expect(t, 201)
	}
	require.Equal(t, 2, count(t, p, "type = 'contact'"))

	// after a delete, subscribing again makes a new row
	env.Do("DELETE", fmt.Sprintf("/v1/form-submissions/%v", first["id"]), p.Key, nil).Expect(t, 204)
	submit(env, p, newsletterPath, map[string]any{"email": "ann@example.com"}).Expect(t, 201)
	require.NotEqual(t, first["id"], subscriber(t, env, p, "ann@example.com")["id"])
	require.Equal(t, 1, count(t, p, "type = 'newsletter' AND lower(email) = 'ann@example.com'"))
}

// TestNewsletterAnswerTellsNoMembership: an anonymous caller subscribing
// an address learns nothing of whether it was subscribed before. The same
// request answers byte for byte the same in a project where the address
// has long been a subscriber as in a project that never saw it; the
// merge still happens behind it.
func TestNewsletterAnswerTellsNoMembership(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	member, stranger := env.NewProject(""), env.NewProject("")
	for i := range 3 {
		submit(env, member, newsletterPath, map[string]any{"email": fmt.Sprintf("other%d@example.com", i)}).Expect(t, 201)
	}
	submit(env, member, newsletterPath, map[string]any{"email": "Ann@Example.com", "name": "Ann"}).Expect(t, 201)
	before := subscriber(t, env, member, "Ann@Example.com")

	probe := map[string]any{"email": "ann@example.com", "source": "probe"}
	again := submit(env, member, newsletterPath, probe).Expect(t, 201)
	fresh := submit(env, stranger, newsletterPath, probe).Expect(t, 201)
	require.JSONEq(t, string(fresh.Body), string(again.Body), "a repeated subscription must answer as a first one")
	checkAck(t, again.JSON(t))
	require.Equal(t, fresh.Header.Get("Content-Type"), again.Header.Get("Content-Type"))

	// behind the answer, the one row kept its id, date and name and took the new source
	after := subscriber(t, env, member, "Ann@Example.com")
	require.Equal(t, before["id"], after["id"])
	require.Equal(t, before["created_at"], after["created_at"])
	require.Equal(t, "Ann", after["name"])
	require.Equal(t, "probe", after["source"])
	require.Equal(t, 1, count(t, member, "type = 'newsletter' AND lower(email) = 'ann@example.com'"))
}

func TestAdminListAndDelete(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	var news, contacts []any
	for i := 0; i < 5; i++ {
		email := fmt.Sprintf("n%d@example.com", i)
		submit(env, p, newsletterPath, map[string]any{"email": email}).Expect(t, 201)
		news = append(news, subscriber(t, env, p, email)["id"])
		c := submit(env, p, contactPath, map[string]any{"name": "C", "email": fmt.Sprintf("c%d@example.com", i), "message": "m"}).Expect(t, 201).JSON(t)
		contacts = append(contacts, c["id"])
	}

	// pages of 2, newest first, following the cursor to the end
	walk := func(query string) []any {
		var ids []any
		path := "/v1/form-submissions?limit=2" + query
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10)
			l := env.Do("GET", path, p.Key, nil).Expect(t, 200).JSON(t)
			data := l["data"].([]any)
			require.LessOrEqual(t, len(data), 2)
			for _, d := range data {
				ids = append(ids, d.(map[string]any)["id"])
			}
			if l["has_more"] != true {
				require.Nil(t, l["next_cursor"])
				return ids
			}
			path = "/v1/form-submissions?limit=2" + query + "&cursor=" + url.QueryEscape(l["next_cursor"].(string))
		}
	}
	reverse := func(in []any) []any {
		out := make([]any, len(in))
		for i, v := range in {
			out[len(in)-1-i] = v
		}
		return out
	}
	require.Equal(t, reverse(news), walk("&type=newsletter"))
	require.Equal(t, reverse(contacts), walk("&type=contact"))
	all := walk("")
	require.Len(t, all, 10)
	require.Equal(t, contacts[4], all[0])

	for _, l := range []string{"type=spam", "type=NEWSLETTER", "limit=0", "limit=101", "cursor=%21%21", "cursor=" + url.QueryEscape("YWJj")} {
		env.Do("GET", "/v1/form-submissions?"+l, p.Key, nil).Problem(t, 422, "validation_failed")
	}

	// delete: 204 with no body, then 404; garbage ids are 404
	r := env.Do("DELETE", fmt.Sprintf("/v1/form-submissions/%v", contacts[0]), p.Key, nil).Expect(t, 204)
	require.Empty(t, r.Body)
	require.Equal(t, 0, count(t, p, "id = $1", int64(contacts[0].(float64))))
	require.Equal(t, 9, count(t, p, "true"))
	env.Do("DELETE", fmt.Sprintf("/v1/form-submissions/%v", contacts[0]), p.Key, nil).Problem(t, 404, "not_found")
	for _, id := range []string{"0", "-1", "abc", "99999999999999999999"} {
		env.Do("DELETE", "/v1/form-submissions/"+id, p.Key, nil).Problem(t, 404, "not_found")
	}

	// another project's submissions are invisible
	q := env.NewProject("")
	require.Empty(t, env.Do("GET", "/v1/form-submissions", q.Key, nil).Expect(t, 200).JSON(t)["data"])
	env.Do("DELETE", fmt.Sprintf("/v1/form-submissions/%v", news[0]), q.Key, nil).Problem(t, 404, "not_found")
	require.Equal(t, 9, count(t, p, "true"))
}

func TestAdminScopes(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	submit(env, p, newsletterPath, map[string]any{"email": "ann@example.com"}).Expect(t, 201)
	del := fmt.Sprintf("/v1/form-submissions/%v", subscriber(t, env, p, "ann@example.com")["id"])
	csvReq := func(key string) *apitest.Resp {
		return env.Send(apitest.Request{Method: "GET", Path: "/v1/form-submissions", Key: key, Header: map[string]string{"Accept": "text/csv"}})
	}

	read := p.NewKey(false, "forms:read")
	write := p.NewKey(false, "forms:write")
	none := p.NewKey(false, "content:*", "blog:*")
	all := p.NewKey(false, "forms:*")

	for _, k := range []string{write, none} {
		m := env.Do("GET", "/v1/form-submissions", k, nil).Problem(t, 403, "forbidden")
		require.Contains(t, m["detail"], "forms:read")
		csvReq(k).Problem(t, 403, "forbidden")
	}
	for _, k := range []string{read, none} {
		m := env.Do("DELETE", del, k, nil).Problem(t, 403, "forbidden")
		require.Contains(t, m["detail"], "forms:write")
	}
	require.Equal(t, 1, count(t, p, "true"), "a refused delete deletes nothing")

	env.Do("GET", "/v1/form-submissions", read, nil).Expect(t, 200)
	csvReq(read).Expect(t, 200)
	env.Do("GET", "/v1/form-submissions", all, nil).Expect(t, 200)
	env.Do("GET", "/v1/form-submissions", "", nil).Problem(t, 401, "unauthorized")
	env.Do("DELETE", del, "", nil).Problem(t, 401, "unauthorized")
	env.Do("DELETE", del, write, nil).Expect(t, 204)
	env.Do("DELETE", del, all, nil).Problem(t, 404, "not_found")
	require.Equal(t, 0, count(t, p, "true"))
}

func TestNewsletterCSVExport(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	get := func(accept, query string) *apitest.Resp {
		return env.Send(apitest.Request{Method: "GET", Path: "/v1/form-submissions" + query, Key: p.Key, Header: map[string]string{"Accept": accept}})
	}
	parse := func(r *apitest.Resp) [][]string {
		t.Helper()
		r.Expect(t, 200)
		require.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
		require.Contains(t, r.Header.Get("Content-Disposition"), "attachment")
		recs, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
		require.NoError(t, err, "%s", r.Body)
		return recs
	}

	// no subscribers yet: the header line only
	require.Equal(t, [][]string{{"email", "name", "source", "created_at"}}, parse(get("text/csv", "")))

	subs := []map[string]any{
		{"email": "plain@example.com", "name": "Plain", "source": "footer"},
		{"email": "quote@example.com", "name": `Ann "The Hat", Lee` + "\nline two", "source": "a,b"},
		{"email": "=cmd@example.com", "name": "=HYPERLINK(\"http://evil\")", "source": "+1+2"},
		{"email": "-x@example.com", "name": "@SUM(A1)", "source": "-3"},
		{"email": "noname@example.com"},
	}
	var created []string
	for _, s := range subs {
		submit(env, p, newsletterPath, s).Expect(t, 201)
		created = append(created, subscriber(t, env, p, s["email"].(string))["created_at"].(string))
	}
	// neither contact messages nor spam are subscribers
	submit(env, p, contactPath, map[string]any{"name": "C", "email": "contact@example.com", "message": "m"}).Expect(t, 201)
	submit(env, p, newsletterPath, map[string]any{"email": "bot@example.com", "website": "x"}).Expect(t, 201)

	want := [][]string{
		{"email", "name", "source", "created_at"},
		{"noname@example.com", "", "", created[4]},
		{"'-x@example.com", "'@SUM(A1)", "'-3", created[3]},
		{"'=cmd@example.com", "'=HYPERLINK(\"http://evil\")", "'+1+2", created[2]},
		{"quote@example.com", `Ann "The Hat", Lee` + "\nline two", "a,b", created[1]},
		{"plain@example.com", "Plain", "footer", created[0]},
	}
	require.Equal(t, want, parse(get("text/csv", "")))
	require.Equal(t, want, parse(get("text/csv", "?type=newsletter")))
	require.Equal(t, want, parse(get("application/json;q=0.5, text/csv", "")))
	// quoting is done by encoding/csv: the embedded quote is doubled
	require.Contains(t, string(get("text/csv", "").Body), `"Ann ""The Hat"", Lee`)

	// JSON stays the default
	for _, a := range []string{"", "application/json", "*/*", "text/csv;q=0.1, application/json"} {
		r := get(a, "?type=newsletter").Expect(t, 200)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"), "Accept %q", a)
		require.Len(t, r.JSON(t)["data"], 6)
	}
	get("text/csv", "?type=contact").Problem(t, 422, "validation_failed")
	get("text/csv", "?type=bogus").Problem(t, 422, "validation_failed")
}

func TestCORS(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("")
	for _, path := range []string{newsletterPath, contactPath} {
		// a browser preflight names no project and still gets its answer
		r := env.Send(apitest.Request{Method: "OPTIONS", Path: path, Header: map[string]string{
			"Origin": "https://some-site.example", "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "content-type,idempotency-key,x-request-id,x-service-project-key",
		}}).Expect(t, 204)
		require.Empty(t, r.Body)
		require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
		// The answer allows what was asked for, all of it allowed.
		require.Equal(t, "POST", r.Header.Get("Access-Control-Allow-Methods"))
		require.Equal(t, "content-type,idempotency-key,x-request-id,x-service-project-key", r.Header.Get("Access-Control-Allow-Headers"))
		require.NotEmpty(t, r.Header.Get("Access-Control-Max-Age"))
		require.NotEmpty(t, r.Header.Get("X-Request-Id"))
	}

	origin := map[string]string{"Origin": "https://another.example", "X-Service-Project-Key": p.ID}
	// successes and errors alike carry the header, so a page can read them
	for _, tc := range []struct {
		req    apitest.Request
		status int
	}{
		{apitest.Request{Method: "POST", Path: newsletterPath, Body: map[string]any{"email": "ann@example.com"}, Header: origin}, 201},
		{apitest.Request{Method: "POST", Path: contactPath, Body: map[string]any{"name": "A", "email": "ann@example.com", "message": "m"}, Header: origin}, 201},
		{apitest.Request{Method: "POST", Path: newsletterPath, Body: map[string]any{"email": "nope"}, Header: origin}, 422},
		{apitest.Request{Method: "POST", Path: newsletterPath, Body: map[string]any{"email": "ann@example.com"},
			Header: map[string]string{"Origin": "https://another.example", "X-Service-Project-Key": "prj_" + strings.Repeat("z", 24)}}, 404},
	} {
		r := env.Send(tc.req).Expect(t, tc.status)
		require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"), "%s %s", tc.req.Path, r.Body)
		for _, h := range []string{"X-Request-Id", "X-Ratelimit-Remaining", "Retry-After", "Idempotent-Replayed"} {
			require.Contains(t, r.Header.Get("Access-Control-Expose-Headers"), h)
		}
	}

	// a wrong method on a form route is still 400 with Allow
	r := env.Send(apitest.Request{Method: "GET", Path: newsletterPath, Header: origin})
	r.Problem(t, 400, "bad_request")
	require.Contains(t, r.Header.Get("Allow"), "POST")
	// admin routes and other paths get no CORS answer
	r = env.Send(apitest.Request{Method: "OPTIONS", Path: "/v1/form-submissions", Key: p.Key, Header: map[string]string{"Origin": "https://x.example",
		"Access-Control-Request-Method": "GET"}})
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
	require.NotEqual(t, 204, r.Status)
}

// TestFormsCostNothingAndRaiseNoEvents submits every kind of form and checks
// that no credit was charged and no webhook event, outbox row or delivery
// job exists: forms cost no credits and have no events.
func TestFormsCostNothingAndRaiseNoEvents(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("free")
	for i := 0; i < 3; i++ {
		submit(env, p, newsletterPath, map[string]any{"email": fmt.Sprintf("n%d@example.com", i)}).Expect(t, 201)
		submit(env, p, newsletterPath, map[string]any{"email": "same@example.com"}).Expect(t, 201)
		submit(env, p, contactPath, map[string]any{"name": "A", "email": "a@example.com", "message": "m"}).Expect(t, 201)
		submit(env, p, contactPath, map[string]any{"name": "A", "email": "a@example.com", "message": "m", "website": "x"}).Expect(t, 201)
	}
	env.Do("GET", "/v1/form-submissions", p.Key, nil).Expect(t, 200)
	l := env.Do("GET", "/v1/form-submissions?type=contact&limit=1", p.Key, nil).Expect(t, 200).JSON(t)
	id := l["data"].([]any)[0].(map[string]any)["id"]
	env.Do("DELETE", fmt.Sprintf("/v1/form-submissions/%v", id), p.Key, nil).Expect(t, 204)
	require.Equal(t, 9, count(t, p, "true"))

	ctx := context.Background()
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM credit_ledger").Scan(&n); err != nil {
			return err
		}
		require.Zero(t, n, "forms must not charge credits")
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM credit_pools WHERE plan_used <> 0").Scan(&n); err != nil {
			return err
		}
		require.Zero(t, n, "forms must not use the plan allowance")

		// whatever webhook, event or outbox tables the project schema has
		// (they may come from other pillars), none holds a row
		rows, err := tx.Query(ctx, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = $1 AND (table_name LIKE '%webhook%' OR table_name LIKE '%outbox%' OR table_name LIKE '%event%' OR table_name LIKE '%deliver%')`, p.Schema)
		if err != nil {
			return err
		}
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, tbl := range tables {
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{tbl}.Sanitize()).Scan(&n); err != nil {
				return err
			}
			require.Zero(t, n, "table %s has rows after form submissions", tbl)
		}
		return nil
	})
	require.NoError(t, err)

	var jobs int
	require.NoError(t, env.Server.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind ILIKE '%webhook%' OR kind ILIKE '%event%' OR kind ILIKE '%deliver%'`).Scan(&jobs))
	require.Zero(t, jobs, "no delivery job may be queued")
}
