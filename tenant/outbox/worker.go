package outbox

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ssrf"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

const (
	// a slot nearer than horizon is waited for in the worker; a later one
	// snoozes the job until early before it (more than wakeLatency, so the
	// job is back in a worker before its turn)
	horizon = wakeLatency + 125*time.Millisecond
	early   = wakeLatency + 100*time.Millisecond
	// wakeLatency is how late a snoozed job may be back in a worker: the
	// waker notifies the queue's producers when it is due, or as soon as
	// River's completer has written the snooze when that comes later
	// (queue.Waker), and the fetch, its transaction and the pacing
	// lease follow.
	wakeLatency = 100 * time.Millisecond
)

// Headers of a delivery.
const (
	UserAgent      = "Service-Webhooks/1.0"
	HeaderEvent    = "X-Service-Event"
	HeaderDelivery = "X-Service-Delivery"
)

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
	// Attempted, when set, is told of every attempt sent: its outcome
	// ("success" or the failure reason of the delivery log) and how long
	// the receiver took, for the metrics.
	Attempted func(outcome string, took time.Duration)
	// Wakers, when set, notify the queue when a snoozed job is due, on
	// the shard that holds it; the delivery queue's poll is only a
	// fallback (QueueConfig), and without it a paced job would wake up to
	// a second late.
	Wakers *queue.Wakers
}

// Worker delivers one delivery per job: it makes attempts until one
// succeeds or the schedule is exhausted, snoozing in between.
type Worker struct {
	river.WorkerDefaults[DeliverArgs]
	cfg     WorkerConfig
	secrets *Secrets
	client  *http.Client
	limits  *limits
	pacer   *pacer
	// txSems bounds the delivery transactions of each shard pool
	// (*pgxpool.Pool → chan struct{}) to half its connections.
	txSems sync.Map
	// the begin and record steps of concurrent deliveries of a project
	// share transactions
	starts  *group[DeliverArgs, attempt]
	records *group[rec, struct{}]
	leases  *group[leaseReq, time.Duration]
}

// leaseReq books n pacing slots of an endpoint.
type leaseReq struct {
	endpoint string
	n        int
}

// NewWorker builds the delivery worker. It works in the project the job
// gate bound (tenant.JobScope).
func NewWorker(cfg WorkerConfig, secrets *Secrets) *Worker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Worker{
		cfg:     cfg,
		secrets: secrets,
		client:  ssrf.NewClient(ssrf.Options{Dev: cfg.Dev, Timeout: cfg.Timeout, RootCAs: cfg.RootCAs, MaxConnsPerHost: MaxInFlight}),
		limits:  newLimits(MaxInFlight, cfg.Timeout),
		pacer:   newPacer(),
	}
	w.starts = newGroup(func(ctx context.Context, sc *tenant.Scope, as []DeliverArgs) (ats []attempt, err error) {
		err = w.tx(ctx, sc, func(tx pgx.Tx) error {
			ats, err = w.begin(ctx, tx, sc, as)
			return err
		})
		return ats, err
	})
	w.records = newGroup(func(ctx context.Context, sc *tenant.Scope, rs []rec) ([]struct{}, error) {
		return make([]struct{}, len(rs)), w.tx(ctx, sc, func(tx pgx.Tx) error { return write(ctx, tx, rs) })
	})
	w.leases = newGroup(func(ctx context.Context, sc *tenant.Scope, ls []leaseReq) (offs []time.Duration, err error) {
		err = w.tx(ctx, sc, func(tx pgx.Tx) error {
			offs, err = lease(ctx, tx, ls)
			return err
		})
		return offs, err
	})
	return w
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
	n       int
	url     string
	typ     string
	payload []byte
	secrets []string
	snooze  time.Duration // instead of sending: snooze this long (0: done)
	skip    bool          // nothing to send
	// forwarded: handed to a listener (and recorded) by begin: nothing
	// to send from here
	forwarded bool
}

