package booking_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestSettings(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")

	// defaults before any PATCH; the timezone is the project's
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"timezone": "Europe/Paris"}).Expect(t, 200)
	m := env.Do("GET", "/v1/booking/settings", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, map[string]any{
		"timezone": "Europe/Paris",
		"weekly_hours": map[string]any{
			"mon": []any{[]any{"09:00", "17:00"}}, "tue": []any{[]any{"09:00", "17:00"}}, "wed": []any{[]any{"09:00", "17:00"}},
			"thu": []any{[]any{"09:00", "17:00"}}, "fri": []any{[]any{"09:00", "17:00"}}, "sat": []any{}, "sun": []any{},
		},
		"auto_confirm": true, "min_notice_minutes": float64(60), "max_days_ahead": float64(90),
	}, m)

	// weekly_hours merges per day: sat opens, mon gets two intervals (sorted),
	// fri closes with null, the rest stays
	m = env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{
		"timezone": "America/New_York", "auto_confirm": false, "min_notice_minutes": 120, "max_days_ahead": 14,
		"weekly_hours": map[string]any{"sat": [][]string{{"10:00", "14:00"}}, "mon": [][]string{{"13:00", "18:00"}, {"08:00", "12:00"}}, "fri": nil},
	}).Expect(t, 200).JSON(t)
	want := map[string]any{
		"timezone": "America/New_York",
		"weekly_hours": map[string]any{
			"mon": []any{[]any{"08:00", "12:00"}, []any{"13:00", "18:00"}}, "tue": []any{[]any{"09:00", "17:00"}}, "wed": []any{[]any{"09:00", "17:00"}},
			"thu": []any{[]any{"09:00", "17:00"}}, "fri": []any{}, "sat": []any{[]any{"10:00", "14:00"}}, "sun": []any{},
		},
		"auto_confirm": false, "min_notice_minutes": float64(120), "max_days_ahead": float64(14),
	}
	require.Equal(t, want, m)
	require.Equal(t, want, env.Do("GET", "/v1/booking/settings", p.Key, nil).Expect(t, 200).JSON(t))

	// a PATCH of one field keeps the others; "24:00" closes at midnight
	m = env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"weekly_hours": map[string]any{"sun": [][]string{{"20:00", "24:00"}}}}).Expect(t, 200).JSON(t)
	require.Equal(t, false, m["auto_confirm"])
	require.Equal(t, []any{[]any{"20:00", "24:00"}}, m["weekly_hours"].(map[string]any)["sun"])

	// timezone null follows the project again
	m = env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"timezone": nil}).Expect(t, 200).JSON(t)
	require.Equal(t, "Europe/Paris", m["timezone"])
	var tz *string
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT timezone FROM booking_settings`).Scan(&tz)
	}))
	require.Nil(t, tz)

	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"unknown zone", map[string]any{"timezone": "Mars/Olympus"}, "timezone"},
		{"empty zone", map[string]any{"timezone": ""}, "timezone"},
		{"Local zone", map[string]any{"timezone": "Local"}, "timezone"},
		{"zone not a string", map[string]any{"timezone": 5}, "timezone"},
		{"unknown day", map[string]any{"weekly_hours": map[string]any{"monday": [][]string{{"09:00", "17:00"}}}}, "weekly_hours"},
		{"bad time", map[string]any{"weekly_hours": map[string]any{"mon": [][]string{{"9:00", "17:00"}}}}, "weekly_hours.mon"},
		{"25 hours", map[string]any{"weekly_hours": map[string]any{"mon": [][]string{{"09:00", "25:00"}}}}, "weekly_hours.mon"},
		{"end before start", map[string]any{"weekly_hours": map[string]any{"mon": [][]string{{"17:00", "09:00"}}}}, "weekly_hours.mon"},
		{"across midnight", map[string]any{"weekly_hours": map[string]any{"mon": [][]string{{"22:00", "02:00"}}}}, "weekly_hours.mon"},
		{"overlap", map[string]any{"weekly_hours": map[string]any{"tue": [][]string{{"09:00", "12:00"}, {"11:00", "13:00"}}}}, "weekly_hours.tue"},
		{"not a pair", map[string]any{"weekly_hours": map[string]any{"wed": [][]string{{"09:00"}}}}, "weekly_hours.wed"},
		{"not a list", map[string]any{"weekly_hours": map[string]any{"wed": "09:00-17:00"}}, "weekly_hours.wed"},
		{"negative notice", map[string]any{"min_notice_minutes": -1}, "min_notice_minutes"},
		{"days ahead too far", map[string]any{"max_days_ahead": 731}, "max_days_ahead"},
		{"wrong type", map[string]any{"auto_confirm": "yes"}, "auto_confirm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := env.Do("PATCH", "/v1/booking/settings", p.Key, c.body).Problem(t, 422, "validation_failed")
			require.Contains(t, m["errors"], c.field, "%v", m)
		})
	}
	env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"holidays": []string{}}).Problem(t, 400, "bad_request")
	// refused PATCHes changed nothing
	m = env.Do("GET", "/v1/booking/settings", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, float64(120), m["min_notice_minutes"])
	require.Equal(t, []any{[]any{"09:00", "17:00"}}, m["weekly_hours"].(map[string]any)["tue"])
}
