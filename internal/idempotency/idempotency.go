// Package idempotency makes mutating requests safe to retry: a request
// with an Idempotency-Key header runs at most once per project and key for
// 24 hours, and its retries get the stored response (docs/decisions.md
// section 6).
//
// The key is reserved in its own short transaction (INSERT ... ON
// CONFLICT) before the handler runs, so concurrent duplicates see the
// reservation and get 409 conflict; the response is stored after the
// handler completes. A reservation whose request died is released: at
// once when the handler fails (5xx, panic), and, when the process itself
// died, once its lease lapses (the running process renews it).
//
// Expired entries are deleted by a River job per project (ExpireArgs),
// inserted with the first key the project reserves and done when the
// project has none left: a project that sends no keys costs nothing.
package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

// ReplayedHeader marks a replayed response.
const ReplayedHeader = "Idempotent-Replayed"

// MaxKeyLen bounds a key (400 above it).
const MaxKeyLen = 255

// TTL is how long a stored response is replayed.
const TTL = 24 * time.Hour

// DefaultLease bounds how long a reservation outlives a process that died
// while running its request.
const DefaultLease = 30 * time.Second

// Middleware applies idempotency to POST, PUT, PATCH and DELETE requests
// that carry the header. It runs behind the authenticator (it needs the
// project scope) and the rate limiter.
type Middleware struct {
	Logger *slog.Logger
	// Lease is how long a reservation stays valid without renewal.
	Lease time.Duration
	// Queue inserts the projects' expiry jobs (required).
	Queue *queue.Client

	expiries expiries
}

// New returns the middleware with the default lease.
func New(logger *slog.Logger, q *queue.Client) *Middleware {
	return &Middleware{Logger: logger, Lease: DefaultLease, Queue: q}
}

// Headers that describe this delivery rather than the stored response.
var perRequest = map[string]bool{
	"X-Request-Id":          true,
	"X-Ratelimit-Limit":     true,
	"X-Ratelimit-Remaining": true,
	"X-Ratelimit-Reset":     true,
	"Retry-After":           true,
	"Content-Length":        true,
	"Date":                  true,
	ReplayedHeader:          true,
}

type fingerprint struct {
	method, path string
	bodyHash     []byte
}

// Handler wraps next.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			next.ServeHTTP(w, r)
			return
		}
		vals, present := r.Header[Header]
		s := tenant.FromContext(r.Context())
		if !present || s == nil {
			next.ServeHTTP(w, r)
			return
		}
		key := vals[0]
		if key == "" || len(key) > MaxKeyLen || !httpapi.ValidText(key) { // the key is stored as text
			httpapi.WriteError(w, r, httpapi.BadRequest(fmt.Sprintf("the %s header must be 1 to %d characters of UTF-8 text", Header, MaxKeyLen)))
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				httpapi.WriteError(w, r, httpapi.NewError(413, httpapi.CodeBadRequest, "the body is too large"))
				return
			}
			httpapi.WriteError(w, r, httpapi.BadRequest("the body could not be read"))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(body)
		path := r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			path += "?" + r.URL.RawQuery
		}
		fp := fingerprint{method: r.Method, path: path, bodyHash: sum[:]}

		var owner [16]byte
		_, _ = rand.Read(owner[:])
		prev, err := m.reserve(r.Context(), s, key, fp, owner)
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		if prev != nil {
			m.answer(w, r, prev, fp)
			return
		}
		m.run(w, r, next, s, key, owner)
	})
}

// stored is an existing row for the key.
type stored struct {
	fingerprint
	status  *int
	headers http.Header
	body    []byte
}

// answer replies to a request whose key is taken: a replay, a mismatch or
// a request still in flight.
func (m *Middleware) answer(w http.ResponseWriter, r *http.Request, prev *stored, fp fingerprint) {
	if prev.method != fp.method || prev.path != fp.path || !bytes.Equal(prev.bodyHash, fp.bodyHash) {
		httpapi.WriteError(w, r, httpapi.Conflict(httpapi.CodeIdempotencyConflict,
			"this Idempotency-Key was used with another request (method, path or body); use a fresh key"))
		return
	}
	if prev.status == nil {
		httpapi.WriteError(w, r, httpapi.NewError(409, httpapi.CodeConflict,
			"a request with this Idempotency-Key is still running; retry shortly").WithHeader("Retry-After", "1"))
		return
	}
	h := w.Header()
	for k, v := range prev.headers {
		if !perRequest[http.CanonicalHeaderKey(k)] {
			h[k] = v
		}
	}
	h.Set(ReplayedHeader, "true")
	body := prev.body
	if h.Get("Content-Type") == "application/problem+json" {
		body = reinstance(body, httpapi.RequestID(r.Context()))
	}
	w.WriteHeader(*prev.status)
	_, _ = w.Write(body)
}

