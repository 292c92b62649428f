package booking_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every transition and every refused transition, with the event each one
// fires (or does not).
func TestTransitions(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	ev := watchEvents(t, env, p)
	sid := newService(t, env, p.Key, map[string]any{"name": "Consultation", "duration_minutes": 60})
	d := dayUTC(2)
	slot := 0
	create := func() int64 {
		slot++
		start := at(d, fmt.Sprintf("%02d:00", 8+slot))
		return int64(env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, start)).Expect(t, 201).JSON(t)["id"].(float64))
	}
	act := func(id int64, action string) map[string]any {
		return env.Do("POST", fmt.Sprintf("/v1/bookings/%d/%s", id, action), p.Key, nil).Expect(t, 200).JSON(t)
	}
	refuse := func(id int64, action, detail string) {
		t.Helper()
		m := env.Do("POST", fmt.Sprintf("/v1/bookings/%d/%s", id, action), p.Key, nil).Problem(t, 409, "conflict")
		require.Equal(t, detail, m["detail"])
	}
	status := func(id int64) string {
		return env.Do("GET", fmt.Sprintf("/v1/bookings/%d", id), p.Key, nil).Expect(t, 200).JSON(t)["status"].(string)
	}

	// auto_confirm on: created confirmed, booking.confirmed fires
	auto := create()
	require.Equal(t, "confirmed", status(auto))
	ev.expect(t, "booking.confirmed", auto, "confirmed")

	// auto_confirm off: created pending, no event
	env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"auto_confirm": false}).Expect(t, 200)
	a := create()
	require.Equal(t, "pending", status(a))
	ev.none(t)

	// pending → confirmed → completed
	refuse(a, "complete", "the booking is pending; only a confirmed booking can be completed")
	ev.none(t)
	b := act(a, "confirm")
	require.Equal(t, "confirmed", b["status"])
	created, _ := time.Parse(time.RFC3339, b["created_at"].(string))
	updated, _ := time.Parse(time.RFC3339, b["updated_at"].(string))
	require.True(t, updated.After(created), "updated_at moves with the status")
	ev.expect(t, "booking.confirmed", a, "confirmed")
	refuse(a, "confirm", "the booking is confirmed; only a pending booking can be confirmed")
	ev.none(t)
	b = act(a, "complete")
	require.Equal(t, "completed", b["status"])
	ev.expect(t, "booking.completed", a, "completed")
	refuse(a, "confirm", "the booking is completed; only a pending booking can be confirmed")
	refuse(a, "cancel", "the booking is completed; only a pending or confirmed booking can be cancelled")
	refuse(a, "complete", "the booking is completed; only a confirmed booking can be completed")
	ev.none(t)
	require.Equal(t, "completed", status(a))

	// pending → cancelled
	c := create()
	b = act(c, "cancel")
	require.Equal(t, "cancelled", b["status"])
	ev.expect(t, "booking.cancelled", c, "cancelled")
	refuse(c, "confirm", "the booking is cancelled; only a pending booking can be confirmed")
	refuse(c, "cancel", "the booking is cancelled; only a pending or confirmed booking can be cancelled")
	refuse(c, "complete", "the booking is cancelled; only a confirmed booking can be completed")
	ev.none(t)

	// confirmed → cancelled
	b = act(auto, "cancel")
	require.Equal(t, "cancelled", b["status"])
	ev.expect(t, "booking.cancelled", auto, "cancelled")
	require.Equal(t, "cancelled", status(auto))

	// unknown bookings are 404
	env.Do("POST", "/v1/bookings/999999/confirm", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/bookings/x/cancel", p.Key, nil).Problem(t, 404, "not_found")
	ev.none(t)
}
