// Package outbox is the outgoing webhook machinery: the transactional
// outbox every pillar emits events through, the signing of deliveries, and
// the River worker that delivers them with retries, pacing and credits.
// It is a service beside the kernel (it writes in a project's schema
// through tenant.Scope), not a pillar: the webhooks pillar manages the
// endpoints it delivers to.
//
// An event is emitted inside the transaction of the change it reports:
// Emit freezes the envelope, writes one delivery per subscribed endpoint
// and inserts their River jobs in that same transaction, so a rolled-back
// change never sends anything and a committed one always does.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// Queue is the River queue of deliveries. It has its own workers, so
// deliveries and other jobs never wait for each other.
const Queue = "webhooks"

// QueueConfig sizes the delivery queue of one process. A worker is a
// goroutine that holds a database connection only inside its short
// transactions (at most half the pool at once), so many are cheap: a job
// near its pacing slot waits for it in a worker for up to 225 ms, so an
// endpoint sending at its full 85/s keeps about 19 workers. One endpoint
// never holds more than MaxInFlight (see limits.go). The short fetch
// cooldown keeps commit-to-send latency low.
//
// Paced, backed-off and retried jobs snooze, and River fetches a snoozed
// job only when it is told of it or polls: the worker registers each
// snooze with the process's wakers (WorkerConfig.Wakers), which notify
// the queue when the job is due. The poll is only the fallback for a
// wake-up that was lost (a notification dropped, or a process that died
// with wake-ups pending), so it is River's default second: every process
// polls even with nothing to deliver, and at 100 ms that poll was the
// largest part of an idle server's CPU and of the statements it sent
// PostgreSQL (issue 18's idle target is under 2 % of one core for the
// server and PostgreSQL together).
var QueueConfig = river.QueueConfig{MaxWorkers: 1000, FetchCooldown: 5 * time.Millisecond, FetchPollInterval: pollInterval}

// pollInterval is the delivery queue's fallback poll.
const pollInterval = time.Second

// infraAttempts bounds River's own retries of a delivery job, which happen
// only when the job itself fails (database unreachable, process stopped):
// receiver failures are retried by the delivery's schedule, by snoozing,
// and never consume these.
const infraAttempts = 100

// DeliverArgs is the River job of one delivery; it lives until the
// delivery succeeds or fails for good.
type DeliverArgs struct {
	ProjectID  string `json:"project_id"`
	EndpointID string `json:"endpoint_id"`
	DeliveryID string `json:"delivery_id"`
}

// Kind is the River job kind.
func (DeliverArgs) Kind() string { return "webhook.deliver" }

// InsertOpts puts deliveries on their own queue.
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: infraAttempts}
}

// Envelope is the body of every delivery.
type Envelope struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Created int64           `json:"created"`
	Data    json.RawMessage `json:"data"`
}

// Outbox writes events and their deliveries inside callers' transactions.
type Outbox struct {
	river *queue.Client
	// wanted holds the projects (by id) whose active endpoints this
	// process last saw want events: their transactions read the
	// endpoints as they begin rather than bet that none does.
	wanted sync.Map
}

// NewOutbox returns an outbox inserting delivery jobs through c (which
// need not work jobs itself).
func NewOutbox(c *queue.Client) *Outbox { return &Outbox{river: c} }

// Emit records the event topic with data (the resource as its GET shows
// it) inside tx, the caller's transaction on s: the envelope is frozen now,
// and one delivery, with its River job, is created per active endpoint
// subscribed to topic (a listener only while a stream holds it). Nothing
// is stored when no endpoint is subscribed. Events of a test-key request
// are charged to the test credit pool.
//
// In a transaction of tenant.Scope.Tx, the event is recorded at the end
// of the transaction (tenant.FinisherOf). The subscribed endpoints are those
// the transaction read as it began (Prefetch, when its context carries
// it; an endpoint created later in the same transaction is not among
// them), or else are read in the round trip of its other last
// statements: an event costs no round trip of its own unless an endpoint
// is subscribed to it, and one nobody wants lets those statements travel
// with COMMIT. A transaction that has sent nothing yet when it emits, of
// a project whose endpoints this process has not seen want events, bets
// that none does rather than begin to read them: its last statements
// travel with COMMIT behind a check that fails when an endpoint wants an
// event (webhooks_unwanted), and the transaction then goes back to before
// the check and records the events (tenant.Guarded).
func (o *Outbox) Emit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, data any) error {
	return o.emit(ctx, tx, s, topic, func() (any, bool) { return data, true }, false)
}

// EmitLater is Emit for an event whose data statements kept for the end
// of tx (tenant.FinisherOf) answer: data is called after they have, and
// returns the data, or false for no event. The event's id and time are
// those of this call. When no endpoint wants the topic, data is never
// called. In a transaction that is not Scope.Tx's, nothing is kept for
// its end: data is called at once.
func (o *Outbox) EmitLater(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, data func() (any, bool)) error {
	return o.emit(ctx, tx, s, topic, data, true)
}

