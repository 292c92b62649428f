package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	sse "github.com/tmaxmax/go-sse"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// Deps is what the pillar is built with.
type Deps struct {
	// Pool is the shard pool whose job notifications the hub listens to.
	Pool  *pgxpool.Pool
	Queue *queue.Client
	// Heartbeat is the interval of SSE comment lines that keep idle
	// connections (and proxies) open (default 15s).
	Heartbeat time.Duration
	Logger    *slog.Logger
	// Channels are further NOTIFY channels the hub listens to on its
	// connection, for the streams of other pillars (outbox.ListenChannel).
	Channels []string
}

// MaxStreamsPerProject is how many job streams one project may hold open
// on one process at once; one more is 429 rate_limited. A stream holds a
// connection, a goroutine and a hub subscription for as long as its client
// likes, and the request limiter counts it once, when it opens.
const MaxStreamsPerProject = 20

// streamRetryAfter is the Retry-After, in seconds, of a refused stream: a
// slot frees when a stream of the project ends, which no one can predict.
const streamRetryAfter = 5

// StreamSlots counts the open streams of each project on this process,
// up to a bound, for the SSE routes that wake on the hub.
type StreamSlots struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

// NewStreamSlots returns slots for at most max streams per project.
func NewStreamSlots(max int) *StreamSlots {
	return &StreamSlots{max: max, open: map[string]int{}}
}

// Take reserves a stream slot of project, false when all are taken.
func (s *StreamSlots) Take(project string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[project] >= s.max {
		return false
	}
	s.open[project]++
	return true
}

// Give frees a slot Take reserved.
func (s *StreamSlots) Give(project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[project]--; s.open[project] <= 0 {
		delete(s.open, project)
	}
}

// Service is the jobs pillar: the runner every pillar's job types run on,
// the hub that wakes SSE streams, and /jobs (list, read, cancel, stream).
type Service struct {
	tenant.Base
	runner    *Runner
	hub       *Hub
	river     *queue.Client
	heartbeat time.Duration
	streams   *StreamSlots
}

// New builds the pillar.
func New(d Deps) *Service {
	return &Service{runner: NewRunner(d.Logger), hub: NewHub(d.Pool, d.Logger, d.Channels...), river: d.Queue,
		heartbeat: or(d.Heartbeat, 15*time.Second), streams: NewStreamSlots(MaxStreamsPerProject)}
}

// Runner is where pillars register their job types.
func (a *Service) Runner() *Runner { return a.runner }

// Hub wakes SSE streams on job events from any instance; Run it.
func (a *Service) Hub() *Hub { return a.hub }

// Workers adds the runner, which works every job type.
func (a *Service) Workers(w *river.Workers) { river.AddWorker(w, a.runner) }

// Routes mounts /jobs. Every route needs jobs:read; cancel also needs the
// write scope of the job's pillar (docs/decisions.md section 3).
func (a *Service) Routes(r chi.Router) {
	r.Route("/jobs", func(r chi.Router) {
		r.Use(tenant.RequireScope("jobs:read"))
		r.Get("/", tenant.Handle(a.list))
		r.Get("/{id}", tenant.Handle(a.get))
		r.Post("/{id}/cancel", tenant.Handle(a.cancel))
		r.Get("/{id}/stream", tenant.Handle(a.stream))
	})
}

var statuses = map[string]bool{StatusPending: true, StatusProcessing: true, StatusCompleted: true, StatusFailed: true, StatusCancelled: true}

func (a *Service) list(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	f := Filter{Status: r.URL.Query().Get("status"), Type: r.URL.Query().Get("type")}
	page, err := httpapi.ListOf(r, httpapi.CursorText, func(after string, limit int) ([]Job, error) {
		if f.Status != "" && !statuses[f.Status] {
			return nil, httpapi.Invalid("status", "must be one of pending, processing, completed, failed, cancelled")
		}
		return list(r.Context(), s.Reader(), f, after, limit)
	}, func(j Job) string { return j.ID })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, page)
}

