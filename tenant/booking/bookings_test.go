package booking_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestAvailabilityAndBooking(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	// 60 minutes plus 30 of buffer: slots every 90 minutes from 09:00, the
	// last starting 15:00 (16:30 would end after 17:00)
	sid := newService(t, env, p.Key, map[string]any{"name": "Massage", "duration_minutes": 60, "buffer_minutes": 30})
	d := dayUTC(3)
	all := []string{at(d, "09:00"), at(d, "10:30"), at(d, "12:00"), at(d, "13:30"), at(d, "15:00")}
	require.Equal(t, all, availability(t, env, p.Key, sid, d, d))

	var full struct {
		Data []map[string]any `json:"data"`
	}
	env.Do("GET", fmt.Sprintf("/v1/booking/availability?service_id=%d&from=%s&to=%s", sid, d, d), p.Key, nil).Expect(t, 200).Decode(t, &full)
	require.Equal(t, map[string]any{"start_at": at(d, "09:00"), "end_at": at(d, "10:00")}, full.Data[0])

	// RFC 3339 bounds select by start: [from, to); an offset's "+" left
	// unescaped in the query (read as a space) is understood
	require.Equal(t, all[1:3], availability(t, env, p.Key, sid, at(d, "10:30"), at(d, "13:30")))
	require.Equal(t, all[1:3], availability(t, env, p.Key, sid, d+"T11:30:00+01:00", d+"T14:30:00%2B01:00"))

	// book 10:30: 201 confirmed (auto_confirm), with the full shape
	res := env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, all[1])).Expect(t, 201)
	b := res.JSON(t)
	require.Equal(t, []string{"created_at", "customer", "end_at", "id", "notes", "service_id", "start_at", "status", "updated_at"}, sortedKeys(b))
	require.Equal(t, "confirmed", b["status"])
	require.Equal(t, all[1], b["start_at"])
	require.Equal(t, at(d, "11:30"), b["end_at"])
	require.EqualValues(t, sid, b["service_id"])
	require.Equal(t, map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958"}, b["customer"])
	require.Equal(t, "first visit", b["notes"])
	require.True(t, strings.HasSuffix(b["created_at"].(string), "Z"))
	id := int64(b["id"].(float64))

	// the slot is gone from the availability; the buffer keeps the others
	require.Equal(t, []string{all[0], all[2], all[3], all[4]}, availability(t, env, p.Key, sid, d, d))

	// the same slot again: 409 slot_unavailable
	m := env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, all[1])).Problem(t, 409, "slot_unavailable")
	require.Contains(t, m["detail"], all[1])

	// 09:00 blocks until 10:30 (60 + 30 buffer), touching the 10:30 booking: allowed
	env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, all[0])).Expect(t, 201)

	// get it back
	g := env.Do("GET", fmt.Sprintf("/v1/bookings/%d", id), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, b, g)

	// cancelling frees the slot
	env.Do("POST", fmt.Sprintf("/v1/bookings/%d/cancel", id), p.Key, nil).Expect(t, 200)
	require.Equal(t, all[1:], availability(t, env, p.Key, sid, d, d))
	env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, all[1])).Expect(t, 201)

	// another service's bookings do not block this one
	other := newService(t, env, p.Key, map[string]any{"name": "Facial", "duration_minutes": 60, "buffer_minutes": 30})
	require.Equal(t, all, availability(t, env, p.Key, other, d, d))

	// the rows hold the blocked range [start, end + buffer)
	var until time.Time
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT blocked_until FROM bookings WHERE id = $1`, id).Scan(&until)
	}))
	require.Equal(t, at(d, "12:00"), until.UTC().Format(time.RFC3339))

	// changing the service's buffer changes future slots, not stored bookings
	env.Do("PATCH", fmt.Sprintf("/v1/booking/services/%d", sid), p.Key, map[string]any{"buffer_minutes": 0}).Expect(t, 200)
	d2 := dayUTC(4)
	require.Len(t, availability(t, env, p.Key, sid, d2, d2), 8)
}

func TestBookingValidation(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	sid := newService(t, env, p.Key, map[string]any{"name": "Massage", "duration_minutes": 60})
	inactive := newService(t, env, p.Key, map[string]any{"name": "Old", "is_active": false})
	deleted := newService(t, env, p.Key, map[string]any{"name": "Gone"})
	env.Do("DELETE", fmt.Sprintf("/v1/booking/services/%d", deleted), p.Key, nil).Expect(t, 204)
	d := dayUTC(3)
	ok := at(d, "10:00")
	with := func(f func(m map[string]any)) map[string]any {
		m := bookingBody(sid, ok)
		f(m)
		return m
	}
	cases := []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"missing service_id", with(func(m map[string]any) { delete(m, "service_id") }), 400, ""},
		{"missing start_at", with(func(m map[string]any) { delete(m, "start_at") }), 400, ""},
		{"missing customer", with(func(m map[string]any) { delete(m, "customer") }), 400, ""},
		{"missing customer name", with(func(m map[string]any) { m["customer"] = map[string]any{"email": "a@example.com"} }), 400, ""},
		{"missing customer email", with(func(m map[string]any) { m["customer"] = map[string]any{"name": "A"} }), 400, ""},
		{"unknown field", with(func(m map[string]any) { m["coupon"] = "x" }), 400, ""},
		{"unknown customer field", with(func(m map[string]any) {
			m["customer"] = map[string]any{"name": "A", "email": "a@example.com", "age": 3}
		}), 400, ""},
		{"bad email", with(func(m map[string]any) { m["customer"] = map[string]any{"name": "A", "email": "not-an-email"} }), 422, "customer.email"},
		{"blank name", with(func(m map[string]any) { m["customer"] = map[string]any{"name": " ", "email": "a@example.com"} }), 422, "customer.name"},
		{"bad phone", with(func(m map[string]any) {
			m["customer"] = map[string]any{"name": "A", "email": "a@example.com", "phone": "call me"}
		}), 422, "customer.phone"},
		{"long notes", with(func(m map[string]any) { m["notes"] = strings.Repeat("n", 2001) }), 422, "notes"},
		{"bad start", with(func(m map[string]any) { m["start_at"] = "tomorrow at ten" }), 422, "start_at"},
		{"service_id a string", with(func(m map[string]any) { m["service_id"] = "1" }), 422, "service_id"},
		{"unknown service", with(func(m map[string]any) { m["service_id"] = 999999 }), 422, "service_id"},
		{"inactive service", with(func(m map[string]any) { m["service_id"] = inactive }), 422, "service_id"},
		{"deleted service", with(func(m map[string]any) { m["service_id"] = deleted }), 422, "service_id"},
		{"off the grid", with(func(m map[string]any) { m["start_at"] = at(d, "10:30") }), 422, "start_at"},
		{"before opening", with(func(m map[string]any) { m["start_at"] = at(d, "08:00") }), 422, "start_at"},
		{"ends after closing", with(func(m map[string]any) { m["start_at"] = at(d, "17:00") }), 422, "start_at"},
		{"in the past", with(func(m map[string]any) { m["start_at"] = at(dayUTC(-1), "10:00") }), 422, "start_at"},
		{"beyond max days ahead", with(func(m map[string]any) { m["start_at"] = at(dayUTC(31), "10:00") }), 422, "start_at"},
		{"seconds off", with(func(m map[string]any) { m["start_at"] = d + "T10:00:30Z" }), 422, "start_at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := env.Do("POST", "/v1/bookings", p.Key, c.body).Problem(t, c.status, map[int]string{400: "bad_request", 422: "validation_failed"}[c.status])
			if c.field != "" {
				require.Contains(t, m["errors"], c.field, "%v", m)
			}
		})
	}
	var n int
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM bookings`).Scan(&n)
	}))
	require.Zero(t, n, "refused requests stored nothing")

	// a start given with an offset is the same instant; it is shown in UTC
	b := env.Do("POST", "/v1/bookings", p.Key, with(func(m map[string]any) {
		m["start_at"] = d + "T12:00:00+02:00"
		m["customer"] = map[string]any{"name": "Bob", "email": "bob@example.com"}
		delete(m, "notes")
	})).Expect(t, 201).JSON(t)
	require.Equal(t, at(d, "10:00"), b["start_at"])
	require.Equal(t, map[string]any{"name": "Bob", "email": "bob@example.com", "phone": nil}, b["customer"])
	require.Nil(t, b["notes"])
}

