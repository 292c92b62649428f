// Package jobs is the Job resource and the framework every pillar's long
// work runs on: one Submit for all pillars, a River worker that runs each
// job type's handler in the project's scope, progress over SSE through
// Postgres LISTEN/NOTIFY, cancellation, refunds and per-project fairness.
//
// # States and transitions
//
//	pending    → processing  a worker starts the job
//	pending    → cancelled   POST /jobs/{id}/cancel (refund)
//	processing → processing  a retry after a transient error or a lost worker
//	processing → completed   the handler's result is committed
//	processing → failed      a permanent error (upstream_unavailable, …) or
//	                         attempts exhausted (refund)
//	processing → cancelled   cancel requested, seen by the worker (refund)
//
// completed, failed and cancelled are final. A pending job can also end
// failed or cancelled when its worker finds it cannot run (unknown type,
// cancel requested before it started). Cancelling a finished job is 409.
//
// # Exactly once in effect
//
// The charge is made once, at submit, in the caller's transaction, with the
// job id as its ledger reference. A handler does its slow work outside any
// transaction and returns a Commit that writes its effects; the worker runs
// it in the same transaction that marks the job completed and completes
// the River job (JobCompleteTx). A worker killed mid-job leaves nothing
// half-written: the job runs again (see queue.Liveness) and its effects are
// committed once. A refund (credits.Refund by reference) happens in the
// transaction that makes the job failed or cancelled.
package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// Job statuses.
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Error codes a job can end with, besides the API's own codes.
const (
	CodeUpstreamUnavailable = "upstream_unavailable"
	CodeInternal            = "internal_error"
	CodeTimeout             = "timeout"
	CodeInvalid             = "validation_failed"
)

// MaxActivePerProject is how many of a project's jobs may be queued for
// workers or running at once; later ones wait as River "pending" jobs and
// are admitted, oldest first, as earlier ones finish. A project with
// thousands of queued jobs therefore never stands in front of another
// project's job for more than this many places per busy project.
const MaxActivePerProject = 8

// MaxAttempts is how many times a job is tried on transient errors.
const MaxAttempts = 5

// Job is the API resource.
type Job struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	Progress  int             `json:"progress"`
	Message   string          `json:"message"`
	Steps     []Step          `json:"steps"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *ErrorBody      `json:"error,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Step is one named stage of a job.
type Step struct {
	Name      string `json:"name"`
	Completed bool   `json:"completed"`
	Active    bool   `json:"active"`
}

