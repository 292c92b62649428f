package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// Handler does the work of one job type. It runs outside any transaction,
// reports progress through run, and returns a Commit that writes its
// effects; the worker runs the Commit in the transaction that completes
// the job, so effects and completion are committed together, once.
type Handler func(ctx context.Context, run *Run) (Commit, error)

// Commit writes a job's effects in tx and returns its result (the Job's
// result field). A nil Commit completes the job with an empty result.
type Commit func(ctx context.Context, tx pgx.Tx) (result any, err error)

// Error ends a job failed with a code, at once and without retry.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Fail returns an error that ends the job failed with code and message.
func Fail(code, message string) error { return &Error{Code: code, Message: message} }

// ErrCancelled is returned by Run.Progress and Run.Step once cancellation
// of the job was requested; the handler should return it.
var ErrCancelled = errors.New("jobs: the job was cancelled")

// DefaultTimeout bounds one attempt of a job whose handler sets none.
const DefaultTimeout = 10 * time.Minute

type registration struct {
	handler Handler
	timeout time.Duration
}

// Runner is the River worker of every job type: in the project the job
// gate bound (tenant.JobScope), it runs the registered handler and records
// the outcome on the Job.
type Runner struct {
	river.WorkerDefaults[Args]

	logger *slog.Logger

	mu       sync.RWMutex
	handlers map[string]registration
}

// NewRunner returns a runner with no handlers.
func NewRunner(logger *slog.Logger) *Runner {
	return &Runner{logger: logger, handlers: map[string]registration{}}
}

// Handle registers the handler of jobType; timeout bounds one attempt
// (0: DefaultTimeout).
func (r *Runner) Handle(jobType string, timeout time.Duration, h Handler) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[jobType] = registration{handler: h, timeout: timeout}
}

func (r *Runner) handler(jobType string) (registration, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[jobType]
	return h, ok
}

// Timeout implements river.Worker: the handler's own bound.
func (r *Runner) Timeout(job *river.Job[Args]) time.Duration {
	if h, ok := r.handler(job.Args.handlerName()); ok {
		return h.timeout
	}
	return DefaultTimeout
}

// Run is one attempt of a job, as its handler sees it.
type Run struct {
	JobID   string
	Type    string
	Scope   *tenant.Scope
	Attempt int
	// Steps are the job's step names, in order.
	Steps   []string
	payload json.RawMessage
}

// Decode unmarshals the job's arguments into v.
func (run *Run) Decode(v any) error { return json.Unmarshal(run.payload, v) }

// Progress records percent (0..100) and message, visible at once to GET
// and SSE listeners. It returns ErrCancelled once cancellation was asked.
func (run *Run) Progress(ctx context.Context, percent int, message string) error {
	return run.update(ctx, "", percent, message)
}

// Step makes step name the active one (completing the one before it) and
// records progress as Progress does.
func (run *Run) Step(ctx context.Context, name string, percent int, message string) error {
	return run.update(ctx, name, percent, message)
}

func (run *Run) update(ctx context.Context, step string, percent int, message string) error {
	percent = min(max(percent, 0), 100)
	var cancelled bool
	err := run.Scope.Tx(ctx, func(tx pgx.Tx) error {
		j, err := lock(ctx, tx, run.JobID)
		if err != nil {
			return err
		}
		if j.Status != StatusProcessing || j.CancelRequested {
			cancelled = true
			return nil
		}
		var events []event
		if step != "" {
			events = activate(j, step)
		}
		j.Progress, j.Message = max(j.Progress, percent), message
		events = append(events, newEvent(EventProgress, progressData{Progress: j.Progress, Message: message}))
		return save(ctx, tx, j, events...)
	})
	if err != nil {
		return err
	}
	if cancelled {
		return ErrCancelled
	}
	return nil
}

// activate completes the active step and activates name, returning the
// step events of the change.
func activate(j *row, name string) []event {
	var events []event
	for i := range j.Steps {
		s := &j.Steps[i]
		switch {
		case s.Name == name && !s.Active:
			s.Active, s.Completed = true, false
			events = append(events, newEvent(EventStep, *s))
		case s.Name != name && s.Active:
			s.Active, s.Completed = false, true
			events = append([]event{newEvent(EventStep, *s)}, events...)
		}
	}
	return events
}

