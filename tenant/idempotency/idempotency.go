// Package idempotency makes mutating requests safe to retry: a request
// with an Idempotency-Key header runs at most once per project, API key
// and Idempotency-Key for 24 hours, and its retries get the stored
// response (docs/decisions.md section 6).
//
// The step runs as the route's gate (tenant.Gate): after the route's
// scope checks, so a key that may not call the route gets its 403 and
// never a stored answer. The key is reserved in its own short transaction
// (INSERT ... ON CONFLICT) before the handler runs, so concurrent
// duplicates see the reservation and get 409 conflict. Every Scope.Tx of
// the request marks the reservation committed in its own transaction
// (tenant.CommitHook), and the response is stored after the handler
// completes. A reservation whose response is not kept is released: at
// once when the handler answers 5xx (or 401, 403, 429) or panics, and,
// when the process itself died, once its lease lapses (the running
// process renews it). Except one whose effect committed and whose handler
// never finished (panic, crash): it is never run again, and its retries
// are told the request ran (see answer).
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
	"github.com/jackc/pgx/v5/pgxpool"

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
// that carry the header. Handler is mounted behind the authenticator (it
// needs the project scope) and the rate limiter; the step itself runs in
// tenant.Handle, after the route's middleware.
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
// The CORS answer and Vary depend on the replaying request's Origin, not
// on the first request's.
var perRequest = map[string]bool{
	"Access-Control-Allow-Origin":   true,
	"Access-Control-Expose-Headers": true,
	"Vary":                          true,
	"X-Request-Id":                  true,
	"X-Ratelimit-Limit":             true,
	"X-Ratelimit-Remaining":         true,
	"X-Ratelimit-Reset":             true,
	"Retry-After":                   true,
	"Content-Length":                true,
	"Date":                          true,
	ReplayedHeader:                  true,
}

type fingerprint struct {
	method, path string
	bodyHash     []byte
}

// PublicKeyID stands for the API key in the entries of keyless public
// submits (key ids are key_…, so it names no key).
const PublicKeyID = "public"

// Handler arms the idempotency step for a request that asks for it; the
// step runs as the request's tenant.Gate, when tenant.Handle is about to
// run the route's handler. Every route behind Handler must therefore be a
// tenant.Handle (a route that is not runs without idempotency).
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			next.ServeHTTP(w, r)
			return
		}
		if _, present := r.Header[Header]; !present || tenant.FromContext(r.Context()) == nil {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(tenant.WithGate(r.Context(), m.gate)))
	})
}

// reservation is the entry a running request holds: the project's, under
// the API key's id (keyID) and the Idempotency-Key (key), taken by owner.
type reservation struct {
	s          *tenant.Scope
	keyID, key string
	owner      [16]byte
}

// gate is the idempotency step of a request the route let through.
func (m *Middleware) gate(w http.ResponseWriter, r *http.Request, next http.Handler) {
	s := tenant.FromContext(r.Context())
	key := r.Header.Get(Header)
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

	res := &reservation{s: s, keyID: PublicKeyID, key: key}
	if s.Key != nil {
		res.keyID = s.Key.ID
	}
	_, _ = rand.Read(res.owner[:])
	prev, err := m.reserve(r.Context(), res, fp)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if prev != nil {
		m.answer(w, r, prev, fp)
		return
	}
	m.run(w, r, next, res)
}

// stored is an existing row for the key.
type stored struct {
	fingerprint
	status  *int
	headers http.Header
	body    []byte
	// committed: the request's effect committed; lapsed: its lease did.
	committed, lapsed bool
}

// inFlight answers a request whose key another request holds.
func inFlight() error {
	return httpapi.NewError(409, httpapi.CodeConflict,
		"a request with this Idempotency-Key is still running; retry shortly").WithHeader("Retry-After", "1")
}

