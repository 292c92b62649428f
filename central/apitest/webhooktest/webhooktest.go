// Package webhooktest gives webhook tests a real HTTPS receiver that
// records and verifies what it is sent, and helpers that create endpoints
// and emit events through the running server.
package webhooktest

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/webhooks/signature"
)

// Request is one request the receiver got.
type Request struct {
	At     time.Time
	Header http.Header
	Body   []byte
	// Verified is signature.Verify of the request against the receiver's
	// secret at receipt.
	Verified error
}

// Delivery is the X-Service-Delivery of the request.
func (r Request) Delivery() string { return r.Header.Get("X-Service-Delivery") }

// Respond decides a response status; attempt counts the requests of the
// same X-Service-Delivery, from 1. It may block (a slow receiver).
type Respond func(r *http.Request, attempt int) int

// Receiver is an httptest TLS server recording every request.
type Receiver struct {
	Server *httptest.Server
	// URL is where endpoints should point.
	URL string

	respond   Respond
	mu        sync.Mutex
	reqs      []Request
	attempts  map[string]int
	secret    string
	inflight  int
	maxFlight int
	changed   chan struct{}
}

// NewTLS starts a receiver answering with respond (nil: always 200).
func NewTLS(t testing.TB, respond Respond) *Receiver {
	t.Helper()
	rc := &Receiver{respond: respond, attempts: map[string]int{}, changed: make(chan struct{})}
	rc.Server = httptest.NewTLSServer(http.HandlerFunc(rc.serve))
	rc.URL = rc.Server.URL + "/hook"
	t.Cleanup(rc.Server.Close)
	return rc
}

// RootCAs trusts the receiver's certificate (apitest.WithRootCAs).
func (rc *Receiver) RootCAs() *x509.CertPool {
	return rc.Server.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
}

// SetSecret sets the signing secret requests are verified against.
func (rc *Receiver) SetSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.inflight++
	rc.maxFlight = max(rc.maxFlight, rc.inflight)
	d := r.Header.Get("X-Service-Delivery")
	rc.attempts[d]++
	n := rc.attempts[d]
	secret := rc.secret
	rc.mu.Unlock()

	status := 200
	if rc.respond != nil {
		status = rc.respond(r, n)
	}
	w.WriteHeader(status)

	req := Request{At: at, Header: r.Header.Clone(), Body: body,
		Verified: signature.Verify(secret, r.Header.Get(signature.Header), body, time.Now())}
	rc.mu.Lock()
	rc.inflight--
	rc.reqs = append(rc.reqs, req)
	close(rc.changed)
	rc.changed = make(chan struct{})
	rc.mu.Unlock()
}

// Requests returns the requests answered so far, in order of answer.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.reqs...)
}

// MaxInFlight is the most requests the receiver held at once.
func (rc *Receiver) MaxInFlight() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.maxFlight
}

// Wait returns the requests once cond holds for them, failing the test
// after timeout.
func (rc *Receiver) Wait(t testing.TB, timeout time.Duration, cond func([]Request) bool) []Request {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		rc.mu.Lock()
		reqs := append([]Request(nil), rc.reqs...)
		ch := rc.changed
		rc.mu.Unlock()
		if cond(reqs) {
			return reqs
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("receiver: condition not met after %s (%d requests)", timeout, len(reqs))
		}
	}
}

// WaitN waits for n requests.
func (rc *Receiver) WaitN(t testing.TB, timeout time.Duration, n int) []Request {
	t.Helper()
	return rc.Wait(t, timeout, func(r []Request) bool { return len(r) >= n })
}

// Endpoint creates an endpoint for events through the API and returns
// its id and signing secret.
func Endpoint(t testing.TB, env *apitest.Env, key, url string, events ...string) (id, secret string) {
	t.Helper()
	m := env.Do("POST", "/v1/webhook-endpoints", key, map[string]any{"url": url, "events": events}).Expect(t, 201).JSON(t)
	return m["id"].(string), m["signing_secret"].(string)
}

// Emit emits one event from p's scope in its own transaction, as a pillar
// does inside its write.
func Emit(t testing.TB, env *apitest.Env, p *apitest.Project, topic string, data any) {
	t.Helper()
	ctx := context.Background()
	if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		return env.Server.Outbox.Emit(ctx, tx, p.Scope, topic, data)
	}); err != nil {
		t.Fatal(err)
	}
}
