// Package booking is the appointment pillar: services, the project's
// booking settings (timezone, weekly hours, auto-confirm, notice, days
// ahead), availability computed from them, and bookings that never overlap
// for one service, whatever the concurrency: a PostgreSQL exclusion
// constraint (btree_gist) guarantees it, and its violation is answered
// 409 slot_unavailable.
package booking

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Booking statuses.
const (
	StatusPending   = "pending"
	StatusConfirmed = "confirmed"
	StatusCancelled = "cancelled"
	StatusCompleted = "completed"
)

// Event topics.
const (
	TopicConfirmed = "booking.confirmed"
	TopicCancelled = "booking.cancelled"
	TopicCompleted = "booking.completed"
)

// Limits on input, in characters unless stated.
const (
	MaxName          = 200
	MaxDescription   = 5000
	MaxEmail         = httpapi.MaxEmail
	MaxPhone         = 40
	MaxNotes         = 2000
	MaxDuration      = 1440            // minutes
	MaxBuffer        = 1440            // minutes
	MaxPrice         = 100_000_000_000 // minor units
	MaxNotice        = 525_600         // minutes (a year)
	MaxDaysAhead     = 730
	MaxIntervals     = 12 // per day
	MaxRangeDays     = 93 // of one availability request
	DefaultRangeDays = 7
)

// Service is the bookable service resource.
type Service struct {
	ID              int64  `json:"id"`
	Name            string `json:"name"`
	Description     string `json:"description"`
	DurationMinutes int    `json:"duration_minutes"`
	BufferMinutes   int    `json:"buffer_minutes"`
	Price           int64  `json:"price"`
	Currency        string `json:"currency"`
	IsActive        bool   `json:"is_active"`
}

// Customer is who a booking is for.
type Customer struct {
	Name  string  `json:"name"`
	Email string  `json:"email"`
	Phone *string `json:"phone"`
}

