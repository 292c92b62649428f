package booking

import (
	"sort"
	"sync"
	"time"

	// The zone database is compiled in, so availability is the same on a
	// machine without /usr/share/zoneinfo (a scratch container) as on any other.
	_ "time/tzdata"
)

// Interval is one opening interval of a day in minutes after midnight,
// wall-clock time: [Start, End), End at most 1440 ("24:00").
type Interval struct{ Start, End int }

// Week is the opening hours of each weekday, indexed by time.Weekday
// (Sunday is 0).
type Week [7][]Interval

// Span is a half-open range of instants [Start, End).
type Span struct{ Start, End time.Time }

// Rules are the inputs of availability that do not depend on the bookings.
type Rules struct {
	Loc          *time.Location
	Week         Week
	MinNotice    time.Duration
	MaxDaysAhead int
	Duration     time.Duration // of the appointment
	Buffer       time.Duration // kept free after each appointment
}

// Slots returns the bookable slots whose start lies in [from, to), in
// ascending order, given the blocked spans of existing bookings and the
// current time.
//
// Weekly hours are wall-clock hours in r.Loc: the opening interval
// [09:00, 17:00) of a date is the set of instants whose local time on that
// date is at least 09:00 and before 17:00. On a spring-forward day the
// skipped hour is simply absent (01:00-04:00 in Berlin is two real hours);
// on a fall-back day the repeated hour is open twice (01:00-04:00 is four
// real hours). Slots start at the opening instant of each contiguous piece
// of that set and follow each other every Duration+Buffer of real time;
// a slot's appointment must end inside the piece, while its buffer may run
// past closing. A slot is free when [start, start+Duration+Buffer) overlaps
// no busy span: the same test the database's exclusion constraint applies.
func Slots(r Rules, from, to, now time.Time, busy []Span) []Span {
	if r.Duration <= 0 || !from.Before(to) {
		return nil
	}
	earliest := now.Add(r.MinNotice)
	last := civil(now.In(r.Loc)).AddDate(0, 0, r.MaxDaysAhead) // last bookable local date
	step := r.Duration + r.Buffer
	var out []Span
	// Instants of local date D lie within about a day of D's midnight, so
	// the dates from the day before from to the day after to cover [from, to).
	first := civil(from.In(r.Loc)).AddDate(0, 0, -1)
	end := civil(to.In(r.Loc)).AddDate(0, 0, 1)
	if end.After(last) {
		end = last
	}
	for d := first; !d.After(end); d = d.AddDate(0, 0, 1) {
		for _, iv := range r.Week[d.Weekday()] {
			for _, p := range wallSpans(d, iv, r.Loc) {
				for s := p.Start; !s.Add(r.Duration).After(p.End); s = s.Add(step) {
					if s.Before(from) || !s.Before(to) || s.Before(earliest) {
						continue
					}
					out = append(out, Span{s, s.Add(r.Duration)})
				}
			}
		}
	}
	// Dates are visited in order, but a zone whose clock falls back across
	// midnight can interleave two dates' instants: sort to be sure.
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return free(out, busy, r.Buffer)
}

// free drops the slots whose span, extended by buffer, overlaps a busy span.
// busy need not be sorted.
func free(slots, busy []Span, buffer time.Duration) []Span {
	if len(busy) == 0 {
		return slots
	}
	b := append([]Span(nil), busy...)
	sort.Slice(b, func(i, j int) bool { return b[i].Start.Before(b[j].Start) })
	// maxEnd[i] is the latest end among b[:i+1], so a binary search on
	// starts finds whether any span reaching past a slot's start begins
	// before its end.
	maxEnd := make([]time.Time, len(b))
	for i, s := range b {
		maxEnd[i] = s.End
		if i > 0 && maxEnd[i-1].After(s.End) {
			maxEnd[i] = maxEnd[i-1]
		}
	}
	out := slots[:0]
	for _, s := range slots {
		blockedEnd := s.End.Add(buffer)
		// the busy spans starting before the slot's blocked range ends
		n := sort.Search(len(b), func(i int) bool { return !b[i].Start.Before(blockedEnd) })
		if n > 0 && maxEnd[n-1].After(s.Start) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// IsSlot reports whether start is the start of a slot of r, ignoring
// bookings: a real slot of the weekly hours within the notice and the days
// ahead.
func IsSlot(r Rules, start, now time.Time) bool {
	s := Slots(r, start, start.Add(time.Nanosecond), now, nil)
	return len(s) == 1 && s[0].Start.Equal(start)
}

// civil returns the local calendar date of t as midnight UTC, so that date
// arithmetic (AddDate, comparison) is free of zone transitions.
func civil(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// zoneSlack bounds how far a local wall-clock time lies from the same
// digits read as UTC: UTC offsets range from -12h to +14h.
const zoneSlack = 15 * time.Hour

// wallSpans returns the instants of the local date d (a civil date) whose
// wall-clock time in loc lies in [iv.Start, iv.End), as ordered, merged,
// disjoint spans. It walks the zone periods (spans of constant UTC offset)
// around the date: within a period of offset o, a wall time w is the
// instant w-o when that instant falls inside the period.
func wallSpans(d time.Time, iv Interval, loc *time.Location) []Span {
	lo := d.Add(time.Duration(iv.Start) * time.Minute) // wall times read as UTC
	hi := d.Add(time.Duration(iv.End) * time.Minute)
	var out []Span
	stop := hi.Add(zoneSlack)
	for t := lo.Add(-zoneSlack); t.Before(stop); {
		lt := t.In(loc)
		_, off := lt.Zone()
		ps, pe := lt.ZoneBounds()
		o := time.Duration(off) * time.Second
		s, e := lo.Add(-o), hi.Add(-o)
		if !ps.IsZero() && s.Before(ps) {
			s = ps
		}
		if !pe.IsZero() && e.After(pe) {
			e = pe
		}
		if s.Before(e) {
			if n := len(out); n > 0 && !out[n-1].End.Before(s) {
				if e.After(out[n-1].End) {
					out[n-1].End = e
				}
			} else {
				out = append(out, Span{s.UTC(), e.UTC()})
			}
		}
		if pe.IsZero() {
			break
		}
		t = pe
	}
	return out
}

// DayStart returns the first instant of the local date d (a civil date) in
// loc; midnight itself may not exist where a transition happens at 00:00.
func DayStart(d time.Time, loc *time.Location) time.Time {
	if s := wallSpans(d, Interval{0, 1440}, loc); len(s) > 0 {
		return s[0].Start
	}
	return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc) // a date skipped entirely
}

var zones sync.Map // name → *time.Location

// LoadZone is time.LoadLocation with a cache: loading parses the zone file
// every time, which would dominate a request.
func LoadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}
