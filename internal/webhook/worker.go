package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/credits"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/ssrf"
	"github.com/plinth-dev/plinth/signature"
	"github.com/plinth-dev/plinth/tenant"
)

const (
	// a slot nearer than horizon is waited for in the worker; a later one
	// snoozes the job until early before it (more than River's poll
	// interval plus its completer's batching)
	horizon = 150 * time.Millisecond
	early   = 125 * time.Millisecond
)

// Headers of a delivery.
const (
	UserAgent      = "Service-Webhooks/1.0"
	HeaderEvent    = "X-Service-Event"
	HeaderDelivery = "X-Service-Delivery"
)

// ScopeSource resolves a project for a job (central.Central satisfies it).
type ScopeSource interface {
	ScopeFor(ctx context.Context, projectID string) (*tenant.Scope, error)
}

// WorkerConfig configures deliveries.
type WorkerConfig struct {
	// Dev allows http:// and loopback receivers (PLINTH_DEV=1).
	Dev bool
	// Timeout is how long a receiver has to answer (PLINTH_WEBHOOK_TIMEOUT).
	Timeout time.Duration
	// Retry holds the delays before each retry (PLINTH_WEBHOOK_RETRY_DELAYS):
	// a delivery gets 1+len(Retry) attempts.
	Retry []time.Duration
	// RootCAs replaces the system roots for receivers' certificates (tests).
	RootCAs *x509.CertPool
	// Logger reports what an operator must fix (a changed server secret).
	Logger *slog.Logger
}

// Worker delivers one delivery per job: it makes attempts until one
// succeeds or the schedule is exhausted, snoozing in between.
type Worker struct {
	river.WorkerDefaults[DeliverArgs]
	cfg     WorkerConfig
	scopes  ScopeSource
	secrets *Secrets
	client  *http.Client
	limits  *limits
	pacer   *pacer
	txOnce  sync.Once
	txSem   chan struct{}
}

// NewWorker builds the delivery worker.
func NewWorker(cfg WorkerConfig, scopes ScopeSource, secrets *Secrets) *Worker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Worker{
		cfg:     cfg,
		scopes:  scopes,
		secrets: secrets,
		client:  ssrf.NewClient(ssrf.Options{Dev: cfg.Dev, Timeout: cfg.Timeout, RootCAs: cfg.RootCAs, MaxConnsPerHost: MaxInFlight}),
		limits:  newLimits(MaxInFlight, cfg.Timeout),
		pacer:   newPacer(),
	}
}

// MaxAttempts is the number of attempts of a delivery before it fails.
func (w *Worker) MaxAttempts() int { return len(w.cfg.Retry) + 1 }

// Timeout bounds one run of the job: the receiver timeout, a pacing wait
// and a few short transactions.
func (w *Worker) Timeout(*river.Job[DeliverArgs]) time.Duration { return w.cfg.Timeout + time.Minute }

// NextRetry spaces River's own retries, which only follow a failure of the
// job itself (database unreachable): 1 s doubling to 5 minutes, so a
// database restart delays deliveries by seconds.
func (w *Worker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	d := time.Second << min(job.Attempt-1, 9)
	return time.Now().Add(min(d, 5*time.Minute))
}

// attempt is an attempt ready to send.
type attempt struct {
	n        int
	url      string
	typ      string
	payload  []byte
	secrets  []string
	snooze   time.Duration // instead of sending: snooze this long (0: done)
	skip     bool          // nothing to send
	resuming bool          // an attempt in flight whose outcome was lost
}

// outcome is the result of one attempt.
type outcome struct {
	status int    // HTTP status, 0 when none
	err    string // why it failed, "" when it succeeded
}

func (o outcome) ok() bool { return o.err == "" && o.status >= 200 && o.status < 300 }

