package booking_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/tenant/booking"
)

// eventWatch observes the booking events of a project through its outbox:
// with an endpoint subscribed to the booking topics, every emitted event is
// a webhook_events row holding the frozen envelope (no worker runs in these
// tests, so nothing is sent).
type eventWatch struct {
	p    *apitest.Project
	seen int
}

type event struct {
	Type     string
	Envelope struct {
		ID      string         `json:"id"`
		Type    string         `json:"type"`
		Created int64          `json:"created"`
		Data    map[string]any `json:"data"`
	}
}

func watchEvents(t *testing.T, env *apitest.Env, p *apitest.Project) *eventWatch {
	t.Helper()
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": "http://127.0.0.1:9/booking-hook",
		"events": []string{booking.TopicConfirmed, booking.TopicCancelled, booking.TopicCompleted}}).Expect(t, 201)
	return &eventWatch{p: p}
}

// next returns the events recorded since the last call, oldest first.
func (w *eventWatch) next(t *testing.T) []event {
	t.Helper()
	var out []event
	require.NoError(t, w.p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT type, payload FROM webhook_events ORDER BY created_at, id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e event
			var payload string
			if err := rows.Scan(&e.Type, &payload); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(payload), &e.Envelope); err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	}))
	out, w.seen = out[w.seen:], len(out)
	return out
}

// expect asserts that exactly one event was recorded since the last check:
// topic, for booking id, whose data is the booking in status.
func (w *eventWatch) expect(t *testing.T, topic string, id int64, status string) map[string]any {
	t.Helper()
	evs := w.next(t)
	require.Len(t, evs, 1, "one event expected: %s", topic)
	e := evs[0]
	require.Equal(t, topic, e.Type)
	require.Equal(t, topic, e.Envelope.Type)
	require.True(t, strings.HasPrefix(e.Envelope.ID, "evt_"), e.Envelope.ID)
	require.NotZero(t, e.Envelope.Created)
	require.EqualValues(t, id, e.Envelope.Data["id"])
	require.Equal(t, status, e.Envelope.Data["status"])
	require.ElementsMatch(t, []string{"id", "service_id", "start_at", "end_at", "status", "customer", "notes", "created_at", "updated_at"}, sortedKeys(e.Envelope.Data))
	return e.Envelope.Data
}

// none asserts that no event was recorded since the last check.
func (w *eventWatch) none(t *testing.T) {
	t.Helper()
	require.Empty(t, w.next(t))
}

// The booking events reach a subscribed endpoint as signed deliveries whose
// data is the booking as the API showed it after the change.
func TestBookingEventsDelivered(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env, p := setup(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()))
	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, booking.TopicConfirmed, booking.TopicCancelled, booking.TopicCompleted)
	rc.SetSecret(secret)
	sid := newService(t, env, p.Key, map[string]any{"name": "Massage"})

	// a visitor books (auto-confirmed), the admin cancels
	confirmed := env.Send(apitest.Request{Method: "POST", Path: "/v1/public/bookings", Header: map[string]string{"X-Service-Project-Key": p.ID},
		Body: bookingBody(sid, at(dayUTC(2), "09:00"))}).Expect(t, 201).JSON(t)
	cancelled := env.Do("POST", fmt.Sprintf("/v1/bookings/%v/cancel", confirmed["id"]), p.Key, nil).Expect(t, 200).JSON(t)

	got := map[string]map[string]any{}
	for _, r := range rc.WaitN(t, 30*time.Second, 2) {
		require.NoError(t, r.Verified)
		var env struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &env))
		require.Equal(t, env.Type, r.Header.Get("X-Service-Event"))
		got[env.Type] = env.Data
	}
	require.Equal(t, map[string]map[string]any{booking.TopicConfirmed: confirmed, booking.TopicCancelled: cancelled}, got)
}
