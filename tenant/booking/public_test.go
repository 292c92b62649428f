package booking_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestPublicBooking(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	ev := watchEvents(t, env, p)
	active := newService(t, env, p.Key, map[string]any{"name": "Cut", "duration_minutes": 30, "price": 3000, "currency": "eur"})
	inactive := newService(t, env, p.Key, map[string]any{"name": "Perm", "is_active": false})
	deleted := newService(t, env, p.Key, map[string]any{"name": "Old"})
	env.Do("DELETE", fmt.Sprintf("/v1/booking/services/%d", deleted), p.Key, nil).Expect(t, 204)
	hdr := map[string]string{"X-Service-Project-Key": p.ID}
	pub := func(method, path string, body any, h map[string]string) *apitest.Resp {
		return env.Send(apitest.Request{Method: method, Path: path, Body: body, Header: h})
	}

	// services: active only, the service shape, cacheable
	res := pub("GET", "/v1/public/booking/services", nil, hdr).Expect(t, 200)
	var list struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	res.Decode(t, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, map[string]any{"id": float64(active), "name": "Cut", "description": "", "duration_minutes": float64(30),
		"buffer_minutes": float64(0), "price": float64(3000), "currency": "eur", "is_active": true}, list.Data[0])
	require.Equal(t, "public, max-age=60", res.Header.Get("Cache-Control"))
	etag := res.Header.Get("ETag")
	require.NotEmpty(t, etag)
	// the project may be named by the query instead; a matching ETag is 304
	res = pub("GET", "/v1/public/booking/services?project_id="+p.ID, nil, map[string]string{"If-None-Match": etag})
	require.Equal(t, 304, res.Status)
	require.Empty(t, res.Body)

	// availability: slots only
	d := dayUTC(2)
	path := fmt.Sprintf("/v1/public/booking/availability?service_id=%d&from=%s&to=%s", active, d, d)
	res = pub("GET", path, nil, hdr).Expect(t, 200)
	require.Equal(t, "public, max-age=60", res.Header.Get("Cache-Control"))
	require.NotEmpty(t, res.Header.Get("ETag"))
	var slots struct {
		Data []map[string]any `json:"data"`
	}
	res.Decode(t, &slots)
	require.Len(t, slots.Data, 16) // 09:00-17:00 every 30 minutes
	require.Equal(t, map[string]any{"start_at": at(d, "09:00"), "end_at": at(d, "09:30")}, slots.Data[0])

	// a visitor books: 201 with their own booking
	body := map[string]any{"service_id": active, "start_at": at(d, "09:00"),
		"customer": map[string]any{"name": "Grace Hopper", "email": "grace@example.com"}, "notes": "window seat"}
	b := pub("POST", "/v1/public/bookings", body, hdr).Expect(t, 201).JSON(t)
	require.Equal(t, "confirmed", b["status"])
	require.Equal(t, "Grace Hopper", b["customer"].(map[string]any)["name"])
	ev.expect(t, "booking.confirmed", int64(b["id"].(float64)), "confirmed")
	// visible to the project's key
	env.Do("GET", fmt.Sprintf("/v1/bookings/%v", b["id"]), p.Key, nil).Expect(t, 200)

	// another visitor sees only that the slot is gone, never who took it
	res = pub("GET", path, nil, hdr).Expect(t, 200)
	require.NotContains(t, string(res.Body), "grace")
	require.NotContains(t, string(res.Body), "Grace")
	require.NotContains(t, string(res.Body), at(d, "09:00"))
	m := pub("POST", "/v1/public/bookings", map[string]any{"service_id": active, "start_at": at(d, "09:00"),
		"customer": map[string]any{"name": "Eve", "email": "eve@example.com"}}, hdr).Problem(t, 409, "slot_unavailable")
	require.NotContains(t, fmt.Sprint(m), "grace")
	ev.none(t)

	// inactive and deleted services are not public
	for _, sid := range []int64{inactive, deleted, 999999} {
		pub("GET", fmt.Sprintf("/v1/public/booking/availability?service_id=%d", sid), nil, hdr).Problem(t, 404, "not_found")
		pub("POST", "/v1/public/bookings", map[string]any{"service_id": sid, "start_at": at(d, "10:00"),
			"customer": map[string]any{"name": "Eve", "email": "eve@example.com"}}, hdr).Problem(t, 422, "validation_failed")
	}

	// no project, an unknown project
	pub("GET", "/v1/public/booking/services", nil, nil).Problem(t, 400, "bad_request")
	pub("GET", "/v1/public/booking/services", nil, map[string]string{"X-Service-Project-Key": "prj_" + strings.Repeat("x", 24)}).Problem(t, 404, "not_found")
	// no reading bookings on the public surface
	require.NotEqual(t, 200, pub("GET", "/v1/public/bookings", nil, hdr).Status)
	require.NotEqual(t, 200, pub("GET", fmt.Sprintf("/v1/public/bookings/%v", b["id"]), nil, hdr).Status)
	// nor the admin actions
	require.NotEqual(t, 200, pub("POST", fmt.Sprintf("/v1/public/bookings/%v/cancel", b["id"]), nil, hdr).Status)
}