// completeSteps marks every step completed, returning the events of the
// steps that changed.
func completeSteps(j *row) []event {
	var events []event
	for i := range j.Steps {
		s := &j.Steps[i]
		if !s.Completed || s.Active {
			s.Completed, s.Active = true, false
			events = append(events, newEvent(EventStep, *s))
		}
	}
	return events
}

// Work implements river.Worker.
func (r *Runner) Work(ctx context.Context, rj *river.Job[Args]) error {
	a := rj.Args
	// The job gate bound the project, and a test job's key: its credits
	// belong to the test pool of the key that submitted it.
	s, err := tenant.JobScope(ctx)
	if err != nil {
		return err
	}
	reg, known := r.handler(a.handlerName())
	run := &Run{JobID: a.JobID, Type: a.Type, Scope: s, Attempt: rj.Attempt, payload: a.Payload}

	// Start: pending → processing, unless the job is already decided.
	started := false
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		j, err := lock(ctx, tx, a.JobID)
		if errors.Is(err, httpapi.ErrNotFound) {
			return completeRiver(ctx, tx, rj) // the job row is gone with its data
		}
		if err != nil {
			return err
		}
		switch {
		case Final(j.Status):
			return completeRiver(ctx, tx, rj)
		case j.CancelRequested:
			return r.cancelled(ctx, tx, s, j, rj)
		case !known:
			return r.failed(ctx, tx, s, j, rj, ErrorBody{Code: CodeInternal, Message: "no worker handles jobs of type " + a.Type})
		case rj.Attempt > rj.MaxAttempts:
			return r.failed(ctx, tx, s, j, rj, ErrorBody{Code: CodeInternal, Message: "the job was interrupted too many times"})
		}
		for _, st := range j.Steps {
			run.Steps = append(run.Steps, st.Name)
		}
		msg := "Started"
		if j.Status == StatusProcessing {
			msg = fmt.Sprintf("Resumed (attempt %d)", rj.Attempt)
		}
		j.Status, j.Message = StatusProcessing, msg
		started = true
		return save(ctx, tx, j, newEvent(EventProgress, progressData{Progress: j.Progress, Message: msg}))
	})
	if err != nil || !started {
		return err
	}

	commit, herr := safely(ctx, reg.handler, run)
	if herr == nil {
		herr = r.complete(ctx, s, rj, commit)
		if herr == nil {
			return nil
		}
	}
	return r.settle(ctx, s, rj, herr)
}

// safely runs h, turning a panic into an error so the job is retried or
// failed like any other error instead of being left processing.
func safely(ctx context.Context, h Handler, run *Run) (c Commit, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("jobs: handler of %s panicked: %v\n%s", run.Type, p, debug.Stack())
		}
	}()
	return h(ctx, run)
}

func safeCommit(ctx context.Context, tx pgx.Tx, c Commit) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("jobs: commit panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return c(ctx, tx)
}

// complete commits the handler's effects and the completion together.
func (r *Runner) complete(ctx context.Context, s *tenant.Scope, rj *river.Job[Args], commit Commit) error {
	return s.Tx(ctx, func(tx pgx.Tx) error {
		j, err := lock(ctx, tx, rj.Args.JobID)
		if err != nil {
			return err
		}
		if Final(j.Status) {
			return completeRiver(ctx, tx, rj) // another attempt finished it
		}
		if j.CancelRequested {
			return r.cancelled(ctx, tx, s, j, rj)
		}
		var result any = map[string]any{}
		if commit != nil {
			if result, err = safeCommit(ctx, tx, commit); err != nil {
				return err
			}
		}
		if j.Result, err = json.Marshal(result); err != nil {
			return err
		}
		events := completeSteps(j)
		j.Status, j.Progress, j.Message, j.Error = StatusCompleted, 100, "Completed", nil
		events = append(events, newEvent(EventProgress, progressData{Progress: 100, Message: j.Message}), event{Kind: EventDone})
		if err := save(ctx, tx, j, events...); err != nil {
			return err
		}
		return r.finish(ctx, tx, j, rj)
	})
}