func TestAvailabilityQuery(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	sid := newService(t, env, p.Key, map[string]any{"name": "Massage"})
	inactive := newService(t, env, p.Key, map[string]any{"name": "Old", "is_active": false})
	q := func(s string) string { return "/v1/booking/availability?" + s }
	cases := []struct {
		query  string
		status int
		field  string
	}{
		{"from=" + dayUTC(1), 422, "service_id"},
		{"service_id=abc", 422, "service_id"},
		{fmt.Sprintf("service_id=%d&from=yesterday", sid), 422, "from"},
		{fmt.Sprintf("service_id=%d&to=2030-02-30", sid), 422, "to"},
		{fmt.Sprintf("service_id=%d&from=%s&to=%s", sid, dayUTC(3), dayUTC(1)), 422, "to"},
		{fmt.Sprintf("service_id=%d&from=%s&to=%s", sid, at(dayUTC(1), "10:00"), at(dayUTC(1), "10:00")), 422, "to"},
		// from D to D+93 is 94 days
		{fmt.Sprintf("service_id=%d&from=%s&to=%s", sid, dayUTC(0), dayUTC(93)), 422, "to"},
		{"service_id=999999", 404, ""},
	}
	for _, c := range cases {
		res := env.Do("GET", q(c.query), p.Key, nil)
		if c.status == 404 {
			res.Problem(t, 404, "not_found")
			continue
		}
		m := res.Problem(t, c.status, "validation_failed")
		require.Contains(t, m["errors"], c.field, "%s: %v", c.query, m)
	}
	// 93 days is the largest range
	env.Do("GET", q(fmt.Sprintf("service_id=%d&from=%s&to=%s", sid, dayUTC(0), dayUTC(92))), p.Key, nil).Expect(t, 200)
	// without from and to: the next seven days from now (max 30 days ahead here)
	var body struct {
		Data []struct {
			StartAt time.Time `json:"start_at"`
		} `json:"data"`
	}
	env.Do("GET", q(fmt.Sprintf("service_id=%d", sid)), p.Key, nil).Expect(t, 200).Decode(t, &body)
	require.NotEmpty(t, body.Data)
	now := time.Now()
	for _, s := range body.Data {
		require.True(t, s.StartAt.After(now) && s.StartAt.Before(now.Add(7*24*time.Hour)), "%v", s.StartAt)
	}
	// an inactive service has no bookable slots
	require.Empty(t, availability(t, env, p.Key, inactive, dayUTC(1), dayUTC(2)))
	// max days ahead bounds the slots
	require.Empty(t, availability(t, env, p.Key, sid, dayUTC(31), dayUTC(40)))
	require.NotEmpty(t, availability(t, env, p.Key, sid, dayUTC(30), dayUTC(30)))
}

