package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/tenant/webhooks/signature"
)

// stream is an open listener stream: its events arrive on events, and
// close ends it as a client going away does.
type stream struct {
	events <-chan sse.Event
	close  func()
}

// listenStream opens the stream of a listen endpoint (from after the
// delivery number lastID when it is set) and requires a 200.
func listenStream(t *testing.T, env *apitest.Env, key, endpoint, lastID string) stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", env.URL+"/v1/webhook-endpoints/"+endpoint+"/listen", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	events := make(chan sse.Event, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(events)
		for ev, err := range sse.Read(res.Body, nil) {
			if err != nil {
				return
			}
			events <- ev
		}
	}()
	var closed bool
	s := stream{events: events, close: func() {
		if !closed {
			closed = true
			cancel()
			res.Body.Close()
			<-done
		}
	}}
	t.Cleanup(s.close)
	return s
}

// streamed is the data of a delivery event.
type streamed struct {
	ID      string            `json:"id"`
	Topic   string            `json:"topic"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// next returns the stream's next delivery event and its SSE id.
func (s stream) next(t *testing.T) (streamed, string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			require.True(t, ok, "the stream ended")
			require.Equal(t, "delivery", ev.Type, ev.Data)
			var d streamed
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &d))
			return d, ev.LastEventID
		case <-timeout:
			t.Fatal("no delivery event within 20 s")
		}
	}
}

// quiet requires that the stream sends no delivery for a while.
func (s stream) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected event %s: %s", ev.Type, ev.Data)
		}
	case <-time.After(d):
	}
}

// listenEndpoint creates a listen endpoint of events and returns its id
// and signing secret.
func listenEndpoint(t *testing.T, env *apitest.Env, key string, events ...string) (string, string) {
	t.Helper()
	m := env.Do("POST", "/v1/webhook-endpoints", key, map[string]any{"mode": "listen", "events": events}).Expect(t, 201).JSON(t)
	require.Equal(t, "listen", m["mode"])
	require.Contains(t, m, "url")
	require.Nil(t, m["url"])
	return m["id"].(string), m["signing_secret"].(string)
}

// held reads a listener's listening_until against now: whether Emit
// delivers to it.
func held(t *testing.T, p *apitest.Project, endpoint string) bool {
	t.Helper()
	var h bool
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT COALESCE(listening_until > now(), false) FROM webhook_endpoints WHERE id = $1`, endpoint).Scan(&h)
	}))
	return h
}

// count runs a count in p's schema.
func count(t *testing.T, p *apitest.Project, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), sql, args...).Scan(&n)
	}))
	return n
}

// TestListenStream: a listen endpoint held by its stream gets the events
// of its topics as delivery events whose headers and body are a real
// delivery's, verifying with the endpoint's secret; each is recorded
// succeeded without a status code and charged as a delivery; a stream
// opened again with Last-Event-ID gets what was handed to the listener
// after that event, and without it, nothing older.
func TestListenStream(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	ep, secret := listenEndpoint(t, env, p.Key, "image.generated", "content.changed")
	list := env.Do("GET", "/v1/webhook-endpoints", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "listen", list["data"].([]any)[0].(map[string]any)["mode"])
	require.False(t, held(t, p, ep), "no stream holds it yet")

	s := listenStream(t, env, p.Key, ep, "")
	require.True(t, held(t, p, ep), "the open stream holds it")
	webhooktest.Emit(t, env, p, "image.generated", map[string]any{"key": "hero"})
	d, seq := s.next(t)
	require.Equal(t, "1", seq)
	require.True(t, id.Valid("whd_", d.ID), d.ID)
	require.Equal(t, "image.generated", d.Topic)
	require.Equal(t, "image.generated", d.Headers["X-Service-Event"])
	require.Equal(t, d.ID, d.Headers["X-Service-Delivery"])
	require.Equal(t, "application/json", d.Headers["Content-Type"])
	require.Equal(t, "Service-Webhooks/1.0", d.Headers["User-Agent"])
	require.NoError(t, signature.Verify(secret, d.Headers["X-Service-Signature"], []byte(d.Body), time.Now()))
	require.ErrorIs(t, signature.Verify("whsec_"+strings.Repeat("x", 32), d.Headers["X-Service-Signature"], []byte(d.Body), time.Now()), signature.ErrNoMatch)
	var env1 struct {
		ID   string         `json:"id"`
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(d.Body), &env1))
	require.Equal(t, "image.generated", env1.Type)
	require.Equal(t, "hero", env1.Data["key"])

	// A write through the API emits as it does for any endpoint.
	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	d2, seq2 := s.next(t)
	require.Equal(t, "2", seq2)
	require.Equal(t, "content.changed", d2.Topic)
	require.NoError(t, signature.Verify(secret, d2.Headers["X-Service-Signature"], []byte(d2.Body), time.Now()))

	ds := deliveries(t, env, p.Key, ep)
	require.Len(t, ds, 2)
	for _, x := range ds {
		require.Equal(t, "succeeded", x["status"], x)
		require.Equal(t, float64(1), x["attempts"], x)
		require.Nil(t, x["last_status_code"], x)
		require.Nil(t, x["last_error"], x)
	}
	if n, sum := ledger(t, p, "live"); n != 2 || sum != 4 {
		t.Fatalf("charges: %d, sum %d; want 2 deliveries of 2", n, sum)
	}
	got := env.Do("GET", "/v1/webhook-endpoints/"+ep, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "succeeded", got["last_delivery_status"])

	// The client goes: the listener is no longer held.
	s.close()
	require.Eventually(t, func() bool { return !held(t, p, ep) }, 10*time.Second, 20*time.Millisecond)

	// A redelivery is handed to the listener even so; a stream resuming
	// after event 2 gets it, one opened afresh does not.
	env.Do("POST", "/v1/webhook-endpoints/"+ep+"/deliveries/"+d.ID+"/redeliver", p.Key, nil).Expect(t, 202)
	require.Eventually(t, func() bool {
		return count(t, p, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND forward_seq = 3`, ep) == 1
	}, 20*time.Second, 20*time.Millisecond)
	fresh := listenStream(t, env, p.Key, ep, "")
	fresh.quiet(t, 300*time.Millisecond)
	fresh.close()
	resumed := listenStream(t, env, p.Key, ep, "2")
	d3, seq3 := resumed.next(t)
	require.Equal(t, "3", seq3)
	require.NotEqual(t, d.ID, d3.ID)
	require.Equal(t, d.Body, d3.Body, "the same frozen envelope")
	require.NoError(t, signature.Verify(secret, d3.Headers["X-Service-Signature"], []byte(d3.Body), time.Now()))
}

// TestListenNotHeld: a listen endpoint no stream holds, never opened or
// closed since, is subscribed to nothing: an event of its topics,
// emitted in a transaction that reads the endpoints as it begins (an API
// write) or bets that none wants it (webhooktest.Emit), writes no event
// and no delivery.
func TestListenNotHeld(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	never, _ := listenEndpoint(t, env, p.Key, "content.changed")
	closed, _ := listenEndpoint(t, env, p.Key, "content.changed")
	s := listenStream(t, env, p.Key, closed, "")
	require.True(t, held(t, p, closed))
	s.close()
	require.Eventually(t, func() bool { return !held(t, p, closed) }, 10*time.Second, 20*time.Millisecond)

	env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	webhooktest.Emit(t, env, p, "content.changed", map[string]any{"key": "hero.title"})
	require.Zero(t, count(t, p, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id IN ($1, $2)`, never, closed))
	require.Zero(t, count(t, p, `SELECT count(*) FROM webhook_events`), "an event nobody wants is not stored")
	require.Empty(t, deliveries(t, env, p.Key, never))
	if n, _ := ledger(t, p, "live"); n != 0 {
		t.Fatalf("%d delivery charges", n)
	}
}

