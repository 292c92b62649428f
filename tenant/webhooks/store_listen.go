package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// holding is a listener as a stream took hold of it.
type holding struct {
	mode string
	// until is listening_until as the stream set it; seq is the number of
	// the last delivery handed to the listener (none are after it yet).
	until time.Time
	seq   int64
}

// holdListener makes the endpoint a held listener for lease from now
// (Emit delivers to it from the commit) and returns it; for an endpoint
// of another mode it changes nothing and returns the mode alone.
func holdListener(ctx context.Context, tx pgx.Tx, id string, lease time.Duration) (_ holding, err error) {
	defer httpapi.Wrap(&err, "holdListener(%s)", id)
	var h holding
	var until *time.Time
	var seq *int64
	err = tx.QueryRow(ctx, `WITH held AS (
			UPDATE webhook_endpoints SET listening_until = now() + $2::interval WHERE id = $1 AND mode = 'listen'
			RETURNING listening_until, forwarded_seq)
		SELECT ep.mode, held.listening_until, held.forwarded_seq FROM webhook_endpoints ep LEFT JOIN held ON true WHERE ep.id = $1`,
		id, lease).Scan(&h.mode, &until, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, httpapi.ErrNotFound
	}
	if until != nil && seq != nil {
		h.until, h.seq = *until, *seq
	}
	return h, err
}

// renewListener holds the listener for lease from now again and returns
// the new listening_until; ErrNotFound once the endpoint is deleted.
func renewListener(ctx context.Context, tx pgx.Tx, id string, lease time.Duration) (_ time.Time, err error) {
	defer httpapi.Wrap(&err, "renewListener(%s)", id)
	var until time.Time
	err = tx.QueryRow(ctx, `UPDATE webhook_endpoints SET listening_until = now() + $2::interval WHERE id = $1 RETURNING listening_until`,
		id, lease).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return until, httpapi.ErrNotFound
	}
	return until, err
}

// releaseListener ends the hold a stream set (until), unless another
// stream of the endpoint has renewed it since: that one still holds it.
func releaseListener(ctx context.Context, tx pgx.Tx, id string, until time.Time) (err error) {
	defer httpapi.Wrap(&err, "releaseListener(%s)", id)
	_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET listening_until = now() WHERE id = $1 AND listening_until = $2`, id, until)
	return err
}

// handed is a delivery handed to a listener, with what signs it.
type handed struct {
	id    string
	seq   int64
	topic string
	body  string
}

// listenerSecrets are the sealed secrets a listener's deliveries are
// signed with when the stream hands them on.
type listenerSecrets struct {
	current, previous []byte
	previousValid     bool
}

// handedAfter reads up to limit deliveries handed to the listener after
// number seq, in order, and the listener's secrets as they are now;
// ErrNotFound once the endpoint is deleted.
func handedAfter(ctx context.Context, tx tenant.Querier, id string, seq int64, limit int) (_ []handed, _ listenerSecrets, err error) {
	defer httpapi.Wrap(&err, "handedAfter(%s, %d)", id, seq)
	var ls listenerSecrets
	rows, err := tx.Query(ctx, `SELECT ep.secret, ep.previous_secret, COALESCE(ep.previous_until > now(), false), d.id, d.forward_seq, e.type, e.payload
		FROM webhook_endpoints ep
			LEFT JOIN (webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id) ON d.endpoint_id = ep.id AND d.forward_seq > $2
		WHERE ep.id = $1 ORDER BY d.forward_seq LIMIT $3`, id, seq, limit)
	if err != nil {
		return nil, ls, err
	}
	defer rows.Close()
	var out []handed
	found := false
	for rows.Next() {
		var did, topic, body *string
		var n *int64
		if err := rows.Scan(&ls.current, &ls.previous, &ls.previousValid, &did, &n, &topic, &body); err != nil {
			return nil, ls, err
		}
		found = true
		if did != nil {
			out = append(out, handed{id: *did, seq: *n, topic: *topic, body: *body})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, ls, err
	}
	if !found {
		return nil, ls, httpapi.ErrNotFound
	}
	return out, ls, nil
}
