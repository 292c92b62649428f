package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/migrations"
	"github.com/plinth-dev/plinth/tenant/webhooks/signature"
)

// setup starts a server with workers that trusts rc, with retries
// shortened unless opts say otherwise.
func setup(t *testing.T, rc *webhooktest.Receiver, opts ...apitest.Option) (*apitest.Env, *apitest.Project) {
	t.Helper()
	all := append([]apitest.Option{apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()),
		apitest.WithEnv("PLINTH_WEBHOOK_RETRY_DELAYS", "150ms,150ms,150ms,150ms,150ms", "PLINTH_WEBHOOK_TIMEOUT", "3s")}, opts...)
	env := apitest.New(t, all...)
	return env, env.NewProject("build")
}

// deliveries lists an endpoint's delivery records.
func deliveries(t *testing.T, env *apitest.Env, key, endpoint string) []map[string]any {
	t.Helper()
	var l struct {
		Data []map[string]any `json:"data"`
	}
	env.Do("GET", "/v1/webhook-endpoints/"+endpoint+"/deliveries?limit=100", key, nil).Expect(t, 200).Decode(t, &l)
	return l.Data
}

// waitDeliveries polls the list until cond holds.
func waitDeliveries(t *testing.T, env *apitest.Env, key, endpoint string, cond func([]map[string]any) bool) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d := deliveries(t, env, key, endpoint)
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries never reached the expected state: %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func settled(d []map[string]any) bool {
	for _, x := range d {
		if x["status"] == "pending" {
			return false
		}
	}
	return len(d) > 0
}