func TestListBookings(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	a := newService(t, env, p.Key, map[string]any{"name": "A", "duration_minutes": 60})
	b := newService(t, env, p.Key, map[string]any{"name": "B", "duration_minutes": 60})
	d1, d2 := dayUTC(2), dayUTC(5)
	book := func(sid int64, start string) int64 {
		return int64(env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, start)).Expect(t, 201).JSON(t)["id"].(float64))
	}
	b1 := book(a, at(d1, "09:00"))
	b2 := book(b, at(d1, "10:00"))
	b3 := book(a, at(d2, "11:00"))
	b4 := book(a, at(d2, "12:00"))
	env.Do("POST", fmt.Sprintf("/v1/bookings/%d/cancel", b3), p.Key, nil).Expect(t, 200)

	ids := func(query string) []int64 {
		t.Helper()
		var page struct {
			Data []struct {
				ID int64 `json:"id"`
			} `json:"data"`
		}
		env.Do("GET", "/v1/bookings"+query, p.Key, nil).Expect(t, 200).Decode(t, &page)
		out := []int64{}
		for _, r := range page.Data {
			out = append(out, r.ID)
		}
		return out
	}
	require.Equal(t, []int64{b4, b3, b2, b1}, ids(""))
	require.Equal(t, []int64{b3}, ids("?status=cancelled"))
	require.Equal(t, []int64{b4, b2, b1}, ids("?status=confirmed"))
	require.Equal(t, []int64{b4, b3, b1}, ids(fmt.Sprintf("?service_id=%d", a)))
	require.Equal(t, []int64{b2, b1}, ids("?from="+d1+"&to="+d1))
	require.Equal(t, []int64{b4, b3}, ids("?from="+d2))
	require.Equal(t, []int64{b4}, ids("?from="+at(d2, "11:30")+"&status=confirmed"))
	require.Equal(t, []int64{b2, b1}, ids("?to="+at(d1, "23:00")))

	// pagination
	var page struct {
		Data       []map[string]any `json:"data"`
		HasMore    bool             `json:"has_more"`
		NextCursor *string          `json:"next_cursor"`
	}
	env.Do("GET", "/v1/bookings?limit=3", p.Key, nil).Expect(t, 200).Decode(t, &page)
	require.Len(t, page.Data, 3)
	require.True(t, page.HasMore)
	require.Equal(t, []int64{b1}, ids("?limit=3&cursor="+*page.NextCursor))

	env.Do("GET", "/v1/bookings?status=done", p.Key, nil).Problem(t, 422, "validation_failed")
	env.Do("GET", "/v1/bookings?service_id=x", p.Key, nil).Problem(t, 422, "validation_failed")
	env.Do("GET", "/v1/bookings?from=soon", p.Key, nil).Problem(t, 422, "validation_failed")
	env.Do("GET", "/v1/bookings?limit=0", p.Key, nil).Problem(t, 422, "validation_failed")
	env.Do("GET", "/v1/bookings/999999", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/bookings/x", p.Key, nil).Problem(t, 404, "not_found")
}