// Work runs one step of a delivery: wait for its pacing slot, make an
// attempt, record it; or snooze until the next attempt is due.
func (w *Worker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	a := job.Args
	sc, err := w.scopes.ScopeFor(ctx, a.ProjectID)
	if errors.Is(err, httpapi.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("project %s no longer exists", a.ProjectID))
	}
	if err != nil {
		return err
	}
	// A job queued behind others of its endpoint snoozes until its turn
	// without touching the database.
	if wait := w.pacer.wait(a.EndpointID, a.DeliveryID); wait > 0 {
		return river.JobSnooze(wait)
	}
	// An endpoint that already holds MaxInFlight workers of this process
	// is slow: free the worker for a while rather than start an attempt.
	if w.limits.full(a.EndpointID) {
		return river.JobSnooze(w.limits.backoff(a.EndpointID))
	}

	var at attempt
	if err := w.tx(ctx, sc, func(tx pgx.Tx) error {
		var err error
		at, err = w.begin(ctx, tx, sc, job)
		return err
	}); err != nil {
		return stopped(ctx, err)
	}
	if at.skip {
		w.pacer.done(a.EndpointID, a.DeliveryID)
		if at.snooze > 0 {
			return river.JobSnooze(at.snooze)
		}
		return nil
	}
	// The permit covers the wait for the slot and the request.
	p := w.limits.acquire(a.EndpointID)
	if p == nil {
		return river.JobSnooze(w.limits.backoff(a.EndpointID)) // the attempt in flight is sent later
	}
	var took time.Duration
	defer func() { p.release(took) }()
	if wait, err := w.pace(ctx, sc, a); err != nil || wait > 0 {
		if err != nil {
			return stopped(ctx, err) // the attempt stays in flight and is sent on the next run
		}
		return river.JobSnooze(wait) // queued: the attempt in flight is sent on its turn
	}
	w.pacer.done(a.EndpointID, a.DeliveryID)
	start := time.Now()
	out := w.send(ctx, a.DeliveryID, at)
	took = time.Since(start)
	if ctx.Err() != nil {
		return stopped(ctx, ctx.Err()) // not the receiver's fault: send again on the next run
	}
	var wait time.Duration
	var final bool
	if err := w.tx(ctx, sc, func(tx pgx.Tx) error {
		var err error
		final, wait, err = w.record(ctx, tx, a, at.n, out)
		return err
	}); err != nil {
		return err // River retries; the attempt is still in flight and is sent again
	}
	if !final {
		return river.JobSnooze(wait)
	}
	return nil
}

// stopped turns the error of an interrupted run into an immediate snooze
// when the process is shutting down, so another process (or this one when
// it starts again) resumes the delivery at once without spending one of
// River's attempts.
func stopped(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return river.JobSnooze(0)
	}
	return err
}

// pace binds a pacing slot to the attempt and waits for it. A slot missed
// by more than LateTolerance (the machine was busy) is not used: another
// is taken. When the endpoint is booked beyond the horizon the attempt is
// queued instead, and pace returns how long to snooze.
func (w *Worker) pace(ctx context.Context, sc *tenant.Scope, a DeliverArgs) (time.Duration, error) {
	lease := func(n int) (time.Duration, error) {
		var off time.Duration
		err := w.tx(ctx, sc, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `UPDATE webhook_endpoints SET next_slot = GREATEST(next_slot, clock_timestamp() + $3::interval) + $2 * $4::interval
				WHERE id = $1 RETURNING next_slot - $2 * $4::interval - clock_timestamp()`, a.EndpointID, n, leaseLead, Pace).Scan(&off)
		})
		return off, err
	}
	for {
		slot, wait, err := w.pacer.take(a.EndpointID, a.DeliveryID, lease)
		if err != nil || wait > 0 {
			return wait, err
		}
		if d := time.Until(slot); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
		}
		if time.Since(slot) <= LateTolerance {
			return 0, nil
		}
	}
}

