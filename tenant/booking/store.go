package booking

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// The store runs inside a project's transaction (tenant.Scope.Tx), or for
// its reads on a read-only request's tenant.Querier (Scope.Reader); it
// translates database errors so the handlers never see pgx errors.

// errOverlap is the exclusion constraint's violation: the slot is taken.
var errOverlap = errors.New("booking: overlapping booking")

const settingsCols = `timezone, weekly_hours, auto_confirm, min_notice_minutes, max_days_ahead`

const settingsSQL = `SELECT ` + settingsCols + ` FROM booking_settings`

// loadSettings reads the settings, the defaults while none are stored.
func loadSettings(ctx context.Context, tx tenant.Querier) (_ Settings, err error) {
	defer httpapi.Wrap(&err, "loadSettings")
	rows, err := tx.Query(ctx, settingsSQL)
	if err != nil {
		return Settings{}, err
	}
	return scanSettings(rows)
}

// queueSettings queues on b the read of loadSettings into set.
func queueSettings(b *tenant.ReadBatch, set *Settings) {
	b.Queue(settingsSQL, nil, func(rows pgx.Rows) (err error) {
		*set, err = scanSettings(rows)
		return err
	})
}

// scanSettings reads the settings from the rows of settingsSQL, and
// closes them.
func scanSettings(rows pgx.Rows) (Settings, error) {
	defer rows.Close()
	if !rows.Next() {
		return DefaultSettings(), rows.Err()
	}
	var tz *string
	var week []byte
	s := DefaultSettings()
	if err := rows.Scan(&tz, &week, &s.AutoConfirm, &s.MinNoticeMinutes, &s.MaxDaysAhead); err != nil {
		return s, err
	}
	if tz != nil {
		s.Timezone = *tz
	}
	var err error
	s.Week, err = weekFromJSON(week)
	rows.Close()
	if rerr := rows.Err(); err == nil {
		err = rerr
	}
	return s, err
}

func saveSettings(ctx context.Context, tx pgx.Tx, s Settings) (err error) {
	defer httpapi.Wrap(&err, "saveSettings")
	var tz *string
	if s.Timezone != "" {
		tz = &s.Timezone
	}
	_, err = tx.Exec(ctx, `INSERT INTO booking_settings (`+settingsCols+`) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (singleton) DO UPDATE SET timezone = $1, weekly_hours = $2, auto_confirm = $3,
		min_notice_minutes = $4, max_days_ahead = $5, updated_at = now()`,
		tz, weekToJSON(s.Week), s.AutoConfirm, s.MinNoticeMinutes, s.MaxDaysAhead)
	return err
}

// lockSettings serialises concurrent PATCHes of the settings, so a merge
// never works from a stale read.
func lockSettings(ctx context.Context, tx pgx.Tx) (err error) {
	defer httpapi.Wrap(&err, "lockSettings")
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('booking_settings'))`)
	return err
}

const serviceCols = `id, name, description, duration_minutes, buffer_minutes, price, currency, is_active`

func scanService(row pgx.Row) (Service, error) {
	var s Service
	err := row.Scan(&s.ID, &s.Name, &s.Description, &s.DurationMinutes, &s.BufferMinutes, &s.Price, &s.Currency, &s.IsActive)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, httpapi.ErrNotFound
	}
	return s, err
}

// queueService queues on b the read of service id (getService without
// lock) into svc, or httpapi.ErrNotFound into *found when there is none.
func queueService(b *tenant.ReadBatch, id int64, svc *Service, found *error) {
	b.Queue(`SELECT `+serviceCols+` FROM booking_services WHERE id = $1 AND deleted_at IS NULL`, []any{id}, func(rows pgx.Rows) error {
		*found = httpapi.ErrNotFound
		for rows.Next() {
			v, err := scanService(rows)
			if err != nil {
				return err
			}
			*svc, *found = v, nil
		}
		return rows.Err()
	})
}

// getService reads service id (locked for the transaction with lock).
func getService(ctx context.Context, tx tenant.Querier, id int64, lock bool) (_ Service, err error) {
	defer httpapi.Wrap(&err, "getService(%d)", id)
	q := `SELECT ` + serviceCols + ` FROM booking_services WHERE id = $1 AND deleted_at IS NULL`
	if lock {
		q += ` FOR UPDATE`
	}
	return scanService(tx.QueryRow(ctx, q, id))
}

// listServices returns up to limit+1 services with ids below the cursor,
// newest first; activeOnly for the public surface.
func listServices(ctx context.Context, tx tenant.Querier, before int64, limit int, activeOnly bool) (_ []Service, err error) {
	defer httpapi.Wrap(&err, "listServices")
	rows, err := tx.Query(ctx, `SELECT `+serviceCols+` FROM booking_services
		WHERE deleted_at IS NULL AND ($1 = 0 OR id < $1) AND (NOT $2 OR is_active)
		ORDER BY id DESC LIMIT $3`, before, activeOnly, limit+1)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Service, error) { return scanService(r) })
}

func insertService(ctx context.Context, tx pgx.Tx, s Service) (_ Service, err error) {
	defer httpapi.Wrap(&err, "insertService")
	return scanService(tx.QueryRow(ctx, `INSERT INTO booking_services
		(name, description, duration_minutes, buffer_minutes, price, currency, is_active)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+serviceCols,
		s.Name, s.Description, s.DurationMinutes, s.BufferMinutes, s.Price, s.Currency, s.IsActive))
}

