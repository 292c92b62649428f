package central

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"golang.org/x/time/rate"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/provisioning"
)

// Moving a project to another shard online (issue 35; docs/operations.md
// "Moving a project", docs/architecture.md "A move"), with PostgreSQL's
// own logical replication:
//
//  1. copying: the target schema is created at the project's migration
//     level (the source is migrated first) and emptied; a publication of
//     the schema's tables and a slot are created on the source, the rows
//     the slot's snapshot sees are copied, paced (snapshotCopy), and a
//     subscription on the target streams every change since, from the
//     slot.
//  2. catching_up: marks written on the source are waited for on the
//     target until one arrives within catchUpRoundTrip.
//  3. switching, the fence: one transaction on the source locks the
//     project's tables EXCLUSIVE (reads go on; writes wait, they are not
//     refused); a last mark is waited for on the target, so every write
//     committed before the fence is there; sequences are set; the
//     project's waiting River jobs go to the target's River with their
//     schedule and attempts; the source schema is renamed out of the way;
//     the placement flips in the central database; the fence transaction
//     commits. The writes that waited then find the schema gone, and their
//     scope finds the project's new shard and runs them there
//     (tenant.Scope.relocated); every instance drops its cached copies
//     (NOTIFY).
//  4. The subscription, its slot, the publication and the marks are
//     dropped; the renamed source schema is dropped by a job after
//     PLINTH_MOVE_GRACE.
//
// A move that fails or is cancelled before the flip leaves the project
// serving on the source and nothing on the target; a fence that would
// last past PLINTH_MOVE_MAX_PAUSE is lifted and the move fails.

// The phases of a move.
const (
	MoveQueued     = "queued"
	MoveCopying    = "copying"
	MoveCatchingUp = "catching_up"
	MoveSwitching  = "switching"
	MoveDone       = "done"
	MoveFailed     = "failed"
	MoveCancelled  = "cancelled"
)

