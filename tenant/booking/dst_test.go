package booking_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// The availability endpoint on the days of the 2025 daylight-saving changes
// in Europe/Berlin and America/New_York, served with the clock set to
// 2025-01-02 so those dates are bookable. Opening hours 01:00-04:00 on the
// change day (a Sunday in both zones), a 60-minute service. The expected
// instants are worked out by hand in slots_test.go
// (TestSlotsAcrossDaylightSaving):
//
//	Berlin 2025-03-30 (CET→CEST at 01:00Z): 01:00 CET=00:00Z, 03:00 CEST=01:00Z
//	Berlin 2025-10-26 (CEST→CET at 01:00Z): 23:00Z, 00:00Z, 01:00Z, 02:00Z
//	New York 2025-03-09 (EST→EDT at 07:00Z): 06:00Z, 07:00Z
//	New York 2025-11-02 (EDT→EST at 06:00Z): 05:00Z, 06:00Z, 07:00Z, 08:00Z
func TestAvailabilityOnDaylightSavingDays(t *testing.T) {
	t.Parallel()
	base := apitest.New(t)
	env := withClock(t, base, time.Date(2025, 1, 2, 12, 0, 0, 0, time.UTC))
	p := env.NewProject("build")
	sid := newService(t, env, p.Key, map[string]any{"name": "Night session", "duration_minutes": 60})
	cases := []struct {
		zone, date string
		want       []string
	}{
		{"Europe/Berlin", "2025-03-30", []string{"2025-03-30T00:00:00Z", "2025-03-30T01:00:00Z"}},
		{"Europe/Berlin", "2025-10-26", []string{"2025-10-25T23:00:00Z", "2025-10-26T00:00:00Z", "2025-10-26T01:00:00Z", "2025-10-26T02:00:00Z"}},
		{"America/New_York", "2025-03-09", []string{"2025-03-09T06:00:00Z", "2025-03-09T07:00:00Z"}},
		{"America/New_York", "2025-11-02", []string{"2025-11-02T05:00:00Z", "2025-11-02T06:00:00Z", "2025-11-02T07:00:00Z", "2025-11-02T08:00:00Z"}},
	}
	for _, c := range cases {
		env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"timezone": c.zone, "weekly_hours": onlyDay("sun", "01:00", "04:00"),
			"min_notice_minutes": 0, "max_days_ahead": 365}).Expect(t, 200)
		// the date bounds are dates in the booking timezone
		require.Equal(t, c.want, availability(t, env, p.Key, sid, c.date, c.date), "%s %s", c.zone, c.date)
		// the same through the public surface
		var pub struct {
			Data []struct {
				StartAt string `json:"start_at"`
				EndAt   string `json:"end_at"`
			} `json:"data"`
		}
		env.Do("GET", fmt.Sprintf("/v1/public/booking/availability?project_id=%s&service_id=%d&from=%s&to=%s", p.ID, sid, c.date, c.date), "", nil).
			Expect(t, 200).Decode(t, &pub)
		require.Len(t, pub.Data, len(c.want))
		for i, s := range pub.Data {
			require.Equal(t, c.want[i], s.StartAt)
			end, _ := time.Parse(time.RFC3339, c.want[i])
			require.Equal(t, end.Add(time.Hour).Format(time.RFC3339), s.EndAt, "a 60-minute slot lasts 60 real minutes")
		}
		// every slot can be booked, and then it is gone
		for _, s := range c.want {
			env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, s)).Expect(t, 201)
		}
		require.Empty(t, availability(t, env, p.Key, sid, c.date, c.date))
	}

	// Berlin again: a wall-clock time inside the skipped hour is no slot
	// (02:30 "CET" on 2025-03-30 names 01:30Z, off the grid), while the same
	// instant as a slot given with its local offset is accepted as UTC.
	env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"timezone": "Europe/Berlin", "weekly_hours": onlyDay("sun", "01:00", "05:00")}).Expect(t, 200)
	env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, "2025-03-30T02:30:00+01:00")).Problem(t, 422, "validation_failed")
	// 04:00 CEST is 02:00Z: the third slot of 01:00-05:00 on that day
	b := env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, "2025-03-30T04:00:00+02:00")).Expect(t, 201).JSON(t)
	require.Equal(t, "2025-03-30T02:00:00Z", b["start_at"])
	require.Equal(t, "2025-03-30T03:00:00Z", b["end_at"])

	// the clock still matters: notice and days ahead are judged against it
	env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"max_days_ahead": 30}).Expect(t, 200)
	require.Empty(t, availability(t, env, p.Key, sid, "2025-03-30", "2025-03-30"))
	env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, "2025-03-30T00:00:00Z")).Problem(t, 422, "validation_failed")
}
