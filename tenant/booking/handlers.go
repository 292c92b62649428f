package booking

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Deps is what the pillar is built with.
type Deps struct {
	// Events receives the booking events, in the transaction of the change.
	Events tenant.Emitter
	// Now is the clock availability and bookings are judged by (time.Now
	// when nil; fixed in tests).
	Now func() time.Time
}

// Pillar is the booking pillar (Service is the bookable service).
type Pillar struct {
	tenant.Base
	events tenant.Emitter
	now    func() time.Time
}

// New builds the pillar.
func New(d Deps) *Pillar {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Pillar{events: d.Events, now: d.Now}
}

// Routes mounts the authenticated booking routes: booking:read for GET,
// booking:write otherwise, booking:admin for the settings.
func (h *Pillar) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("booking"))
		r.Get("/booking/services", tenant.Handle(h.listServices))
		r.Post("/booking/services", tenant.Handle(h.createService))
		r.Get("/booking/services/{id}", tenant.Handle(getByID(getService)))
		r.Patch("/booking/services/{id}", tenant.Handle(h.updateService))
		r.Delete("/booking/services/{id}", tenant.Handle(h.deleteService))
		r.Get("/booking/availability", tenant.Handle(h.availability))
		r.Get("/bookings", tenant.Handle(h.listBookings))
		r.Post("/bookings", tenant.Handle(h.createBooking))
		r.Get("/bookings/{id}", tenant.Handle(getByID(getBooking)))
		for action := range transitions {
			r.Post("/bookings/{id}/"+action, tenant.Handle(h.transition(action)))
		}
	})
	r.Group(func(r chi.Router) {
		r.Use(tenant.RequireScope("booking:admin"))
		r.Get("/booking/settings", tenant.Handle(h.getSettings))
		r.Patch("/booking/settings", tenant.Handle(h.patchSettings))
	})
}

// PublicRoutes mounts the keyless routes a site's visitors use; the router
// has already resolved the project. They show active services, free slots
// and the visitor's own new booking, never other customers' data.
func (h *Pillar) PublicRoutes(r chi.Router) {
	r.Get("/booking/services", tenant.Handle(h.publicServices))
	r.Get("/booking/availability", tenant.Handle(h.publicAvailability))
	r.Post("/bookings", tenant.Handle(h.createBooking))
}

// getByID serves GET of one service or booking by the id of its path, read
// by get without a lock.
func getByID[T any](get func(ctx context.Context, tx tenant.Querier, id int64, lock bool) (T, error)) tenant.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
		id, err := httpapi.PathID(r, "id", httpapi.ErrNotFound)
		if err != nil {
			return err
		}
		v, err := get(r.Context(), s.Reader(), id, false)
		if err != nil {
			return err
		}
		return httpapi.JSON(w, 200, v)
	}
}

// ---- settings

func (h *Pillar) getSettings(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	set, err := loadSettings(r.Context(), s.Reader())
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, set.toJSON(s.Project.Timezone))
}

func (h *Pillar) patchSettings(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var p settingsPatch
	if err := httpapi.Decode(r, &p); err != nil {
		return err
	}
	set, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Settings, error) { return patchSettings(r.Context(), tx, p) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, set.toJSON(s.Project.Timezone))
}

// patchSettings merges p into the stored settings, one PATCH at a time,
// and stores the result.
func patchSettings(ctx context.Context, tx pgx.Tx, p settingsPatch) (Settings, error) {
	if err := lockSettings(ctx, tx); err != nil {
		return Settings{}, err
	}
	cur, err := loadSettings(ctx, tx)
	if err != nil {
		return Settings{}, err
	}
	set, err := p.apply(cur)
	if err != nil {
		return Settings{}, err
	}
	return set, saveSettings(ctx, tx, set)
}

// ---- services

func (h *Pillar) listServices(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return h.serveServices(w, r, s, false)
}

func (h *Pillar) publicServices(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return h.serveServices(w, r, s, true)
}

func (h *Pillar) serveServices(w http.ResponseWriter, r *http.Request, s *tenant.Scope, public bool) error {
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Service, error) {
		return listServices(r.Context(), s.Reader(), before, limit, public)
	}, func(s Service) string { return httpapi.IDText(s.ID) })
	if err != nil {
		return err
	}
	if public {
		return httpapi.PublicJSON(w, r, list)
	}
	return httpapi.JSON(w, 200, list)
}

func (h *Pillar) createService(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var in serviceInput
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	if in.Name == nil {
		return httpapi.BadRequest(`missing required field "name"`)
	}
	svc, err := in.apply(Service{DurationMinutes: 60, Currency: "usd", IsActive: true})
	if err != nil {
		return err
	}
	svc, err = tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Service, error) { return insertService(r.Context(), tx, svc) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, svc)
}