// Another project's bookings and services are invisible.
func TestBookingIsolation(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	q := env.NewProject("build")
	sid := newService(t, env, p.Key, map[string]any{"name": "A"})
	id := int64(env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, at(dayUTC(2), "09:00"))).Expect(t, 201).JSON(t)["id"].(float64))
	env.Do("GET", fmt.Sprintf("/v1/bookings/%d", id), q.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", fmt.Sprintf("/v1/bookings/%d/cancel", id), q.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", fmt.Sprintf("/v1/booking/services/%d", sid), q.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/bookings", q.Key, bookingBody(sid, at(dayUTC(2), "10:00"))).Problem(t, 422, "validation_failed")
}

// A retried booking with the same Idempotency-Key replays the first answer
// instead of running into its own slot (409).
func TestBookingIdempotentRetry(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	sid := newService(t, env, p.Key, map[string]any{"name": "Massage"})
	body := bookingBody(sid, at(dayUTC(2), "10:00"))
	send := func() *apitest.Resp {
		return env.Send(apitest.Request{Method: "POST", Path: "/v1/bookings", Key: p.Key, Body: body, Header: map[string]string{"Idempotency-Key": "book-1"}})
	}
	first := send().Expect(t, 201)
	again := send().Expect(t, 201)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(again.Body))
	env.Do("POST", "/v1/bookings", p.Key, body).Problem(t, 409, "slot_unavailable")
	var n int
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM bookings`).Scan(&n)
	}))
	require.Equal(t, 1, n)
}
