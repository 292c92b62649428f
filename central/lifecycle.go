package central

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
)

// This file is the life of a project after its creation (issue 26):
// suspension by a platform admin, resumption, and deletion.

// The statuses of a project.
const (
	StatusActive    = "active"
	StatusSuspended = "suspended"
	StatusDeleting  = "deleting"
)

// SuspendedSnooze is how long a job of a suspended project waits before
// its worker looks again. ResumeProject wakes the waiting jobs at once,
// so this only bounds the wait when a wake-up is missed.
const SuspendedSnooze = time.Minute

// Lifecycle is what suspension and deletion need besides the database:
// the River client (the drop job; waking suspended jobs), the media
// store, and the grace period before a deleted project's data is dropped.
type Lifecycle struct {
	Queue *queue.Client
	Media storage.Store
	Grace time.Duration
	// MoveGrace is how long a moved project's source schema is kept
	// (PLINTH_MOVE_GRACE); MoveMaxPause the longest a move may hold its
	// project's writes (PLINTH_MOVE_MAX_PAUSE).
	MoveGrace    time.Duration
	MoveMaxPause time.Duration
	// MoveCopyRows: a project of at most this many rows moves by a fenced
	// copy (PLINTH_MOVE_COPY_ROWS; 0: always replication).
	MoveCopyRows int64
	// MoveCopyRate paces a replication move's copy, in bytes a second
	// (PLINTH_MOVE_COPY_RATE; 0: unpaced).
	MoveCopyRate int64
}

// OpenLifecycle builds the Lifecycle of a process that works no jobs
// (the CLI): an insert-only River client and the configured media store.
func OpenLifecycle(cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) (Lifecycle, error) {
	q, err := queue.New(pool, river.NewWorkers(), queue.Options{Logger: logger})
	if err != nil {
		return Lifecycle{}, err
	}
	media, err := storage.Open(cfg.Storage, cfg.Getenv)
	if err != nil {
		return Lifecycle{}, err
	}
	return Lifecycle{Queue: q, Media: storage.ProjectMedia(media), Grace: cfg.DeleteGrace,
		MoveGrace: cfg.MoveGrace, MoveMaxPause: cfg.MoveMaxPause, MoveCopyRows: cfg.MoveCopyRows, MoveCopyRate: cfg.MoveCopyRate}, nil
}

// SetLifecycle gives c what suspension and deletion need; NewServer and
// the CLI's admin commands call it.
func (c *Central) SetLifecycle(l Lifecycle) { c.life = l }

// usable refuses the key of a project that is not active: a suspended
// project's keys are 403 "project suspended"; a deleting project's keys
// were revoked with it.
func usable(p *tenant.Project) error {
	switch p.Status {
	case StatusSuspended:
		return httpapi.Fail(httpapi.ErrForbidden, "project suspended")
	case StatusDeleting:
		return httpapi.Unauthorized("the API key has been revoked")
	}
	return nil
}

// SuspendProject suspends a project: its keys answer 403, its public
// surface 404, and its jobs and webhook deliveries wait (JobGate) until
// ResumeProject. It takes effect on every instance at once (the project's
// cached keys are invalidated, like a revocation). Suspending a
// suspended project changes only the reason.
func (c *Central) SuspendProject(ctx context.Context, projectID, reason string) (*tenant.Project, error) {
	if len(reason) > 500 {
		return nil, httpapi.Invalid("reason", "must be at most 500 characters")
	}
	if err := c.setStatus(ctx, projectID, StatusSuspended, reason); err != nil {
		return nil, err
	}
	return c.Project(ctx, projectID)
}

// ResumeProject makes a suspended project active again and wakes the jobs
// that waited for it; resuming an active project is a no-op.
func (c *Central) ResumeProject(ctx context.Context, projectID string) (*tenant.Project, error) {
	if err := c.setStatus(ctx, projectID, StatusActive, ""); err != nil {
		return nil, err
	}
	if err := c.wakeJobs(ctx, projectID); err != nil {
		// The jobs still run after their snooze: late, never lost.
		c.logger.WarnContext(ctx, "resume: waking the project's jobs failed; they run after their snooze", "project", projectID, "err", err)
	}
	return c.Project(ctx, projectID)
}

// setStatus moves a project between active and suspended (a deleting
// project is 409) and invalidates its cached copies everywhere.
func (c *Central) setStatus(ctx context.Context, projectID, status, reason string) error {
	ok, err := setProjectStatus(ctx, c.pool, projectID, status, reason)
	if err != nil {
		return err
	}
	if !ok {
		p, err := c.Project(ctx, projectID)
		if err != nil {
			return err
		}
		return httpapi.Conflict(httpapi.CodeConflict, "project "+p.ID+" is being deleted")
	}
	c.notify(ctx, "project:"+projectID)
	return nil
}