// tx runs fn in a transaction of sc, at most half the pool's connections
// at a time per process: a burst of deliveries must not take every
// connection from the API.
func (w *Worker) tx(ctx context.Context, sc *tenant.Scope, fn func(pgx.Tx) error) error {
	w.txOnce.Do(func() { w.txSem = make(chan struct{}, max(2, sc.Pool().Config().MaxConns/2)) })
	select {
	case w.txSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-w.txSem }()
	return sc.Tx(ctx, fn)
}

// begin locks the delivery and, in the same statement, starts the attempt
// when one is due (attempts+1, in flight); it then charges the attempt.
// An attempt whose outcome was lost (the process stopped while it was in
// flight) is resumed without a new charge: receivers dedupe by
// X-Service-Delivery.
func (w *Worker) begin(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, job *river.Job[DeliverArgs]) (attempt, error) {
	a := job.Args
	var (
		at                 attempt
		status             string
		attempts           int
		started            *int
		dueIn              *time.Duration
		payload            string
		testPool           bool
		active, prevValid  bool
		secret, prevSecret []byte
	)
	err := tx.QueryRow(ctx, `WITH cur AS (
			SELECT id, event_id, endpoint_id, status, attempts, in_flight, next_attempt_at
			FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2 FOR UPDATE),
		start AS (
			UPDATE webhook_deliveries d SET attempts = cur.attempts + 1, in_flight = true, updated_at = now()
			FROM cur, webhook_endpoints ep
			WHERE d.id = cur.id AND ep.id = cur.endpoint_id AND ep.is_active AND cur.status = 'pending' AND NOT cur.in_flight
				AND (cur.next_attempt_at IS NULL OR cur.next_attempt_at <= clock_timestamp() + interval '50 ms')
			RETURNING d.attempts)
		SELECT cur.status, cur.attempts, cur.in_flight, (SELECT attempts FROM start), cur.next_attempt_at - clock_timestamp(),
			e.type, e.payload, e.test, ep.url, ep.is_active, ep.secret, ep.previous_secret, COALESCE(ep.previous_until > now(), false)
		FROM cur JOIN webhook_events e ON e.id = cur.event_id JOIN webhook_endpoints ep ON ep.id = cur.endpoint_id`,
		a.DeliveryID, a.EndpointID).
		Scan(&status, &attempts, &at.resuming, &started, &dueIn, &at.typ, &payload, &testPool,
			&at.url, &active, &secret, &prevSecret, &prevValid)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || (err == nil && status != "pending"):
		return attempt{skip: true}, nil // gone (with its endpoint), or already settled
	case err != nil:
		return attempt{}, err
	case !active:
		return attempt{skip: true}, w.settle(ctx, tx, a, attempts, "failed", outcome{err: "the endpoint is disabled"})
	case started == nil && !at.resuming:
		wait := time.Millisecond
		if dueIn != nil {
			wait = max(*dueIn, wait)
		}
		return attempt{skip: true, snooze: wait}, nil // woke before the retry is due
	}
	cur, err := w.secrets.Open(a.EndpointID, secret)
	if err != nil {
		// The server secret changed since the endpoint's secret was sealed:
		// no attempt can be signed until the secret is rotated.
		w.cfg.Logger.ErrorContext(ctx, "webhook: signing secret does not decrypt; was PLINTH_SECRET changed?",
			"project", a.ProjectID, "endpoint", a.EndpointID, "delivery", a.DeliveryID)
		return attempt{skip: true}, w.settle(ctx, tx, a, attempts, "failed",
			outcome{err: "the signing secret cannot be decrypted with the current server secret; rotate the endpoint's secret and redeliver"})
	}
	at.secrets = []string{cur}
	if prevValid && prevSecret != nil {
		if prev, err := w.secrets.Open(a.EndpointID, prevSecret); err == nil {
			at.secrets = append(at.secrets, prev)
		}
	}
	at.payload = []byte(payload)
	at.n = attempts
	if at.resuming {
		return at, nil
	}
	at.n = *started
	// The charge comes last: the project's balance row stays locked only
	// from here to the commit.
	charge := sc
	if testPool {
		if charge, err = tenant.NewScope(sc.Pool(), sc.Project, &tenant.Key{Test: true}); err != nil {
			return attempt{}, err
		}
	}
	err = credits.Charge(ctx, tx, charge, "webhook_delivery", credits.WebhookDelivery, a.DeliveryID)
	if errors.Is(err, credits.ErrInsufficient) {
		// Nothing is sent; the attempt counts, so a project that stays out
		// of credits ends with a failed delivery it can redeliver.
		final, wait, err := w.record(ctx, tx, a, at.n, outcome{err: "insufficient_credits: the balance cannot pay for a delivery attempt; nothing was sent"})
		if final {
			return attempt{skip: true}, err
		}
		return attempt{skip: true, snooze: max(wait, time.Nanosecond)}, err
	}
	return at, err
}