// outcome is the result of one attempt.
type outcome struct {
	status int    // HTTP status, 0 when none
	reason string // why it failed (a Reason), "" when it succeeded
	detail error  // what the transport said: logged, never stored
}

func (o outcome) ok() bool { return o.reason == "" && o.status >= 200 && o.status < 300 }

// Work runs one step of a delivery: wait for its pacing slot, make an
// attempt, record it; or snooze until the next attempt is due, with a
// wake-up registered for that time.
func (w *Worker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	err := w.work(ctx, job)
	var snooze *river.JobSnoozeError
	if w.cfg.Wakers != nil && errors.As(err, &snooze) {
		if sc, serr := tenant.JobScope(ctx); serr == nil {
			w.cfg.Wakers.For(sc.Pool()).Wake(time.Now().Add(snooze.Duration))
		}
	}
	return err
}

func (w *Worker) work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	a := job.Args
	sc, err := tenant.JobScope(ctx) // bound by the job gate
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

	at, err := w.starts.do(ctx, sc, a)
	if err != nil {
		return stopped(ctx, err)
	}
	if at.forwarded && w.cfg.Attempted != nil {
		w.cfg.Attempted(OutcomeForwarded, 0)
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
	if !out.ok() {
		w.cfg.Logger.WarnContext(ctx, "webhook: attempt failed", "project", a.ProjectID, "endpoint", a.EndpointID,
			"delivery", a.DeliveryID, "attempt", at.n, "reason", out.reason, "err", out.detail)
	}
	r := w.judge(a, at.n, out)
	if _, err := w.records.do(ctx, sc, r); err != nil {
		return stopped(ctx, err) // River retries; the attempt is still in flight and is sent again
	}
	if r.status == statusPending {
		return river.JobSnooze(r.wait)
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
		return w.leases.do(ctx, sc, leaseReq{a.EndpointID, n})
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

// lease books consecutive pacing slots of endpoints, ls[i].n of
// ls[i].endpoint, and returns how far from now each first slot is. The
// endpoint rows are locked in id order, so batches of several processes
// cannot deadlock. An endpoint deleted meanwhile gets slots from now: its
// delivery then finds itself gone.
func lease(ctx context.Context, tx pgx.Tx, ls []leaseReq) ([]time.Duration, error) {
	eps, ns := make([]string, len(ls)), make([]int32, len(ls))
	for i, l := range ls {
		eps[i], ns[i] = l.endpoint, int32(l.n)
	}
	rows, err := tx.Query(ctx, `WITH u AS (
			SELECT ep.id, u.n FROM webhook_endpoints ep JOIN unnest($1::text[], $2::int[]) AS u (id, n) ON u.id = ep.id
			ORDER BY ep.id FOR NO KEY UPDATE OF ep)
		UPDATE webhook_endpoints ep SET next_slot = GREATEST(ep.next_slot, clock_timestamp() + $3::interval) + u.n * $4::interval
		FROM u WHERE ep.id = u.id
		RETURNING ep.id, ep.next_slot - u.n * $4::interval - clock_timestamp()`, eps, ns, leaseLead, Pace)
	if err != nil {
		return nil, err
	}
	offs := map[string]time.Duration{}
	for rows.Next() {
		var id string
		var off time.Duration
		if err := rows.Scan(&id, &off); err != nil {
			rows.Close()
			return nil, err
		}
		offs[id] = off
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(ls))
	for i, l := range ls {
		out[i] = max(offs[l.endpoint], leaseLead)
	}
	return out, nil
}

// tx runs fn in a transaction of sc, at most half its shard pool's
// connections at a time per process: a burst of deliveries must not take
// every connection from the API.
func (w *Worker) tx(ctx context.Context, sc *tenant.Scope, fn func(pgx.Tx) error) error {
	sem := w.txSem(sc.Pool())
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-sem }()
	return sc.Tx(ctx, fn)
}

// txSem is the semaphore of pool's delivery transactions.
func (w *Worker) txSem(pool *pgxpool.Pool) chan struct{} {
	if s, ok := w.txSems.Load(pool); ok {
		return s.(chan struct{})
	}
	s, _ := w.txSems.LoadOrStore(pool, make(chan struct{}, max(2, pool.Config().MaxConns/2)))
	return s.(chan struct{})
}

// begin runs the first step of the deliveries as of one project, in one
// transaction (see group): one statement locks them and, for each that is
// due, starts its attempt (attempts+1, in flight); one charge per credit
// pool pays for the started attempts; and one write records those that
// end here. An attempt whose outcome was lost (the process stopped while
// it was in flight) is resumed without a new charge: receivers dedupe by
// X-Service-Delivery.
//
// An attempt to a listener (mode listen) ends here too: nothing is sent
// from the worker. Once paid it is handed to the listener (forward: its
// number in the endpoint's stream, and the stream's wake-up) and recorded
// succeeded, with no status code, in the same transaction; the stream
// signs it with the endpoint's secrets (Headers) when it hands it on.
func (w *Worker) begin(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, as []DeliverArgs) ([]attempt, error) {
	ids := make([]string, len(as))
	eps := make([]string, len(as))
	for i, a := range as {
		ids[i], eps[i] = a.DeliveryID, a.EndpointID
	}
	rows, err := tx.Query(ctx, `WITH input AS (
			SELECT * FROM unnest($1::text[], $2::text[]) AS t (id, endpoint_id)),
		cur AS (
			SELECT d.id, d.event_id, d.endpoint_id, d.status, d.attempts, d.in_flight, d.next_attempt_at
			FROM webhook_deliveries d JOIN input i ON i.id = d.id AND i.endpoint_id = d.endpoint_id
			ORDER BY d.id FOR UPDATE OF d),
		start AS (
			UPDATE webhook_deliveries d SET attempts = cur.attempts + 1, in_flight = true, updated_at = now()
			FROM cur, webhook_endpoints ep
			WHERE d.id = cur.id AND ep.id = cur.endpoint_id AND ep.is_active AND cur.status = 'pending' AND NOT cur.in_flight
				AND (cur.next_attempt_at IS NULL OR cur.next_attempt_at <= clock_timestamp() + interval '50 ms')
			RETURNING d.id, d.attempts)
		SELECT cur.id, cur.status, cur.attempts, cur.in_flight, start.attempts, cur.next_attempt_at - clock_timestamp(),
			e.type, e.payload, e.test, COALESCE(ep.url, ''), ep.mode = 'listen', ep.is_active, ep.secret, ep.previous_secret,
			COALESCE(ep.previous_until > now(), false)
		FROM cur LEFT JOIN start ON start.id = cur.id
			JOIN webhook_events e ON e.id = cur.event_id JOIN webhook_endpoints ep ON ep.id = cur.endpoint_id`, ids, eps)
	if err != nil {
		return nil, err
	}
	type found struct {
		status             string
		attempts           int
		resuming           bool
		started            *int
		dueIn              *time.Duration
		typ, payload, url  string
		listen             bool
		test, active       bool
		secret, prevSecret []byte
		prevValid          bool
	}
	byID := map[string]*found{}
	for rows.Next() {
		var id string
		var f found
		if err := rows.Scan(&id, &f.status, &f.attempts, &f.resuming, &f.started, &f.dueIn, &f.typ, &f.payload, &f.test,
			&f.url, &f.listen, &f.active, &f.secret, &f.prevSecret, &f.prevValid); err != nil {
			rows.Close()
			return nil, err
		}
		byID[id] = &f
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}

	out := make([]attempt, len(as))
	var ends []rec                   // deliveries that end or wait here
	var live, test []int             // started attempts to charge, by pool
	listens := make([]bool, len(as)) // attempts to a listener
	seen := map[string]bool{}        // a delivery is started once per batch
	for i, a := range as {
		f := byID[a.DeliveryID]
		switch {
		case f == nil || f.status != statusPending || seen[a.DeliveryID]:
			out[i] = attempt{skip: true} // gone (with its endpoint), or already settled
			continue
		case !f.active:
			out[i] = attempt{skip: true}
			ends = append(ends, rec{delivery: a.DeliveryID, endpoint: a.EndpointID, n: f.attempts, status: statusFailed, err: ReasonDisabled})
			continue
		case f.started == nil && !f.resuming:
			wait := time.Millisecond
			if f.dueIn != nil {
				wait = max(*f.dueIn, wait)
			}
			out[i] = attempt{skip: true, snooze: wait} // woke before the retry is due
			continue
		}
		seen[a.DeliveryID] = true
		secrets, err := w.secrets.Signing(a.EndpointID, f.secret, f.prevSecret, f.prevValid)
		if err != nil {
			// The server secret changed since the endpoint's secret was sealed:
			// no attempt can be signed until the secret is rotated.
			w.cfg.Logger.ErrorContext(ctx, "webhook: signing secret does not decrypt; was PLINTH_SECRET changed?",
				"project", a.ProjectID, "endpoint", a.EndpointID, "delivery", a.DeliveryID)
			out[i] = attempt{skip: true}
			ends = append(ends, rec{delivery: a.DeliveryID, endpoint: a.EndpointID, n: f.attempts, status: statusFailed, err: ReasonSecret})
			continue
		}
		out[i] = attempt{n: f.attempts, url: f.url, typ: f.typ, payload: []byte(f.payload), secrets: secrets}
		listens[i] = f.listen
		if f.resuming {
			continue
		}
		out[i].n = *f.started
		if f.test {
			test = append(test, i)
		} else {
			live = append(live, i)
		}
	}

	// The charges come last: a pool's row stays locked only from here to
	// the commit, once for the whole batch.
	for _, pool := range []struct {
		idx  []int
		test bool
	}{{live, false}, {test, true}} {
		if len(pool.idx) == 0 {
			continue
		}
		charge := sc
		if pool.test {
			if charge, err = sc.WithKey(&tenant.Key{Test: true}); err != nil {
				return nil, err
			}
		}
		refs := make([]string, len(pool.idx))
		for k, i := range pool.idx {
			refs[k] = as[i].DeliveryID
		}
		paid, err := credits.ChargeEach(ctx, tx, charge, "webhook_delivery", credits.WebhookDelivery, refs)
		if err != nil {
			return nil, err
		}
		// Nothing is sent for an attempt the balance cannot pay; it counts,
		// so a project that stays out of credits ends with a failed
		// delivery it can redeliver.
		for _, i := range pool.idx[paid:] {
			r := w.judge(as[i], out[i].n, outcome{reason: ReasonNoCredits})
			ends = append(ends, r)
			out[i] = attempt{skip: true}
			if r.status == statusPending {
				out[i].snooze = max(r.wait, time.Nanosecond)
			}
		}
	}

	// The paid attempts to listeners are handed to them.
	var fwd []forwarded
	for i := range as {
		if !listens[i] || out[i].skip {
			continue
		}
		fwd = append(fwd, forwarded{delivery: as[i].DeliveryID, endpoint: as[i].EndpointID})
		ends = append(ends, rec{delivery: as[i].DeliveryID, endpoint: as[i].EndpointID, n: out[i].n, status: statusSucceeded})
		out[i] = attempt{skip: true, forwarded: true}
	}
	if err := forward(ctx, tx, fwd); err != nil {
		return nil, err
	}
	return out, write(ctx, tx, ends)
}

// send makes one attempt and reports it to the metrics.
func (w *Worker) send(ctx context.Context, deliveryID string, at attempt) outcome {
	start := time.Now()
	out := w.post(ctx, deliveryID, at)
	if w.cfg.Attempted != nil {
		label := out.reason
		if out.ok() {
			label = "success"
		}
		w.cfg.Attempted(label, time.Since(start))
	}
	return out
}

func (w *Worker) post(ctx context.Context, deliveryID string, at attempt) outcome {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, at.url, bytes.NewReader(at.payload))
	if err != nil {
		return outcome{reason: ReasonInvalidURL, detail: err}
	}
	req.Header = Headers(deliveryID, at.typ, at.payload, time.Now(), at.secrets...)
	res, err := w.client.Do(req)
	if err != nil {
		return outcome{reason: transportReason(err), detail: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	out := outcome{status: res.StatusCode}
	if !out.ok() {
		// A redirect is a failure too: it is never followed.
		out.reason, out.detail = statusReason(res.StatusCode), fmt.Errorf("the receiver answered %s", res.Status)
	}
	return out
}

// Statuses of a delivery.
const (
	statusPending   = "pending"
	statusSucceeded = "succeeded"
	statusFailed    = "failed"
)

// rec is the outcome of attempt n of a delivery to record: succeeded,
// failed for good, or pending until the next attempt is due in wait.
type rec struct {
	delivery, endpoint string
	n                  int
	status             string
	code               int    // HTTP status, 0 when none
	err                string // why the attempt failed: a Reason
	wait               time.Duration
}

// judge decides what the outcome of attempt n of a means: success, the
// end of the schedule, or a retry after its delay.
func (w *Worker) judge(a DeliverArgs, n int, out outcome) rec {
	r := rec{delivery: a.DeliveryID, endpoint: a.EndpointID, n: n, code: out.status, err: out.reason}
	switch {
	case out.ok():
		r.status = statusSucceeded
	case n >= w.MaxAttempts():
		r.status = statusFailed
	default:
		r.status, r.wait = statusPending, w.cfg.Retry[n-1]
	}
	return r
}

// write records outcomes in two statements sent together, whatever their
// number. A settled delivery's job completes when its run returns; should
// that be lost, the job's next run finds the delivery settled and does
// nothing. The endpoint's last_delivery_status follows its latest outcome
// (a retry counts as failed); the row is written (and locked, in id order)
// only when the status changes, so a healthy endpoint's deliveries do not
// contend on it.
func write(ctx context.Context, tx pgx.Tx, rs []rec) error {
	if len(rs) == 0 {
		return nil
	}
	n := len(rs)
	ids, statuses, errs := make([]string, n), make([]string, n), make([]string, n)
	attempts, codes := make([]int32, n), make([]int32, n)
	waits := make([]time.Duration, n)
	last := map[string]string{}
	for i, r := range rs {
		ids[i], statuses[i], errs[i] = r.delivery, r.status, r.err
		attempts[i], codes[i], waits[i] = int32(r.n), int32(r.code), r.wait
		last[r.endpoint] = r.status
		if r.status == statusPending {
			last[r.endpoint] = statusFailed
		}
	}
	eps := slices.Sorted(maps.Keys(last))
	epStatus := make([]string, len(eps))
	for i, e := range eps {
		epStatus[i] = last[e]
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE webhook_deliveries d SET status = u.status, attempts = u.attempts, in_flight = false,
			last_status_code = NULLIF(u.code, 0), last_error = NULLIF(u.err, ''),
			next_attempt_at = CASE WHEN u.status = 'pending' THEN now() + u.wait END, updated_at = now()
		FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::interval[]) AS u (id, status, attempts, code, err, wait)
		WHERE d.id = u.id`, ids, statuses, attempts, codes, errs, waits)
	b.Queue(`WITH l AS (
			SELECT ep.id, u.status FROM webhook_endpoints ep JOIN unnest($1::text[], $2::text[]) AS u (id, status) ON u.id = ep.id
			WHERE ep.last_delivery_status <> u.status ORDER BY ep.id FOR NO KEY UPDATE OF ep)
		UPDATE webhook_endpoints ep SET last_delivery_status = l.status FROM l WHERE ep.id = l.id`, eps, epStatus)
	return tx.SendBatch(ctx, b).Close()
}