// wakeJobs makes the project's snoozed jobs available now (on its shard).
func (c *Central) wakeJobs(ctx context.Context, projectID string) error {
	if c.life.Queue == nil {
		return nil
	}
	p, err := c.Project(ctx, projectID)
	if err != nil {
		return err
	}
	q, err := c.shardQueue(p.Shard)
	if err != nil {
		return err
	}
	for {
		res, err := q.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateScheduled).First(1000).
			Where(snoozedJobsWhere, river.NamedArgs{"project": projectID}))
		if err != nil {
			return err
		}
		for _, j := range res.Jobs {
			if _, err := q.JobRetry(ctx, j.ID); err != nil && !errors.Is(err, river.ErrNotFound) {
				return err
			}
		}
		if len(res.Jobs) < 1000 {
			return nil
		}
	}
}

// JobGate is the River middleware that binds a project job's project,
// once, before its worker runs: the scope goes on the job's context, where
// the worker reads it (tenant.JobScope) instead of resolving the project
// again. The args name the project by tenant.JobProject's fields; a test
// job (test: true) gets the test scope of its key_id. A suspended
// project's jobs (webhook deliveries included) snooze, which costs no
// attempt, until ResumeProject wakes them, so none is lost. A deleting
// project's jobs are cancelled: its data is about to go; so are the jobs
// of a project that is gone. Jobs without a project_id (platform jobs:
// the drop) pass through untouched.
//
// The gate of the River client of shard works there (JobGateOn): a job of
// a project that has moved to another shard since (one that was running
// when the move carried the project's waiting jobs over, then failed) is
// carried over too, due at once with its attempts, and cancelled here.
func (c *Central) JobGate() rivertype.Middleware { return c.JobGateOn("") }

// JobGateOn is JobGate for the River client of shard ("": any).
func (c *Central) JobGateOn(shard string) rivertype.Middleware {
	return river.WorkerMiddlewareFunc(func(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
		var a tenant.JobProject
		if json.Unmarshal(job.EncodedArgs, &a) != nil || a.ProjectID == "" {
			return doInner(ctx)
		}
		s, err := c.ScopeFor(ctx, a.ProjectID)
		if errors.Is(err, httpapi.ErrNotFound) {
			return river.JobCancel(fmt.Errorf("project %s no longer exists", a.ProjectID))
		}
		if err != nil {
			return err // River tries again with its backoff
		}
		if shard != "" && s.Project.Shard != shard {
			pool, err := c.ShardPool(s.Project.Shard)
			if err != nil {
				return err
			}
			if err := carryJob(ctx, pool, job); err != nil {
				return err
			}
			return river.JobCancel(fmt.Errorf("project %s has moved to shard %s: the job goes on there", a.ProjectID, s.Project.Shard))
		}
		switch s.Project.Status {
		case StatusSuspended:
			return river.JobSnooze(SuspendedSnooze)
		case StatusDeleting:
			return river.JobCancel(fmt.Errorf("project %s is being deleted", a.ProjectID))
		}
		if s, err = a.Bind(s); err != nil {
			return err
		}
		return doInner(tenant.WithJobScope(ctx, s))
	})
}

// DropArgs is the job that drops a deleted project's data for good.
type DropArgs struct {
	// DeletedProject names the project; not project_id, which JobGate
	// reads and the drop deletes by.
	DeletedProject string `json:"deleted_project"`
	Shard          string `json:"shard"`
	Schema         string `json:"schema"`
	// ExportID is the export asked for with the delete: the drop waits
	// until it has completed.
	ExportID string `json:"export_id,omitempty"`
}

// Kind is the job kind.
func (DropArgs) Kind() string { return "project_drop" }

// DeleteOptions are the choices of a delete.
type DeleteOptions struct {
	// Now drops the data at once instead of after the grace period.
	Now bool
	// Export writes the project's archive to the archive store first (an
	// export like POST /admin/api/projects/{id}/exports): the drop waits
	// for it, and it outlives the project.
	Export bool
}

// Deletion is what DeleteProject did: the project, now deleting, and the
// export it started when asked.
type Deletion struct {
	Project *tenant.Project
	Export  *ExportJSON
}