// Move is a move of a project from one shard to another, as the admin API
// shows it.
type Move struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	From      string `json:"from_shard"`
	To        string `json:"to_shard"`
	Phase     string `json:"phase"`
	// Method is how the rows go over: MethodReplication or
	// MethodFencedCopy; nil until the move has chosen.
	Method *string `json:"method"`
	// DrainID is the drain that started the move, if one did.
	DrainID    *string    `json:"drain_id"`
	RowsCopied int64      `json:"rows_copied"`
	LagBytes   *int64     `json:"lag_bytes"`
	PauseMS    *int       `json:"pause_ms"`
	Error      *string    `json:"error"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// How a move copies its project's rows.
const (
	// MethodReplication: a publication and a subscription copy the rows
	// while the project serves, then stream its changes; the fence waits
	// only for the last of them.
	MethodReplication = "replication"
	// MethodFencedCopy: a small project's rows are copied under the fence
	// (Lifecycle.MoveCopyRows), which pauses it less than setting up a
	// subscription would take to catch up.
	MethodFencedCopy = "fenced_copy"
)

// MoveQueue is the River queue moves run on, in the process that works
// the central database's jobs: its MaxWorkers (PLINTH_MOVE_CONCURRENCY)
// bounds how many run at once there, a drain's included.
const MoveQueue = "moves"

// movePollFactor is how many of the other queues' fallback polls the move
// queue's is (10 s in production): see NewServer.
const movePollFactor = 10

// Ended reports whether the move is done, failed or cancelled.
func (m Move) Ended() bool {
	return m.Phase == MoveDone || m.Phase == MoveFailed || m.Phase == MoveCancelled
}

// MoveArgs is the job that runs a move (on the central database's River).
type MoveArgs struct {
	MoveID string `json:"move_id"`
}

// Kind is the job kind.
func (MoveArgs) Kind() string { return "project_move" }

// MovedDropArgs is the job that drops a moved project's source schema
// after the grace period.
type MovedDropArgs struct {
	Shard  string `json:"shard"`
	Schema string `json:"schema"`
}

// Kind is the job kind.
func (MovedDropArgs) Kind() string { return "moved_schema_drop" }

// movedSchema is the name a moved project's source schema waits under
// until it is dropped: out of the project_N names every walk uses.
func movedSchema(moveID string) string { return "moved_" + strings.ToLower(moveID) }

// moveName is the publication, subscription and slot name of a move
// (slot names take lower-case letters, digits and _ only).
func moveName(moveID string) string { return "plinth_move_" + strings.ToLower(moveID) }

var moveNameRe = regexp.MustCompile(`^plinth_move_[a-z0-9_]{1,50}$`)

// How a move paces itself.
const (
	movePoll         = 100 * time.Millisecond // copy and catch-up progress
	markPoll         = 2 * time.Millisecond   // a mark awaited under the fence
	catchUpRoundTrip = 150 * time.Millisecond // a mark back within this: caught up
	catchUpMax       = 10 * time.Minute       // catch-up that never gets there fails
	fenceLockWait    = 200 * time.Millisecond // one try at the fence's lock
	fenceLockTries   = 50
)

// StartMove queues a move of project projectID to shard to and returns
// it: the target must be an active shard that answers with
// wal_level=logical, as must the project's own; a project being deleted,
// already on to, or already moving is 409.
func (c *Central) StartMove(ctx context.Context, projectID, to string) (Move, error) {
	if c.life.Queue == nil {
		return Move{}, errors.New("central: StartMove without a queue (SetLifecycle)")
	}
	if to == "" {
		return Move{}, httpapi.Invalid("shard", "is required: the name of the shard to move the project to")
	}
	p, err := c.Project(ctx, projectID)
	if err != nil {
		return Move{}, err
	}
	if p.Status == StatusDeleting {
		return Move{}, httpapi.Conflict(httpapi.CodeConflict, "project "+projectID+" is being deleted")
	}
	if p.Shard == to {
		return Move{}, httpapi.Conflict(httpapi.CodeConflict, "project "+projectID+" is on shard "+to+" already")
	}
	target, err := c.GetShard(ctx, to)
	if errors.Is(err, httpapi.ErrNotFound) {
		return Move{}, httpapi.Invalid("shard", "no shard is named "+strconv.Quote(to)+" (plinth shard list)")
	}
	if err != nil {
		return Move{}, err
	}
	if err := moveTarget(target); err != nil {
		return Move{}, err
	}
	source, err := c.GetShard(ctx, p.Shard)
	if err != nil {
		return Move{}, err
	}
	if err := moveSource(source); err != nil {
		return Move{}, err
	}
	var m Move
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// Under the project's row lock, as DeleteProject takes it: a
		// deletion that began since the check above wins.
		status, err := lockProjectStatus(ctx, tx, projectID)
		if err != nil {
			return err
		}
		if status == StatusDeleting {
			return httpapi.Conflict(httpapi.CodeConflict, "project "+projectID+" is being deleted")
		}
		m, err = c.queueMove(ctx, tx, projectID, p.Shard, to, "")
		return err
	})
	return m, err
}

// moveTarget refuses a shard a project cannot move to: not active, not
// answering, or without logical replication.
func moveTarget(s Shard) error {
	switch {
	case s.State != ShardActive:
		return httpapi.Conflict(httpapi.CodeConflict, "shard "+s.Name+" is "+s.State+": a project moves only to an active shard")
	case !s.Reachable:
		return httpapi.Invalid("shard", "shard "+s.Name+" does not answer: "+s.Error)
	case s.WalLevel != "logical":
		return httpapi.Invalid("shard", "shard "+s.Name+" runs wal_level="+s.WalLevel+"; a move needs wal_level=logical on both servers")
	}
	return nil
}

// moveSource refuses a shard projects cannot move from.
func moveSource(s Shard) error {
	switch {
	case !s.Reachable:
		return httpapi.Conflict(httpapi.CodeConflict, "the project's shard "+s.Name+" does not answer: "+s.Error)
	case s.WalLevel != "logical":
		return httpapi.Conflict(httpapi.CodeConflict, "the project's shard "+s.Name+" runs wal_level="+s.WalLevel+"; a move needs wal_level=logical on both servers")
	}
	return nil
}

// queueMove records a move in tx and queues the job that runs it.
func (c *Central) queueMove(ctx context.Context, tx pgx.Tx, projectID, from, to, drainID string) (Move, error) {
	m, err := insertMove(ctx, tx, projectID, from, to, drainID)
	if err != nil {
		return m, err
	}
	_, err = c.life.Queue.InsertTx(ctx, tx, MoveArgs{MoveID: m.ID}, &river.InsertOpts{Queue: MoveQueue, MaxAttempts: 3})
	return m, err
}

// GetMove reads a move.
func (c *Central) GetMove(ctx context.Context, moveID string) (Move, error) {
	return getMove(ctx, c.pool, moveID)
}

// ProjectMoves lists a project's moves, newest first (the last 100).
func (c *Central) ProjectMoves(ctx context.Context, projectID string) ([]Move, error) {
	if _, err := c.Project(ctx, projectID); err != nil {
		return nil, err
	}
	return projectMoves(ctx, c.pool, projectID)
}

// CancelMove asks a move to stop; it ends cancelled, the project serving
// on its shard and nothing left on the target. A move switching or ended
// is 409.
func (c *Central) CancelMove(ctx context.Context, moveID string) (Move, error) {
	ok, err := requestMoveCancel(ctx, c.pool, moveID)
	if err != nil {
		return Move{}, err
	}
	m, err := c.GetMove(ctx, moveID)
	if err != nil {
		return Move{}, err
	}
	if !ok {
		return m, httpapi.Conflict(httpapi.CodeConflict, "move "+moveID+" is "+m.Phase+": only a move queued, copying or catching up can be cancelled")
	}
	return m, nil
}

// errMoveCancelled ends a move that was asked to cancel.
var errMoveCancelled = errors.New("the move was cancelled")

// MoveWorker runs moves (MoveArgs) in the process that works the central
// database's jobs.
type MoveWorker struct {
	river.WorkerDefaults[MoveArgs]
	Central *Central
}

// Timeout: a move runs as long as its copy takes.
func (w *MoveWorker) Timeout(*river.Job[MoveArgs]) time.Duration { return -1 }

// Work runs the move.
func (w *MoveWorker) Work(ctx context.Context, job *river.Job[MoveArgs]) error {
	err := w.Central.RunMove(ctx, job.Args.MoveID, nil)
	if errors.Is(err, errMoveBusy) {
		return river.JobSnooze(10 * time.Second)
	}
	return err
}

// MovedDropWorker drops a moved project's source schema.
type MovedDropWorker struct {
	river.WorkerDefaults[MovedDropArgs]
	Central *Central
}

// Work drops the schema.
func (w *MovedDropWorker) Work(ctx context.Context, job *river.Job[MovedDropArgs]) error {
	pool, err := w.Central.ShardPool(job.Args.Shard)
	if err != nil {
		return err
	}
	return dropSchema(ctx, pool, job.Args.Schema)
}

// errMoveBusy: another runner holds the move.
var errMoveBusy = errors.New("the move is being run by another process")

// RunMove runs move moveID to its end, calling progress (when not nil)
// with the move each time it changes phase. Only one process runs a move
// at a time (errMoveBusy otherwise). A move that ended is left as it is;
// one interrupted before its flip (a process that died) starts over; one
// interrupted after it is recorded done.
func (c *Central) RunMove(ctx context.Context, moveID string, progress func(Move)) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	ok, err := tryMoveLock(ctx, conn, moveID)
	if err != nil {
		return err
	}
	if !ok {
		return errMoveBusy
	}
	defer func() { _ = unlockMove(context.WithoutCancel(ctx), conn, moveID) }()
	m, err := c.GetMove(ctx, moveID)
	if err != nil || m.Ended() {
		return err
	}
	r := &moveRun{c: c, m: m, name: moveName(m.ID), progress: progress}
	if !moveNameRe.MatchString(r.name) {
		return fmt.Errorf("move %s: an id that makes no slot name", m.ID)
	}
	err = r.run(ctx)
	if err == nil {
		return nil
	}
	phase, msg := MoveFailed, err.Error()
	if errors.Is(err, errMoveCancelled) {
		phase, msg = MoveCancelled, ""
	}
	if ctx.Err() != nil {
		return err // the process stops: River runs the move again later
	}
	if r.flipped {
		c.logger.ErrorContext(ctx, "move: the project moved, but what followed failed", "move", m.ID, "err", err)
		return r.end(ctx, MoveDone, "")
	}
	if cerr := r.cleanup(context.WithoutCancel(ctx)); cerr != nil {
		msg += "; cleaning up failed too: " + cerr.Error()
		c.logger.ErrorContext(ctx, "move: cleaning up after a failed move", "move", m.ID, "err", cerr)
	}
	if eerr := r.end(context.WithoutCancel(ctx), phase, msg); eerr != nil {
		return eerr
	}
	c.logger.WarnContext(ctx, "move ended", "move", m.ID, "project", m.ProjectID, "phase", phase, "error", msg)
	return nil
}

// moveRun is one run of a move.
type moveRun struct {
	c        *Central
	m        Move
	name     string // publication, subscription, slot
	progress func(Move)

	schema   string
	method   string
	src, dst *pgxpool.Pool
	tables   []string
	marks    int
	jobs     []int64 // job ids inserted on the target before the flip
	flipped  bool
	pauseMS  *int
	copyRows int64
	copied   atomic.Int64 // rows through snapshotCopy so far
}

func (r *moveRun) phase(ctx context.Context, phase string) error {
	ok, err := setMovePhase(ctx, r.c.pool, r.m.ID, phase)
	if err != nil {
		return err
	}
	if !ok {
		return errMoveCancelled
	}
	r.m.Phase = phase
	r.report(ctx)
	return nil
}

func (r *moveRun) report(ctx context.Context) {
	if r.progress == nil {
		return
	}
	if m, err := r.c.GetMove(ctx, r.m.ID); err == nil {
		r.progress(m)
	}
}

func (r *moveRun) end(ctx context.Context, phase, msg string) error {
	if err := endMove(ctx, r.c.pool, r.m.ID, phase, msg, r.pauseMS); err != nil {
		return err
	}
	r.m.Phase = phase
	r.report(ctx)
	return nil
}

// cancelled reports errMoveCancelled once the move was asked to stop.
func (r *moveRun) cancelled(ctx context.Context) error {
	cancel, err := moveCancelRequested(ctx, r.c.pool, r.m.ID)
	if err == nil && cancel {
		err = errMoveCancelled
	}
	return err
}

func (r *moveRun) run(ctx context.Context) error {
	c, m := r.c, r.m
	p, err := c.Project(ctx, m.ProjectID)
	if err != nil {
		return err
	}
	r.schema = p.Schema
	if p.Shard == m.To { // an earlier run flipped it, then stopped
		r.flipped = true
		return r.finish(ctx)
	}
	if p.Shard != m.From {
		return fmt.Errorf("the project is on shard %s, not %s", p.Shard, m.From)
	}
	if r.src, err = c.ShardPool(m.From); err != nil {
		return err
	}
	if r.dst, err = c.ShardPool(m.To); err != nil {
		return err
	}
	conninfo := shardConninfo(r.src.Config().ConnConfig)
	// What an earlier run of this move left.
	if err := r.cleanup(ctx); err != nil {
		return err
	}
	if err := r.phase(ctx, MoveCopying); err != nil {
		return err
	}
	if err := provisioning.MigrateProject(ctx, c.pool, r.src, r.schema); err != nil {
		return fmt.Errorf("migrate the source schema: %w", err)
	}
	if err := r.targetSchema(ctx); err != nil {
		return fmt.Errorf("create the target schema: %w", err)
	}
	if r.tables, err = projectTables(ctx, r.src, r.schema); err != nil {
		return err
	}
	if err := truncateTables(ctx, r.dst, r.schema, r.tables); err != nil {
		return err
	}
	if r.method, err = r.chooseMethod(ctx); err != nil {
		return err
	}
	if r.method == MethodFencedCopy {
		return r.switchOver(ctx)
	}
	if err := identifyFully(ctx, r.src, r.schema, r.tables); err != nil {
		return err
	}
	for _, pool := range []*pgxpool.Pool{r.src, r.dst} {
		if err := ensureMoveMarks(ctx, pool); err != nil {
			return err
		}
	}
	if err := createPublication(ctx, r.src, r.name, r.schema, r.tables, m.ID); err != nil {
		return err
	}
	if err := r.snapshotCopy(ctx); err != nil {
		return err
	}
	if err := createSubscription(ctx, r.dst, r.name, conninfo); err != nil {
		return err
	}
	if err := r.copy(ctx); err != nil {
		return err
	}
	if err := r.phase(ctx, MoveCatchingUp); err != nil {
		return err
	}
	if err := r.catchUp(ctx); err != nil {
		return err
	}
	return r.switchOver(ctx)
}

// targetSchema makes the project's schema on the target: a spare
// schema of the target renamed when one is ready (then refilled in the
// background, as after a project's creation), else a new one with every
// tenant migration. The source was migrated first, so both are at the
// same level.
func (r *moveRun) targetSchema(ctx context.Context) error {
	took, err := provisioning.TakeSpare(ctx, r.c.pool, r.dst, r.m.To, r.schema)
	if err != nil {
		return err
	}
	if took {
		r.c.kickSpares()
		return nil
	}
	return provisioning.ProvisionProject(ctx, r.c.pool, r.dst, r.schema)
}

// switchOver is the end of either method: the switch under the fence,
// then the finish.
func (r *moveRun) switchOver(ctx context.Context) error {
	if err := r.phase(ctx, MoveSwitching); err != nil {
		return err
	}
	if err := r.fence(ctx); err != nil {
		return err
	}
	return r.finish(ctx)
}

// fencedCopyMaxBytes: a project whose tables take more than this moves by
// replication, however few its rows.
const fencedCopyMaxBytes = 64 << 20

// chooseMethod picks how the move copies the project, and records it: a
// fenced copy when its tables hold at most Lifecycle.MoveCopyRows rows and
// fencedCopyMaxBytes, since copying that few under the fence pauses the
// project less than a subscription's catch-up and switch, and takes a
// fraction of the time; replication otherwise.
func (r *moveRun) chooseMethod(ctx context.Context) (string, error) {
	method := MethodReplication
	if limit := r.c.life.MoveCopyRows; limit > 0 {
		rows, bytes, err := projectSize(ctx, r.src, r.schema, r.tables, limit)
		if err != nil {
			return "", err
		}
		if rows <= limit && bytes <= fencedCopyMaxBytes {
			method = MethodFencedCopy
		}
	}
	return method, setMoveMethod(ctx, r.c.pool, r.m.ID, method)
}

// copyUnderFence copies every row of the project, in the fence's
// transaction tx on the source, into the target in one transaction of
// its own, by the deadline (the fence's longest pause).
func (r *moveRun) copyUnderFence(ctx context.Context, tx pgx.Tx, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	n, err := r.copyAll(ctx, tx, nil, nil)
	if errors.Is(err, context.DeadlineExceeded) || (err != nil && ctx.Err() != nil) {
		return fmt.Errorf("copying the project under the fence would hold its writes past PLINTH_MOVE_MAX_PAUSE: the fence was lifted, the project stays on %s", r.m.From)
	}
	if err != nil {
		return err
	}
	r.copyRows = n
	return setMoveProgress(ctx, r.c.pool, r.m.ID, n, nil)
}

// copyBurst is the most a paced copy reads at once (bytes).
const copyBurst = 64 << 10

// copyAll copies every row of the project that tx (on the source) sees
// into the target, in one transaction there: the tables that hold a row,
// parents first. It answers the rows copied.
func (r *moveRun) copyAll(ctx context.Context, tx pgx.Tx, lim *rate.Limiter, rows *atomic.Int64) (n int64, err error) {
	plan, err := copyPlan(ctx, tx, r.schema, r.tables)
	if err != nil {
		return 0, err
	}
	conn, err := r.dst.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	err = pgx.BeginFunc(ctx, conn, func(dtx pgx.Tx) error {
		for _, t := range plan {
			c, err := copyTable(ctx, tx.Conn().PgConn(), dtx.Conn().PgConn(), r.schema, t.Table, t.Columns, lim, rows)
			if err != nil {
				return err
			}
			n += c
		}
		return nil
	})
	return n, err
}

// snapshotCopy creates the move's slot on the source, with the snapshot
// of the point it streams from, and copies the project's rows as that
// snapshot sees them; the subscription then takes the slot as it is
// (copy_data = false) and streams what came after. This is how Citus
// moves a shard and pgcopydb clones a database: one slot, one COPY per
// table that holds a row, in one transaction on each side. PostgreSQL's
// own initial copy (copy_data = true) syncs every table on its own, each
// with a temporary slot, a snapshot and a WAL sender decoding on the
// source, a few tables at a time: 31 for a project, most of them empty.
// And a copy of our own can be paced (Lifecycle.MoveCopyRate): copied as
// fast as the servers go, it made the writes of the source's other
// projects 4 to 20 times slower at the 99th percentile while it ran
// (docs/performance.md).
func (r *moveRun) snapshotCopy(ctx context.Context) error {
	// A paced copy may take minutes: a cancel stops it within movePoll,
	// and the move shows the rows copied so far every second.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		for i := 1; sleep(ctx, movePoll) == nil; i++ {
			if err := r.cancelled(ctx); errors.Is(err, errMoveCancelled) {
				stop(err)
			}
			if i%10 == 0 {
				_ = setMoveProgress(ctx, r.c.pool, r.m.ID, r.copied.Load(), nil)
			}
		}
	}()
	err := r.copySnapshot(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, errMoveCancelled) {
		return cause
	}
	return err
}

// copySnapshot is snapshotCopy's work.
func (r *moveRun) copySnapshot(ctx context.Context) error {
	cfg := r.src.Config().ConnConfig.Config.Copy()
	cfg.RuntimeParams["replication"] = "database"
	rc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("a replication connection to shard %s: %w", r.m.From, err)
	}
	defer rc.Close(context.WithoutCancel(ctx))
	snapshot, err := createSlot(ctx, rc, r.name)
	if err != nil {
		return err
	}
	conn, err := r.src.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The exported snapshot lasts while rc stays idle: taken first,
		// then rc (a WAL sender on the source) is no longer needed.
		if err := useSnapshot(ctx, tx, snapshot); err != nil {
			return err
		}
		_ = rc.Close(ctx)
		var lim *rate.Limiter // paced: the source's other projects keep their latency
		if bps := r.c.life.MoveCopyRate; bps > 0 {
			lim = rate.NewLimiter(rate.Limit(bps), int(min(bps, copyBurst)))
		}
		r.copyRows, err = r.copyAll(ctx, tx, lim, &r.copied)
		return err // copy records it, with the slot's lag
	})
}

// copy waits until the subscription has taken every table (at once: its
// rows were copied in the slot's snapshot, so it copies none), then
// records the rows snapshotCopy copied and the slot's lag.
func (r *moveRun) copy(ctx context.Context) error {
	want := int64(len(r.tables) + 1) // and the marks
	for {
		if err := r.cancelled(ctx); err != nil {
			return err
		}
		ready, total, errs, err := subscriptionState(ctx, r.dst, r.name)
		if err != nil {
			return err
		}
		if errs > 0 {
			return fmt.Errorf("the subscription on shard %s met %d errors copying (see that server's log)", r.m.To, errs)
		}
		if total == want && ready == want {
			break
		}
		if err := sleep(ctx, movePoll); err != nil {
			return err
		}
	}
	lag, err := slotLag(ctx, r.src, r.name)
	if err != nil {
		return err
	}
	return setMoveProgress(ctx, r.c.pool, r.m.ID, r.copyRows, &lag)
}

// catchUp writes marks on the source until one reaches the target within
// catchUpRoundTrip.
func (r *moveRun) catchUp(ctx context.Context) error {
	start := time.Now()
	for time.Since(start) < catchUpMax {
		if err := r.cancelled(ctx); err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := r.mark(ctx, time.Minute); err != nil {
			return err
		}
		rtt := time.Since(t0)
		lag, err := slotLag(ctx, r.src, r.name)
		if err != nil {
			return err
		}
		if err := setMoveProgress(ctx, r.c.pool, r.m.ID, r.copyRows, &lag); err != nil {
			return err
		}
		if rtt < catchUpRoundTrip {
			return nil
		}
	}
	return fmt.Errorf("the target did not catch up within %s", catchUpMax)
}

// mark writes the next mark on the source and waits for it on the target
// for at most wait; arrived is false when it did not.
func (r *moveRun) mark(ctx context.Context, wait time.Duration) (arrived bool, err error) {
	r.marks++
	if err := insertMark(ctx, r.src, r.m.ID, r.marks); err != nil {
		return false, err
	}
	deadline := time.Now().Add(wait)
	for {
		seen, err := markSeen(ctx, r.dst, r.m.ID, r.marks)
		if err != nil || seen {
			return seen, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		if err := sleep(ctx, markPoll); err != nil {
			return false, err
		}
	}
}

// fence is the switch: see the package comment above. Its transaction on
// the source holds the lock that makes the project's writes wait.
func (r *moveRun) fence(ctx context.Context) error {
	c, m := r.c, r.m
	maxPause := c.life.MoveMaxPause
	if maxPause <= 0 {
		maxPause = 5 * time.Second
	}
	conn, err := r.src.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var tx pgx.Tx
	var fenced time.Time
	for try := 0; ; try++ {
		if tx, err = conn.Begin(ctx); err != nil {
			return err
		}
		fenced = time.Now()
		err = fenceTables(ctx, tx, r.schema, r.tables, fenceLockWait.Milliseconds())
		if err == nil {
			break
		}
		_ = tx.Rollback(ctx)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "55P03" && pe.Code != "40P01") || try == fenceLockTries {
			return fmt.Errorf("fence the project's writes: %w", err)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if r.method == MethodFencedCopy {
		if err := r.copyUnderFence(ctx, tx, fenced.Add(maxPause)); err != nil {
			return err
		}
	} else {
		// Every write committed before the lock is in the WAL before this mark.
		arrived, err := r.mark(ctx, maxPause-time.Since(fenced))
		if err != nil {
			return err
		}
		if !arrived {
			return fmt.Errorf("the last changes did not reach the target within PLINTH_MOVE_MAX_PAUSE (%s): the fence was lifted, the project stays on %s", maxPause, m.From)
		}
	}
	seqs, err := readSequences(ctx, tx, r.schema)
	if err != nil {
		return err
	}
	if err := writeSequences(ctx, r.dst, r.schema, seqs); err != nil {
		return err
	}
	ids, rows, err := lockProjectJobs(ctx, tx, m.ProjectID)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		if r.jobs, err = insertJobs(ctx, r.dst, rows); err != nil {
			return err
		}
		if err := deleteJobs(ctx, tx, ids); err != nil {
			return err
		}
	}
	if err := renameSchema(ctx, tx, r.schema, movedSchema(m.ID)); err != nil {
		return err
	}
	if time.Since(fenced) > maxPause {
		return fmt.Errorf("the switch would hold the project's writes past PLINTH_MOVE_MAX_PAUSE (%s): the fence was lifted, the project stays on %s", maxPause, m.From)
	}
	// The flip: from here the project is on the target.
	if err := pgx.BeginFunc(ctx, c.pool, func(ctl pgx.Tx) error {
		return flipPlacement(ctx, ctl, m.ProjectID, m.From, m.To)
	}); err != nil {
		return err
	}
	r.flipped = true
	err = tx.Commit(ctx)
	committed = true
	pause := int(time.Since(fenced).Milliseconds())
	r.pauseMS = &pause
	c.notify(ctx, "project:"+m.ProjectID)
	if err != nil {
		// The source schema keeps its name and the carried jobs are there
		// still: rename and delete them again (writes that came between
		// went to a schema the project no longer reads: logged).
		c.logger.ErrorContext(ctx, "move: the fence's commit failed after the flip; renaming the source schema again", "move", m.ID, "err", err)
		return pgx.BeginFunc(context.WithoutCancel(ctx), r.src, func(tx pgx.Tx) error {
			if err := deleteJobs(ctx, tx, ids); err != nil {
				return err
			}
			return renameSchema(ctx, tx, r.schema, movedSchema(m.ID))
		})
	}
	return nil
}

// finish drops what the move made on both shards, records it done and
// schedules the drop of the source schema.
func (r *moveRun) finish(ctx context.Context) error {
	c, m := r.c, r.m
	if r.src == nil {
		var err error
		if r.src, err = c.ShardPool(m.From); err != nil {
			return err
		}
		if r.dst, err = c.ShardPool(m.To); err != nil {
			return err
		}
	}
	if err := r.dropReplication(ctx); err != nil {
		c.logger.WarnContext(ctx, "move: dropping its replication", "move", m.ID, "err", err)
	}
	if r.tables == nil {
		r.tables, _ = projectTables(ctx, r.dst, r.schema)
	}
	if n, err := countRows(ctx, r.dst, r.schema, r.tables); err == nil {
		_ = setMoveProgress(ctx, c.pool, m.ID, n, nil)
	}
	grace := c.life.MoveGrace
	if _, err := c.life.Queue.Insert(ctx, MovedDropArgs{Shard: m.From, Schema: movedSchema(m.ID)},
		&river.InsertOpts{ScheduledAt: time.Now().Add(grace), MaxAttempts: 25}); err != nil {
		return err
	}
	c.logger.InfoContext(ctx, "moved", "move", m.ID, "project", m.ProjectID, "from", m.From, "to", m.To, "pause_ms", r.pauseMS)
	return r.end(ctx, MoveDone, "")
}

// dropReplication drops the subscription, its slot, the publication and
// the marks; each may be absent.
func (r *moveRun) dropReplication(ctx context.Context) error {
	if err := dropSubscription(ctx, r.dst, r.name); err != nil {
		return err
	}
	for try := 0; ; try++ {
		ok, err := dropSlot(ctx, r.src, r.name)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		if try == 100 {
			return fmt.Errorf("slot %s is still in use on shard %s", r.name, r.m.From)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	if err := dropPublication(ctx, r.src, r.name); err != nil {
		return err
	}
	if err := deleteMarks(ctx, r.src, r.m.ID); err != nil {
		return err
	}
	return deleteMarks(ctx, r.dst, r.m.ID)
}

// cleanup undoes what a move made before its flip: its replication, the
// jobs it carried, the target schema (only while the project is not
// placed there).
func (r *moveRun) cleanup(ctx context.Context) error {
	if r.src == nil || r.dst == nil {
		return nil
	}
	if err := r.dropReplication(ctx); err != nil {
		return err
	}
	if err := deleteJobs(ctx, r.dst, r.jobs); err != nil {
		return err
	}
	r.jobs = nil
	p, err := r.c.Project(ctx, r.m.ProjectID)
	if err != nil {
		return err
	}
	if p.Shard == r.m.To {
		return nil
	}
	return dropSchema(ctx, r.dst, r.schema)
}

// shardConninfo is the libpq connection string a target server's
// subscription reaches the source with: the keywords of cc (pgx's own
// settings left out), each value quoted.
func shardConninfo(cc *pgx.ConnConfig) string {
	q := func(v string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
	}
	parts := []string{"host=" + q(cc.Host), "port=" + strconv.Itoa(int(cc.Port)), "dbname=" + q(cc.Database), "user=" + q(cc.User)}
	if cc.Password != "" {
		parts = append(parts, "password="+q(cc.Password))
	}
	if cc.TLSConfig != nil {
		parts = append(parts, "sslmode=require")
	} else {
		parts = append(parts, "sslmode=disable")
	}
	return strings.Join(parts, " ")
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