// Booking is the booking resource (also the data of its events).
type Booking struct {
	ID        int64     `json:"id"`
	ServiceID int64     `json:"service_id"`
	StartAt   time.Time `json:"start_at"`
	EndAt     time.Time `json:"end_at"`
	Status    string    `json:"status"`
	Customer  Customer  `json:"customer"`
	Notes     *string   `json:"notes"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Slot is one free slot of the availability.
type Slot struct {
	StartAt time.Time `json:"start_at"`
	EndAt   time.Time `json:"end_at"`
}

// days are the weekday keys of weekly_hours, indexed by time.Weekday.
var days = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// WeekJSON is weekly_hours as the API shows it: every day, Monday first;
// an empty list is a closed day.
type WeekJSON struct {
	Mon [][2]string `json:"mon"`
	Tue [][2]string `json:"tue"`
	Wed [][2]string `json:"wed"`
	Thu [][2]string `json:"thu"`
	Fri [][2]string `json:"fri"`
	Sat [][2]string `json:"sat"`
	Sun [][2]string `json:"sun"`
}

// SettingsJSON is the booking settings resource.
type SettingsJSON struct {
	Timezone         string   `json:"timezone"`
	WeeklyHours      WeekJSON `json:"weekly_hours"`
	AutoConfirm      bool     `json:"auto_confirm"`
	MinNoticeMinutes int      `json:"min_notice_minutes"`
	MaxDaysAhead     int      `json:"max_days_ahead"`
}

// Settings are the stored booking settings. Timezone is empty while the
// project's timezone is followed.
type Settings struct {
	Timezone         string
	Week             Week
	AutoConfirm      bool
	MinNoticeMinutes int
	MaxDaysAhead     int
}

// DefaultSettings apply until the first PATCH: Monday to Friday 09:00 to
// 17:00, bookings confirmed at once, at least an hour's notice, up to 90
// days ahead.
func DefaultSettings() Settings {
	var w Week
	for d := time.Monday; d <= time.Friday; d++ {
		w[d] = []Interval{{9 * 60, 17 * 60}}
	}
	return Settings{Week: w, AutoConfirm: true, MinNoticeMinutes: 60, MaxDaysAhead: 90}
}

// zone returns the timezone in effect: the settings' own, else the
// project's, else UTC.
func (s Settings) zone(projectTZ string) (string, *time.Location) {
	for _, name := range []string{s.Timezone, projectTZ} {
		if name == "" {
			continue
		}
		if loc, err := LoadZone(name); err == nil {
			return name, loc
		}
	}
	return "UTC", time.UTC
}

func (s Settings) toJSON(projectTZ string) SettingsJSON {
	tz, _ := s.zone(projectTZ)
	return SettingsJSON{Timezone: tz, WeeklyHours: weekToJSON(s.Week), AutoConfirm: s.AutoConfirm,
		MinNoticeMinutes: s.MinNoticeMinutes, MaxDaysAhead: s.MaxDaysAhead}
}

func weekToJSON(w Week) WeekJSON {
	f := func(d time.Weekday) [][2]string {
		out := make([][2]string, 0, len(w[d]))
		for _, iv := range w[d] {
			out = append(out, [2]string{clock(iv.Start), clock(iv.End)})
		}
		return out
	}
	return WeekJSON{Mon: f(time.Monday), Tue: f(time.Tuesday), Wed: f(time.Wednesday), Thu: f(time.Thursday),
		Fri: f(time.Friday), Sat: f(time.Saturday), Sun: f(time.Sunday)}
}

// weekFromJSON reads the stored form of weekly hours (the API form).
func weekFromJSON(b []byte) (Week, error) {
	var m map[string][][2]string
	var w Week
	if err := json.Unmarshal(b, &m); err != nil {
		return w, err
	}
	for d, name := range days {
		for _, p := range m[name] {
			s, ok1 := parseClock(p[0])
			e, ok2 := parseClock(p[1])
			if !ok1 || !ok2 {
				return w, fmt.Errorf("booking: stored weekly hours %q invalid", p)
			}
			w[d] = append(w[d], Interval{s, e})
		}
	}
	return w, nil
}

// clock formats minutes after midnight as HH:MM.
func clock(min int) string { return fmt.Sprintf("%02d:%02d", min/60, min%60) }

var clockRe = regexp.MustCompile(`^([01][0-9]|2[0-4]):([0-5][0-9])$`)

// parseClock reads HH:MM, 00:00 to 24:00, as minutes after midnight.
func parseClock(s string) (int, bool) {
	m := clockRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	h, _ := strconv.Atoi(m[1])
	mm, _ := strconv.Atoi(m[2])
	if h == 24 && mm != 0 {
		return 0, false
	}
	return h*60 + mm, true
}

// parseDay validates the intervals of one day: [["HH:MM","HH:MM"], ...],
// each start before its end ("24:00" only as an end), not overlapping.
func parseDay(v *httpapi.Validator, field string, raw json.RawMessage) []Interval {
	if string(raw) == "null" {
		return nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		v.Check(false, field, `must be a list of ["HH:MM","HH:MM"] pairs`)
		return nil
	}
	if len(pairs) > MaxIntervals {
		v.Check(false, field, fmt.Sprintf("must have at most %d intervals", MaxIntervals))
		return nil
	}
	out := make([]Interval, 0, len(pairs))
	for _, p := range pairs {
		if len(p) != 2 {
			v.Check(false, field, `each interval must be a pair ["HH:MM","HH:MM"]`)
			return nil
		}
		s, ok1 := parseClock(p[0])
		e, ok2 := parseClock(p[1])
		if !ok1 || !ok2 || s == 24*60 {
			v.Check(false, field, fmt.Sprintf("%q is not a pair of times HH:MM (00:00 to 24:00)", p))
			return nil
		}
		if s >= e {
			v.Check(false, field, fmt.Sprintf("interval %s-%s must end after it starts (intervals cannot cross midnight)", p[0], p[1]))
			return nil
		}
		out = append(out, Interval{s, e})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	for i := 1; i < len(out); i++ {
		if out[i].Start < out[i-1].End {
			v.Check(false, field, "intervals must not overlap")
			return nil
		}
	}
	return out
}

// settingsPatch is the body of PATCH /booking/settings. weekly_hours merges
// per day: a day present replaces that day's intervals ([] or null closes
// it), a day absent keeps them. timezone null follows the project again.
type settingsPatch struct {
	Timezone         json.RawMessage            `json:"timezone"`
	WeeklyHours      map[string]json.RawMessage `json:"weekly_hours"`
	AutoConfirm      *bool                      `json:"auto_confirm"`
	MinNoticeMinutes *int                       `json:"min_notice_minutes"`
	MaxDaysAhead     *int                       `json:"max_days_ahead"`
}

func (p *settingsPatch) apply(s Settings) (Settings, error) {
	var v httpapi.Validator
	if p.Timezone != nil {
		var tz *string
		if err := json.Unmarshal(p.Timezone, &tz); err != nil {
			v.Check(false, "timezone", "must be an IANA time zone name such as Europe/Berlin, or null")
		} else if tz == nil {
			s.Timezone = ""
		} else {
			_, err := LoadZone(*tz)
			v.Check(*tz != "" && *tz != "Local" && err == nil, "timezone", "must be an IANA time zone name such as Europe/Berlin")
			s.Timezone = *tz
		}
	}
	for name, raw := range p.WeeklyHours {
		d := dayIndex(name)
		if d < 0 {
			v.Check(false, "weekly_hours", fmt.Sprintf("unknown day %q; days are mon, tue, wed, thu, fri, sat, sun", name))
			continue
		}
		s.Week[d] = parseDay(&v, "weekly_hours."+name, raw)
	}
	if p.AutoConfirm != nil {
		s.AutoConfirm = *p.AutoConfirm
	}
	if p.MinNoticeMinutes != nil {
		v.Check(*p.MinNoticeMinutes >= 0 && *p.MinNoticeMinutes <= MaxNotice, "min_notice_minutes",
			fmt.Sprintf("must be from 0 to %d", MaxNotice))
		s.MinNoticeMinutes = *p.MinNoticeMinutes
	}
	if p.MaxDaysAhead != nil {
		v.Check(*p.MaxDaysAhead >= 0 && *p.MaxDaysAhead <= MaxDaysAhead, "max_days_ahead",
			fmt.Sprintf("must be from 0 to %d", MaxDaysAhead))
		s.MaxDaysAhead = *p.MaxDaysAhead
	}
	return s, v.Err()
}

func dayIndex(name string) int {
	for i, d := range days {
		if d == name {
			return i
		}
	}
	return -1
}

// serviceInput is the body of POST and PATCH /booking/services; on create
// name is required and the rest default (60 minutes, no buffer, free, usd,
// active).
type serviceInput struct {
	Name            *string `json:"name"`
	Description     *string `json:"description"`
	DurationMinutes *int    `json:"duration_minutes"`
	BufferMinutes   *int    `json:"buffer_minutes"`
	Price           *int64  `json:"price"`
	Currency        *string `json:"currency"`
	IsActive        *bool   `json:"is_active"`
}

var currencyRe = regexp.MustCompile(`^[a-zA-Z]{3}$`)

func (in *serviceInput) apply(s Service) (Service, error) {
	var v httpapi.Validator
	if in.Name != nil {
		s.Name = strings.TrimSpace(*in.Name)
		v.Check(s.Name != "", "name", "must not be empty")
		checkText(&v, "name", s.Name, MaxName)
	}
	if in.Description != nil {
		s.Description = strings.TrimSpace(*in.Description)
		checkText(&v, "description", s.Description, MaxDescription)
	}
	if in.DurationMinutes != nil {
		s.DurationMinutes = *in.DurationMinutes
		v.Check(s.DurationMinutes >= 1 && s.DurationMinutes <= MaxDuration, "duration_minutes",
			fmt.Sprintf("must be from 1 to %d", MaxDuration))
	}
	if in.BufferMinutes != nil {
		s.BufferMinutes = *in.BufferMinutes
		v.Check(s.BufferMinutes >= 0 && s.BufferMinutes <= MaxBuffer, "buffer_minutes",
			fmt.Sprintf("must be from 0 to %d", MaxBuffer))
	}
	if in.Price != nil {
		s.Price = *in.Price
		v.Check(s.Price >= 0 && s.Price <= MaxPrice, "price", "must be a non-negative integer amount in the currency's minor unit")
	}
	if in.Currency != nil {
		v.Check(currencyRe.MatchString(*in.Currency), "currency", "must be a three-letter ISO 4217 code such as eur")
		s.Currency = strings.ToLower(*in.Currency)
	}
	if in.IsActive != nil {
		s.IsActive = *in.IsActive
	}
	return s, v.Err()
}

// bookingInput is the body of POST /bookings (also public).
type bookingInput struct {
	ServiceID int64          `json:"service_id" required:"true"`
	StartAt   string         `json:"start_at" required:"true"`
	Customer  *customerInput `json:"customer" required:"true"`
	Notes     *string        `json:"notes"`
}

type customerInput struct {
	Name  *string `json:"name"`
	Email *string `json:"email"`
	Phone *string `json:"phone"`
}

// newBooking is a validated booking request.
type newBooking struct {
	ServiceID int64
	StartAt   time.Time
	Customer  Customer
	Notes     *string
}

var phoneRe = regexp.MustCompile(`^\+?[0-9 ().\-/]{3,40}$`)

func (in *bookingInput) validate() (newBooking, error) {
	if in.Customer.Name == nil {
		return newBooking{}, httpapi.BadRequest(`missing required field "customer.name"`)
	}
	if in.Customer.Email == nil {
		return newBooking{}, httpapi.BadRequest(`missing required field "customer.email"`)
	}
	var v httpapi.Validator
	nb := newBooking{ServiceID: in.ServiceID}
	v.Check(in.ServiceID > 0, "service_id", "must be the id of a service")
	t, err := time.Parse(time.RFC3339, in.StartAt)
	v.Check(err == nil, "start_at", "must be an RFC 3339 timestamp such as 2030-01-07T09:00:00Z")
	nb.StartAt = t.UTC()
	nb.Customer.Name = strings.TrimSpace(*in.Customer.Name)
	v.Check(nb.Customer.Name != "", "customer.name", "must not be empty")
	checkText(&v, "customer.name", nb.Customer.Name, MaxName)
	nb.Customer.Email = strings.TrimSpace(*in.Customer.Email)
	v.Check(httpapi.ValidEmail(nb.Customer.Email), "customer.email", "must be an email address such as name@example.com")
	if in.Customer.Phone != nil {
		if p := strings.TrimSpace(*in.Customer.Phone); p != "" {
			v.Check(phoneRe.MatchString(p) && utf8.RuneCountInString(p) <= MaxPhone, "customer.phone",
				"must be a phone number of digits, spaces and + ( ) . - /")
			nb.Customer.Phone = &p
		}
	}
	if in.Notes != nil {
		if n := strings.TrimSpace(*in.Notes); n != "" {
			checkText(&v, "notes", n, MaxNotes)
			nb.Notes = &n
		}
	}
	return nb, v.Err()
}

func checkText(v *httpapi.Validator, field, s string, max int) {
	v.Check(utf8.RuneCountInString(s) <= max, field, fmt.Sprintf("must be at most %d characters", max))
	v.Check(!strings.ContainsRune(s, 0), field, "must not contain NUL characters")
}

// transitionRule is one action's entry in transitions.
type transitionRule struct {
	from  []string
	to    string
	topic string
}

// transitions lists, per action, the statuses it applies to, the status it
// leads to and the event it fires.
var transitions = map[string]transitionRule{
	"confirm":  {[]string{StatusPending}, StatusConfirmed, TopicConfirmed},
	"cancel":   {[]string{StatusPending, StatusConfirmed}, StatusCancelled, TopicCancelled},
	"complete": {[]string{StatusConfirmed}, StatusCompleted, TopicCompleted},
}