// ErrorBody is a failed job's error, and the data of an SSE error event.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Final reports whether status ends the job.
func Final(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// Spec describes a job to submit.
type Spec struct {
	// Type is the job type, e.g. image.generate; a handler must be
	// registered for it on the workers.
	Type string
	// Args are the handler's arguments, marshalled to JSON.
	Args any
	// Charges are made now, each one ledger entry under its op with the
	// job id as reference, and refunded if the job fails or is cancelled.
	Charges []Charge
	// Steps names the job's stages, in order (may be empty).
	Steps []string
	// WriteScope is the scope that may cancel the job besides jobs:read;
	// by default the pillar write scope of Type (see WriteScopeOf).
	WriteScope string
	// Handler names the registered handler that runs the job when it is
	// not Type's own: several routes submit the contract's one job type
	// translation.batch (of content keys, of a blog post), each with its
	// own handler. Empty: the handler of Type.
	Handler string
}

// Charge is one debit of a submit: cost in hundredths of a credit under
// op (credits' op names: image, translate_language, blog_post, …).
type Charge struct {
	Op   string
	Cost int64
}

// Args are the River job's arguments: the project and the job, plus the
// handler's own arguments.
type Args struct {
	ProjectID string          `json:"project_id"`
	JobID     string          `json:"job_id"`
	Type      string          `json:"type"`
	Handler   string          `json:"handler,omitempty"`
	KeyID     string          `json:"key_id,omitempty"`
	Test      bool            `json:"test,omitempty"`
	Payload   json.RawMessage `json:"payload"`
}

// handlerName is the registered handler that runs the job.
func (a Args) handlerName() string {
	if a.Handler != "" {
		return a.Handler
	}
	return a.Type
}

// Kind is the River kind of every Plinth job.
func (Args) Kind() string { return "plinth.job" }

// WriteScopeOf is the pillar write scope of a job type: what a key needs,
// besides jobs:read, to cancel the job.
func WriteScopeOf(jobType string) string {
	switch prefix, _, _ := strings.Cut(jobType, "."); prefix {
	case "blog_post":
		return "blog:write"
	case "social_post":
		return "social:write"
	case "image":
		return "images:write"
	default: // translation, content_plan, website and others act on content
		return "content:write"
	}
}

// Submit enqueues a job in the caller's transaction: it makes spec's
// charges (402 when the balance is short), inserts the Job row (pending) and the
// River job (InsertTx), all committed or rolled back with tx. The caller
// answers 202 with the returned Job. Submit takes the project's admission
// lock until tx ends, so call it last in the transaction.
func Submit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, client *queue.Client, spec Spec) (Job, error) {
	if spec.Type == "" {
		return Job{}, fmt.Errorf("jobs: submit without a type")
	}
	payload, err := json.Marshal(spec.Args)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: args of %s: %w", spec.Type, err)
	}
	jobID := id.New("job_")
	if err := charge(ctx, tx, s, spec.Charges, jobID); err != nil {
		return Job{}, err
	}
	admitted, err := admit(ctx, tx)
	if err != nil {
		return Job{}, err
	}
	args := Args{ProjectID: s.Project.ID, JobID: jobID, Type: spec.Type, Handler: spec.Handler, Payload: payload}
	if s.Key != nil {
		args.KeyID, args.Test = s.Key.ID, s.Key.Test
	}
	res, err := client.InsertTx(ctx, tx, args, &river.InsertOpts{MaxAttempts: MaxAttempts, Pending: !admitted})
	if err != nil {
		return Job{}, fmt.Errorf("jobs: enqueue: %w", err)
	}
	steps := make([]Step, len(spec.Steps))
	for i, n := range spec.Steps {
		steps[i] = Step{Name: n}
	}
	scope := spec.WriteScope
	if scope == "" {
		scope = WriteScopeOf(spec.Type)
	}
	r := &row{Job: Job{ID: jobID, Type: spec.Type, Status: StatusPending, Message: "Queued", Steps: steps},
		WriteScope: scope, Admitted: admitted, RiverID: res.Job.ID}
	if err := insert(ctx, tx, r); err != nil {
		return Job{}, err
	}
	return r.Job, nil
}

// charge makes every charge of a submit, or none: with several charges the
// balance is checked against their total first, so a 402 states the cost
// of the whole operation.
func charge(ctx context.Context, tx pgx.Tx, s *tenant.Scope, charges []Charge, ref string) error {
	if len(charges) > 1 {
		var total int64
		for _, c := range charges {
			total += c.Cost
		}
		bal, err := credits.Balance(ctx, tx, s)
		if err != nil {
			return err
		}
		if total > bal {
			return credits.Insufficient(fmt.Sprintf("this operation costs %s credits and the balance is %s",
				wholeCredits(total), wholeCredits(bal)), total, bal)
		}
	}
	for _, c := range charges {
		if err := credits.Charge(ctx, tx, s, c.Op, c.Cost, ref); err != nil {
			return err
		}
	}
	return nil
}

func wholeCredits(h int64) string {
	if h%credits.Unit == 0 {
		return fmt.Sprint(h / credits.Unit)
	}
	return fmt.Sprintf("%.2f", float64(h)/float64(credits.Unit))
}

// admit decides, under the project's admission lock, whether a new job
// may be queued for workers now.
func admit(ctx context.Context, tx pgx.Tx) (bool, error) {
	if err := lockAdmission(ctx, tx); err != nil {
		return false, err
	}
	n, err := activeCount(ctx, tx)
	return n < MaxActivePerProject, err
}

// promote admits the oldest waiting jobs while the project has free
// slots; it runs in the transaction that ends a job (under the admission
// lock, so a concurrent submit cannot slip past unseen).
func promote(ctx context.Context, tx pgx.Tx, client *queue.Client) error {
	if err := lockAdmission(ctx, tx); err != nil {
		return err
	}
	waiting, err := admissible(ctx, tx)
	if err != nil || len(waiting) == 0 {
		return err
	}
	for _, w := range waiting {
		if _, err := client.JobRetryTx(ctx, tx, w.riverID); err != nil {
			return fmt.Errorf("jobs: admit %s: %w", w.id, err)
		}
		if err := setAdmitted(ctx, tx, w.id); err != nil {
			return err
		}
	}
	return queue.NotifyInsertTx(ctx, tx, river.QueueDefault)
}
