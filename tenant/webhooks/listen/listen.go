// Package listen is the client of a webhook listener, what plinth listen
// runs: it creates a listen endpoint of a project on a Plinth server,
// holds the endpoint's stream (GET /v1/webhook-endpoints/{id}/listen) and
// POSTs each delivery, headers and body exactly as the server signed
// them, to a receiver on this machine, which the server (remote, perhaps)
// could not reach itself. When its context ends it deletes the endpoint.
package listen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// Config is what a listener runs with.
type Config struct {
	// URL is the server's base URL (PLINTH_URL) and Key a key of the
	// project with webhooks:write (PLINTH_API_KEY).
	URL, Key string
	// ForwardTo is the receiver each delivery is POSTed to: an http or
	// https URL, loopback included (it is the developer's own machine).
	ForwardTo string
	// Events are the topics to listen to.
	Events []string
	// Out gets the Ready line and one line per delivery; Log the
	// reconnections.
	Out, Log io.Writer
	// Server and Receiver are the HTTP clients to the server and to
	// ForwardTo (nil: defaults; neither follows redirects).
	Server, Receiver *http.Client
	// Backoff is the first wait before a reconnection, doubled up to
	// MaxBackoff (defaults 1 s and 30 s).
	Backoff, MaxBackoff time.Duration
}

// ForwardTimeout is how long the receiver has to answer, as a receiver
// of a real delivery has (PLINTH_WEBHOOK_TIMEOUT's default).
const ForwardTimeout = 30 * time.Second

// maxEvent bounds one stream event: the envelope of a large resource,
// JSON-escaped, with its headers.
const maxEvent = 16 << 20

// ErrDeleted ends Run when the listener endpoint was deleted by someone
// else: there is nothing left to listen to.
var ErrDeleted = errors.New("the listener endpoint was deleted")