// reinstance sets a replayed problem's instance to this request's id: an
// error's instance always equals the X-Request-Id it is delivered with.
func reinstance(body []byte, rid string) []byte {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return body
	}
	m["instance"] = rid
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return body
	}
	return buf.Bytes()
}

// run serves a request whose key this process reserved, buffering the
// response so that it reaches the client only once it is stored: a
// client retrying the moment it has the answer gets the replay, never the
// in-flight 409.
func (m *Middleware) run(w http.ResponseWriter, r *http.Request, next http.Handler, s *tenant.Scope, key string, owner [16]byte) {
	rec := &recorder{w: w}
	omit := &omitted{}
	r = r.WithContext(context.WithValue(r.Context(), omitKey{}, omit))
	stop := m.renew(s, key, owner)
	completed := false
	defer func() {
		stop()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		status := rec.code()
		// Only completed responses below 500 are kept; a 429 (AI cost
		// ceiling) is a request that did not run, to be retried.
		if !completed || status >= 500 || status == http.StatusTooManyRequests {
			if err := m.release(ctx, s, key, owner); err != nil {
				m.Logger.ErrorContext(ctx, "idempotency: release failed; the key frees when its lease lapses", "key", key, "err", err)
			}
			if completed {
				rec.flush()
			}
			return
		}
		if err := m.store(ctx, s, key, owner, status, w.Header(), omit.strip(rec.body.Bytes())); err != nil {
			// The effect may have committed: keep the reservation (it
			// lapses after the lease) rather than invite a second run now.
			m.Logger.ErrorContext(ctx, "idempotency: storing the response failed", "key", key, "err", err)
		}
		rec.flush()
	}()
	next.ServeHTTP(rec, r)
	completed = true
}

type omitKey struct{}

// omitted lists the top-level response fields never to store.
type omitted struct{ fields []string }

// OmitFromReplay names top-level fields of the response being written that
// must not be stored for replay: secrets shown once (an API key's secret,
// a webhook signing secret). A replay then carries the rest of the
// response without them, so the secret is never kept at rest.
func OmitFromReplay(ctx context.Context, fields ...string) {
	if o, ok := ctx.Value(omitKey{}).(*omitted); ok {
		o.fields = append(o.fields, fields...)
	}
}

func (o *omitted) strip(body []byte) []byte {
	if len(o.fields) == 0 {
		return body
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil // not an object: store no body rather than a secret
	}
	for _, f := range o.fields {
		delete(m, f)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// renew extends the reservation's lease while the request runs, so a
// long request is not taken over; it stops when the returned func runs.
func (m *Middleware) renew(s *tenant.Scope, key string, owner [16]byte) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(m.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), m.Lease/3)
				_, err := s.Pool().Exec(ctx, `UPDATE `+table(s)+` SET locked_until = now() + $3 * interval '1 millisecond'
					WHERE key = $1 AND owner = $2 AND status IS NULL`, key, owner, m.Lease.Milliseconds())
				cancel()
				if err != nil {
					m.Logger.Warn("idempotency: renewing a reservation failed", "key", key, "err", err)
				}
			}
		}
	}()
	return func() { close(done) }
}

// table is the schema-qualified name of the project's idempotency table.
//
// The bookkeeping statements below are single statements, each its own
// transaction (autocommit), rather than Scope.Tx transactions: a request
// with a key makes two or three of them, and one round trip each instead
// of four keeps an idempotent write near the cost of a plain one (a
// reservation that inserts its project's expiry job is the exception, see
// take). The schema name was validated by tenant.NewScope and is quoted
// here.
func table(s *tenant.Scope) string {
	return pgx.Identifier{s.Project.Schema, "idempotency_keys"}.Sanitize()
}