func (o *Outbox) emit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, data func() (any, bool), later bool) error {
	if o == nil || o.river == nil {
		return errors.New("webhook: Emit on an outbox without a River client")
	}
	if !ValidTopic(topic) {
		return fmt.Errorf("webhook: unknown topic %q", topic)
	}
	now := time.Now()
	evt := pending{id: id.NewAt("evt_", now), topic: topic, at: now, data: data}
	if !later {
		// Frozen now: the caller may change what data points to.
		raw, ok, err := evt.marshal()
		if err != nil {
			return err
		}
		evt.raw, evt.ok, evt.data = raw, ok, nil
	}
	subs, known := tenant.Prefetched(tx, o)
	if _, wanted := o.wanted.Load(s.Project.ID); !known && wanted {
		var err error
		if subs, known, err = tenant.Fetch(ctx, tx, o); err != nil {
			return err
		}
	}
	if known {
		if subs := subs.([]subscriber); len(subs) > 0 {
			o.wanted.Store(s.Project.ID, struct{}{})
		} else {
			o.wanted.Delete(s.Project.ID)
		}
	}
	// Outside a transaction of Scope.Tx (not kept) the endpoints are
	// never known, and Queue gives up the bet no guard checks: the events
	// are recorded at once as unsealed ones are.
	e, kept := tenant.FinisherOf(tx, o, func() *emits {
		e := &emits{o: o, s: s, known: known, bet: !known}
		if known {
			e.endpoints = subs.([]subscriber)
		}
		return e
	})
	e.events = append(e.events, evt)
	if !kept {
		return tenant.Finish(ctx, tx, e)
	}
	return nil
}

// pending is an event emitted in a transaction, recorded at its end.
type pending struct {
	id    string
	topic string
	at    time.Time
	// data makes the event's data (EmitLater); raw is it marshalled,
	// ok false for no event.
	data func() (any, bool)
	raw  json.RawMessage
	ok   bool
}

// marshal returns the event's data as JSON, or false for no event.
func (p *pending) marshal() (json.RawMessage, bool, error) {
	if p.data == nil {
		return p.raw, p.ok, nil
	}
	v, ok := p.data()
	if !ok {
		return nil, false, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false, fmt.Errorf("webhook: marshal %s data: %w", p.topic, err)
	}
	return raw, true, nil
}

// emits are the events of one transaction, recorded together.
type emits struct {
	o      *Outbox
	s      *tenant.Scope
	events []pending
	// endpoints are the active endpoints as the transaction began
	// (known) or, when one wants an event, those subscribed to the
	// events' topics read again at its end, by id, with their topics.
	endpoints []subscriber
	known     bool
	// bet: the endpoints are not known, and the transaction bets that
	// none wants the events (Guard checks it before COMMIT); guarded: the
	// check is queued.
	bet, guarded bool
}

// subscribed is the condition of an endpoint that receives events: it
// is active and, when it is a listener, a stream holds it
// (webhooks_unwanted, migration 1103, holds the same).
const subscribed = `is_active AND (mode = 'http' OR listening_until > now())`

// endpointsSQL reads the subscribed endpoints as a transaction begins. It
// takes no lock (every transaction of a project runs it, and row locks
// many transactions share are multixacts): it only tells whether an
// endpoint wants an event; when one does, the end of the transaction
// reads them again, locked (Queue).
const endpointsSQL = `SELECT id, events FROM webhook_endpoints WHERE ` + subscribed

func readSubscribers(rows pgx.Rows) ([]subscriber, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (subscriber, error) {
		var sub subscriber
		return sub, r.Scan(&sub.id, &sub.topics)
	})
}

// Prefetch is the read of the active endpoints that a transaction of
// tenant.Scope.Tx makes as it begins when its context carries it
// (tenant.WithPrefetch): the server puts it in the context of every
// request and job, so an event emitted in one costs no read at its end.
func (o *Outbox) Prefetch() *tenant.Prefetch {
	return &tenant.Prefetch{Key: o, SQL: endpointsSQL, Read: func(rows pgx.Rows) (any, error) { return readSubscribers(rows) }}
}

// Sealed: with the endpoints known and none subscribed to the events,
// recording them writes nothing, and the transaction's last statements
// may travel with COMMIT.
func (e *emits) Sealed() bool {
	if e.bet {
		return true
	}
	if !e.known {
		return false
	}
	for _, evt := range e.events {
		for _, sub := range e.endpoints {
			if slices.Contains(sub.topics, evt.topic) {
				return false
			}
		}
	}
	return true
}

// Guard queues the check of the bet: webhooks_unwanted fails (PL409)
// when an active endpoint is subscribed to one of the events' topics.
func (e *emits) Guard(b *pgx.Batch) {
	if e.bet {
		b.Queue(`SELECT webhooks_unwanted($1)`, e.topics())
		e.guarded = true
	}
}

