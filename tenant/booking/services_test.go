package booking_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestServicesCRUD(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")

	// create with only a name: the defaults
	m := env.Do("POST", "/v1/booking/services", p.Key, map[string]any{"name": "Haircut"}).Expect(t, 201).JSON(t)
	require.Equal(t, []string{"buffer_minutes", "currency", "description", "duration_minutes", "id", "is_active", "name", "price"}, sortedKeys(m))
	require.Equal(t, "Haircut", m["name"])
	require.Equal(t, "", m["description"])
	require.EqualValues(t, 60, m["duration_minutes"])
	require.EqualValues(t, 0, m["buffer_minutes"])
	require.EqualValues(t, 0, m["price"])
	require.Equal(t, "usd", m["currency"])
	require.Equal(t, true, m["is_active"])
	first := int64(m["id"].(float64))

	// create with everything; the currency is stored lowercase
	m = env.Do("POST", "/v1/booking/services", p.Key, map[string]any{"name": " Colour ", "description": "Full colour",
		"duration_minutes": 90, "buffer_minutes": 15, "price": 8500, "currency": "EUR", "is_active": false}).Expect(t, 201).JSON(t)
	second := int64(m["id"].(float64))
	require.Equal(t, map[string]any{"id": float64(second), "name": "Colour", "description": "Full colour", "duration_minutes": float64(90),
		"buffer_minutes": float64(15), "price": float64(8500), "currency": "eur", "is_active": false}, m)
	// the row is stored
	var name string
	var buffer int
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT name, buffer_minutes FROM booking_services WHERE id = $1`, second).Scan(&name, &buffer)
	}))
	require.Equal(t, "Colour", name)
	require.Equal(t, 15, buffer)

	// get
	m = env.Do("GET", fmt.Sprintf("/v1/booking/services/%d", first), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Haircut", m["name"])

	// list: newest first, paginated
	third := newService(t, env, p.Key, map[string]any{"name": "Shave", "duration_minutes": 30})
	var page struct {
		Data []struct {
			ID int64 `json:"id"`
		} `json:"data"`
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	}
	env.Do("GET", "/v1/booking/services?limit=2", p.Key, nil).Expect(t, 200).Decode(t, &page)
	require.Len(t, page.Data, 2)
	require.Equal(t, []int64{third, second}, []int64{page.Data[0].ID, page.Data[1].ID})
	require.True(t, page.HasMore)
	require.NotNil(t, page.NextCursor)
	env.Do("GET", "/v1/booking/services?limit=2&cursor="+*page.NextCursor, p.Key, nil).Expect(t, 200).Decode(t, &page)
	require.Len(t, page.Data, 1)
	require.Equal(t, first, page.Data[0].ID)
	require.False(t, page.HasMore)
	require.Nil(t, page.NextCursor)

	// patch: only the fields sent change
	m = env.Do("PATCH", fmt.Sprintf("/v1/booking/services/%d", first), p.Key, map[string]any{"price": 2500, "buffer_minutes": 10}).Expect(t, 200).JSON(t)
	require.EqualValues(t, 2500, m["price"])
	require.EqualValues(t, 10, m["buffer_minutes"])
	require.EqualValues(t, 60, m["duration_minutes"])
	require.Equal(t, "Haircut", m["name"])
	m = env.Do("GET", fmt.Sprintf("/v1/booking/services/%d", first), p.Key, nil).Expect(t, 200).JSON(t)
	require.EqualValues(t, 2500, m["price"])

	// delete: 204 without a body, then gone from get, patch and list
	res := env.Do("DELETE", fmt.Sprintf("/v1/booking/services/%d", third), p.Key, nil).Expect(t, 204)
	require.Empty(t, res.Body)
	env.Do("GET", fmt.Sprintf("/v1/booking/services/%d", third), p.Key, nil).Problem(t, 404, "not_found")
	env.Do("PATCH", fmt.Sprintf("/v1/booking/services/%d", third), p.Key, map[string]any{"name": "x"}).Problem(t, 404, "not_found")
	env.Do("DELETE", fmt.Sprintf("/v1/booking/services/%d", third), p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/booking/services", p.Key, nil).Expect(t, 200).Decode(t, &page)
	require.Len(t, page.Data, 2)
	env.Do("GET", "/v1/booking/services/abc", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/booking/services/999999", p.Key, nil).Problem(t, 404, "not_found")
}

func TestServiceValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	id := newService(t, env, p.Key, map[string]any{"name": "Massage"})
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
	}{
		{"missing name", "POST", "/v1/booking/services", map[string]any{"duration_minutes": 30}, 400, "bad_request", ""},
		{"unknown field", "POST", "/v1/booking/services", map[string]any{"name": "x", "colour": "red"}, 400, "bad_request", ""},
		{"invalid json", "POST", "/v1/booking/services", "{", 400, "bad_request", ""},
		{"blank name", "POST", "/v1/booking/services", map[string]any{"name": "  "}, 422, "validation_failed", "name"},
		{"long name", "POST", "/v1/booking/services", map[string]any{"name": strings.Repeat("n", 201)}, 422, "validation_failed", "name"},
		{"zero duration", "POST", "/v1/booking/services", map[string]any{"name": "x", "duration_minutes": 0}, 422, "validation_failed", "duration_minutes"},
		{"day-long duration", "POST", "/v1/booking/services", map[string]any{"name": "x", "duration_minutes": 1441}, 422, "validation_failed", "duration_minutes"},
		{"negative buffer", "POST", "/v1/booking/services", map[string]any{"name": "x", "buffer_minutes": -5}, 422, "validation_failed", "buffer_minutes"},
		{"negative price", "POST", "/v1/booking/services", map[string]any{"name": "x", "price": -1}, 422, "validation_failed", "price"},
		{"fractional price", "POST", "/v1/booking/services", map[string]any{"name": "x", "price": 9.99}, 422, "validation_failed", "price"},
		{"bad currency", "POST", "/v1/booking/services", map[string]any{"name": "x", "currency": "euro"}, 422, "validation_failed", "currency"},
		{"wrong type", "POST", "/v1/booking/services", map[string]any{"name": "x", "is_active": "yes"}, 422, "validation_failed", "is_active"},
		{"patch bad duration", "PATCH", fmt.Sprintf("/v1/booking/services/%d", id), map[string]any{"duration_minutes": -1}, 422, "validation_failed", "duration_minutes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := env.Do(c.method, c.path, p.Key, c.body).Problem(t, c.status, c.code)
			if c.field != "" {
				require.Contains(t, m["errors"], c.field, "%v", m)
			}
		})
	}
	// nothing was created or changed by the refused requests
	var n int
	var dur int
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*), max(duration_minutes) FROM booking_services`).Scan(&n, &dur)
	}))
	require.Equal(t, 1, n)
	require.Equal(t, 60, dur)
}

