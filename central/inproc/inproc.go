// Package inproc serves the requests the server makes to its own router,
// in the process: the dashboard's pages calling /central/api, the
// dashboard API's mirrors of /v1 routes, and the MCP tools running their
// REST routes. Each is a sub-request of one request a client sent (its
// parent), and this package is the one place that decides what it takes
// from that parent: the headers its caller allows, the client's address,
// the scope the parent was already identified with, and whether the
// parent already paid the rate limit.
//
// It lives under central, beside the callers, not in internal/: it hands
// over a tenant.Scope, and the parts under internal/ know no tenant. It
// imports neither central nor its callers (central imports all three).
package inproc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/tenant"
)

// A Caller is one part of the server that makes sub-requests.
type Caller struct {
	// Handler serves the sub-requests: the server's router, or the part
	// of it the caller reaches.
	Handler http.Handler
	// Headers are the parent's headers a sub-request carries; no other
	// header of the parent is passed on. Each caller names its own list.
	Headers []string
	// Detach makes a sub-request keep its parent's cancellation but none
	// of its context values: the MCP tools' routes are requests of their
	// own (their idempotency step, request id and commit hooks), not
	// parts of the /v1/mcp request. Without it the sub-request's context
	// is its parent's (request id, access log, dashboard bundle), less
	// the parent's chi routing state.
	Detach bool
}

// Parent is what a sub-request takes from the request it is made for.
type Parent struct {
	Ctx        context.Context
	Header     http.Header
	RemoteAddr string
	// Scope, when set, is the project and key the sub-request acts
	// with, resolved before: it is not identified again, so it carries
	// no Authorization.
	Scope *tenant.Scope
	// Charged says the rate limiter charged the parent: the sub-request
	// passes the limiter without being charged again.
	Charged bool
	// Label names what made the sub-request (an MCP tool) for the access
	// log, which logs a detached sub-request as a request of its own.
	Label string
}

type labelKey struct{}

// LabelOf is the Label of the parent a sub-request was made for, or "".
func LabelOf(ctx context.Context) string {
	l, _ := ctx.Value(labelKey{}).(string)
	return l
}

// Of returns r as a parent: its context, headers and address, with no
// scope handed over and no charge.
func Of(r *http.Request) Parent {
	return Parent{Ctx: r.Context(), Header: r.Header, RemoteAddr: r.RemoteAddr}
}

// Request is one sub-request.
type Request struct {
	Method string
	// Target is the path and query, as in a request line.
	Target string
	// Body is nil for none. ContentLength is its length when Body is a
	// stream whose length net/http cannot tell (another request's body).
	Body          io.Reader
	ContentLength int64
	// Header holds the sub-request's own headers, set after (over) those
	// taken from the parent.
	Header http.Header
}

// ErrAuthorizationWithScope is the error of a sub-request that hands
// over a scope and also carries Authorization: the identify step would
// resolve the header and replace the scope.
var ErrAuthorizationWithScope = errors.New("inproc: a sub-request with a resolved scope carries no Authorization")

// Serve serves req for p through the caller's handler, writing the answer
// to w as it comes.
func (c *Caller) Serve(w http.ResponseWriter, p Parent, req Request) error {
	r, done, err := c.request(p, req)
	if err != nil {
		return err
	}
	defer done()
	c.Handler.ServeHTTP(w, r)
	return nil
}

// Do serves req for p through the caller's handler and returns the
// answer, kept whole.
func (c *Caller) Do(p Parent, req Request) (*Response, error) {
	rec := &Response{Header: http.Header{}}
	if err := c.Serve(rec.writer(), p, req); err != nil {
		return nil, err
	}
	if rec.Status == 0 {
		rec.Status = http.StatusOK // a handler that wrote nothing answered 200, as net/http would
	}
	return rec, nil
}

// request builds the sub-request; done releases what it holds once the
// request is served.
func (c *Caller) request(p Parent, req Request) (*http.Request, func(), error) {
	ctx, done := p.Ctx, func() {}
	if c.Detach {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.Background())
		if p.Ctx.Err() != nil {
			cancel() // now: AfterFunc would call it later, on a goroutine of its own
		}
		stop := context.AfterFunc(p.Ctx, cancel)
		done = func() {
			stop()
			cancel()
		}
	}
	// Routed afresh: without the parent's chi routing state, which the
	// router would take for a parent router's and route below it.
	ctx = context.WithValue(ctx, chi.RouteCtxKey, nil)
	if p.Scope != nil {
		ctx = tenant.WithScope(ctx, p.Scope)
	}
	if p.Charged {
		ctx = ratelimit.Charged(ctx)
	}
	if p.Label != "" {
		ctx = context.WithValue(ctx, labelKey{}, p.Label)
	}
	body := req.Body
	if body == nil {
		body = http.NoBody
	}
	r, err := http.NewRequestWithContext(ctx, req.Method, req.Target, body)
	if err != nil {
		done()
		return nil, nil, err
	}
	if req.ContentLength != 0 {
		r.ContentLength = req.ContentLength
	}
	r.RemoteAddr = p.RemoteAddr
	for _, h := range c.Headers {
		if v := p.Header.Values(h); len(v) > 0 {
			r.Header[http.CanonicalHeaderKey(h)] = append([]string(nil), v...)
		}
	}
	for k, v := range req.Header {
		r.Header[k] = v
	}
	if p.Scope != nil && r.Header.Get("Authorization") != "" {
		done()
		return nil, nil, ErrAuthorizationWithScope
	}
	return r, done, nil
}

// Response is an answer kept whole.
type Response struct {
	Status int
	Header http.Header
	Body   bytes.Buffer
}

// writer returns the http.ResponseWriter that fills res.
func (res *Response) writer() http.ResponseWriter { return recorder{res} }

// recorder fills a Response: the first status written is the answer's, a
// Write without one is 200.
type recorder struct{ res *Response }

func (rec recorder) Header() http.Header { return rec.res.Header }

func (rec recorder) Write(b []byte) (int, error) {
	if rec.res.Status == 0 {
		rec.res.Status = http.StatusOK
	}
	return rec.res.Body.Write(b)
}

func (rec recorder) WriteHeader(status int) {
	if rec.res.Status == 0 {
		rec.res.Status = status
	}
}