// TestListenRefusals: the stream is only a listen endpoint's, of the
// key's own project, for a key that may write endpoints; a listen
// endpoint takes no URL, and an http one still needs one.
func TestListenRefusals(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ep, _ := listenEndpoint(t, env, p.Key, "order.paid")
	hook := env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": "https://hooks.example.com/a", "events": []string{"order.paid"}}).Expect(t, 201).JSON(t)
	require.Equal(t, "http", hook["mode"])
	require.Equal(t, "https://hooks.example.com/a", hook["url"])
	q := env.NewProject("build")

	for _, c := range []struct {
		name   string
		method string
		path   string
		key    string
		body   any
		status int
		code   string
		field  string
	}{
		{"stream of an http endpoint", "GET", "/" + hook["id"].(string) + "/listen", p.Key, nil, 409, "conflict", ""},
		{"stream of another project's endpoint", "GET", "/" + ep + "/listen", q.Key, nil, 404, "not_found", ""},
		{"stream of an unknown endpoint", "GET", "/" + id.New("whe_") + "/listen", p.Key, nil, 404, "not_found", ""},
		{"stream with a read-only key", "GET", "/" + ep + "/listen", p.NewKey(false, "webhooks:read"), nil, 403, "forbidden", ""},
		{"unknown mode", "POST", "", p.Key, map[string]any{"mode": "poll", "events": []string{"order.paid"}}, 422, "validation_failed", "mode"},
		{"listen with a url", "POST", "", p.Key, map[string]any{"mode": "listen", "url": "https://hooks.example.com/b", "events": []string{"order.paid"}}, 422, "validation_failed", "url"},
		{"http without a url", "POST", "", p.Key, map[string]any{"mode": "http", "events": []string{"order.paid"}}, 400, "bad_request", ""},
		{"a url patched onto a listener", "PATCH", "/" + ep, p.Key, map[string]any{"url": "https://hooks.example.com/c"}, 422, "validation_failed", "url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := env.Do(c.method, "/v1/webhook-endpoints"+c.path, c.key, c.body).Problem(t, c.status, c.code)
			if c.field != "" {
				if errs, _ := m["errors"].(map[string]any); errs[c.field] == nil {
					t.Fatalf("errors lack %s: %v", c.field, m)
				}
			}
		})
	}
	require.False(t, held(t, p, ep), "a refused stream holds nothing")
	got := env.Do("GET", "/v1/webhook-endpoints/"+ep, p.Key, nil).Expect(t, 200).JSON(t)
	require.Nil(t, got["url"], "the refused PATCH changed nothing")
	// A listener's other fields change as any endpoint's do.
	upd := env.Do("PATCH", "/v1/webhook-endpoints/"+ep, p.Key, map[string]any{"events": []string{"order.created"}}).Expect(t, 200).JSON(t)
	require.Equal(t, []any{"order.created"}, upd["events"])
	require.Equal(t, "listen", upd["mode"])
}