func (h *Pillar) updateService(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", httpapi.ErrNotFound)
	if err != nil {
		return err
	}
	var in serviceInput
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	svc, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Service, error) { return patchService(r.Context(), tx, id, in) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, svc)
}

// patchService applies in to service id, locked while it is merged.
func patchService(ctx context.Context, tx pgx.Tx, id int64, in serviceInput) (Service, error) {
	cur, err := getService(ctx, tx, id, true)
	if err != nil {
		return Service{}, err
	}
	svc, err := in.apply(cur)
	if err != nil {
		return Service{}, err
	}
	return updateService(ctx, tx, svc)
}

func (h *Pillar) deleteService(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", httpapi.ErrNotFound)
	if err != nil {
		return err
	}
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return deleteService(r.Context(), tx, id) }); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// ---- availability

func (h *Pillar) availability(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return h.serveAvailability(w, r, s, false)
}

func (h *Pillar) publicAvailability(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return h.serveAvailability(w, r, s, true)
}

// rules combines the settings and a service into the availability rules.
func rules(set Settings, loc *time.Location, svc Service) Rules {
	return Rules{Loc: loc, Week: set.Week, MinNotice: time.Duration(set.MinNoticeMinutes) * time.Minute,
		MaxDaysAhead: set.MaxDaysAhead, Duration: time.Duration(svc.DurationMinutes) * time.Minute,
		Buffer: time.Duration(svc.BufferMinutes) * time.Minute}
}

func (h *Pillar) serveAvailability(w http.ResponseWriter, r *http.Request, s *tenant.Scope, public bool) error {
	q := r.URL.Query()
	sid, err := queryID(q, "service_id", true)
	if err != nil {
		return err
	}
	now := h.now()
	slots, err := freeSlots(r.Context(), s, s.Project.Timezone, sid, q, now, public)
	if err != nil {
		return err
	}
	body := map[string][]Slot{"data": slots}
	if public {
		return httpapi.PublicJSON(w, r, body)
	}
	return httpapi.JSON(w, 200, body)
}

// freeSlots returns the free slots of service sid in the range q asks
// (parseRange), judged at now; projectTZ is the project's timezone. With
// public, an inactive service does not exist.
//
// One round trip: the settings (the timezone the range is read in), the
// service (its duration and buffer) and the busy spans are one ReadBatch,
// the spans read over busyWindow, which holds the range in any timezone,
// and filtered here to the range the settings give.
func freeSlots(ctx context.Context, s *tenant.Scope, projectTZ string, sid int64, q url.Values, now time.Time, public bool) ([]Slot, error) {
	var (
		set    Settings
		svc    Service
		absent error
		busy   []Span
		b      tenant.ReadBatch
	)
	queueSettings(&b, &set)
	queueService(&b, sid, &svc, &absent)
	lo, hi, windowed := busyWindow(q, now)
	if windowed {
		queueBusySpans(&b, sid, lo, hi, &busy)
	}
	if err := s.ReadBatch(ctx, &b); err != nil {
		return nil, err
	}
	if absent != nil || public && !svc.IsActive {
		return nil, httpapi.NotFound("no such service")
	}
	_, loc := set.zone(projectTZ)
	from, to, err := parseRange(q, loc, now, true)
	if err != nil {
		return nil, err
	}
	slots := []Slot{}
	if !svc.IsActive { // not bookable: no slots
		return slots, nil
	}
	rl := rules(set, loc, svc)
	end := to.Add(rl.Duration + rl.Buffer)
	if windowed && !from.Before(lo) && !to.After(hi) {
		busy = overlapping(busy, from, end)
	} else if busy, err = busySpans(ctx, s.Reader(), sid, from, end); err != nil {
		// A range busyWindow does not hold (it holds every range
		// parseRange accepts): read its spans on their own.
		return nil, err
	}
	for _, sp := range Slots(rl, from, to, now, busy) {
		slots = append(slots, Slot{sp.Start, sp.End})
	}
	return slots, nil
}

// zoneMargin widens a range read in UTC to hold it read in any timezone:
// a date starts between 14 hours before (UTC+14) and 12 after (UTC-12)
// its UTC midnight, a skipped midnight and a daylight-saving change in a
// default range move it by an hour or two more.
const zoneMargin = 27 * time.Hour

// busyWindow is a range that holds the range parseRange reads q as,
// whatever the timezone: ok is false when q does not parse, or spans
// more than parseRange accepts in any timezone (it is refused), so that
// a malformed request reads no spans.
func busyWindow(q url.Values, now time.Time) (lo, hi time.Time, ok bool) {
	from, to, err := parseRange(q, time.UTC, now, false)
	if err != nil {
		return lo, hi, false
	}
	if from.IsZero() {
		from = now
	}
	if to.IsZero() {
		to = from.AddDate(0, 0, DefaultRangeDays)
	}
	lo, hi = from.Add(-zoneMargin), to.Add(zoneMargin)
	return lo, hi, hi.After(lo) && hi.Sub(lo) <= (MaxRangeDays+4)*24*time.Hour
}