// exec runs one statement in p's schema.
func exec(t *testing.T, p *apitest.Project, sql string, args ...any) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), sql, args...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ledger returns the count and sum of webhook_delivery charges of a pool.
func ledger(t *testing.T, p *apitest.Project, pool string) (n, sum int64) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*), COALESCE(sum(amount), 0) FROM credit_ledger WHERE op = 'webhook_delivery' AND pool = $1`, pool).Scan(&n, &sum)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, sum
}

func TestDeliveryEndToEnd(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	ep, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.paid", "order.created")
	if !strings.HasPrefix(secret, "whsec_") || !id.Valid("whe_", ep) {
		t.Fatalf("endpoint %s secret %s", ep, secret)
	}
	rc.SetSecret(secret)
	// an endpoint of another topic and a disabled one get nothing
	other := webhooktest.NewTLS(t, nil)
	webhooktest.Endpoint(t, env, p.Key, other.URL, "blog_post.published")
	off := env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": other.URL, "events": []string{"order.paid"}, "is_active": false}).Expect(t, 201).JSON(t)
	if off["is_active"] != false {
		t.Fatalf("inactive endpoint: %v", off)
	}

	order := map[string]any{"id": 42, "status": "paid", "total": 1999, "currency": "eur"}
	before := time.Now().Unix()
	webhooktest.Emit(t, env, p, "order.paid", order)

	got := rc.WaitN(t, 10*time.Second, 1)[0]
	h := got.Header
	if h.Get("Content-Type") != "application/json" || h.Get("User-Agent") != "Service-Webhooks/1.0" || h.Get("X-Service-Event") != "order.paid" {
		t.Fatalf("headers: %v", h)
	}
	if !id.Valid("whd_", got.Delivery()) {
		t.Fatalf("X-Service-Delivery %q", got.Delivery())
	}
	// The receiver verifies with the exported package; a tampered body and
	// a stale timestamp are rejected by it.
	sig := h.Get("X-Service-Signature")
	if got.Verified != nil {
		t.Fatalf("signature.Verify at receipt: %v (%s)", got.Verified, sig)
	}
	if err := signature.Verify(secret, sig, append([]byte(nil), got.Body[:len(got.Body)-1]...), time.Now()); !errors.Is(err, signature.ErrNoMatch) {
		t.Fatalf("tampered body: %v", err)
	}
	if err := signature.Verify(secret, sig, got.Body, time.Now().Add(6*time.Minute)); !errors.Is(err, signature.ErrStale) {
		t.Fatalf("stale timestamp: %v", err)
	}
	if err := signature.Verify("whsec_wrong", sig, got.Body, time.Now()); !errors.Is(err, signature.ErrNoMatch) {
		t.Fatalf("wrong secret: %v", err)
	}
	if strings.Count(sig, "v1=") != 1 {
		t.Fatalf("one secret, one v1 entry: %s", sig)
	}

	var env1 struct {
		ID      string          `json:"id"`
		Type    string          `json:"type"`
		Created int64           `json:"created"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(got.Body, &env1); err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	_ = json.Unmarshal(env1.Data, &data)
	if !id.Valid("evt_", env1.ID) || env1.Type != "order.paid" || env1.Created < before || env1.Created > time.Now().Unix() ||
		data["id"] != float64(42) || data["status"] != "paid" {
		t.Fatalf("envelope: %s", got.Body)
	}

	// the delivery record and the endpoint's status
	d := waitDeliveries(t, env, p.Key, ep, settled)
	if len(d) != 1 || d[0]["id"] != got.Delivery() || d[0]["event_id"] != env1.ID || d[0]["event_type"] != "order.paid" ||
		d[0]["status"] != "succeeded" || d[0]["attempts"] != float64(1) || d[0]["last_status_code"] != float64(200) ||
		d[0]["last_error"] != nil || d[0]["next_attempt_at"] != nil {
		t.Fatalf("delivery record: %v", d)
	}
	if _, err := time.Parse(time.RFC3339, d[0]["created_at"].(string)); err != nil || !strings.HasSuffix(d[0]["created_at"].(string), "Z") {
		t.Fatalf("created_at %v", d[0]["created_at"])
	}
	e := env.Do("GET", "/v1/webhook-endpoints/"+ep, p.Key, nil).Expect(t, 200).JSON(t)
	if e["last_delivery_status"] != "succeeded" {
		t.Fatalf("endpoint: %v", e)
	}
	// one attempt, 0.02 credits
	if n, sum := ledger(t, p, "live"); n != 1 || sum != 2 {
		t.Fatalf("charges: %d attempts, %d hundredths", n, sum)
	}

	// nothing for the other endpoints, and nothing more for this one
	time.Sleep(300 * time.Millisecond)
	if n := len(other.Requests()); n != 0 {
		t.Fatalf("unsubscribed or inactive endpoints got %d requests", n)
	}
	if n := len(rc.Requests()); n != 1 {
		t.Fatalf("receiver got %d requests", n)
	}
}

