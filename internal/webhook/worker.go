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

// Pacing of one endpoint, shared by every process through the endpoint
// row (a GCRA: each send reserves the next slot, Pace after the previous).
// A send happens at its slot or at most LateTolerance after it (a later
// one books a new slot), so no window of one second holds more than
// (1s + LateTolerance)/Pace + 1 = 93 sends: under 100 with room for the
// jitter of the network and the receiver's clock.
const (
	Pace          = time.Second / 90
	LateTolerance = 25 * time.Millisecond
	// a new slot is at least lead ahead, so the commit of its reservation
	// does not make it late
	lead = 10 * time.Millisecond
	// a slot nearer than horizon is waited for in the worker; a later one
	// snoozes the job until early before it (more than the poll interval)
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
	Logger  *slog.Logger
}

// Worker delivers one delivery per job: it sends attempts until one
// succeeds or the schedule is exhausted, snoozing between them.
type Worker struct {
	river.WorkerDefaults[DeliverArgs]
	cfg     WorkerConfig
	scopes  ScopeSource
	secrets *Secrets
	client  *http.Client
	limits  *limits
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
	}
}

// MaxAttempts is the number of attempts of a delivery before it fails.
func (w *Worker) MaxAttempts() int { return len(w.cfg.Retry) + 1 }

// Timeout bounds one run of the job: the receiver timeout, a pacing wait
// and two short transactions.
func (w *Worker) Timeout(*river.Job[DeliverArgs]) time.Duration { return w.cfg.Timeout + time.Minute }

// NextRetry spaces River's own retries, which only follow a failure of the
// job itself (database unreachable): 1 s doubling to 5 minutes, so a
// database restart delays deliveries by seconds.
func (w *Worker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	d := time.Second << min(job.Attempt-1, 9)
	return time.Now().Add(min(d, 5*time.Minute))
}

// plan is what the first transaction of a run decided.
type plan struct {
	wait     time.Duration // snooze this long (send is false)
	send     bool
	attempt  int
	slot     time.Time // the pacing slot, on this process's clock
	url      string
	typ      string
	payload  []byte
	secrets  []string
	testPool bool
}

// outcome is the result of one attempt.
type outcome struct {
	status int    // HTTP status, 0 when none
	err    string // why it failed, "" when it succeeded
}

func (o outcome) ok() bool { return o.err == "" && o.status >= 200 && o.status < 300 }

