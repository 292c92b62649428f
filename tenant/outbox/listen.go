package outbox

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/tenant/webhooks/signature"
)

// Modes of an endpoint: http endpoints are POSTed to; a listen endpoint
// (plinth listen) has no URL, and its deliveries are handed to the stream
// a developer's CLI holds, which forwards them to a receiver on their own
// machine (the server may not reach it).
const (
	ModeHTTP   = "http"
	ModeListen = "listen"
)

// ListenChannel is the NOTIFY channel of deliveries handed to listeners;
// the payload is the endpoint id. A notification only wakes the
// endpoint's streams, on any instance (the jobs hub listens to it beside
// the jobs' own): they read what was handed to it from the database, so
// a coalesced or lost notification loses nothing.
const ListenChannel = "plinth_listen"

// OutcomeForwarded is the outcome WorkerConfig.Attempted is told of an
// attempt handed to a listener rather than sent.
const OutcomeForwarded = "forwarded"

// Headers are the headers of an attempt of delivery deliveryID, an event
// of topic whose body is payload, signed at now with secrets (the
// current one first): what the worker sends a receiver, and what a
// listener's stream hands its CLI to send, so both are signed by this one
// function.
func Headers(deliveryID, topic string, payload []byte, now time.Time, secrets ...string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(HeaderEvent, topic)
	h.Set(HeaderDelivery, deliveryID)
	h.Set(signature.Header, signature.Sign(now, payload, secrets...))
	return h
}

// Signing opens the secrets an endpoint signs with: its current one and,
// while it is in its rotation window (previousValid), the one it
// replaced. ErrSealed when the current one does not open (the server
// secret changed); a previous one that does not open is left out.
func (s *Secrets) Signing(endpointID string, current, previous []byte, previousValid bool) ([]string, error) {
	cur, err := s.Open(endpointID, current)
	if err != nil {
		return nil, err
	}
	secrets := []string{cur}
	if previousValid && previous != nil {
		if prev, err := s.Open(endpointID, previous); err == nil {
			secrets = append(secrets, prev)
		}
	}
	return secrets, nil
}

// forwarded is a delivery handed to a listener.
type forwarded struct{ delivery, endpoint string }

// forward numbers the deliveries handed to listeners, per endpoint, and
// wakes their streams when tx commits. The endpoint rows are locked (in
// id order, as lease and write lock them) from the numbering to the
// commit, so the numbers of an endpoint commit in order: a stream that
// read up to number n and reads what is after it misses none.
func forward(ctx context.Context, tx pgx.Tx, fs []forwarded) error {
	if len(fs) == 0 {
		return nil
	}
	ds, eps := make([]string, len(fs)), make([]string, len(fs))
	for i, f := range fs {
		ds[i], eps[i] = f.delivery, f.endpoint
	}
	_, err := tx.Exec(ctx, `WITH f AS (
			SELECT d, e, row_number() OVER (PARTITION BY e ORDER BY d) AS k FROM unnest($1::text[], $2::text[]) AS t (d, e)),
		n AS (SELECT e, count(*) AS n FROM f GROUP BY e),
		l AS (SELECT ep.id, n.n FROM webhook_endpoints ep JOIN n ON n.e = ep.id ORDER BY ep.id FOR NO KEY UPDATE OF ep),
		seq AS (UPDATE webhook_endpoints ep SET forwarded_seq = ep.forwarded_seq + l.n FROM l WHERE ep.id = l.id
			RETURNING ep.id, ep.forwarded_seq - l.n AS base),
		numbered AS (UPDATE webhook_deliveries d SET forward_seq = seq.base + f.k FROM f JOIN seq ON seq.id = f.e WHERE d.id = f.d)
		SELECT pg_notify($3, seq.id) FROM seq`, ds, eps, ListenChannel)
	return err
}