func (a *Service) get(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	j, err := get(r.Context(), s.Reader(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, j.Job)
}

// cancel ends a pending job at once (refunded) and asks a processing one
// to stop: the worker sees the request, stops, and ends the job cancelled
// (refunded). Either way it answers 200 with the job as it now stands; a
// finished job gives 409 conflict.
func (a *Service) cancel(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	j, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (*row, error) { return a.cancelJob(r.Context(), tx, s, chi.URLParam(r, "id")) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, j.Job)
}

// cancelJob cancels the job jobID as cancel describes, in tx, and returns
// it as it now stands. The key must hold the write scope of the job's
// pillar.
func (a *Service) cancelJob(ctx context.Context, tx pgx.Tx, s *tenant.Scope, jobID string) (*row, error) {
	j, err := lock(ctx, tx, jobID)
	if err != nil {
		return nil, err
	}
	if err := s.Require(j.WriteScope); err != nil {
		return nil, err
	}
	switch {
	case Final(j.Status):
		return nil, httpapi.Conflict(httpapi.CodeConflict, "the job has already finished ("+j.Status+")")
	case j.Status == StatusPending:
		if err := cancelRow(ctx, tx, s, j); err != nil {
			return nil, err
		}
		if _, err := a.river.JobCancelTx(ctx, tx, j.RiverID); err != nil {
			return nil, err
		}
		if j.Admitted {
			return j, promote(ctx, tx, a.river)
		}
	case !j.CancelRequested:
		// River cancels the running attempt's context (through its own
		// LISTEN/NOTIFY); the runner then ends the job cancelled.
		j.CancelRequested, j.Message = true, "Cancellation requested"
		if err := save(ctx, tx, j, newEvent(EventProgress, progressData{Progress: j.Progress, Message: j.Message})); err != nil {
			return nil, err
		}
		_, err := a.river.JobCancelTx(ctx, tx, j.RiverID)
		return j, err
	}
	return j, nil
}

// stream serves GET /jobs/{id}/stream as Server-Sent Events: every event
// of the job in order (progress, step, error, then done, which ends the
// stream), each with its sequence number as id. Last-Event-ID resumes
// after that event; a finished job's stream without it sends done at once.
//
// An open stream reads the database only when the hub wakes it: on a
// NOTIFY of the job, or after the hub's LISTEN connection came back (it
// wakes every stream then, since notifications may have been missed). In
// between it sends heartbeat comments and queries nothing.
func (a *Service) stream(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	ctx := r.Context()
	if !a.streams.Take(s.Project.ID) {
		return httpapi.RateLimited(streamRetryAfter, fmt.Sprintf("this project already has %d job streams open; close one (a stream ends after done) and retry", MaxStreamsPerProject))
	}
	defer a.streams.Give(s.Project.ID)
	jobID := chi.URLParam(r, "id")
	wakeups, stop := a.hub.Subscribe(jobID) // before reading, so no event slips between
	defer stop()
	j, err := get(ctx, s.Reader(), jobID)
	if err != nil {
		return err
	}
	sess, err := sse.Upgrade(w, r)
	if err != nil {
		return err // the response writer cannot flush
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")

	last, resumed := 0, false
	if id := sess.LastEventID.String(); id != "" {
		if n, err := strconv.Atoi(id); err == nil && n >= 0 {
			last, resumed = n, true
		}
	}
	if Final(j.Status) && (!resumed || last >= j.EventSeq) {
		// Also when resuming at or past the end: a reconnect after done.
		_ = a.send(sess, event{Seq: j.EventSeq, Kind: EventDone, Data: mustJSON(j.Job)}, true)
		return nil
	}
	if err := sess.Flush(); err != nil { // headers out: the client knows the stream is open
		return nil
	}
	heartbeat := time.NewTicker(a.heartbeat)
	defer heartbeat.Stop()
	for {
		for {
			evs, err := eventsAfter(ctx, s.Reader(), jobID, last, 500)
			if err != nil {
				if ctx.Err() == nil {
					httpapi.Logger(ctx).ErrorContext(ctx, "job stream read failed", "job", jobID, "err", err)
					_ = a.send(sess, event{Kind: EventError, Data: mustJSON(ErrorBody{Code: httpapi.CodeInternal, Message: "the stream failed; reconnect to resume"})}, true)
				}
				return nil
			}
			for i, e := range evs {
				if err := a.send(sess, e, i == len(evs)-1 || e.Kind == EventDone); err != nil {
					return nil
				}
				last = e.Seq
				if e.Kind == EventDone {
					return nil
				}
			}
			if len(evs) < 500 {
				break
			}
		}
		if !a.awaitWake(ctx, sess, wakeups, heartbeat.C) {
			return nil
		}
	}
}

// awaitWake waits until the hub wakes the stream, sending a heartbeat
// comment at each tick meanwhile (no query: a heartbeat only keeps the
// connection and proxies open). False when the stream should end: the
// client left, the process is stopping, or a heartbeat could not be sent.
func (a *Service) awaitWake(ctx context.Context, sess *sse.Session, wakeups <-chan struct{}, ticks <-chan time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-a.hub.Done():
			return false
		case <-wakeups:
			return true
		case <-ticks:
			m := &sse.Message{}
			m.AppendComment("heartbeat")
			if sess.Send(m) != nil || sess.Flush() != nil {
				return false
			}
		}
	}
}

// send writes one event; flush sends it (and any before it) now. After
// the stream started, errors end it quietly: the client went away.
func (a *Service) send(sess *sse.Session, e event, flush bool) error {
	m := &sse.Message{Type: sse.Type(e.Kind)}
	if e.Seq > 0 {
		m.ID = sse.ID(strconv.Itoa(e.Seq))
	}
	m.AppendData(string(e.Data))
	if err := sess.Send(m); err != nil {
		return err
	}
	if flush {
		return sess.Flush()
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the package's own plain types are marshalled
	}
	return b
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