// TestRolledBackEventNeverSent emits inside a transaction that fails:
// no event, no delivery, no job, no request.
func TestRolledBackEventNeverSent(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	ep, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "content.changed")
	ctx := context.Background()
	boom := errors.New("the pillar's write failed")
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		if err := env.Server.Outbox.Emit(ctx, tx, p.Scope, "content.changed", map[string]any{"key": "a", "value": "rolled back"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	// a committed event after it is delivered, and alone
	webhooktest.Emit(t, env, p, "content.changed", map[string]any{"key": "a", "value": "committed"})
	rc.WaitN(t, 10*time.Second, 1)
	time.Sleep(500 * time.Millisecond)
	reqs := rc.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"committed"`) {
		t.Fatalf("requests: %d", len(reqs))
	}
	var events, jobs int
	_ = p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM webhook_events`).Scan(&events)
	})
	if err := env.Server.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind = 'webhook.deliver'`).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if events != 1 || jobs != 1 || len(deliveries(t, env, p.Key, ep)) != 1 {
		t.Fatalf("events %d, jobs %d", events, jobs)
	}
}

func TestRetriesThenSuccess(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, func(r *http.Request, attempt int) int {
		if attempt <= 2 {
			return 503
		}
		return 200
	})
	env, p := setup(t, rc)
	ep, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "booking.confirmed")
	rc.SetSecret(secret)
	webhooktest.Emit(t, env, p, "booking.confirmed", map[string]any{"id": 7})
	reqs := rc.WaitN(t, 15*time.Second, 3)
	d := waitDeliveries(t, env, p.Key, ep, settled)
	if len(d) != 1 || d[0]["status"] != "succeeded" || d[0]["attempts"] != float64(3) || d[0]["last_status_code"] != float64(200) {
		t.Fatalf("delivery: %v", d)
	}
	for _, r := range reqs {
		if r.Delivery() != d[0]["id"] || string(r.Body) != string(reqs[0].Body) || r.Verified != nil {
			t.Fatalf("attempts must share the delivery id and body, signed: %s %v", r.Delivery(), r.Verified)
		}
	}
	// the retry delay was honoured
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 140*time.Millisecond {
		t.Fatalf("retry after %s, want at least 150ms", gap)
	}
	time.Sleep(400 * time.Millisecond)
	if n := len(rc.Requests()); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	if n, sum := ledger(t, p, "live"); n != 3 || sum != 6 {
		t.Fatalf("charges: %d, %d hundredths", n, sum)
	}
}

func TestRetriesExhaustedThenRedeliver(t *testing.T) {
	t.Parallel()
	failing := true
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	rc := webhooktest.NewTLS(t, func(r *http.Request, attempt int) int {
		<-mu
		defer func() { mu <- struct{}{} }()
		if failing {
			return 500
		}
		return 204
	})
	env, p := setup(t, rc)
	ep, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.refunded")
	rc.SetSecret(secret)
	webhooktest.Emit(t, env, p, "order.refunded", map[string]any{"id": 9, "refunded_amount": 500})
	reqs := rc.WaitN(t, 15*time.Second, 6)
	d := waitDeliveries(t, env, p.Key, ep, settled)
	if len(d) != 1 || d[0]["status"] != "failed" || d[0]["attempts"] != float64(6) || d[0]["last_status_code"] != float64(500) ||
		d[0]["last_error"] != "http_status 500" || d[0]["next_attempt_at"] != nil {
		t.Fatalf("delivery: %v", d)
	}
	time.Sleep(600 * time.Millisecond) // longer than a retry delay: no 7th attempt
	if n := len(rc.Requests()); n != 6 {
		t.Fatalf("%d attempts, want exactly 6", n)
	}
	e := env.Do("GET", "/v1/webhook-endpoints/"+ep, p.Key, nil).Expect(t, 200).JSON(t)
	if e["last_delivery_status"] != "failed" {
		t.Fatalf("endpoint: %v", e)
	}

	// Redeliver once the receiver is fixed: a new delivery of the original
	// payload, byte for byte.
	<-mu
	failing = false
	mu <- struct{}{}
	first := d[0]["id"].(string)
	nd := env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/"+first+"/redeliver", p.Key, nil).Expect(t, 202).JSON(t)
	if nd["id"] == first || !id.Valid("whd_", nd["id"].(string)) || nd["event_id"] != d[0]["event_id"] || nd["status"] != "pending" || nd["attempts"] != float64(0) {
		t.Fatalf("redelivery: %v", nd)
	}
	all := rc.WaitN(t, 10*time.Second, 7)
	last := all[6]
	if last.Delivery() != nd["id"] || string(last.Body) != string(reqs[0].Body) || last.Verified != nil {
		t.Fatalf("redelivered %s: %s, want %s", last.Delivery(), last.Body, reqs[0].Body)
	}
	d = waitDeliveries(t, env, p.Key, ep, settled)
	if len(d) != 2 || d[0]["id"] != nd["id"] || d[0]["status"] != "succeeded" || d[1]["status"] != "failed" {
		t.Fatalf("deliveries newest first: %v", d)
	}
	if n, sum := ledger(t, p, "live"); n != 7 || sum != 14 {
		t.Fatalf("charges: %d, %d hundredths", n, sum)
	}

	// redeliver errors
	env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/"+id.New("whd_")+"/redeliver", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/nope/redeliver", p.Key, nil).Problem(t, 404, "not_found")
	ep2, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.refunded")
	env.Do("POST", "/v1/webhook-endpoints/"+ep2+"/deliveries/"+first+"/redeliver", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("PATCH", "/v1/webhook-endpoints/"+ep, p.Key, map[string]any{"is_active": false}).Expect(t, 200)
	env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/"+first+"/redeliver", p.Key, nil).Problem(t, 409, "conflict")
	env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/"+first+"/redeliver", p.NewKey(false, "webhooks:read"), nil).Problem(t, 403, "forbidden")
}

// TestDisableEndpointFailsPendingDelivery: an endpoint disabled while one
// of its deliveries waits for a retry gets no further attempt; on its next
// run the delivery ends failed, saying why, rather than stay pending.
func TestDisableEndpointFailsPendingDelivery(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, func(*http.Request, int) int { return 503 })
	// Retries far enough apart to disable the endpoint between two attempts.
	env, p := setup(t, rc, apitest.WithEnv("PLINTH_WEBHOOK_RETRY_DELAYS", "2s,2s,2s,2s,2s"))
	ep, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.paid")
	webhooktest.Emit(t, env, p, "order.paid", map[string]any{"id": 1})

	// The first attempt failed and the delivery waits for its retry.
	d := waitDeliveries(t, env, p.Key, ep, func(d []map[string]any) bool {
		return len(d) == 1 && d[0]["status"] == "pending" && d[0]["attempts"] != float64(0) && d[0]["next_attempt_at"] != nil
	})
	env.Do("PATCH", "/v1/webhook-endpoints/"+ep, p.Key, map[string]any{"is_active": false}).Expect(t, 200)
	// An attempt in flight at the PATCH may still be recorded; none starts
	// after it.
	sent := len(rc.Requests())

	deadline := time.Now().Add(15 * time.Second)
	for d[0]["status"] == "pending" {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery of a disabled endpoint is still pending after 15 s: %v", d)
		}
		time.Sleep(50 * time.Millisecond)
		d = deliveries(t, env, p.Key, ep)
	}
	if d[0]["status"] != "failed" || d[0]["last_error"] != "endpoint_disabled" || d[0]["next_attempt_at"] != nil {
		t.Fatalf("delivery of a disabled endpoint: %v, want failed with last_error \"endpoint_disabled\"", d)
	}
	attempts := int(d[0]["attempts"].(float64))
	if attempts < 1 || attempts > sent+1 {
		t.Fatalf("attempts %d, with %d requests sent before the endpoint was disabled", attempts, sent)
	}
	time.Sleep(2500 * time.Millisecond) // longer than a retry delay
	if n := len(rc.Requests()); n != attempts {
		t.Fatalf("the receiver got %d requests for %d recorded attempts: an attempt was sent after the endpoint was disabled", n, attempts)
	}
	if n, _ := ledger(t, p, "live"); n != int64(attempts) {
		t.Fatalf("%d charges for %d attempts", n, attempts)
	}
	if e := env.Do("GET", "/v1/webhook-endpoints/"+ep, p.Key, nil).Expect(t, 200).JSON(t); e["last_delivery_status"] != "failed" || e["is_active"] != false {
		t.Fatalf("endpoint: %v", e)
	}
}

// A delivery's last_error is a generic reason, never what the transport
// said: that names the server's resolver and the addresses it dialled
// (the detail is logged with the delivery id instead).
func TestDeliveryErrorsAreGeneric(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, func(*http.Request, int) int { return 503 })
	env, p := setup(t, rc)

	// A port nothing listens on, a listener that drops every connection,
	// and a plain HTTP server spoken to in TLS.
	closed := listen(t)
	closedAddr := closed.Addr().String()
	closed.Close()
	dropping := listen(t)
	go func() {
		for {
			c, err := dropping.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)

	want := map[string]string{
		"https://plinth-nowhere.invalid/hook":                 "dns_failure",
		"http://" + closedAddr + "/hook":                      "connection_refused",
		"http://" + dropping.Addr().String() + "/hook":        "connection_reset",
		"https://" + strings.TrimPrefix(plain.URL, "http://"): "tls_error",
		rc.URL: "http_status 503",
	}
	endpoints := map[string]string{}
	for url, reason := range want {
		ep, _ := webhooktest.Endpoint(t, env, p.Key, url, "order.paid")
		endpoints[ep] = reason
	}
	webhooktest.Emit(t, env, p, "order.paid", map[string]any{"id": 1})
	for ep, reason := range endpoints {
		d := waitDeliveries(t, env, p.Key, ep, func(d []map[string]any) bool { return len(d) == 1 && d[0]["status"] == "failed" })
		if d[0]["last_error"] != reason || d[0]["attempts"] != float64(6) {
			t.Errorf("endpoint for %s: last_error %q after %v attempts, want %q after 6", reason, d[0]["last_error"], d[0]["attempts"], reason)
		}
		if code := d[0]["last_status_code"]; (reason == "http_status 503") != (code == float64(503)) {
			t.Errorf("endpoint for %s: last_status_code %v", reason, code)
		}
	}
}

// listen opens a loopback listener closed with the test.
func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestLegacyErrorsRewritten: migration 0301 turns the transport errors
// stored before the reasons existed into those reasons, so the API stops
// showing them.
func TestLegacyErrorsRewritten(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, rc)
	ep, _ := webhooktest.Endpoint(t, env, p.Key, rc.URL, "order.paid")
	legacy := map[string]string{
		"dial tcp: lookup example.com on 10.1.2.3:53: no such host":                                     "dns_failure",
		"dial tcp: lookup example.com on 10.1.2.3:53: read udp 10.0.0.5:4000->10.1.2.3:53: i/o timeout": "dns_failure",
		"dial tcp 10.9.8.7:443: connect: connection refused":                                            "connection_refused",
		"read tcp 10.0.0.5:5000->203.0.113.9:443: read: connection reset by peer":                       "connection_reset",
		"EOF": "connection_reset",
		"tls: failed to verify certificate: x509: certificate signed by unknown authority": "tls_error",
		"no response within 30s": "timeout",
		"dial tcp 127.0.0.1:443: ssrf: address not allowed: 127.0.0.1 is not a public address":                              "address_not_allowed",
		"the receiver answered 503 Service Unavailable":                                                                     "http_status 503",
		"the receiver answered 302 Found (redirects are not followed)":                                                      "http_status 302",
		"the endpoint is disabled":                                                                                          "endpoint_disabled",
		"the signing secret cannot be decrypted with the current server secret; rotate the endpoint's secret and redeliver": "signing_secret_unusable",
		"insufficient_credits: the balance cannot pay for a delivery attempt; nothing was sent":                             "insufficient_credits",
		"invalid endpoint url: parse \"x\": invalid":                                                                        "invalid_url",
		"something new":   "other",
		"http_status 500": "http_status 500",
		"timeout":         "timeout",
	}
	evt := id.New("evt_")
	exec(t, p, `INSERT INTO webhook_events (id, type, payload) VALUES ($1, 'order.paid', '{}')`, evt)
	for old := range legacy {
		exec(t, p, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, status, attempts, last_error)
			VALUES ($1, $2, $3, 'failed', 6, $4)`, id.New("whd_"), ep, evt, old)
	}
	sql, err := fs.ReadFile(migrations.Tenant(), "0301_webhook_error_reasons.sql")
	if err != nil {
		t.Fatal(err)
	}
	exec(t, p, string(sql))

	got := map[string]int{}
	for _, d := range deliveries(t, env, p.Key, ep) {
		got[d["last_error"].(string)]++
	}
	want := map[string]int{}
	for _, reason := range legacy {
		want[reason]++
	}
	if !maps.Equal(got, want) {
		t.Fatalf("last_error after the migration: %v, want %v", got, want)
	}
}