// queryID reads a positive integer id from the query.
func queryID(q url.Values, name string, required bool) (int64, error) {
	v := q.Get(name)
	if v == "" {
		if required {
			return 0, httpapi.Invalid(name, "is required")
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, httpapi.Invalid(name, "must be a positive integer id")
	}
	return n, nil
}

// parseRange reads from and to: RFC 3339 instants or YYYY-MM-DD dates in
// loc (from: the start of that date; to: the end of it, so from=to=D is the
// day D). For availability (bounded) from defaults to now and to to seven
// days after from, and the range may span at most MaxRangeDays days.
func parseRange(q url.Values, loc *time.Location, now time.Time, bounded bool) (from, to time.Time, err error) {
	var v httpapi.Validator
	from, okFrom := parseWhen(&v, q, "from", loc, false)
	to, okTo := parseWhen(&v, q, "to", loc, true)
	if err := v.Err(); err != nil {
		return from, to, err
	}
	if !bounded {
		return from, to, nil
	}
	if !okFrom {
		from = now
	}
	if !okTo {
		to = from.In(loc).AddDate(0, 0, DefaultRangeDays)
	}
	v.Check(to.After(from), "to", "must be after from")
	// calendar days in loc: a range across a daylight-saving change is an
	// hour shorter or longer than 93×24 hours
	v.Check(!to.After(from.In(loc).AddDate(0, 0, MaxRangeDays)), "to", fmt.Sprintf("the range from..to must span at most %d days", MaxRangeDays))
	return from, to, v.Err()
}

// parseWhen reads one bound; ok is false when it is absent.
func parseWhen(v *httpapi.Validator, q url.Values, name string, loc *time.Location, end bool) (time.Time, bool) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, false
	}
	t, day, ok := whenOf(s, end)
	switch {
	case !ok:
		v.Check(false, name, "must be an RFC 3339 timestamp or a date YYYY-MM-DD")
		return time.Time{}, false
	case day.IsZero():
		return t.UTC(), true
	}
	return DayStart(day, loc), true
}

// whenOf reads a range bound: an RFC 3339 instant, or else a date (as
// midnight UTC; the day after it for the end of a range); ok is false
// when s is neither.
func whenOf(s string, end bool) (instant, day time.Time, ok bool) {
	// An unescaped "+" of an offset arrives as a space; read it as meant.
	if t, err := time.Parse(time.RFC3339, strings.Replace(s, " ", "+", 1)); err == nil {
		return t, time.Time{}, true
	}
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	if end {
		d = d.AddDate(0, 0, 1)
	}
	return time.Time{}, d, true
}

// ---- bookings

// createBooking serves POST /bookings, with a key or on the public surface.
func (h *Pillar) createBooking(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var in bookingInput
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	nb, err := in.validate()
	if err != nil {
		return err
	}
	now := h.now()
	b, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Booking, error) { return h.book(r.Context(), tx, s, nb, now) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, b)
}

// book stores booking nb if its start is a free slot of its active
// service at now, confirmed at once when the settings say so (emitting
// booking.confirmed), else pending.
func (h *Pillar) book(ctx context.Context, tx pgx.Tx, s *tenant.Scope, nb newBooking, now time.Time) (Booking, error) {
	set, err := loadSettings(ctx, tx)
	if err != nil {
		return Booking{}, err
	}
	svc, err := getService(ctx, tx, nb.ServiceID, false)
	if errors.Is(err, httpapi.ErrNotFound) || err == nil && !svc.IsActive {
		return Booking{}, httpapi.Invalid("service_id", "no active service has this id")
	}
	if err != nil {
		return Booking{}, err
	}
	_, loc := set.zone(s.Project.Timezone)
	rl := rules(set, loc, svc)
	if !IsSlot(rl, nb.StartAt, now) {
		return Booking{}, httpapi.Invalid("start_at", "is not a slot of this service's availability (weekly hours, notice, days ahead); see /booking/availability")
	}
	status := StatusPending
	if set.AutoConfirm {
		status = StatusConfirmed
	}
	end := nb.StartAt.Add(rl.Duration)
	b, err := insertBooking(ctx, tx, nb, end, end.Add(rl.Buffer), status)
	if errors.Is(err, errOverlap) {
		return Booking{}, httpapi.Conflict(httpapi.CodeSlotUnavailable,
			"the slot starting at "+nb.StartAt.Format(time.RFC3339)+" is no longer available; refresh the availability and choose another")
	}
	if err != nil {
		return Booking{}, err
	}
	if status == StatusConfirmed {
		return b, h.emit(ctx, tx, s, TopicConfirmed, b)
	}
	return b, nil
}