// Run creates the listener, prints the Ready line with its signing
// secret once the stream is open, and forwards deliveries until ctx ends
// (then it deletes the endpoint and returns nil) or the endpoint is gone.
// A dropped stream is opened again, after a backoff, from the last
// delivery it forwarded.
func Run(ctx context.Context, cfg Config) (err error) {
	if cfg.URL == "" || cfg.Key == "" {
		return errors.New("PLINTH_URL and PLINTH_API_KEY are required")
	}
	base, err := url.Parse(strings.TrimSuffix(cfg.URL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fmt.Errorf("PLINTH_URL %q is not an http or https URL", cfg.URL)
	}
	if to, err := url.Parse(cfg.ForwardTo); err != nil || (to.Scheme != "http" && to.Scheme != "https") || to.Host == "" {
		return fmt.Errorf("--forward-to %q is not an http or https URL", cfg.ForwardTo)
	}
	if len(cfg.Events) == 0 {
		return errors.New("no topics to listen to")
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Server == nil {
		cfg.Server = &http.Client{}
	}
	if cfg.Receiver == nil {
		cfg.Receiver = &http.Client{Timeout: ForwardTimeout}
	}
	cfg.Server, cfg.Receiver = noRedirects(cfg.Server), noRedirects(cfg.Receiver)
	cfg.Backoff, cfg.MaxBackoff = cmp.Or(cfg.Backoff, time.Second), cmp.Or(cfg.MaxBackoff, 30*time.Second)
	l := &listener{cfg: cfg, base: base.String()}

	ep, err := l.create(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// However Run ends, the endpoint goes: a listener nobody holds
		// would only clutter the project's list.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if derr := l.delete(dctx, ep.ID); derr != nil && !errors.Is(err, ErrDeleted) {
			err = errors.Join(err, fmt.Errorf("deleting the listener endpoint %s: %w", ep.ID, derr))
		}
	}()
	return l.follow(ctx, ep)
}

type listener struct {
	cfg  Config
	base string
}

// endpoint is the listen endpoint as created.
type endpoint struct {
	ID            string `json:"id"`
	SigningSecret string `json:"signing_secret"`
}

func (l *listener) create(ctx context.Context) (endpoint, error) {
	var ep endpoint
	body, _ := json.Marshal(map[string]any{"mode": "listen", "events": l.cfg.Events})
	res, err := l.do(ctx, http.MethodPost, "/v1/webhook-endpoints", bytes.NewReader(body), nil)
	if err != nil {
		return ep, fmt.Errorf("creating the listener endpoint: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return ep, fmt.Errorf("creating the listener endpoint: %w", problem(res))
	}
	if err := json.NewDecoder(res.Body).Decode(&ep); err != nil || ep.ID == "" || ep.SigningSecret == "" {
		return ep, fmt.Errorf("creating the listener endpoint: the server's answer has no id or signing secret (%v)", err)
	}
	return ep, nil
}

func (l *listener) delete(ctx context.Context, id string) error {
	res, err := l.do(ctx, http.MethodDelete, "/v1/webhook-endpoints/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusNoContent && res.StatusCode != http.StatusNotFound {
		return problem(res)
	}
	return nil
}

// do sends a request to the server with the key.
func (l *listener) do(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, l.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+l.cfg.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return l.cfg.Server.Do(req)
}

// follow holds the stream of ep, opening it again after a loss, until
// ctx ends (nil) or the endpoint is gone or refused (an error).
func (l *listener) follow(ctx context.Context, ep endpoint) error {
	last, ready := "", false
	wait := l.cfg.Backoff
	for {
		res, err := l.open(ctx, ep.ID, last)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			if !ready {
				ready = true
				fmt.Fprintf(l.cfg.Out, "Ready. Forwarding %s to %s. Signing secret: %s\n", strings.Join(l.cfg.Events, ","), l.cfg.ForwardTo, ep.SigningSecret)
			} else {
				fmt.Fprintln(l.cfg.Log, "plinth listen: reconnected")
			}
			wait = l.cfg.Backoff
			err = l.forwardAll(ctx, res.Body, &last)
			res.Body.Close()
			if ctx.Err() != nil {
				return nil
			}
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		if err == nil {
			err = errors.New("the server ended the stream")
		}
		fmt.Fprintf(l.cfg.Log, "plinth listen: stream lost (%v); reconnecting in %s\n", err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, l.cfg.MaxBackoff)
	}
}

// fatalError is a refusal no reconnection would change.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

// open opens the stream, from after the delivery number last when it is
// set.
func (l *listener) open(ctx context.Context, id, last string) (*http.Response, error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	if last != "" {
		h.Set("Last-Event-ID", last)
	}
	res, err := l.do(ctx, http.MethodGet, "/v1/webhook-endpoints/"+url.PathEscape(id)+"/listen", nil, h)
	if err != nil {
		return nil, err
	}
	if res.StatusCode == http.StatusOK {
		return res, nil
	}
	defer res.Body.Close()
	err = problem(res)
	switch {
	case res.StatusCode == http.StatusNotFound:
		return nil, &fatalError{ErrDeleted}
	case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500:
		return nil, err
	}
	return nil, &fatalError{err}
}

// delivery is the data of a delivery event.
type delivery struct {
	ID      string            `json:"id"`
	Topic   string            `json:"topic"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// forwardAll forwards each delivery of the stream in order, keeping in
// last the id of the latest event, until the stream ends.
func (l *listener) forwardAll(ctx context.Context, stream io.Reader, last *string) error {
	for ev, err := range sse.Read(stream, &sse.ReadConfig{MaxEventSize: maxEvent}) {
		if err != nil {
			return err
		}
		switch ev.Type {
		case "delivery":
			var d delivery
			if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
				return fmt.Errorf("a delivery event that is not JSON: %w", err)
			}
			fmt.Fprintf(l.cfg.Out, "%s %s %s -> %s\n", time.Now().Format("15:04:05"), d.Topic, d.ID, l.forward(ctx, d))
			*last = ev.LastEventID
		case "error":
			var e struct{ Code, Message string }
			_ = json.Unmarshal([]byte(ev.Data), &e)
			if e.Code == "not_found" {
				return &fatalError{ErrDeleted}
			}
			return fmt.Errorf("%s: %s", e.Code, e.Message)
		}
	}
	return nil
}

// forward POSTs d to the receiver and says how it answered: its status
// code, or why it did not.
func (l *listener) forward(ctx context.Context, d delivery) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.ForwardTo, strings.NewReader(d.Body))
	if err != nil {
		return "error: " + err.Error()
	}
	for k, v := range d.Headers {
		req.Header.Set(k, v)
	}
	res, err := l.cfg.Receiver.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return strconv.Itoa(res.StatusCode)
}

// problem is the server's refusal as the CLI prints it: the status, the
// code and detail of its problem+json, and the invalid fields.
func problem(res *http.Response) error {
	var p struct {
		Code   string              `json:"code"`
		Detail string              `json:"detail"`
		Errors map[string][]string `json:"errors"`
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if json.Unmarshal(b, &p) != nil || p.Code == "" {
		return fmt.Errorf("the server answered %s", res.Status)
	}
	msg := fmt.Sprintf("%d %s: %s", res.StatusCode, p.Code, p.Detail)
	for _, f := range slices.Sorted(maps.Keys(p.Errors)) {
		msg += "; " + f + " " + strings.Join(p.Errors[f], ", ")
	}
	return errors.New(msg)
}

// noRedirects is c refusing redirects: the server's key goes to PLINTH_URL
// alone, and a receiver's redirect is its answer, as a real delivery
// never follows one.
func noRedirects(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}