// send makes one attempt.
func (w *Worker) send(ctx context.Context, deliveryID string, at attempt) outcome {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, at.url, bytes.NewReader(at.payload))
	if err != nil {
		return outcome{err: "invalid endpoint url: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderEvent, at.typ)
	req.Header.Set(HeaderDelivery, deliveryID)
	req.Header.Set(signature.Header, signature.Sign(time.Now(), at.payload, at.secrets...))
	res, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return outcome{err: fmt.Sprintf("no response within %s", w.cfg.Timeout)}
		}
		return outcome{err: err.Error()}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	out := outcome{status: res.StatusCode}
	if !out.ok() {
		out.err = fmt.Sprintf("the receiver answered %d %s", res.StatusCode, http.StatusText(res.StatusCode))
		if res.StatusCode >= 300 && res.StatusCode < 400 {
			out.err += " (redirects are not followed)"
		}
	}
	return out
}

// record stores the outcome of attempt n: succeeded, failed after the
// last attempt (final), or pending until the next attempt is due in wait.
func (w *Worker) record(ctx context.Context, tx pgx.Tx, a DeliverArgs, n int, out outcome) (final bool, wait time.Duration, err error) {
	switch {
	case out.ok():
		return true, 0, w.settle(ctx, tx, a, n, "succeeded", out)
	case n >= w.MaxAttempts():
		return true, 0, w.settle(ctx, tx, a, n, "failed", out)
	}
	wait = w.cfg.Retry[n-1]
	b := &pgx.Batch{}
	b.Queue(`UPDATE webhook_deliveries SET attempts = $2, in_flight = false, last_status_code = $3, last_error = $4,
		next_attempt_at = now() + $5::interval, updated_at = now() WHERE id = $1`,
		a.DeliveryID, n, nullStatus(out.status), out.err, wait)
	queueLastStatus(b, a.EndpointID, "failed")
	return false, wait, tx.SendBatch(ctx, b).Close()
}

// settle ends the delivery with status. The job completes when the run
// returns; should that be lost, the job's next run finds the delivery
// settled and does nothing.
func (w *Worker) settle(ctx context.Context, tx pgx.Tx, a DeliverArgs, n int, status string, out outcome) error {
	var lastErr *string
	if out.err != "" {
		lastErr = &out.err
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE webhook_deliveries SET status = $2, attempts = $3, in_flight = false, last_status_code = $4,
		last_error = $5, next_attempt_at = NULL, updated_at = now() WHERE id = $1`,
		a.DeliveryID, status, n, nullStatus(out.status), lastErr)
	queueLastStatus(b, a.EndpointID, status)
	return tx.SendBatch(ctx, b).Close()
}

// queueLastStatus records the outcome of the endpoint's latest attempt.
// The row is written (and locked) only when the status changes, so a
// healthy endpoint's deliveries do not contend on it.
func queueLastStatus(b *pgx.Batch, endpointID, status string) {
	b.Queue(`UPDATE webhook_endpoints SET last_delivery_status = $2 WHERE id = $1 AND last_delivery_status <> $2`, endpointID, status)
}

func nullStatus(s int) *int {
	if s == 0 {
		return nil
	}
	return &s
}
