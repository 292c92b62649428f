package booking

import (
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadZone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func starts(spans []Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Start.UTC().Format(time.RFC3339)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// everyDay opens every weekday with the same intervals.
func everyDay(iv ...Interval) Week {
	var w Week
	for d := range w {
		w[d] = iv
	}
	return w
}

// The expected instants below are computed by hand from the zone rules:
//
//	Europe/Berlin: CET is UTC+1, CEST UTC+2. 2025-03-30 02:00 CET jumps to
//	03:00 CEST (at 01:00Z); 2025-10-26 03:00 CEST falls back to 02:00 CET
//	(at 01:00Z).
//	America/New_York: EST is UTC-5, EDT UTC-4. 2025-03-09 02:00 EST jumps to
//	03:00 EDT (at 07:00Z); 2025-11-02 02:00 EDT falls back to 01:00 EST (at
//	06:00Z).
//
// Weekly hours 01:00-04:00 (wall clock) and a 60-minute service:
//   - Berlin spring forward: 01:00 CET = 00:00Z; 02:00-03:00 does not exist;
//     03:00 CEST = 01:00Z; 04:00 CEST = 02:00Z. Two real hours: slots 00:00Z
//     (01:00 CET) and 01:00Z (03:00 CEST).
//   - Berlin fall back: 01:00 CEST = 23:00Z the day before; 02:00-03:00 runs
//     twice (00:00Z-01:00Z CEST, 01:00Z-02:00Z CET); 04:00 CET = 03:00Z.
//     Four real hours: 23:00Z, 00:00Z, 01:00Z, 02:00Z.
//   - New York spring forward: 01:00 EST = 06:00Z, 03:00 EDT = 07:00Z,
//     04:00 EDT = 08:00Z: slots 06:00Z, 07:00Z.
//   - New York fall back: 01:00 EDT = 05:00Z; 01:00-02:00 runs twice (05:00Z
//     EDT, 06:00Z EST); 04:00 EST = 09:00Z: slots 05:00Z, 06:00Z, 07:00Z,
//     08:00Z.
func TestSlotsAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	now := utc("2025-01-01T00:00:00Z")
	cases := []struct {
		name, zone, date string
		hours            Interval
		dur, buf         time.Duration
		want             []string
	}{
		{"berlin spring forward", "Europe/Berlin", "2025-03-30", Interval{60, 240}, time.Hour, 0,
			[]string{"2025-03-30T00:00:00Z", "2025-03-30T01:00:00Z"}},
		{"berlin day before spring forward", "Europe/Berlin", "2025-03-29", Interval{60, 240}, time.Hour, 0,
			[]string{"2025-03-29T00:00:00Z", "2025-03-29T01:00:00Z", "2025-03-29T02:00:00Z"}},
		{"berlin day after spring forward", "Europe/Berlin", "2025-03-31", Interval{60, 240}, time.Hour, 0,
			[]string{"2025-03-30T23:00:00Z", "2025-03-31T00:00:00Z", "2025-03-31T01:00:00Z"}},
		{"berlin fall back", "Europe/Berlin", "2025-10-26", Interval{60, 240}, time.Hour, 0,
			[]string{"2025-10-25T23:00:00Z", "2025-10-26T00:00:00Z", "2025-10-26T01:00:00Z", "2025-10-26T02:00:00Z"}},
		{"new york spring forward", "America/New_York", "2025-03-09", Interval{60, 240}, time.Hour, 0,
			[]string{"2025-03-09T06:00:00Z", "2025-03-09T07:00:00Z"}},
		{"new york fall back", "America/New_York", "2025-11-02", Interval{60, 240}, time.Hour, 0,
			[]string{"2025-11-02T05:00:00Z", "2025-11-02T06:00:00Z", "2025-11-02T07:00:00Z", "2025-11-02T08:00:00Z"}},
		// Business hours on the change days: the offset after the change applies.
		// 09:00 CEST = 07:00Z; 17:00 CEST = 15:00Z: eight hourly slots.
		{"berlin spring forward business hours", "Europe/Berlin", "2025-03-30", Interval{540, 1020}, time.Hour, 0,
			[]string{"2025-03-30T07:00:00Z", "2025-03-30T08:00:00Z", "2025-03-30T09:00:00Z", "2025-03-30T10:00:00Z",
				"2025-03-30T11:00:00Z", "2025-03-30T12:00:00Z", "2025-03-30T13:00:00Z", "2025-03-30T14:00:00Z"}},
		// 09:00 EST = 14:00Z; 45 min + 15 min buffer: one slot an hour, the
		// last (16:00 EST = 21:00Z) ending at 16:45, inside 17:00.
		{"new york fall back business hours with buffer", "America/New_York", "2025-11-02", Interval{540, 1020}, 45 * time.Minute, 15 * time.Minute,
			[]string{"2025-11-02T14:00:00Z", "2025-11-02T15:00:00Z", "2025-11-02T16:00:00Z", "2025-11-02T17:00:00Z",
				"2025-11-02T18:00:00Z", "2025-11-02T19:00:00Z", "2025-11-02T20:00:00Z", "2025-11-02T21:00:00Z"}},
		// A window inside the repeated hour is open twice: 02:00-02:30 happens
		// at 00:00Z (CEST) and at 01:00Z (CET).
		{"berlin window inside the repeated hour", "Europe/Berlin", "2025-10-26", Interval{120, 150}, 30 * time.Minute, 0,
			[]string{"2025-10-26T00:00:00Z", "2025-10-26T01:00:00Z"}},
		// A window inside the skipped hour does not exist.
		{"berlin window inside the skipped hour", "Europe/Berlin", "2025-03-30", Interval{120, 180}, 30 * time.Minute, 0, nil},
		// The window 02:00-03:00 on the fall-back day is two contiguous real
		// hours (02:00 CEST to 03:00 CET): 00:00Z and 01:00Z.
		{"berlin repeated hour as one window", "Europe/Berlin", "2025-10-26", Interval{120, 180}, time.Hour, 0,
			[]string{"2025-10-26T00:00:00Z", "2025-10-26T01:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := mustZone(t, c.zone)
			d, _ := time.Parse("2006-01-02", c.date)
			r := Rules{Loc: loc, Week: everyDay(c.hours), MaxDaysAhead: 365, Duration: c.dur, Buffer: c.buf}
			from := DayStart(d, loc)
			to := DayStart(d.AddDate(0, 0, 1), loc)
			got := starts(Slots(r, from, to, now, nil))
			if !equal(got, c.want) {
				t.Fatalf("slots %v, want %v", got, c.want)
			}
			for _, s := range c.want {
				if !IsSlot(r, utc(s), now) {
					t.Fatalf("IsSlot(%s) false", s)
				}
			}
		})
	}
}

func TestDayStart(t *testing.T) {
	t.Parallel()
	cases := []struct{ zone, date, want string }{
		{"Europe/Berlin", "2025-03-30", "2025-03-29T23:00:00Z"},
		{"Europe/Berlin", "2025-03-31", "2025-03-30T22:00:00Z"},
		{"America/New_York", "2025-11-02", "2025-11-02T04:00:00Z"},
		{"America/New_York", "2025-11-03", "2025-11-03T05:00:00Z"},
		// Santiago springs forward at midnight: 00:00 of 2025-09-07 does not
		// exist; the day begins at 01:00 -03 = 04:00Z.
		{"America/Santiago", "2025-09-07", "2025-09-07T04:00:00Z"},
	}
	for _, c := range cases {
		d, _ := time.Parse("2006-01-02", c.date)
		if got := DayStart(d, mustZone(t, c.zone)).UTC().Format(time.RFC3339); got != c.want {
			t.Errorf("DayStart(%s, %s) = %s, want %s", c.date, c.zone, got, c.want)
		}
	}
}

func TestSlotsRules(t *testing.T) {
	t.Parallel()
	loc := mustZone(t, "Europe/Berlin")
	// Monday 2025-06-02, CEST (UTC+2); hours 09:00-12:00; 60 minutes.
	var w Week
	w[time.Monday] = []Interval{{540, 720}}
	base := Rules{Loc: loc, Week: w, MaxDaysAhead: 30, Duration: time.Hour}
	day := utc("2025-06-01T22:00:00Z")
	next := day.Add(24 * time.Hour)
	all := []string{"2025-06-02T07:00:00Z", "2025-06-02T08:00:00Z", "2025-06-02T09:00:00Z"}
	early := utc("2025-05-20T00:00:00Z")

	t.Run("plain", func(t *testing.T) {
		if got := starts(Slots(base, day, next, early, nil)); !equal(got, all) {
			t.Fatalf("%v", got)
		}
	})
	t.Run("closed days have no slots", func(t *testing.T) {
		if got := Slots(base, day.Add(-24*time.Hour), day, early, nil); len(got) != 0 {
			t.Fatalf("%v", starts(got))
		}
	})
	t.Run("minimum notice", func(t *testing.T) {
		r := base
		r.MinNotice = 90 * time.Minute
		now := utc("2025-06-02T06:00:00Z") // 08:00 local; earliest start 09:30 local
		if got := starts(Slots(r, day, next, now, nil)); !equal(got, all[1:]) {
			t.Fatalf("%v", got)
		}
		if IsSlot(r, utc(all[0]), now) {
			t.Fatal("a slot inside the notice is not a slot")
		}
	})
	t.Run("days ahead counts local dates", func(t *testing.T) {
		r := base
		r.MaxDaysAhead = 1
		// 2025-06-01 23:30 local (21:30Z): tomorrow, 2025-06-02, is within one day.
		if got := starts(Slots(r, day, next, utc("2025-06-01T21:30:00Z"), nil)); !equal(got, all) {
			t.Fatalf("%v", got)
		}
		// 2025-05-31 23:30 local: 2025-06-02 is two days ahead.
		if got := Slots(r, day, next, utc("2025-05-31T21:30:00Z"), nil); len(got) != 0 {
			t.Fatalf("%v", starts(got))
		}
	})
	t.Run("range bounds the start", func(t *testing.T) {
		got := starts(Slots(base, utc(all[1]), utc(all[2]), early, nil))
		if !equal(got, all[1:2]) {
			t.Fatalf("%v", got)
		}
	})
	t.Run("busy spans and buffers", func(t *testing.T) {
		r := base
		r.Duration, r.Buffer = 45*time.Minute, 15*time.Minute // still hourly slots
		// a booking 08:00Z-08:45Z blocking until 09:00Z takes exactly one slot
		busy := []Span{{utc("2025-06-02T08:00:00Z"), utc("2025-06-02T09:00:00Z")}}
		if got := starts(Slots(r, day, next, early, busy)); !equal(got, []string{all[0], all[2]}) {
			t.Fatalf("%v", got)
		}
		// an off-grid booking 07:50Z-08:10Z overlaps the first slot's buffer
		// (07:00Z-08:00Z) and the second slot
		busy = []Span{{utc("2025-06-02T07:50:00Z"), utc("2025-06-02T08:10:00Z")}}
		if got := starts(Slots(r, day, next, early, busy)); !equal(got, all[2:]) {
			t.Fatalf("%v", got)
		}
		// a long span reaching over later short ones still blocks
		busy = []Span{{utc("2025-06-02T06:00:00Z"), utc("2025-06-02T09:30:00Z")}, {utc("2025-06-02T07:00:00Z"), utc("2025-06-02T07:05:00Z")}}
		if got := Slots(r, day, next, early, busy); len(got) != 0 {
			t.Fatalf("%v", starts(got))
		}
		// touching is not overlapping: a booking ending at the slot's start
		busy = []Span{{utc("2025-06-02T06:00:00Z"), utc("2025-06-02T07:00:00Z")}}
		if got := starts(Slots(r, day, next, early, busy)); !equal(got, all) {
			t.Fatalf("%v", got)
		}
	})
	t.Run("off-grid starts are not slots", func(t *testing.T) {
		if IsSlot(base, utc("2025-06-02T07:30:00Z"), early) || IsSlot(base, utc("2025-06-02T10:00:00Z"), early) {
			t.Fatal("off-grid or after-hours start accepted")
		}
	})
}

func FuzzParseDay(f *testing.F) {
	for _, s := range []string{`[["09:00","17:00"]]`, `[["09:00","12:00"],["13:00","24:00"]]`, `null`, `[]`, `[["24:00","24:00"]]`, `[["9:00","10:00"]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v httpapi.Validator
		ivs := parseDay(&v, "mon", []byte(s))
		for i, iv := range ivs {
			if iv.Start < 0 || iv.End > 1440 || iv.Start >= iv.End || i > 0 && ivs[i-1].End > iv.Start {
				t.Fatalf("%q gave invalid intervals %v", s, ivs)
			}
		}
	})
}

// Every span wallSpans returns holds only instants whose local date and
// wall-clock time lie in the interval, and the instants just outside each
// span do not.
func FuzzWallSpans(f *testing.F) {
	zonesToTry := []string{"Europe/Berlin", "America/New_York", "America/Santiago", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Apia", "UTC"}
	f.Add(uint8(0), int64(20177), uint16(60), uint16(240)) // Berlin 2025-03-30
	f.Add(uint8(1), int64(20393), uint16(60), uint16(240)) // New York 2025-11-02
	f.Add(uint8(2), int64(20338), uint16(0), uint16(1440)) // Santiago 2025-09-07
	f.Add(uint8(3), int64(20366), uint16(90), uint16(180)) // Lord Howe 2025-10-05 (30-minute change)
	f.Add(uint8(5), int64(15337), uint16(0), uint16(1440)) // Apia 2011-12-30, a skipped day
	f.Fuzz(func(t *testing.T, z uint8, day int64, a, b uint16) {
		loc, err := LoadZone(zonesToTry[int(z)%len(zonesToTry)])
		if err != nil {
			t.Fatal(err)
		}
		d := time.Unix(0, 0).UTC().AddDate(0, 0, int(day%40000))
		iv := Interval{int(a) % 1441, int(b) % 1441}
		if iv.Start >= iv.End {
			return
		}
		in := func(t time.Time) bool {
			l := t.In(loc)
			m := l.Hour()*60 + l.Minute()
			return civil(l).Equal(d) && m >= iv.Start && m < iv.End
		}
		spans := wallSpans(d, iv, loc)
		for i, s := range spans {
			if !s.Start.Before(s.End) || i > 0 && !spans[i-1].End.Before(s.Start) {
				t.Fatalf("spans not ordered and disjoint: %v", spans)
			}
			if !in(s.Start) || !in(s.End.Add(-time.Second)) {
				t.Fatalf("%v-%v not inside %v on %s", s.Start, s.End, iv, d.Format("2006-01-02"))
			}
			if in(s.Start.Add(-time.Second)) || in(s.End) {
				t.Fatalf("%v-%v not maximal for %v on %s", s.Start, s.End, iv, d.Format("2006-01-02"))
			}
		}
	})
}