func TestBookingScopes(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	id := newService(t, env, p.Key, map[string]any{"name": "Consultation"})
	read := p.NewKey(false, "booking:read")
	write := p.NewKey(false, "booking:read", "booking:write")
	admin := p.NewKey(false, "booking:admin")
	other := p.NewKey(false, "blog:*")
	svc := fmt.Sprintf("/v1/booking/services/%d", id)
	cases := []struct {
		method, path, key string
		body              any
		status            int
		need              string
	}{
		{"GET", "/v1/booking/services", read, nil, 200, ""},
		{"GET", svc, read, nil, 200, ""},
		{"GET", "/v1/bookings", read, nil, 200, ""},
		{"GET", fmt.Sprintf("/v1/booking/availability?service_id=%d", id), read, nil, 200, ""},
		{"POST", "/v1/booking/services", read, map[string]any{"name": "x"}, 403, "booking:write"},
		{"PATCH", svc, read, map[string]any{"name": "x"}, 403, "booking:write"},
		{"DELETE", svc, read, nil, 403, "booking:write"},
		{"POST", "/v1/bookings", read, map[string]any{}, 403, "booking:write"},
		{"POST", "/v1/bookings/1/confirm", read, nil, 403, "booking:write"},
		{"POST", "/v1/bookings/1/cancel", read, nil, 403, "booking:write"},
		{"POST", "/v1/bookings/1/complete", read, nil, 403, "booking:write"},
		{"PATCH", svc, write, map[string]any{"name": "Consult"}, 200, ""},
		{"GET", "/v1/booking/settings", write, nil, 403, "booking:admin"},
		{"PATCH", "/v1/booking/settings", write, map[string]any{"auto_confirm": false}, 403, "booking:admin"},
		{"GET", "/v1/booking/settings", admin, nil, 200, ""},
		{"PATCH", "/v1/booking/settings", admin, map[string]any{"auto_confirm": false}, 200, ""},
		{"GET", "/v1/booking/services", admin, nil, 403, "booking:read"},
		{"GET", "/v1/booking/services", other, nil, 403, "booking:read"},
		{"GET", "/v1/bookings", "", nil, 401, ""},
	}
	for _, c := range cases {
		res := env.Do(c.method, c.path, c.key, c.body)
		switch {
		case c.status == 403:
			m := res.Problem(t, 403, "forbidden")
			require.Equal(t, "this key lacks the scope "+c.need, m["detail"], "%s %s", c.method, c.path)
		case c.status == 401:
			res.Problem(t, 401, "unauthorized")
		default:
			res.Expect(t, c.status)
		}
	}
}
