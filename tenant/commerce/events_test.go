package commerce_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
)

// eventRecorder reads the events the pillar emits through the webhook
// outbox: an endpoint subscribed to the commerce topics makes every
// emitted event a stored envelope, read here in emission order.
type eventRecorder struct {
	f    *fixture
	seen int
}

var commerceTopics = []string{"order.created", "order.paid", "order.fulfilled", "order.cancelled", "order.refunded", "connect.account_updated"}

// recordEvents subscribes an endpoint to the commerce topics; events
// emitted from now on are recorded.
func (f *fixture) recordEvents(t *testing.T) *eventRecorder {
	t.Helper()
	webhooktest.Endpoint(t, f.env, f.p.Key, "http://127.0.0.1:9/hook", commerceTopics...)
	r := &eventRecorder{f: f}
	r.seen = len(r.all(t))
	return r
}

type envelope struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Created int64          `json:"created"`
	Data    map[string]any `json:"data"`
}

func (r *eventRecorder) all(t *testing.T) []envelope {
	t.Helper()
	var out []envelope
	r.f.tx(t, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT payload FROM webhook_events ORDER BY created_at, id`)
		if err != nil {
			return err
		}
		payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, p := range payloads {
			var e envelope
			require.NoError(t, json.Unmarshal([]byte(p), &e))
			out = append(out, e)
		}
		return nil
	})
	return out
}

// next returns the next event not yet seen.
func (r *eventRecorder) next(t *testing.T) envelope {
	t.Helper()
	all := r.all(t)
	require.Greater(t, len(all), r.seen, "no further event was emitted")
	e := all[r.seen]
	r.seen++
	return e
}

// expect asserts the next event is topic about the order, as it stood
// after the change (the Order resource of GET /orders/{id}).
func (r *eventRecorder) expect(t *testing.T, topic string, orderID int64, status, payment string) {
	t.Helper()
	e := r.next(t)
	require.Equal(t, topic, e.Type, "event %s: %v", e.ID, e.Data)
	assert.Equal(t, float64(orderID), e.Data["id"])
	assert.Equal(t, status, e.Data["status"], "status in %s", topic)
	assert.Equal(t, payment, e.Data["payment_status"], "payment_status in %s", topic)
	want := r.f.order(t, orderID)
	assert.ElementsMatch(t, keys(want), keys(e.Data), "the event carries the Order resource")
	assert.Equal(t, want["items"], e.Data["items"])
}

// expectConnect asserts the next event is connect.account_updated with data.
func (r *eventRecorder) expectConnect(t *testing.T, data map[string]any) {
	t.Helper()
	e := r.next(t)
	require.Equal(t, "connect.account_updated", e.Type)
	assert.Equal(t, data, e.Data)
}

// none asserts no event was emitted since the last one seen.
func (r *eventRecorder) none(t *testing.T) {
	t.Helper()
	all := r.all(t)
	if len(all) > r.seen {
		t.Fatalf("unexpected event %s %v", all[r.seen].Type, all[r.seen].Data)
	}
}