// updateService stores the fields of service s.
func updateService(ctx context.Context, tx pgx.Tx, s Service) (_ Service, err error) {
	defer httpapi.Wrap(&err, "updateService(%d)", s.ID)
	return scanService(tx.QueryRow(ctx, `UPDATE booking_services SET name = $2, description = $3,
		duration_minutes = $4, buffer_minutes = $5, price = $6, currency = $7, is_active = $8, updated_at = now()
		WHERE id = $1 AND deleted_at IS NULL RETURNING `+serviceCols,
		s.ID, s.Name, s.Description, s.DurationMinutes, s.BufferMinutes, s.Price, s.Currency, s.IsActive))
}

// deleteService hides the service; its bookings stay (they reference it).
func deleteService(ctx context.Context, tx pgx.Tx, id int64) (err error) {
	defer httpapi.Wrap(&err, "deleteService(%d)", id)
	tag, err := tx.Exec(ctx, `UPDATE booking_services SET deleted_at = now(), is_active = false, updated_at = now()
		WHERE id = $1 AND deleted_at IS NULL`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return httpapi.ErrNotFound
	}
	return err
}

const bookingCols = `id, service_id, start_at, end_at, status, customer_name, customer_email, customer_phone,
	notes, created_at, updated_at`

func scanBooking(row pgx.Row) (Booking, error) {
	var b Booking
	err := row.Scan(&b.ID, &b.ServiceID, &b.StartAt, &b.EndAt, &b.Status, &b.Customer.Name, &b.Customer.Email,
		&b.Customer.Phone, &b.Notes, &b.CreatedAt, &b.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return b, httpapi.ErrNotFound
	}
	b.StartAt, b.EndAt, b.CreatedAt, b.UpdatedAt = b.StartAt.UTC(), b.EndAt.UTC(), b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	return b, err
}

