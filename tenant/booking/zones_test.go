package booking_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestDateRangesInTheBookingZone pins how availability and the booking
// list read date bounds in the zones farthest from UTC (a date starts 14
// hours before its UTC midnight in Kiritimati, 12 after it at UTC-12)
// and on a day whose midnight is skipped (Santiago, 2024-09-08: clocks
// go from 00:00 to 01:00): a date is the bookings and slots of that local
// day, not of its neighbours.
func TestDateRangesInTheBookingZone(t *testing.T) {
	t.Parallel()
	base := apitest.New(t)
	env := withClock(t, base, time.Date(2024, 9, 1, 12, 0, 0, 0, time.UTC))
	cases := []struct {
		zone, day string
		// the first two slots of day, the last of the day before and the
		// first of the day after, in UTC (hours 00:00-02:00 and 23:00-24:00 local)
		first, second, before, after string
	}{
		{"Pacific/Kiritimati", "2024-09-11", "2024-09-10T10:00:00Z", "2024-09-10T11:00:00Z", "2024-09-10T09:00:00Z", "2024-09-11T10:00:00Z"},
		{"Etc/GMT+12", "2024-09-11", "2024-09-11T12:00:00Z", "2024-09-11T13:00:00Z", "2024-09-11T11:00:00Z", "2024-09-12T12:00:00Z"},
		// 2024-09-08 starts at 01:00 -03 (04:00Z): 00:00 does not exist,
		// so its second slot is 23:00.
		{"America/Santiago", "2024-09-08", "2024-09-08T04:00:00Z", "2024-09-09T02:00:00Z", "2024-09-08T03:00:00Z", "2024-09-09T03:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.zone, func(t *testing.T) {
			t.Parallel()
			p := env.NewProject("build")
			sid := newService(t, env, p.Key, map[string]any{"name": "Hour", "duration_minutes": 60})
			week := map[string]any{}
			for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
				week[d] = [][]string{{"00:00", "02:00"}, {"23:00", "24:00"}}
			}
			env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{"timezone": c.zone, "weekly_hours": week,
				"min_notice_minutes": 0, "max_days_ahead": 60}).Expect(t, 200)
			slots := availability(t, env, p.Key, sid, c.day, c.day)
			require.GreaterOrEqual(t, len(slots), 2, "%v", slots)
			require.Equal(t, []string{c.first, c.second}, slots[:2])
			ids := map[string]int64{}
			for _, s := range []string{c.before, c.first, c.after} {
				ids[s] = int64(env.Do("POST", "/v1/bookings", p.Key, bookingBody(sid, s)).Expect(t, 201).JSON(t)["id"].(float64))
			}
			require.Equal(t, c.second, availability(t, env, p.Key, sid, c.day, c.day)[0], "the booked first slot is gone")
			list := func(query string) []int64 {
				t.Helper()
				var page struct {
					Data []struct {
						ID int64 `json:"id"`
					} `json:"data"`
				}
				env.Do("GET", "/v1/bookings?"+query, p.Key, nil).Expect(t, 200).Decode(t, &page)
				out := []int64{}
				for _, b := range page.Data {
					out = append(out, b.ID)
				}
				return out
			}
			require.Equal(t, []int64{ids[c.first]}, list(fmt.Sprintf("from=%s&to=%s", c.day, c.day)))
			require.Equal(t, []int64{ids[c.after], ids[c.first]}, list("from="+c.day))
			require.Equal(t, []int64{ids[c.first], ids[c.before]}, list("to="+c.day))
			require.Equal(t, []int64{ids[c.first]}, list(fmt.Sprintf("from=%s&to=%s", c.first, c.day)))
		})
	}
}
