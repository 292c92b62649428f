package booking_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// 32 customers book one slot at the same moment: exactly one gets 201, the
// other 31 get 409 slot_unavailable, and one booking exists.
func TestConcurrentBookingsOfOneSlot(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	ev := watchEvents(t, env, p)
	sid := newService(t, env, p.Key, map[string]any{"name": "Massage", "duration_minutes": 60, "buffer_minutes": 15})
	start := at(dayUTC(2), "11:30") // 09:00, 10:15, 11:30, ...

	const n = 32
	type result struct {
		status int
		code   string
		err    error
	}
	results := make(chan result, n)
	ready := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"service_id": sid, "start_at": start,
				"customer": map[string]any{"name": fmt.Sprintf("Customer %d", i), "email": fmt.Sprintf("c%d@example.com", i)}})
			req, _ := http.NewRequest("POST", env.URL+"/v1/bookings", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+p.Key)
			<-ready
			res, err := env.HTTP.Client().Do(req)
			if err != nil {
				results <- result{err: err}
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			var m struct {
				Code string `json:"code"`
			}
			_ = json.Unmarshal(b, &m)
			results <- result{status: res.StatusCode, code: m.Code}
		}()
	}
	close(ready)
	wg.Wait()
	close(results)
	created, taken := 0, 0
	for r := range results {
		require.NoError(t, r.err)
		switch {
		case r.status == 201:
			created++
		case r.status == 409 && r.code == "slot_unavailable":
			taken++
		default:
			t.Fatalf("unexpected response %d %s", r.status, r.code)
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, n-1, taken)

	var rows int
	var id int64
	require.NoError(t, p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*), max(id) FROM bookings WHERE service_id = $1`, sid).Scan(&rows, &id)
	}))
	require.Equal(t, 1, rows)
	// one booking.confirmed, from the winner; the refused 31 emitted nothing
	ev.expect(t, "booking.confirmed", id, "confirmed")
	require.NotContains(t, availability(t, env, p.Key, sid, dayUTC(2), dayUTC(2)), start)
}

// The guarantee is the database's, not a check in Go: inserting
// overlapping rows directly, even from concurrent transactions, fails with
// the exclusion violation; touching ranges, other services and cancelled
// bookings do not conflict.
func TestExclusionConstraint(t *testing.T) {
	t.Parallel()
	env, p := setup(t)
	a := newService(t, env, p.Key, map[string]any{"name": "A"})
	b := newService(t, env, p.Key, map[string]any{"name": "B"})
	ctx := context.Background()
	base := time.Date(2031, 5, 5, 9, 0, 0, 0, time.UTC)
	insert := func(tx pgx.Tx, sid int64, start, until time.Time, status string) error {
		_, err := tx.Exec(ctx, `INSERT INTO bookings (service_id, start_at, end_at, blocked_until, status, customer_name, customer_email)
			VALUES ($1, $2, $3, $4, $5, 'x', 'x@example.com')`, sid, start, start.Add(time.Minute), until, status)
		return err
	}
	one := func(sid int64, start, until time.Time, status string) error {
		return p.Scope.Tx(ctx, func(tx pgx.Tx) error { return insert(tx, sid, start, until, status) })
	}
	isOverlap := func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "23P01" && pgErr.ConstraintName == "bookings_no_overlap"
	}
	h := time.Hour
	require.NoError(t, one(a, base, base.Add(h), "confirmed"))
	require.True(t, isOverlap(one(a, base.Add(30*time.Minute), base.Add(2*h), "pending")), "overlap inside the blocked range")
	require.True(t, isOverlap(one(a, base.Add(-30*time.Minute), base.Add(time.Minute), "confirmed")))
	require.True(t, isOverlap(one(a, base.Add(-30*time.Minute), base.Add(time.Minute), "completed")))
	require.NoError(t, one(a, base.Add(h), base.Add(2*h), "confirmed"), "touching ranges do not overlap")
	require.NoError(t, one(a, base.Add(-h), base, "pending"), "touching ranges do not overlap")
	require.NoError(t, one(b, base, base.Add(h), "confirmed"), "another service")
	require.NoError(t, one(a, base, base.Add(h), "cancelled"), "cancelled bookings hold no time")
	// a cancelled booking cannot come back over a live one
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE bookings SET status = 'pending' WHERE status = 'cancelled'`)
		return err
	})
	require.True(t, isOverlap(err), "%v", err)

	// two open transactions: the second insert waits for the first and fails
	// when it commits
	later := base.Add(24 * h)
	tx1, err := p.Scope.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx1.Rollback(ctx)
	_, err = tx1.Exec(ctx, "SELECT set_config('search_path', $1, true)", p.Schema)
	require.NoError(t, err)
	require.NoError(t, insert(tx1, a, later, later.Add(h), "pending"))
	done := make(chan error, 1)
	go func() { done <- one(a, later.Add(10*time.Minute), later.Add(h), "pending") }()
	select {
	case err := <-done:
		t.Fatalf("the second insert did not wait for the first: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, tx1.Commit(ctx))
	require.True(t, isOverlap(<-done))
}