// DeleteProject deletes a project: it revokes every key at once, marks
// it deleting (public surface 404, jobs cancelled), starts its export
// when asked, renames its schema out of the way and schedules the job
// that drops everything after the grace period (o.Now: at once), all in
// one transaction.
func (c *Central) DeleteProject(ctx context.Context, projectID string, o DeleteOptions) (Deletion, error) {
	if c.life.Queue == nil {
		return Deletion{}, errors.New("central: DeleteProject without a queue (SetLifecycle)")
	}
	p, err := c.Project(ctx, projectID)
	if err != nil {
		return Deletion{}, err
	}
	shard, err := c.ShardPool(p.Shard)
	if err != nil {
		return Deletion{}, err
	}
	at := time.Now().Add(c.life.Grace)
	if o.Now {
		at = time.Now()
	}
	var d Deletion
	renamed := false // on another shard than the central database
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		status, err := lockProjectStatus(ctx, tx, projectID)
		if err != nil {
			return err
		}
		if status == StatusDeleting {
			return httpapi.Conflict(httpapi.CodeConflict, "project "+projectID+" is already being deleted")
		}
		// A move copies the schema the deletion drops: one or the other.
		if mv, err := moveUnderWay(ctx, tx, projectID); err != nil || mv != "" {
			if err == nil {
				err = httpapi.Conflict(httpapi.CodeConflict, "project "+projectID+" is moving to another shard (move "+mv+"): cancel the move (POST /admin/api/moves/"+mv+"/cancel) or wait for it to end, then delete")
			}
			return err
		}
		if err := markDeleting(ctx, tx, projectID); err != nil {
			return err
		}
		args := DropArgs{DeletedProject: projectID, Shard: p.Shard, Schema: p.Schema}
		if o.Export {
			e, err := insertExport(ctx, tx, c.life.Queue, projectID)
			if err != nil {
				return err
			}
			d.Export, args.ExportID = &e, e.ID
		}
		// The schema leaves the project_N names, which every walk of the
		// placements and the spare pool use: nothing migrates or claims it.
		// An export reads it under its new name (exportPlane).
		if shard == c.pool {
			if err := renameSchema(ctx, tx, p.Schema, deletedSchema(p.Schema)); err != nil {
				return err
			}
		}
		if _, err := c.life.Queue.InsertTx(ctx, tx, args, &river.InsertOpts{ScheduledAt: at, MaxAttempts: 25}); err != nil {
			return err
		}
		if shard == c.pool {
			return nil
		}
		// On another shard the rename is the last step before the
		// commit, under the project row's lock: when it fails nothing is
		// written; when the commit fails after it, it is undone below.
		err = pgx.BeginFunc(ctx, shard, func(stx pgx.Tx) error { return renameSchema(ctx, stx, p.Schema, deletedSchema(p.Schema)) })
		renamed = err == nil
		return err
	})
	if err != nil {
		if renamed {
			if uerr := pgx.BeginFunc(context.WithoutCancel(ctx), shard, func(stx pgx.Tx) error {
				return renameSchema(ctx, stx, deletedSchema(p.Schema), p.Schema)
			}); uerr != nil {
				c.logger.ErrorContext(ctx, "delete: the commit failed after the schema was renamed on its shard, and renaming it back failed too",
					"project", projectID, "shard", p.Shard, "schema", p.Schema, "err", uerr)
			}
		}
		return Deletion{}, err
	}
	c.notify(ctx, "project:"+projectID)
	d.Project, err = c.Project(ctx, projectID)
	return d, err
}

// deletedSchema is the name a deleted project's schema waits under.
func deletedSchema(schema string) string { return provisioning.DeletedPrefix + schema }

// exportWait is how long a drop waits before it looks again at the
// export it waits for.
const exportWait = 5 * time.Second

// DropWorker drops a deleted project: its River jobs, its schema, its
// media, then its rows in the control plane (placement, keys, payment
// accounts go with the project row). Each step can run again. A drop
// whose delete asked for an export waits for it to complete; if it
// failed, the drop fails too and River tries again with its backoff
// until an export of the project started since has completed: data an
// admin asked to keep is never dropped unexported.
type DropWorker struct {
	river.WorkerDefaults[DropArgs]
	Central *Central
}

// Work drops the project of the job.
func (w *DropWorker) Work(ctx context.Context, job *river.Job[DropArgs]) error {
	c, a := w.Central, job.Args
	if a.ExportID != "" {
		// The export asked for, or one started after it (the way to try
		// again when it failed).
		completed, waiting, err := exportsSince(ctx, c.pool, a.DeletedProject, a.ExportID)
		if err != nil {
			return err
		}
		switch {
		case completed:
		case waiting:
			return river.JobSnooze(exportWait)
		default:
			return fmt.Errorf("export %s of deleted project %s failed: its data is kept until an export completes (POST /admin/api/projects/%s/exports)",
				a.ExportID, a.DeletedProject, a.DeletedProject)
		}
	}
	// Its jobs first: none may run against a schema that is gone. A job
	// that is running (JobDeleteMany leaves those) is waited for.
	q, err := c.shardQueue(a.Shard)
	if err != nil {
		return err
	}
	shard, err := c.ShardPool(a.Shard)
	if err != nil {
		return err
	}
	for {
		res, err := q.JobDeleteMany(ctx, river.NewJobDeleteManyParams().First(1000).
			Where(projectJobsWhere, river.NamedArgs{"project": a.DeletedProject}))
		if err != nil {
			return err
		}
		if len(res.Jobs) < 1000 {
			break
		}
	}
	running, err := countProjectJobs(ctx, shard, a.DeletedProject)
	if err != nil {
		return err
	}
	if running > 0 {
		return river.JobSnooze(10 * time.Second)
	}
	if err := dropSchema(ctx, shard, deletedSchema(a.Schema)); err != nil {
		return err
	}
	if c.life.Media != nil {
		if err := c.life.Media.DeletePrefix(ctx, a.DeletedProject); err != nil {
			return fmt.Errorf("delete media of %s: %w", a.DeletedProject, err)
		}
	}
	if err := deleteDeletedProject(ctx, c.pool, a.DeletedProject); err != nil {
		return err
	}
	c.notify(ctx, "project:"+a.DeletedProject)
	return nil
}