// reserve takes key for this request, returning nil, or returns the row
// that holds it. An expired row, or a reservation whose lease lapsed, is
// taken over. The INSERT commits at once, so concurrent duplicates see
// the reservation (they wait on the key's index entry until it commits).
func (m *Middleware) reserve(ctx context.Context, s *tenant.Scope, key string, fp fingerprint, owner [16]byte) (*stored, error) {
	t := table(s)
	take := `INSERT INTO ` + t + ` AS k (key, method, path, body_hash, owner, locked_until, expires_at)
			VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond', now() + $7 * interval '1 millisecond')
			ON CONFLICT (key) DO UPDATE SET method = excluded.method, path = excluded.path, body_hash = excluded.body_hash,
				owner = excluded.owner, locked_until = excluded.locked_until, expires_at = excluded.expires_at,
				created_at = now(), status = NULL, headers = NULL, body = NULL
			WHERE k.expires_at <= now() OR (k.status IS NULL AND k.locked_until <= now())`
	args := []any{key, fp.method, fp.path, fp.bodyHash, owner, m.Lease.Milliseconds(), TTL.Milliseconds()}
	for attempt := 0; attempt < 3; attempt++ {
		took, err := m.take(ctx, s, take, args)
		if err != nil {
			return nil, err
		}
		if took {
			return nil, nil
		}
		prev := &stored{}
		var headers []byte
		err = s.Pool().QueryRow(ctx, `SELECT method, path, body_hash, status, headers, body FROM `+t+`
			WHERE key = $1 AND expires_at > now()`, key).
			Scan(&prev.method, &prev.path, &prev.bodyHash, &prev.status, &headers, &prev.body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released or expired since the INSERT: try again
		}
		if err != nil {
			return nil, err
		}
		if headers != nil {
			if err := json.Unmarshal(headers, &prev.headers); err != nil {
				return nil, err
			}
		}
		return prev, nil
	}
	return nil, httpapi.NewError(503, httpapi.CodeServiceUnavailable, "the Idempotency-Key is contended; retry").WithHeader("Retry-After", "1")
}

// take runs the reservation statement and reports whether it took the
// key. While the project's expiry job is known to be ahead it is one
// autocommitted statement. Otherwise a key it takes inserts the job in
// the same transaction (a no-op while one is live), so no committed entry
// is left without a job to delete it.
func (m *Middleware) take(ctx context.Context, s *tenant.Scope, sql string, args []any) (bool, error) {
	now := time.Now()
	if m.expiries.covered(s.Project.ID, now) {
		tag, err := s.Pool().Exec(ctx, sql, args...)
		return tag.RowsAffected() == 1, err
	}
	var took bool
	var due time.Time
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil || tag.RowsAffected() == 0 {
			return err // or the key is held: nothing new to expire
		}
		took = true
		res, err := m.Queue.InsertTx(ctx, tx, ExpireArgs{ProjectID: s.Project.ID}, expiryOpts(now))
		if err != nil {
			return err
		}
		due = res.Job.ScheduledAt
		return nil
	})
	if err != nil || !took {
		return false, err
	}
	m.expiries.set(s.Project.ID, due.Add(-expiryMargin), now)
	return true, nil
}

// store records the response of a completed request.
func (m *Middleware) store(ctx context.Context, s *tenant.Scope, key string, owner [16]byte, status int, h http.Header, body []byte) error {
	keep := http.Header{}
	for k, v := range h {
		if !perRequest[http.CanonicalHeaderKey(k)] {
			keep[k] = v
		}
	}
	headers, err := json.Marshal(keep)
	if err != nil {
		return err
	}
	return retry(ctx, func() error {
		_, err := s.Pool().Exec(ctx, `UPDATE `+table(s)+` SET status = $3, headers = $4, body = $5
			WHERE key = $1 AND owner = $2`, key, owner, status, headers, body)
		return err
	})
}

// release frees a reservation whose request did not complete.
func (m *Middleware) release(ctx context.Context, s *tenant.Scope, key string, owner [16]byte) error {
	return retry(ctx, func() error {
		_, err := s.Pool().Exec(ctx, `DELETE FROM `+table(s)+` WHERE key = $1 AND owner = $2 AND status IS NULL`, key, owner)
		return err
	})
}

// retry runs fn up to three times: after a failure such as a terminated
// connection the pool hands out a fresh one.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = fn(); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
	}
	return err
}

// recorder buffers a response until it is stored.
type recorder struct {
	w      http.ResponseWriter
	status int
	body   bytes.Buffer
	sent   bool
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// flush sends the buffered response.
func (r *recorder) flush() {
	if r.sent {
		return
	}
	r.sent = true
	r.w.WriteHeader(r.code())
	_, _ = r.w.Write(r.body.Bytes())
}