// Work runs one step of a delivery.
func (w *Worker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	a := job.Args
	sc, err := w.scopes.ScopeFor(ctx, a.ProjectID)
	if errors.Is(err, httpapi.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("project %s no longer exists", a.ProjectID))
	}
	if err != nil {
		return err
	}
	// p is nil when the endpoint is at MaxInFlight: the job then only
	// reserves its pacing slot and snoozes.
	p := w.limits.acquire(a.EndpointID)
	var took time.Duration
	defer func() {
		if p != nil {
			p.release(took)
		}
	}()

	var pl plan
	if err := w.tx(ctx, sc, func(tx pgx.Tx) error {
		var err error
		pl, err = w.begin(ctx, tx, sc, job, p)
		return err
	}); err != nil {
		return err
	}
	if !pl.send {
		if pl.wait > 0 {
			return river.JobSnooze(pl.wait)
		}
		return nil
	}
	if wait, err := w.pace(ctx, sc, job, pl.slot); err != nil || wait > 0 {
		if err != nil {
			return stopped(ctx, err) // the attempt stays in flight and is sent on the next run
		}
		return river.JobSnooze(wait)
	}
	start := time.Now()
	out := w.send(ctx, a.DeliveryID, pl)
	took = time.Since(start)
	if ctx.Err() != nil {
		return stopped(ctx, ctx.Err()) // not the receiver's fault: send again on the next run
	}
	var wait time.Duration
	var final bool
	if err := w.tx(ctx, sc, func(tx pgx.Tx) error {
		var err error
		final, wait, err = w.record(ctx, tx, job, pl.attempt, out)
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

// begin locks the delivery, decides whether an attempt is due, reserves
// its pacing slot, marks it in flight and charges it.
func (w *Worker) begin(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, job *river.Job[DeliverArgs], p *permit) (plan, error) {
	a := job.Args
	var (
		pl                 plan
		status             string
		attempts           int
		inFlight           bool
		slotIn             *time.Duration // slot_at - now
		dueIn              *time.Duration // next_attempt_at - now
		payload            string
		active, prevValid  bool
		secret, prevSecret []byte
	)
	// Only the delivery is locked: the endpoint row is touched (at the end,
	// by a reservation) only by a job without a slot, so jobs waking for
	// their reserved slots never queue behind a burst of new ones.
	err := tx.QueryRow(ctx, `SELECT d.status, d.attempts, d.in_flight,
			d.slot_at - clock_timestamp(), d.next_attempt_at - clock_timestamp(), e.type, e.payload, e.test,
			ep.url, ep.is_active, ep.secret, ep.previous_secret, COALESCE(ep.previous_until > now(), false)
		FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
		WHERE d.id = $1 AND d.endpoint_id = $2 FOR UPDATE OF d`, a.DeliveryID, a.EndpointID).
		Scan(&status, &attempts, &inFlight, &slotIn, &dueIn, &pl.typ, &payload, &pl.testPool,
			&pl.url, &active, &secret, &prevSecret, &prevValid)
	if slotIn != nil {
		pl.slot = time.Now().Add(*slotIn) // on our clock; never early, late by at most the reply's transit
	}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && status != "pending") {
		return plan{}, nil // gone (with its endpoint), or already settled
	}
	if err != nil {
		return plan{}, err
	}
	pl.payload = []byte(payload)
	if !inFlight && dueIn != nil && *dueIn > 50*time.Millisecond {
		return plan{wait: *dueIn}, nil // woke before the retry is due
	}
	if !active {
		return plan{}, w.settle(ctx, tx, job, attempts, "failed", outcome{err: "the endpoint is disabled"})
	}

	// Pacing: use the reserved slot, or reserve one. A job without a
	// permit still reserves, so a backlog queues up in slot order and each
	// job wakes once, near its turn. A slot already past is kept here:
	// whether the send is on time is decided just before it (pace).
	if slotIn != nil && *slotIn > horizon {
		return plan{wait: *slotIn - early}, nil // woke early
	}
	if slotIn == nil {
		in, err := reserve(ctx, tx, a)
		if errors.Is(err, pgx.ErrNoRows) {
			return plan{}, nil // the endpoint is being deleted
		}
		if err != nil {
			return plan{}, err
		}
		pl.slot = time.Now().Add(in)
		slotIn = &in
	}
	if *slotIn > horizon || p == nil {
		if *slotIn > horizon {
			return plan{wait: *slotIn - early}, nil
		}
		// Due now, but the endpoint already holds MaxInFlight workers of
		// this process: it is slow. Free the worker for a while.
		return plan{wait: w.limits.backoff(a.EndpointID)}, nil
	}

	// The attempt. One whose outcome was lost (the process stopped while
	// it was in flight) is sent again without a new charge: receivers
	// dedupe by X-Service-Delivery.
	cur, err := w.secrets.Open(a.EndpointID, secret)
	if err != nil {
		return plan{}, err
	}
	pl.secrets = []string{cur}
	if prevValid && prevSecret != nil {
		if prev, err := w.secrets.Open(a.EndpointID, prevSecret); err == nil {
			pl.secrets = append(pl.secrets, prev)
		}
	}
	pl.attempt = attempts
	if !inFlight {
		pl.attempt++
	}
	if !inFlight {
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET attempts = $2, in_flight = true, slot_at = NULL, updated_at = now() WHERE id = $1`,
			a.DeliveryID, pl.attempt); err != nil {
			return plan{}, err
		}
		// The charge comes last: the project's balance row stays locked
		// only from here to the commit.
		charge := sc
		if pl.testPool {
			if charge, err = tenant.NewScope(sc.Pool(), sc.Project, &tenant.Key{Test: true}); err != nil {
				return plan{}, err
			}
		}
		err := credits.Charge(ctx, tx, charge, "webhook_delivery", credits.WebhookDelivery, a.DeliveryID)
		if errors.Is(err, credits.ErrInsufficient) {
			// Nothing is sent; the attempt counts, so a project that stays
			// out of credits ends with a failed delivery it can redeliver.
			final, wait, err := w.record(ctx, tx, job, pl.attempt, outcome{err: "insufficient_credits: the balance cannot pay for a delivery attempt; nothing was sent"})
			if final {
				return plan{}, err
			}
			return plan{wait: max(wait, time.Nanosecond)}, err
		}
		if err != nil {
			return plan{}, err
		}
	}
	pl.send = true
	return pl, nil
}

// reserve books the endpoint's next pacing slot for the delivery (slot_at)
// and returns how far from now it is (ErrNoRows when the endpoint is gone).
func reserve(ctx context.Context, tx pgx.Tx, a DeliverArgs) (time.Duration, error) {
	var in time.Duration
	err := tx.QueryRow(ctx, `WITH r AS (
				UPDATE webhook_endpoints SET next_slot = GREATEST(next_slot, clock_timestamp() + $4::interval) + $3::interval
			WHERE id = $2 RETURNING next_slot - $3::interval AS slot)
		UPDATE webhook_deliveries d SET slot_at = r.slot FROM r WHERE d.id = $1
		RETURNING r.slot - clock_timestamp()`, a.DeliveryID, a.EndpointID, Pace, lead).Scan(&in)
	return in, err
}

// tx runs fn in a transaction of sc, at most txSlots at a time per
// process: a burst of deliveries must not take every connection of the
// pool from the API.
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

// pace waits for the slot of an attempt in flight. A slot missed by more
// than LateTolerance (a slow transaction, a busy machine) is not used: a
// new one is booked, and when that is far the job snoozes until shortly
// before it (returning the wait), to send the attempt on its next run.
func (w *Worker) pace(ctx context.Context, sc *tenant.Scope, job *river.Job[DeliverArgs], slot time.Time) (time.Duration, error) {
	for {
		d := time.Until(slot)
		switch {
		case d < -LateTolerance:
			var in time.Duration
			err := w.tx(ctx, sc, func(tx pgx.Tx) error {
				var err error
				in, err = reserve(ctx, tx, job.Args)
				slot = time.Now().Add(in)
				return err
			})
			if err != nil {
				return 0, err
			}
			if in > horizon {
				return in - early, nil
			}
		case d > 0:
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
		default:
			return 0, nil
		}
	}
}

// send makes one attempt.
func (w *Worker) send(ctx context.Context, deliveryID string, pl plan) outcome {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, pl.url, bytes.NewReader(pl.payload))
	if err != nil {
		return outcome{err: "invalid endpoint url: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderEvent, pl.typ)
	req.Header.Set(HeaderDelivery, deliveryID)
	req.Header.Set(signature.Header, signature.Sign(time.Now(), pl.payload, pl.secrets...))
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
func (w *Worker) record(ctx context.Context, tx pgx.Tx, job *river.Job[DeliverArgs], n int, out outcome) (final bool, wait time.Duration, err error) {
	switch {
	case out.ok():
		return true, 0, w.settle(ctx, tx, job, n, "succeeded", out)
	case n >= w.MaxAttempts():
		return true, 0, w.settle(ctx, tx, job, n, "failed", out)
	}
	wait = w.cfg.Retry[n-1]
	b := &pgx.Batch{}
	b.Queue(`UPDATE webhook_deliveries SET attempts = $2, in_flight = false, slot_at = NULL, last_status_code = $3, last_error = $4,
		next_attempt_at = now() + $5::interval, updated_at = now() WHERE id = $1`,
		job.Args.DeliveryID, n, nullStatus(out.status), out.err, wait)
	queueLastStatus(b, job.Args.EndpointID, "failed")
	return false, wait, tx.SendBatch(ctx, b).Close()
}

// settle ends the delivery with status. The job completes when the run
// returns; should that be lost, the job's next run finds the delivery
// settled and does nothing.
func (w *Worker) settle(ctx context.Context, tx pgx.Tx, job *river.Job[DeliverArgs], n int, status string, out outcome) error {
	var lastErr *string
	if out.err != "" {
		lastErr = &out.err
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE webhook_deliveries SET status = $2, attempts = $3, in_flight = false, last_status_code = $4,
		last_error = $5, next_attempt_at = NULL, slot_at = NULL, updated_at = now() WHERE id = $1`,
		job.Args.DeliveryID, status, n, nullStatus(out.status), lastErr)
	queueLastStatus(b, job.Args.EndpointID, status)
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
