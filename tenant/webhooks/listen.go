package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	sse "github.com/tmaxmax/go-sse"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/outbox"
)

// ListenLease is how long a listener stays subscribed after its stream
// last renewed it: Emit delivers to it only until then. A stream renews
// it every ListenRenew and ends it when its client goes, so a listener
// whose client vanished without a word stops receiving within the lease.
const (
	ListenLease = 2 * time.Minute
	ListenRenew = time.Minute
)

// listenHeartbeat is the interval of a stream's comment lines, which keep
// an idle connection (and proxies) open.
const listenHeartbeat = 15 * time.Second

// MaxListenStreamsPerProject is how many listener streams one project may
// hold open on one process at once; one more is 429 rate_limited.
const MaxListenStreamsPerProject = 10

// Types of a listener stream's events: one delivery, or the error that
// ends the stream.
const (
	EventDelivery = "delivery"
	EventError    = "error"
)

// ErrorBody is the data of an error event.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// StreamDelivery is the data of a delivery event: what plinth listen
// POSTs to the local receiver, the headers and body exactly as a
// delivery to an http endpoint carries them.
type StreamDelivery struct {
	ID      string            `json:"id"`
	Topic   string            `json:"topic"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// ErrNotListener refuses the stream of an endpoint that is not a listener.
var ErrNotListener = httpapi.Conflict(httpapi.CodeConflict,
	"this endpoint delivers over HTTP (mode http): only an endpoint of mode listen has a stream")

// listen serves GET /webhook-endpoints/{id}/listen as Server-Sent Events:
// while it is open the listener is subscribed (listening_until is
// renewed), and each delivery handed to it becomes a delivery event
// (StreamDelivery) whose id is its number in the listener's sequence;
// Last-Event-ID resumes after one (what was handed to the listener while
// no stream was open, within its lease). The signature is made as the
// event is sent, with the endpoint's secrets, by the function the
// delivery worker signs with.
//
// Like a job's stream, it reads the database only when the hub wakes it
// (a delivery handed to the listener on any instance, or the hub's
// connection back after a loss), and sends heartbeat comments meanwhile.
func (h *Service) listen(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	ctx := r.Context()
	eid, err := endpointID(r, "id")
	if err != nil {
		return err
	}
	if !h.listeners.Take(s.Project.ID) {
		return httpapi.RateLimited(5, fmt.Sprintf("this project already has %d listener streams open; close one and retry", MaxListenStreamsPerProject))
	}
	defer h.listeners.Give(s.Project.ID)
	wakeups, stop := h.hub.Subscribe(eid) // before the hold, so no delivery slips between
	defer stop()
	held, err := tenant.TxV(ctx, s, func(tx pgx.Tx) (holding, error) { return holdListener(ctx, tx, eid, ListenLease) })
	if err != nil {
		return err
	}
	if held.mode != outbox.ModeListen {
		return ErrNotListener
	}
	until := held.until
	defer func() {
		// The client went: Emit delivers to the listener no more, unless
		// another stream holds it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.Tx(ctx, func(tx pgx.Tx) error { return releaseListener(ctx, tx, eid, until) }); err != nil {
			httpapi.Logger(ctx).WarnContext(ctx, "webhook listener not released; it lapses with its lease", "endpoint", eid, "err", err)
		}
	}()

	sess, err := sse.Upgrade(w, r)
	if err != nil {
		return err // the response writer cannot flush
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	last := held.seq
	if n, err := strconv.ParseInt(sess.LastEventID.String(), 10, 64); err == nil && n >= 0 && n < last {
		last = n
	}
	if err := sess.Flush(); err != nil { // headers out: the client knows it is listening
		return nil
	}

	heartbeat := time.NewTicker(listenHeartbeat)
	defer heartbeat.Stop()
	renew := time.NewTicker(ListenRenew)
	defer renew.Stop()
	for {
		for {
			ds, secrets, err := handedAfter(ctx, s.Reader(), eid, last, 100)
			if err != nil {
				h.streamFailed(ctx, sess, eid, err)
				return nil
			}
			signing, err := h.secrets.Signing(eid, secrets.current, secrets.previous, secrets.previousValid)
			if err != nil && len(ds) > 0 {
				h.streamFailed(ctx, sess, eid, err)
				return nil
			}
			for _, d := range ds {
				if err := send(sess, d, signing); err != nil {
					return nil
				}
				last = d.seq
			}
			if len(ds) > 0 && sess.Flush() != nil {
				return nil
			}
			if len(ds) < 100 {
				break
			}
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-h.hub.Done():
				return nil
			case <-wakeups:
				break wait
			case <-renew.C:
				err := s.Tx(ctx, func(tx pgx.Tx) error {
					var err error
					until, err = renewListener(ctx, tx, eid, ListenLease)
					return err
				})
				if err != nil {
					h.streamFailed(ctx, sess, eid, err)
					return nil
				}
			case <-heartbeat.C:
				m := &sse.Message{}
				m.AppendComment("heartbeat")
				if sess.Send(m) != nil || sess.Flush() != nil {
					return nil
				}
			}
		}
	}
}

// send writes the delivery event of d, signed now with secrets.
func send(sess *sse.Session, d handed, secrets []string) error {
	body := []byte(d.body)
	hdr := outbox.Headers(d.id, d.topic, body, time.Now(), secrets...)
	data := StreamDelivery{ID: d.id, Topic: d.topic, Headers: make(map[string]string, len(hdr)), Body: d.body}
	for k := range hdr {
		data.Headers[k] = hdr.Get(k)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	m := &sse.Message{Type: sse.Type(EventDelivery), ID: sse.ID(strconv.FormatInt(d.seq, 10))}
	m.AppendData(string(b))
	return sess.Send(m)
}

// streamFailed ends a stream that can go on no longer with an error event
// {code, message}, unless its client has gone: the endpoint was deleted
// (not_found: plinth listen then stops), its secret does not decrypt
// (conflict: rotate it), or a read failed (reconnect to resume).
func (h *Service) streamFailed(ctx context.Context, sess *sse.Session, eid string, err error) {
	if ctx.Err() != nil {
		return
	}
	var body ErrorBody
	switch {
	case errors.Is(err, httpapi.ErrNotFound):
		body = ErrorBody{Code: httpapi.CodeNotFound, Message: "the listener endpoint was deleted"}
	case errors.Is(err, outbox.ErrSealed):
		body = ErrorBody{Code: httpapi.CodeConflict, Message: "the endpoint's signing secret does not decrypt (the server secret changed): rotate it"}
	default:
		httpapi.Logger(ctx).ErrorContext(ctx, "webhook listener stream failed", "endpoint", eid, "err", err)
		body = ErrorBody{Code: httpapi.CodeInternal, Message: "the stream failed; reconnect to resume"}
	}
	b, _ := json.Marshal(body)
	m := &sse.Message{Type: sse.Type(EventError)}
	m.AppendData(string(b))
	if sess.Send(m) == nil {
		_ = sess.Flush()
	}
}