// answer replies to a request whose key is taken: a replay, a mismatch, a
// request still in flight, or one whose effect committed but whose
// response was never stored (its process died in between, or it panicked
// after committing). That last one cannot be run again, nor replayed: the
// retry gets 409 idempotency_conflict saying so, and the client looks up
// what the request made instead (a fresh key would run it twice).
func (m *Middleware) answer(w http.ResponseWriter, r *http.Request, prev *stored, fp fingerprint) {
	if prev.method != fp.method || prev.path != fp.path || !bytes.Equal(prev.bodyHash, fp.bodyHash) {
		httpapi.WriteError(w, r, httpapi.Conflict(httpapi.CodeIdempotencyConflict,
			"this Idempotency-Key was used with another request (method, path or body); use a fresh key"))
		return
	}
	if prev.status == nil {
		if prev.committed && prev.lapsed {
			httpapi.WriteError(w, r, httpapi.Conflict(httpapi.CodeIdempotencyConflict,
				"the request with this Idempotency-Key ran and its changes were saved, but its response was lost; "+
					"look up the result instead of sending the request again (a fresh key would apply it twice)"))
			return
		}
		httpapi.WriteError(w, r, inFlight())
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
func (m *Middleware) run(w http.ResponseWriter, r *http.Request, next http.Handler, res *reservation) {
	rec := &recorder{w: w}
	omit := &omitted{}
	ctx := context.WithValue(r.Context(), omitKey{}, omit)
	r = r.WithContext(tenant.WithCommitHook(ctx, m.markCommitted(res)))
	stop := m.renew(res)
	completed := false
	defer func() {
		stop()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		status := rec.code()
		if !completed || !storable(status) {
			// A handler that answered has accounted for what it committed
			// (checkout abandons its order when the processor fails):
			// the contract lets its 5xx be retried. One that panicked
			// after a commit left its effect behind.
			if err := m.release(ctx, res, !completed); err != nil {
				m.Logger.ErrorContext(ctx, "idempotency: release failed; the key frees when its lease lapses", "key", res.key, "err", err)
			}
			if completed {
				rec.flush()
			}
			return
		}
		if err := m.store(ctx, res, status, w.Header(), omit.strip(rec.body.Bytes())); err != nil {
			// The effect may have committed: keep the reservation (it
			// lapses after the lease) rather than invite a second run now.
			m.Logger.ErrorContext(ctx, "idempotency: storing the response failed", "key", res.key, "err", err)
		}
		rec.flush()
	}()
	next.ServeHTTP(rec, r)
	completed = true
}

// storable reports whether a completed response is kept for replay. A
// 5xx is a failure to retry; a 401 or 403 answers who asked rather than
// what was asked, and must not outlive a change of credentials; a 429 (AI
// cost ceiling) is a request that did not run, to be retried.
func storable(status int) bool {
	return status < 500 && status != http.StatusUnauthorized && status != http.StatusForbidden &&
		status != http.StatusTooManyRequests
}

// markCommitted is the commit hook of the request holding res. A
// transaction of the request that wrote anything marks the reservation
// committed just before it commits, so mark and effect commit together:
// however the request ends after that, a retry never runs the effect
// again. The mark extends the lease too, leaving the response time to be
// stored. A transaction that wrote nothing leaves the row alone (a crash
// after it leaves nothing a retry would repeat).
//
// When the row is no longer this request's (its lease lapsed, as when the
// process stalled, and a retry took the key over), the transaction rolls
// back instead: the retry runs the effect, so this request must not.
func (m *Middleware) markCommitted(res *reservation) tenant.CommitHook {
	// One round trip, no write for a read-only transaction: the UPDATE
	// only matches when the transaction has an id (it wrote), and either
	// order of evaluating the SELECT's two columns gives the same pair.
	sql := `WITH marked AS (
			UPDATE ` + table(res.s) + ` SET committed = true, locked_until = greatest(locked_until, now() + $4 * interval '1 millisecond')
			WHERE key_id = $1 AND key = $2 AND owner = $3 AND status IS NULL AND pg_current_xact_id_if_assigned() IS NOT NULL
			RETURNING 1)
		SELECT pg_current_xact_id_if_assigned() IS NOT NULL, EXISTS (SELECT FROM marked)`
	return func(ctx context.Context, s *tenant.Scope, tx pgx.Tx) error {
		if s.Project.ID != res.s.Project.ID {
			return nil // another project's transaction: not this key's effect
		}
		var wrote, marked bool
		if err := tx.QueryRow(ctx, sql, res.keyID, res.key, res.owner, m.Lease.Milliseconds()).Scan(&wrote, &marked); err != nil {
			return err
		}
		if wrote && !marked {
			return inFlight()
		}
		return nil
	}
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
func (m *Middleware) renew(res *reservation) func() {
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
				err := res.s.Pooled(ctx, func(pool *pgxpool.Pool) error {
					_, err := pool.Exec(ctx, `UPDATE `+table(res.s)+` SET locked_until = now() + $4 * interval '1 millisecond'
					WHERE key_id = $1 AND key = $2 AND owner = $3 AND status IS NULL`, res.keyID, res.key, res.owner, m.Lease.Milliseconds())
					return err
				})
				cancel()
				if err != nil {
					m.Logger.Warn("idempotency: renewing a reservation failed", "key", res.key, "err", err)
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
// take; the commit mark is one more statement in each of the handler's
// writing transactions, see markCommitted). The schema name was validated
// by tenant.NewScope and is quoted here.
func table(s *tenant.Scope) string {
	return pgx.Identifier{s.Project.Schema, "idempotency_keys"}.Sanitize()
}

// reserve takes the key for this request, returning nil, or returns the
// row that holds it. An expired row, or a reservation whose lease lapsed
// before its effect committed, is taken over. The INSERT commits at once,
// so concurrent duplicates see the reservation (they wait on the key's
// index entry until it commits).
func (m *Middleware) reserve(ctx context.Context, res *reservation, fp fingerprint) (*stored, error) {
	s, t := res.s, table(res.s)
	take := `INSERT INTO ` + t + ` AS k (key_id, key, method, path, body_hash, owner, locked_until, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond', now() + $8 * interval '1 millisecond')
			ON CONFLICT (key_id, key) DO UPDATE SET method = excluded.method, path = excluded.path, body_hash = excluded.body_hash,
				owner = excluded.owner, locked_until = excluded.locked_until, expires_at = excluded.expires_at,
				created_at = now(), status = NULL, headers = NULL, body = NULL, committed = false
			WHERE k.expires_at <= now() OR (k.status IS NULL AND NOT k.committed AND k.locked_until <= now())`
	args := []any{res.keyID, res.key, fp.method, fp.path, fp.bodyHash, res.owner, m.Lease.Milliseconds(), TTL.Milliseconds()}
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
		err = s.Pooled(ctx, func(pool *pgxpool.Pool) error {
			return pool.QueryRow(ctx, `SELECT method, path, body_hash, status, headers, body, committed, locked_until <= now() FROM `+t+`
			WHERE key_id = $1 AND key = $2 AND expires_at > now()`, res.keyID, res.key).
				Scan(&prev.method, &prev.path, &prev.bodyHash, &prev.status, &headers, &prev.body, &prev.committed, &prev.lapsed)
		})
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
		var took bool
		err := s.Pooled(ctx, func(pool *pgxpool.Pool) error {
			tag, err := pool.Exec(ctx, sql, args...)
			took = tag.RowsAffected() == 1
			return err
		})
		return took, err
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
func (m *Middleware) store(ctx context.Context, res *reservation, status int, h http.Header, body []byte) error {
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
		return res.s.Pooled(ctx, func(pool *pgxpool.Pool) error {
			_, err := pool.Exec(ctx, `UPDATE `+table(res.s)+` SET status = $4, headers = $5, body = $6
			WHERE key_id = $1 AND key = $2 AND owner = $3`, res.keyID, res.key, res.owner, status, headers, body)
			return err
		})
	})
}

// release frees a reservation whose response is not kept, so that a retry
// runs. With keepCommitted, one whose effect committed stays instead (a
// retry must not run it again) with its lease ended, so that retries hear
// at once that it ran rather than that it still runs.
func (m *Middleware) release(ctx context.Context, res *reservation, keepCommitted bool) error {
	t := table(res.s)
	return retry(ctx, func() error {
		return res.s.Pooled(ctx, func(pool *pgxpool.Pool) error {
			_, err := pool.Exec(ctx, `WITH freed AS (
				DELETE FROM `+t+` WHERE key_id = $1 AND key = $2 AND owner = $3 AND status IS NULL AND NOT (committed AND $4))
			UPDATE `+t+` SET locked_until = now() WHERE key_id = $1 AND key = $2 AND owner = $3 AND status IS NULL AND committed AND $4`,
				res.keyID, res.key, res.owner, keepCommitted)
			return err
		})
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
