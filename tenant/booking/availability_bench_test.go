package booking_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/booking"
)

// BenchmarkAvailability90Days measures the availability of one service over
// 90 days (Europe/Berlin, Monday to Saturday 09:00-18:00, 30-minute
// appointments with a 10-minute buffer: about 1,000 slots) with 500
// bookings in the range. "http" is the whole request through the server
// (key, rate limit, transaction, the bookings query on the exclusion constraint's gist
// index, slot computation, JSON); "compute" is the slot computation alone
// on the same bookings.
func BenchmarkAvailability90Days(b *testing.B) {
	env := apitest.New(b)
	p := env.NewProject("enterprise")
	// the loop must not meet the rate limit (which still runs)
	rpm, burst := 100_000_000, 100_000_000
	if err := env.Server.Central.SetRateOverride(context.Background(), p.ID, &rpm, &burst, nil); err != nil {
		b.Fatal(err)
	}
	env.Do("PATCH", "/v1/booking/settings", p.Key, map[string]any{
		"timezone": "Europe/Berlin", "min_notice_minutes": 0, "max_days_ahead": 120,
		"weekly_hours": map[string]any{"mon": [][]string{{"09:00", "18:00"}}, "tue": [][]string{{"09:00", "18:00"}},
			"wed": [][]string{{"09:00", "18:00"}}, "thu": [][]string{{"09:00", "18:00"}}, "fri": [][]string{{"09:00", "18:00"}},
			"sat": [][]string{{"09:00", "18:00"}}, "sun": [][]string{}},
	}).Expect(b, 200)
	m := env.Do("POST", "/v1/booking/services", p.Key, map[string]any{"name": "Cut", "duration_minutes": 30, "buffer_minutes": 10}).Expect(b, 201).JSON(b)
	sid := int64(m["id"].(float64))

	loc, _ := booking.LoadZone("Europe/Berlin")
	y, mo, d := time.Now().In(loc).AddDate(0, 0, 1).Date()
	from := time.Date(y, mo, d, 0, 0, 0, 0, loc)
	to := from.AddDate(0, 0, 90)
	path := fmt.Sprintf("/v1/booking/availability?service_id=%d&from=%s&to=%s", sid, url.QueryEscape(from.Format(time.RFC3339)), url.QueryEscape(to.Format(time.RFC3339)))

	var all struct {
		Data []struct {
			StartAt time.Time `json:"start_at"`
			EndAt   time.Time `json:"end_at"`
		} `json:"data"`
	}
	env.Do("GET", path, p.Key, nil).Expect(b, 200).Decode(b, &all)
	const bookings = 500
	if len(all.Data) < bookings*3/2 {
		b.Fatalf("only %d slots", len(all.Data))
	}
	// 500 bookings spread over the range, on real slots
	busy := make([]booking.Span, 0, bookings)
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		for i := range bookings {
			s := all.Data[i*len(all.Data)/bookings]
			until := s.EndAt.Add(10 * time.Minute)
			busy = append(busy, booking.Span{Start: s.StartAt, End: until})
			if _, err := tx.Exec(context.Background(), `INSERT INTO bookings (service_id, start_at, end_at, blocked_until, status, customer_name, customer_email)
				VALUES ($1, $2, $3, $4, 'confirmed', 'Bench', 'bench@example.com')`, sid, s.StartAt, s.EndAt, until); err != nil {
				return err
			}
		}
		_, err := tx.Exec(context.Background(), `ANALYZE bookings`)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	var left struct {
		Data []any `json:"data"`
	}
	env.Do("GET", path, p.Key, nil).Expect(b, 200).Decode(b, &left)
	if len(left.Data) != len(all.Data)-bookings {
		b.Fatalf("%d slots left of %d after %d bookings", len(left.Data), len(all.Data), bookings)
	}

	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			env.Do("GET", path, p.Key, nil).Expect(b, 200)
		}
		b.ReportMetric(float64(len(left.Data)), "slots")
	})
	b.Run("compute", func(b *testing.B) {
		var w booking.Week
		for d := time.Monday; d <= time.Saturday; d++ {
			w[d] = []booking.Interval{{Start: 540, End: 1080}}
		}
		r := booking.Rules{Loc: loc, Week: w, MaxDaysAhead: 120, Duration: 30 * time.Minute, Buffer: 10 * time.Minute}
		now := time.Now()
		for b.Loop() {
			if n := len(booking.Slots(r, from, to, now, busy)); n != len(left.Data) {
				b.Fatalf("%d slots", n)
			}
		}
	})
}
