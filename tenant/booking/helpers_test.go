package booking_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/booking"
)

// setup starts a server with one project whose booking settings are simple
// to reason about in UTC: every day 09:00-17:00, no notice, 30 days ahead,
// auto-confirm on.
func setup(t *testing.T, opts ...apitest.Option) (*apitest.Env, *apitest.Project) {
	t.Helper()
	env := apitest.New(t, opts...)
	p := env.NewProject("build")
	env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{
		"timezone": "UTC", "weekly_hours": allWeek("09:00", "17:00"),
		"min_notice_minutes": 0, "max_days_ahead": 30, "auto_confirm": true,
	}).Expect(t, 200)
	return env, p
}

// allWeek opens every day from open to close.
func allWeek(open, close string) map[string]any {
	w := map[string]any{}
	for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
		w[d] = [][]string{{open, close}}
	}
	return w
}

// onlyDay opens one weekday and closes the others.
func onlyDay(day, open, close string) map[string]any {
	w := map[string]any{}
	for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
		w[d] = [][]string{}
	}
	w[day] = [][]string{{open, close}}
	return w
}

// newService creates a service and returns its id.
func newService(t *testing.T, env *apitest.Env, key string, body map[string]any) int64 {
	t.Helper()
	m := env.Do("POST", "/v1/booking/services", key, body).Expect(t, 201).JSON(t)
	return int64(m["id"].(float64))
}

// dayUTC is the UTC date n days from now as YYYY-MM-DD.
func dayUTC(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format("2006-01-02") }

// at is date at HH:MM UTC in RFC 3339.
func at(date, hhmm string) string { return date + "T" + hhmm + ":00Z" }

func bookingBody(serviceID int64, start string) map[string]any {
	return map[string]any{"service_id": serviceID, "start_at": start,
		"customer": map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958"},
		"notes":    "first visit"}
}

func availability(t *testing.T, env *apitest.Env, key string, serviceID int64, from, to string) []string {
	t.Helper()
	var body struct {
		Data []struct {
			StartAt string `json:"start_at"`
			EndAt   string `json:"end_at"`
		} `json:"data"`
	}
	env.Do("GET", fmt.Sprintf("/v1/booking/availability?service_id=%d&from=%s&to=%s", serviceID, from, to), key, nil).Expect(t, 200).Decode(t, &body)
	out := make([]string, len(body.Data))
	for i, s := range body.Data {
		out[i] = s.StartAt
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withClock serves the booking routes of env's server with a fixed clock,
// so dates long past (the daylight-saving days of 2025) can be booked. It
// uses the same central authentication, public project resolution and
// event outbox and rate limiter as the server, so its responses carry the
// headers the OpenAPI document requires of every one.
func withClock(t *testing.T, env *apitest.Env, now time.Time) *apitest.Env {
	t.Helper()
	h := booking.New(booking.Deps{Events: env.Server.Outbox, Now: func() time.Time { return now }})
	r := httpapi.NewRouter()
	r.Use(httpapi.Base(env.Config.ErrorBase, slog.Default(), 11<<20))
	r.Use(central.VaryPublic)
	r.Use(env.Server.Central.Identify)
	r.Use(env.Server.Limits.Handler)
	r.Route("/v1", func(v1 chi.Router) {
		v1.Route("/public", func(pub chi.Router) {
			pub.Use(env.Server.Central.PublicProject)
			h.PublicRoutes(pub)
		})
		v1.Group(func(api chi.Router) {
			api.Use(tenant.Authenticated)
			h.Routes(api)
		})
	})
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	e := *env
	e.HTTP, e.URL = hs, hs.URL
	return &e
}
