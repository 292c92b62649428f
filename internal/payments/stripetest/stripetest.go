// Package stripetest gives tests a real stripe-mock
// (github.com/stripe/stripe-mock, installed by .ci/run) on a loopback port,
// behind a per-test recording proxy, and signs webhook payloads the way the
// processor does.
//
// stripe-mock answers with canned objects and keeps no state: a connected
// account is never charges_enabled, for example. The proxy records every
// request (path, form, headers such as Stripe-Account and Idempotency-Key)
// and can patch fields of a response or fail a path, so tests assert what
// was sent and steer what comes back.
//
// Without stripe-mock on PATH (or in $GOPATH/bin) a test is skipped, and
// fails under CI=true.
package stripetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"
)

// Version is the stripe-mock release the tests are written against.
const Version = "v0.203.0"

var (
	once    sync.Once
	mockURL string
	mockErr error
)

// binary finds stripe-mock on PATH or in $GOPATH/bin.
func binary() (string, error) {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "stripe-mock")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("stripe-mock is not installed (go install github.com/stripe/stripe-mock@%s)", Version)
}

var listenRe = regexp.MustCompile(`Listening for HTTP at address: (\S+)`)

// start runs one stripe-mock for the test process on free loopback ports
// (HTTPS too: stripe-mock opens it unless told where). It ends with the
// process (see stop_linux.go).
func start() (string, error) {
	bin, err := binary()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	cmd.SysProcAttr = procAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start stripe-mock: %w", err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case addr, ok := <-found:
		if !ok {
			_ = cmd.Wait()
			return "", errors.New("stripe-mock exited before listening")
		}
		return "http://" + addr, nil
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		return "", errors.New("stripe-mock did not listen within 2 minutes")
	}
}

// URL returns the base URL of the shared stripe-mock, starting it on first
// use.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { mockURL, mockErr = start() })
	if mockErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("stripe-mock is required: %v", mockErr)
		}
		t.Skipf("stripe-mock unavailable: %v", mockErr)
	}
	return mockURL
}

// Request is one request the proxy forwarded.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Form   url.Values
}

// Mock is a recording proxy in front of the shared stripe-mock.
type Mock struct {
	// URL is the base to configure as STRIPE_API_BASE.
	URL string

	mu       sync.Mutex
	requests []Request
	patches  map[string]map[string]any
	fail     map[string]failure
	before   map[string]func()
}

type failure struct {
	status int
	body   string
}

// New starts a proxy for one test.
func New(t testing.TB) *Mock {
	t.Helper()
	target, err := url.Parse(URL(t))
	if err != nil {
		t.Fatal(err)
	}
	m := &Mock{patches: map[string]map[string]any{}, fail: map[string]failure{}, before: map[string]func(){}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = m.patch
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.mu.Lock()
		m.requests = append(m.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Form: form})
		f, failing := m.fail[r.Method+" "+r.URL.Path]
		hook := m.before[r.Method+" "+r.URL.Path]
		m.mu.Unlock()
		if hook != nil {
			hook()
		}
		if failing {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.status)
			_, _ = io.WriteString(w, f.body)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// Requests returns the forwarded requests whose method and path match
// ("POST /v1/checkout/sessions"); a path ending in "/" matches by prefix.
func (m *Mock) Requests(methodPath string) []Request {
	method, path, _ := strings.Cut(methodPath, " ")
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Request
	for _, r := range m.requests {
		if r.Method == method && (r.Path == path || strings.HasSuffix(path, "/") && strings.HasPrefix(r.Path, path)) {
			out = append(out, r)
		}
	}
	return out
}

// Patch makes successful responses to requests on path (such as
// "/v1/accounts/acct_1") carry these top-level fields, standing in for
// the state stripe-mock does not keep (charges_enabled, a session's status).
func (m *Mock) Patch(path string, fields map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.patches[path] = fields
}

// Fail makes "METHOD /path" answer status with a processor error of type
// typ and message msg instead of reaching stripe-mock.
func (m *Mock) Fail(methodPath string, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": typ, "message": msg}})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail[methodPath] = failure{status: status, body: string(b)}
}

// Before runs fn when a "METHOD /path" request arrives, before it is
// answered: a test acts while the server waits on the processor.
func (m *Mock) Before(methodPath string, fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.before[methodPath] = fn
}

// patch rewrites the responses a test configured with Patch.
func (m *Mock) patch(res *http.Response) error {
	m.mu.Lock()
	fields, ok := m.patches[res.Request.URL.Path]
	m.mu.Unlock()
	if !ok || res.StatusCode != 200 {
		return nil
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		return err
	}
	for k, v := range fields {
		obj[k] = v
	}
	if body, err = json.Marshal(obj); err != nil {
		return err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return nil
}

// Sign returns the Stripe-Signature header of payload under secret at time
// at (the zero time is now), as the processor computes it.
func Sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

// Event builds a processor event payload of type typ about obj, from the
// connected account (empty for none).
func Event(id, typ, account string, obj map[string]any) []byte {
	ev := map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": "2023-10-16",
		"created": time.Now().Unix(), "livemode": false, "pending_webhooks": 1,
		"data": map[string]any{"object": obj},
	}
	if account != "" {
		ev["account"] = account
	}
	b, _ := json.Marshal(ev)
	return b
}