// settle records a handler's error: cancelled when cancellation was asked,
// failed for a permanent error or the last attempt, and otherwise returns
// the error so River retries the job.
func (r *Runner) settle(ctx context.Context, s *tenant.Scope, rj *river.Job[Args], herr error) error {
	remote := errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely)
	shutdown := ctx.Err() != nil && !remote && !errors.Is(ctx.Err(), context.DeadlineExceeded)
	body, permanent := classify(ctx, herr)
	if shutdown {
		return herr // the process is stopping: run again later
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	retry := false
	err := s.Tx(dctx, func(tx pgx.Tx) error {
		j, err := lock(dctx, tx, rj.Args.JobID)
		if err != nil {
			return err
		}
		switch {
		case Final(j.Status):
			return completeRiver(dctx, tx, rj)
		case remote || j.CancelRequested || errors.Is(herr, ErrCancelled):
			return r.cancelled(dctx, tx, s, j, rj)
		case permanent || rj.Attempt >= rj.MaxAttempts:
			return r.failed(dctx, tx, s, j, rj, body)
		}
		retry = true
		j.Message = fmt.Sprintf("Retrying after an error (attempt %d of %d)", rj.Attempt, rj.MaxAttempts)
		return save(dctx, tx, j, newEvent(EventProgress, progressData{Progress: j.Progress, Message: j.Message}))
	})
	if err != nil {
		return errors.Join(herr, err)
	}
	if retry {
		r.logger.WarnContext(ctx, "job attempt failed; River retries it", "job", rj.Args.JobID, "type", rj.Args.Type, "attempt", rj.Attempt, "err", herr)
		return herr
	}
	switch {
	case remote || errors.Is(herr, ErrCancelled):
	case permanent:
		r.logger.WarnContext(ctx, "job failed", "job", rj.Args.JobID, "type", rj.Args.Type, "code", body.Code, "err", herr)
	default:
		r.logger.ErrorContext(ctx, "job failed", "job", rj.Args.JobID, "type", rj.Args.Type, "err", herr)
	}
	return nil
}

// classify maps a handler error to the job's error and whether it is
// permanent (no retry).
func classify(ctx context.Context, err error) (ErrorBody, bool) {
	var je *Error
	switch {
	case errors.As(err, &je):
		return ErrorBody{Code: je.Code, Message: je.Message}, true
	case errors.Is(err, ai.ErrUpstream):
		msg := "the AI provider failed"
		var ue *ai.UpstreamError
		if errors.As(err, &ue) {
			msg = ue.Public()
		}
		return ErrorBody{Code: CodeUpstreamUnavailable, Message: msg}, true
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ErrorBody{Code: CodeTimeout, Message: "the job ran longer than its time limit"}, true
	}
	if ae := httpapi.AsError(err); ae.Status < 500 {
		return ErrorBody{Code: ae.Code, Message: ae.Detail}, true
	}
	return ErrorBody{Code: CodeInternal, Message: "the job failed on an internal error"}, false
}

// failed ends j failed with body, refunding its charge.
func (r *Runner) failed(ctx context.Context, tx pgx.Tx, s *tenant.Scope, j *row, rj *river.Job[Args], body ErrorBody) error {
	if err := credits.Refund(ctx, tx, s, j.ID); err != nil {
		return err
	}
	j.Status, j.Error, j.Message, j.Result = StatusFailed, &body, body.Message, nil
	for i := range j.Steps {
		j.Steps[i].Active = false
	}
	if err := save(ctx, tx, j, newEvent(EventError, body), event{Kind: EventDone}); err != nil {
		return err
	}
	return r.finish(ctx, tx, j, rj)
}

// cancelled ends j cancelled, refunding its charge.
func (r *Runner) cancelled(ctx context.Context, tx pgx.Tx, s *tenant.Scope, j *row, rj *river.Job[Args]) error {
	if err := cancelRow(ctx, tx, s, j); err != nil {
		return err
	}
	return r.finish(ctx, tx, j, rj)
}

// cancelRow marks j cancelled and refunds it.
func cancelRow(ctx context.Context, tx pgx.Tx, s *tenant.Scope, j *row) error {
	if err := credits.Refund(ctx, tx, s, j.ID); err != nil {
		return err
	}
	j.Status, j.Message, j.CancelRequested = StatusCancelled, "Cancelled", true
	for i := range j.Steps {
		j.Steps[i].Active = false
	}
	return save(ctx, tx, j, event{Kind: EventDone})
}

// finish completes the River job in tx and frees j's slot for the next
// waiting job of the project.
func (r *Runner) finish(ctx context.Context, tx pgx.Tx, j *row, rj *river.Job[Args]) error {
	if err := completeRiver(ctx, tx, rj); err != nil {
		return err
	}
	if !j.Admitted {
		return nil
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return err
	}
	return promote(ctx, tx, client)
}

func completeRiver(ctx context.Context, tx pgx.Tx, rj *river.Job[Args]) error {
	_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, rj)
	return err
}