// unwantedCode is the SQLSTATE webhooks_unwanted raises.
const unwantedCode = "PL409"

// Lost tells whether err is the bet's check failing; the events are then
// recorded as when an endpoint was known to want them, and this
// process's transactions of the project read the endpoints as they begin
// from now on (until they read that none wants an event).
func (e *emits) Lost(err error) bool {
	var pe *pgconn.PgError
	if !e.bet || !errors.As(err, &pe) || pe.Code != unwantedCode {
		return false
	}
	e.bet, e.known = false, false
	e.o.wanted.Store(e.s.Project.ID, struct{}{})
	return true
}

func (e *emits) topics() []string {
	topics := make([]string, len(e.events))
	for i, evt := range e.events {
		topics[i] = evt.topic
	}
	return topics
}

type subscriber struct {
	id     string
	topics []string
}

// Queue reads the endpoints subscribed to the events' topics, unless the
// prefetch told that none is, or a guard checks the bet that none is. A
// bet no guard checks (the transaction's end is not sealed: a commit
// hook, a finisher that is not) is given up for the read. FOR KEY SHARE
// keeps a concurrent endpoint deletion from failing the caller's
// transaction on the deliveries' foreign key.
func (e *emits) Queue(b *pgx.Batch) {
	if e.bet && !e.guarded {
		e.bet = false
	}
	if e.Sealed() {
		return
	}
	b.Queue(`SELECT id, events FROM webhook_endpoints WHERE `+subscribed+` AND events && $1 ORDER BY id FOR KEY SHARE`, e.topics()).
		Query(func(rows pgx.Rows) error {
			var err error
			e.endpoints, err = readSubscribers(rows)
			return err
		})
}

// Finish stores each event that has subscribers, with its deliveries and
// their River jobs.
func (e *emits) Finish(ctx context.Context, tx pgx.Tx) error {
	for _, evt := range e.events {
		var endpoints []string
		for _, sub := range e.endpoints {
			if slices.Contains(sub.topics, evt.topic) {
				endpoints = append(endpoints, sub.id)
			}
		}
		if len(endpoints) == 0 {
			continue
		}
		raw, ok, err := evt.marshal()
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		env := Envelope{ID: evt.id, Type: evt.topic, Created: evt.at.Unix(), Data: raw}
		if err := e.o.store(ctx, tx, e.s, env, evt.at, endpoints); err != nil {
			return err
		}
	}
	return nil
}

// store records evt, emitted at now, and one delivery with its River job
// for each of endpoints.
func (o *Outbox) store(ctx context.Context, tx pgx.Tx, s *tenant.Scope, evt Envelope, now time.Time, endpoints []string) error {
	body, err := json.Marshal(evt)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_events (id, type, payload, test, created_at) VALUES ($1, $2, $3, $4, $5)`,
		evt.ID, evt.Type, string(body), s.Test(), now); err != nil {
		return err
	}
	ids := make([]string, len(endpoints))
	for i := range ids {
		ids[i] = id.NewAt("whd_", now)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, next_attempt_at, created_at)
		SELECT d, e, $3, $4, $4 FROM unnest($1::text[], $2::text[]) AS t (d, e)`, ids, endpoints, evt.ID, now); err != nil {
		return err
	}
	jobs := make([]river.InsertManyParams, len(ids))
	for i := range ids {
		jobs[i] = river.InsertManyParams{Args: DeliverArgs{ProjectID: s.Project.ID, EndpointID: endpoints[i], DeliveryID: ids[i]}}
	}
	_, err = o.river.InsertManyTx(ctx, tx, jobs)
	return err
}

// ErrEndpointDisabled is returned by Redeliver for an inactive endpoint.
var ErrEndpointDisabled = httpapi.Conflict(httpapi.CodeConflict, "the endpoint is disabled; enable it (is_active) before redelivering")

// Redeliver creates a new delivery (a new whd_ id) of the event of
// delivery deliveryID to its endpoint endpointID, with the envelope
// frozen at emission, and returns its id. ErrNotFound when the delivery
// is not the endpoint's.
func (o *Outbox) Redeliver(ctx context.Context, tx pgx.Tx, s *tenant.Scope, endpointID, deliveryID string) (string, error) {
	var eventID string
	var active bool
	err := tx.QueryRow(ctx, `SELECT d.event_id, ep.is_active FROM webhook_deliveries d JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
		WHERE d.id = $1 AND d.endpoint_id = $2 FOR KEY SHARE OF ep`, deliveryID, endpointID).Scan(&eventID, &active)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", httpapi.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	if !active {
		return "", ErrEndpointDisabled
	}
	now := time.Now()
	did := id.NewAt("whd_", now)
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $4)`,
		did, endpointID, eventID, now); err != nil {
		return "", err
	}
	_, err = o.river.InsertTx(ctx, tx, DeliverArgs{ProjectID: s.Project.ID, EndpointID: endpointID, DeliveryID: did}, nil)
	return did, err
}