// insertBooking stores a booking blocking [start, blockedUntil). An overlap
// with a live booking of the service is errOverlap.
func insertBooking(ctx context.Context, tx pgx.Tx, nb newBooking, end, blockedUntil time.Time, status string) (_ Booking, err error) {
	defer httpapi.Wrap(&err, "insertBooking(%s)", status)
	b, err := scanBooking(tx.QueryRow(ctx, `INSERT INTO bookings
		(service_id, start_at, end_at, blocked_until, status, customer_name, customer_email, customer_phone, notes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+bookingCols,
		nb.ServiceID, nb.StartAt, end, blockedUntil, status, nb.Customer.Name, nb.Customer.Email, nb.Customer.Phone, nb.Notes))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23P01" && pgErr.ConstraintName == "bookings_no_overlap" {
		return b, errOverlap
	}
	return b, err
}

// getBooking reads booking id (locked for the transaction with lock).
func getBooking(ctx context.Context, tx tenant.Querier, id int64, lock bool) (_ Booking, err error) {
	defer httpapi.Wrap(&err, "getBooking(%d)", id)
	q := `SELECT ` + bookingCols + ` FROM bookings WHERE id = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	return scanBooking(tx.QueryRow(ctx, q, id))
}

// setStatus moves booking id to status.
func setStatus(ctx context.Context, tx pgx.Tx, id int64, status string) (_ Booking, err error) {
	defer httpapi.Wrap(&err, "setStatus(%d, %s)", id, status)
	return scanBooking(tx.QueryRow(ctx, `UPDATE bookings SET status = $2, updated_at = now() WHERE id = $1
		RETURNING `+bookingCols, id, status))
}

// bookingFilter selects bookings for the list; zero values do not filter.
type bookingFilter struct {
	Status    string
	ServiceID int64
	From, To  time.Time // on start_at: [From, To)
	// FromDate and ToDate (YYYY-MM-DD), when set, stand for From and To:
	// the start of that date in the booking timezone, the settings' else
	// Zone, which PostgreSQL works out in the query that reads the
	// bookings, so that the list needs no read of the settings first.
	FromDate, ToDate string
	Zone             string
	Before           int64 // cursor: ids below it
}

// The booking timezone as the lists read it: the settings', else $1 of
// the statement.
const bookingZone = `(SELECT COALESCE((SELECT timezone FROM booking_settings), $1) AS tz) z`

const bookingsSQL = `SELECT ` + bookingCols + ` FROM bookings, (SELECT
		COALESCE($2::timestamptz, $4::date::timestamp AT TIME ZONE z.tz) AS lo,
		COALESCE($3::timestamptz, $5::date::timestamp AT TIME ZONE z.tz) AS hi FROM ` + bookingZone + `) r
	WHERE ($6 = '' OR status = $6) AND ($7 = 0 OR service_id = $7)
		AND (r.lo IS NULL OR start_at >= r.lo) AND (r.hi IS NULL OR start_at < r.hi)
		AND ($8 = 0 OR id < $8)
	ORDER BY id DESC LIMIT $9`

// bookingRangeSQL is the range bookingsSQL reads the dates $2 and $3 as.
const bookingRangeSQL = `SELECT $2::date::timestamp AT TIME ZONE z.tz, $3::date::timestamp AT TIME ZONE z.tz FROM ` + bookingZone

func (f bookingFilter) args(limit int) []any {
	var from, to, fromDate, toDate any
	if !f.From.IsZero() {
		from = f.From
	}
	if !f.To.IsZero() {
		to = f.To
	}
	if f.FromDate != "" {
		fromDate = f.FromDate
	}
	if f.ToDate != "" {
		toDate = f.ToDate
	}
	return []any{f.Zone, from, to, fromDate, toDate, f.Status, f.ServiceID, f.Before, limit + 1}
}

// listBookings returns up to limit+1 bookings f selects, newest first.
func listBookings(ctx context.Context, tx tenant.Querier, f bookingFilter, limit int) (_ []Booking, err error) {
	defer httpapi.Wrap(&err, "listBookings")
	rows, err := tx.Query(ctx, bookingsSQL, f.args(limit)...)
	if err != nil {
		return nil, err
	}
	return collectBookings(rows)
}

// queueBookings queues on b the read of listBookings into list, and of
// the range its dates stand for into from and to (nil for no date).
func queueBookings(b *tenant.ReadBatch, f bookingFilter, limit int, list *[]Booking, from, to **time.Time) {
	args := f.args(limit)
	b.Queue(bookingRangeSQL, []any{args[0], args[3], args[4]}, func(rows pgx.Rows) error {
		*from, *to = nil, nil
		for rows.Next() {
			if err := rows.Scan(from, to); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	b.Queue(bookingsSQL, args, func(rows pgx.Rows) (err error) {
		*list, err = collectBookings(rows)
		return err
	})
}

func collectBookings(rows pgx.Rows) ([]Booking, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Booking, error) { return scanBooking(r) })
}

// busySpans returns the blocked ranges of the live bookings of service that
// overlap [from, to). The predicate matches the exclusion constraint's
// partial gist index, which serves this query.
func busySpans(ctx context.Context, tx tenant.Querier, serviceID int64, from, to time.Time) (_ []Span, err error) {
	defer httpapi.Wrap(&err, "busySpans(%d)", serviceID)
	rows, err := tx.Query(ctx, `SELECT start_at, blocked_until FROM bookings
		WHERE service_id = $1 AND status IN ('pending','confirmed','completed')
		AND tstzrange(start_at, blocked_until, '[)') && tstzrange($2, $3, '[)')`, serviceID, from, to)
	if err != nil {
		return nil, err
	}
	return collectSpans(rows)
}

// queueBusySpans queues on b the read of busySpans of serviceID over
// [from, to + the service's duration and buffer) into busy: a range the
// caller filters down (overlapping), read before it knows the service.
func queueBusySpans(b *tenant.ReadBatch, serviceID int64, from, to time.Time, busy *[]Span) {
	b.Queue(`SELECT start_at, blocked_until FROM bookings
		WHERE service_id = $1 AND status IN ('pending','confirmed','completed')
		AND tstzrange(start_at, blocked_until, '[)') && tstzrange($2, $3::timestamptz + COALESCE((SELECT make_interval(mins => duration_minutes + buffer_minutes)
			FROM booking_services WHERE id = $1), interval '0'), '[)')`, []any{serviceID, from, to}, func(rows pgx.Rows) (err error) {
		*busy, err = collectSpans(rows)
		return err
	})
}

func collectSpans(rows pgx.Rows) ([]Span, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Span, error) {
		var s Span
		err := r.Scan(&s.Start, &s.End)
		return s, err
	})
}

// overlapping are the spans of busy that overlap [from, to), as the
// range operator && of busySpans has it: an empty span overlaps nothing.
func overlapping(busy []Span, from, to time.Time) []Span {
	var out []Span
	for _, sp := range busy {
		if sp.End.After(sp.Start) && sp.Start.Before(to) && sp.End.After(from) {
			out = append(out, sp)
		}
	}
	return out
}