func (h *Pillar) emit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, b Booking) error {
	return h.events.Emit(ctx, tx, s, topic, b)
}

var statuses = []string{StatusPending, StatusConfirmed, StatusCancelled, StatusCompleted}

func (h *Pillar) listBookings(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !slices.Contains(statuses, status) {
		return httpapi.Invalid("status", "must be one of "+strings.Join(statuses, ", "))
	}
	sid, err := queryID(q, "service_id", false)
	if err != nil {
		return err
	}
	f := bookingFilter{Status: status, ServiceID: sid}
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Booking, error) {
		f.Before = before
		return findBookings(r.Context(), s, s.Project.Timezone, f, q, h.now(), limit)
	}, func(b Booking) string { return httpapi.IDText(b.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, list)
}

// findBookings lists the bookings f selects in the range q asks, read in
// the timezone in effect (parseRange, unbounded).
//
// One round trip: a range of instants is the same in every timezone, so
// it reads the bookings alone; a range with a date reads the settings,
// and the bookings with the date read by PostgreSQL in their timezone,
// as one ReadBatch. PostgreSQL's reading of a date (AT TIME ZONE) is
// checked against parseRange's, and a range it reads otherwise (or not
// at all: a zone it does not know, a date out of its range) is read
// again as parseRange has it.
func findBookings(ctx context.Context, s *tenant.Scope, projectTZ string, f bookingFilter, q url.Values, now time.Time, limit int) ([]Booking, error) {
	var err error
	if f.From, f.To, err = parseRange(q, time.UTC, now, false); err != nil {
		return nil, err // malformed in any timezone
	}
	f.FromDate, f.ToDate = dateBound(q, "from", false), dateBound(q, "to", true)
	if f.FromDate == "" && f.ToDate == "" {
		return listBookings(ctx, s.Reader(), f, limit)
	}
	if f.FromDate != "" {
		f.From = time.Time{}
	}
	if f.ToDate != "" {
		f.To = time.Time{}
	}
	f.Zone, _ = Settings{}.zone(projectTZ)
	var (
		set      Settings
		list     []Booking
		from, to *time.Time
		b        tenant.ReadBatch
	)
	queueSettings(&b, &set)
	queueBookings(&b, f, limit, &list, &from, &to)
	err = s.ReadBatch(ctx, &b)
	read := err == nil
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") {
		set, err = loadSettings(ctx, s.Reader())
	}
	if err != nil {
		return nil, err
	}
	_, loc := set.zone(projectTZ)
	exact := bookingFilter{Status: f.Status, ServiceID: f.ServiceID, Before: f.Before}
	if exact.From, exact.To, err = parseRange(q, loc, now, false); err != nil {
		return nil, err
	}
	if read && sameBound(from, f.FromDate, exact.From) && sameBound(to, f.ToDate, exact.To) {
		return list, nil
	}
	return listBookings(ctx, s.Reader(), exact, limit)
}

// dateBound is the date bound name of q is (the day after it for the
// end of a range), as parseWhen reads it, or "" when it is none.
func dateBound(q url.Values, name string, end bool) string {
	if _, day, ok := whenOf(q.Get(name), end); ok && !day.IsZero() {
		return day.Format("2006-01-02")
	}
	return ""
}

// sameBound reports whether PostgreSQL read date as the instant want.
func sameBound(got *time.Time, date string, want time.Time) bool {
	return date == "" || got != nil && got.Equal(want)
}

// transition serves POST /bookings/{id}/{action}: a status change allowed
// only from the statuses transitions lists (else 409 conflict naming the
// current status), firing its event in the same transaction.
func (h *Pillar) transition(action string) tenant.HandlerFunc {
	t := transitions[action]
	return func(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
		id, err := httpapi.PathID(r, "id", httpapi.ErrNotFound)
		if err != nil {
			return err
		}
		b, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Booking, error) { return h.move(r.Context(), tx, s, id, t) })
		if err != nil {
			return err
		}
		return httpapi.JSON(w, 200, b)
	}
}

// move applies transition t to booking id, locked, and fires its event.
func (h *Pillar) move(ctx context.Context, tx pgx.Tx, s *tenant.Scope, id int64, t transitionRule) (Booking, error) {
	cur, err := getBooking(ctx, tx, id, true)
	if err != nil {
		return Booking{}, err
	}
	if !slices.Contains(t.from, cur.Status) {
		return Booking{}, httpapi.Conflict(httpapi.CodeConflict, fmt.Sprintf("the booking is %s; only a %s booking can be %s",
			cur.Status, strings.Join(t.from, " or "), t.to))
	}
	b, err := setStatus(ctx, tx, id, t.to)
	if err != nil {
		return Booking{}, err
	}
	return b, h.emit(ctx, tx, s, t.topic, b)
}
