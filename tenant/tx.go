package tenant

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bindSQL binds a transaction to its project's schema (then public) until
// it ends: set_config(..., true) is SET LOCAL as a statement of the
// extended protocol, so it travels in a pipeline.
const bindSQL = "SELECT set_config('search_path', $1, true)"

// A Finisher is work a transaction keeps for its end (FinisherOf). The
// statements the finishers of a transaction queue travel in one batch,
// its last round trip before COMMIT; each Finish then acts on what its
// statements answered (a further round trip only when it must write more).
type Finisher interface {
	// Queue adds the finisher's statements to b.
	Queue(b *pgx.Batch)
	// Finish completes the work once b's results are read.
	Finish(ctx context.Context, tx pgx.Tx) error
}

// A Sealer is a Finisher that may say, before its statements are queued,
// that its Finish will write nothing more: its statements fail by
// themselves when the transaction must not commit (PostgreSQL has run
// the COMMIT after them by the time their answers are read, so a
// callback of theirs may translate a failure, never fail a success). When every finisher
// of a transaction is sealed, COMMIT travels in their batch, and Finish
// runs after it with a nil transaction.
type Sealer interface {
	Sealed() bool
}

// A Guarded finisher is a Sealer whose Sealed is a bet it cannot check
// before the transaction's end (that no webhook endpoint wants its
// events): Guard queues, before every finisher's statements (behind a
// savepoint), the statement that fails when the bet is lost, and Lost
// tells whether err is that failure, and makes the finisher unsealed. The
// transaction then goes back to the savepoint, finishes every finisher as
// unsealed ones finish (Queue and Finish in the transaction), and commits.
type Guarded interface {
	Finisher
	Sealer
	Guard(b *pgx.Batch)
	Lost(err error) bool
}

// Finish runs finishers in tx now: their statements in one batch, then
// each Finish in order. It is how work kept for the end runs in a
// transaction that is not Scope.Tx's (FinisherOf's kept false).
func Finish(ctx context.Context, tx pgx.Tx, fs ...Finisher) error {
	b := &pgx.Batch{}
	for _, f := range fs {
		f.Queue(b)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
	}
	for _, f := range fs {
		if err := f.Finish(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

// FinisherOf returns the finisher of type F that tx keeps for its end
// under key, making it with newF and registering it on first use, so that
// every caller's work of that kind in one transaction is done by one
// finisher (a write's charges, its events): its statements run as the
// last of the transaction, just before its commit hook and COMMIT (with
// COMMIT, when they are sealed). It is for work that takes a row lock
// many transactions contend for (the credit pool): taken last, the lock
// is held for the commit only, not for the whole transaction; and for
// work whose statements do not depend on the transaction's others (the
// webhook outbox), which then shares their round trip.
//
// A finisher is known by its key and its type: key tells apart finishers
// of one type (the outbox they record in), nil for one per type and
// transaction; F is a concrete type (a pointer to the finisher's struct).
// kept is false when tx is not a transaction of Scope.Tx (a job's own, a
// savepoint): f is then a new finisher, registered nowhere, that the
// caller runs at once (Finish) once it has added its work.
//
//	c, kept := tenant.FinisherOf(tx, nil, func() *charges { return &charges{s: s} })
//	c.add(op, cost)
//	if !kept {
//		return tenant.Finish(ctx, tx, c)
//	}
func FinisherOf[F Finisher](tx pgx.Tx, key any, newF func() F) (f F, kept bool) {
	t, ok := tx.(*lazyTx)
	if !ok {
		return newF(), false
	}
	for _, kf := range t.finishers {
		if kf.key == key {
			if f, ok := kf.v.(F); ok {
				return f, true
			}
		}
	}
	f = newF()
	t.finishers = append(t.finishers, keyedFinisher{key, f})
	return f, true
}

// ErrPending is what Later.Get answers before the value is there: its
// transaction has not committed, or nothing filled it.
var ErrPending = errors.New("tenant: a value filled at commit read before its transaction committed")

// A Later is an answer that a transaction's end fills: what statements
// kept for it (FinisherOf) read, such as a written row read back in the
// pipeline that commits it. Its Get answers ErrPending until the
// transaction of Scope.Tx it was made in (LaterIn) has committed and the
// finisher has filled it (Fill, from its Finish); a function returning
// one tells by its type that its answer is read after Scope.Tx returns:
//
//	keys, err := tenant.TxV(ctx, s, func(tx pgx.Tx) (*tenant.Later[[]ContentKey], error) {
//		return write(ctx, tx, s, items)
//	})
//	...
//	out, err := keys.Get()
//
// In a transaction that is not Scope.Tx's, whose finishers run at once
// (FinisherOf's kept false), and for a Later not made by LaterIn, Get
// answers once it is filled: the commit is then the caller's. A Later is
// kept where it was made (a field of its finisher) and read through a
// pointer, not copied; it is read after Scope.Tx returned, in the
// goroutine that called it or one that learned it returned.
type Later[T any] struct {
	tx     *lazyTx // the transaction it waits for; nil: none
	v      T
	filled bool
}

// LaterIn returns a Later of tx, for its finisher to fill.
func LaterIn[T any](tx pgx.Tx) Later[T] {
	t, _ := tx.(*lazyTx)
	return Later[T]{tx: t}
}

// Fill sets the value; a finisher calls it from its Finish, or from its
// statements' callbacks.
func (l *Later[T]) Fill(v T) {
	l.v, l.filled = v, true
}

// Get returns the value once its transaction committed, ErrPending before.
func (l *Later[T]) Get() (T, error) {
	if !l.filled || (l.tx != nil && !l.tx.committed) {
		var zero T
		return zero, ErrPending
	}
	return l.v, nil
}

// A CommitHook runs at the end of every Tx made with a context carrying
// it, just before the commit, so that what it writes commits with the
// transaction's effect or not at all. Idempotency records with it that a
// request's effect committed (docs/decisions.md section 6).
type CommitHook func(ctx context.Context, s *Scope, tx pgx.Tx) error

// WithCommitHook returns ctx carrying hook for the transactions made with it.
func WithCommitHook(ctx context.Context, hook CommitHook) context.Context {
	return context.WithValue(ctx, commitHookKey, hook)
}

// TxV runs fn as Tx does and returns its value: the read or write of one
// store function in its own transaction.
func TxV[T any](ctx context.Context, s *Scope, fn func(pgx.Tx) (T, error)) (T, error) {
	var v T
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		v, err = fn(tx)
		return err
	})
	return v, err
}

type commitHookKeyT struct{}

// commitHookKey carries a CommitHook (WithCommitHook).
var commitHookKey commitHookKeyT

// Tx runs fn in a transaction whose search_path is the project's schema
// (then public). It commits when fn returns nil and rolls back otherwise.
// The finishers fn registered (FinisherOf) run after fn, then the commit
// hook ctx carries (WithCommitHook), in the same transaction; an error of
// either rolls the transaction back.
//
// Round trips: BEGIN, the binding and the Prefetch ctx carries travel in
// the pipeline of fn's first statement (pgx's Batch.BeginTx), so they
// cost none of their own, and a transaction that sends nothing costs
// none. When every finisher is sealed and there is no commit hook, the
// finishers' statements and COMMIT travel in one pipeline too: the row
// the transaction locks last (the credit pool's, which every write of the
// project updates) is then held for that pipeline's work in PostgreSQL,
// not across a round trip to this process and back. A write whose
// statements are all kept for the end (a content value and its charge)
// is one round trip: BEGIN, the binding and the end's pipeline; and the
// prefetch is left out of it, as no finisher waits for its answer. The
// binding is SET LOCAL: it ends with the transaction, and the
// search_path a read may have left on the connection (see ConfigurePool)
// is what holds after it.
//
// When the project has moved to another shard while the transaction
// waited on the move's fence, its statements find the schema gone and
// nothing was written: Tx runs fn once more on the project's new shard
// (see Scope.relocated), so fn must be safe to run again, as any
// transaction's work that may be retried is.
func (s *Scope) Tx(ctx context.Context, fn func(pgx.Tx) error) error {
	used := s.Pool()
	committed, err := s.tx(ctx, used, fn)
	if err != nil && !committed && s.relocated(ctx, err, used) {
		_, err = s.tx(ctx, s.Pool(), fn)
	}
	return err
}

// tx is one run of Tx on pool; committed tells that the transaction
// committed (an error after it is not one to run fn again for).
func (s *Scope) tx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) (committed bool, err error) {
	path, err := s.searchPath()
	if err != nil {
		return false, err
	}
	hook, _ := ctx.Value(commitHookKey).(CommitHook)
	conn, err := pool.Acquire(acquireCtx(ctx))
	if err != nil {
		return false, err
	}
	// Release destroys a connection left in a transaction or broken.
	defer conn.Release()
	t := &lazyTx{conn: conn.Conn(), path: path}
	t.pre, _ = ctx.Value(prefetchKey).(*Prefetch)
	committed, err = s.run(ctx, t, fn, hook)
	switch {
	case err != nil:
		if t.tx != nil && !committed {
			_ = t.tx.Rollback(ctx) // err is the error to return; a failed rollback closes the connection
		}
		return committed, err
	case committed || t.tx == nil:
		t.committed = true
		return true, nil
	}
	err = t.tx.Commit(ctx)
	t.committed = err == nil
	return t.committed, err
}

// run runs fn and the transaction's end in t. committed tells that the
// end's pipeline committed the transaction.
func (s *Scope) run(ctx context.Context, t *lazyTx, fn func(pgx.Tx) error, hook CommitHook) (committed bool, err error) {
	if err := fn(t); err != nil {
		return false, err
	}
	fs := make([]Finisher, len(t.finishers))
	sealed := hook == nil
	var guarded []Guarded
	for i, kf := range t.finishers {
		fs[i] = kf.v
		if sl, ok := kf.v.(Sealer); !ok || !sl.Sealed() {
			sealed = false
		}
		if g, ok := kf.v.(Guarded); ok {
			guarded = append(guarded, g)
		}
	}
	if sealed && len(fs) > 0 {
		return s.sealed(ctx, t, fs, guarded)
	}
	if len(fs) > 0 {
		if err := Finish(ctx, t, fs...); err != nil {
			return false, err
		}
	}
	// The hook runs last: it tells whether the transaction wrote, and
	// the finishers' writes (a charge) are part of the effect.
	if hook != nil {
		return false, hook(ctx, s, t)
	}
	return false, nil
}

// guardSavepoint is where a transaction goes back to when a guard fails.
const guardSavepoint = "plinth_guard"

// sealed ends t in one pipeline: when some finishers are guarded, a
// savepoint, their guards and its release; then the finishers'
// statements, then COMMIT. The guards come first, so that the rows the
// finishers lock (a value, the credit pool) are not held while they run.
// When a guard fails, PostgreSQL runs nothing after it: t goes back to the
// savepoint, and every finisher finishes as unsealed ones do (that one,
// Lost, is no longer sealed), then t commits. Otherwise each finishes
// after the commit as sealed ones do. The transaction's prefetch is not
// sent with the pipeline: every finisher decided without it.
func (s *Scope) sealed(ctx context.Context, t *lazyTx, fs []Finisher, guarded []Guarded) (committed bool, err error) {
	b := &pgx.Batch{}
	if len(guarded) > 0 {
		b.Queue("SAVEPOINT " + guardSavepoint)
		for _, g := range guarded {
			g.Guard(b)
		}
		if b.Len() == 1 {
			b.QueuedQueries = nil // no guard had a bet to check
		} else {
			b.Queue("RELEASE SAVEPOINT " + guardSavepoint)
		}
	}
	for _, f := range fs {
		f.Queue(b)
	}
	b.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error {
		if ct.String() == "ROLLBACK" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	if t.tx == nil {
		t.pre = nil
	}
	err = t.SendBatch(ctx, b).Close()
	lost := false
	for _, g := range guarded {
		if err != nil && g.Lost(err) {
			lost = true
		}
	}
	switch {
	case lost:
		if _, err := t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+guardSavepoint); err != nil {
			return false, err
		}
		if err := Finish(ctx, t, fs...); err != nil {
			return false, err
		}
		err := t.tx.Commit(ctx)
		t.committed = err == nil
		return true, err
	case err != nil:
		return false, err
	}
	t.committed = true
	for _, f := range fs {
		if err := f.Finish(ctx, nil); err != nil {
			return true, fmt.Errorf("tenant: a sealed finisher failed after the commit: %w", err)
		}
	}
	return true, nil
}

// lazyTx is the transaction Scope.Tx hands its function: a pgx.Tx that
// begins with its first statement, with the finishers registered on it
// (FinisherOf), what its prefetch read and whether it committed (Later).
type lazyTx struct {
	conn *pgx.Conn
	path string // the search_path it binds
	// tx is the transaction once begun.
	tx        pgx.Tx
	finishers []keyedFinisher
	pre       *Prefetch
	fetched   any
	// committed: the transaction committed (the Laters of it answer).
	committed bool
}

type keyedFinisher struct {
	key any
	v   Finisher
}

// A Prefetch is a read that every transaction of Scope.Tx made with a
// context carrying it (WithPrefetch) sends with BEGIN, in the round trip
// of its first statement, for work at the transaction's end that would
// otherwise read then: the webhook outbox reads the subscribed endpoints
// this way, and a write that emits an event no endpoint wants can send
// its last statements with COMMIT. Fetch returns what it read.
type Prefetch struct {
	// Key names the prefetch for Prefetched.
	Key  any
	SQL  string
	Args []any
	// Read reads the rows and returns what Prefetched answers.
	Read func(pgx.Rows) (any, error)
}

type prefetchKeyT struct{}

var prefetchKey prefetchKeyT

// WithPrefetch returns ctx whose transactions (Scope.Tx) read p as they begin.
func WithPrefetch(ctx context.Context, p *Prefetch) context.Context {
	return context.WithValue(ctx, prefetchKey, p)
}

// Fetch returns what the prefetch named key read in tx, beginning tx
// (in a round trip of its own) when it has not begun: for work kept for
// the transaction's end that must know the prefetch's answer before any
// statement is sent. ok is false when tx is not a transaction of
// Scope.Tx with that prefetch.
func Fetch(ctx context.Context, tx pgx.Tx, key any) (v any, ok bool, err error) {
	t, isLazy := tx.(*lazyTx)
	if !isLazy || t.pre == nil || t.pre.Key != key {
		return nil, false, nil
	}
	if err := t.begin(ctx); err != nil {
		return nil, false, err
	}
	return t.fetched, true, nil
}

// Prefetched returns what the prefetch named key read in tx when tx has
// begun, so that it is known without a round trip (ok); ok is false
// otherwise (Fetch would begin it), and when tx is not a transaction of
// Scope.Tx with that prefetch.
func Prefetched(tx pgx.Tx, key any) (v any, ok bool) {
	t, isLazy := tx.(*lazyTx)
	if !isLazy || t.pre == nil || t.pre.Key != key || t.tx == nil {
		return nil, false
	}
	return t.fetched, true
}

// send sends b, behind BEGIN, the binding and the prefetch when the
// transaction has not begun. When the opening statements fail, the
// results are closed and their error returned.
//
// pgx prepares a batch's statements new to the connection in a round
// trip before the batch, where the binding has not run yet, so a
// statement naming a table of the project fails to prepare. The
// transaction then begins with the binding in a round trip of its own
// and b follows: the first time a connection meets a statement, and
// never after, as pgx keeps it prepared (PostgreSQL plans it again when
// it runs under another project's search_path; no project schema has a
// type of its own, so what it was prepared with holds in every schema).
func (t *lazyTx) send(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if t.tx != nil {
		return t.tx.SendBatch(ctx, b), nil
	}
	nb := &pgx.Batch{}
	nb.BeginTx(pgx.TxOptions{})
	nb.Queue(bindSQL, t.path)
	if t.pre != nil {
		nb.Queue(t.pre.SQL, t.pre.Args...)
	}
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, nb)
	t.tx = br.Tx()
	err := t.readOpening(br, 2)
	if err == nil {
		return br, nil
	}
	_ = br.Close()
	var pre pgx.ErrPreprocessingBatch
	if !errors.As(err, &pre) || t.conn.PgConn().TxStatus() != 'I' {
		return nil, err
	}
	tx, err := t.conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL search_path TO " + t.path})
	if err != nil {
		return nil, err
	}
	t.tx = tx
	// The queued queries carry what pgx made of them for the failed
	// send; b goes again as new ones.
	nb = &pgx.Batch{}
	if t.pre != nil {
		nb.Queue(t.pre.SQL, t.pre.Args...)
	}
	for _, q := range b.QueuedQueries {
		nb.Queue(q.SQL, q.Arguments...).Fn = q.Fn
	}
	br = tx.SendBatch(ctx, nb)
	if err := t.readOpening(br, 0); err != nil {
		_ = br.Close()
		return nil, err
	}
	return br, nil
}

// readOpening reads the results of the n statements before the
// prefetch (BEGIN and the binding, or none), and the prefetch.
func (t *lazyTx) readOpening(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	if t.pre == nil {
		return nil
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	t.fetched, err = t.pre.Read(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	return err
}

// sendOne sends the one statement sql, beginning the transaction with it.
func (t *lazyTx) sendOne(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return t.send(ctx, b)
}

// begin begins the transaction, if it has not, in a round trip of its own.
func (t *lazyTx) begin(ctx context.Context) error {
	if t.tx != nil {
		return nil
	}
	br, err := t.send(ctx, &pgx.Batch{})
	if err != nil {
		return err
	}
	return br.Close()
}

func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := t.send(ctx, b)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

// Exec without arguments is pgx's simple protocol, which takes several
// statements and no pipeline: the transaction begins before it.
func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.tx == nil && len(args) == 0 {
		if err := t.begin(ctx); err != nil {
			return pgconn.CommandTag{}, err
		}
	}
	if t.tx != nil {
		return t.tx.Exec(ctx, sql, args...)
	}
	br, err := t.sendOne(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	ct, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return ct, err
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.tx != nil {
		return t.tx.Query(ctx, sql, args...)
	}
	br, err := t.sendOne(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.tx != nil {
		return t.tx.QueryRow(ctx, sql, args...)
	}
	rows, err := t.Query(ctx, sql, args...)
	return row{rows, err}
}

func (t *lazyTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.tx.Begin(ctx)
}

func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.tx.CopyFrom(ctx, table, columns, src)
}

func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.tx.Prepare(ctx, name, sql)
}

// LargeObjects is not for project data (media live in storage).
func (t *lazyTx) LargeObjects() pgx.LargeObjects {
	panic("tenant: LargeObjects in a project transaction")
}

// Commit and Rollback end the transaction early; Scope.Tx ends it otherwise.
func (t *lazyTx) Commit(ctx context.Context) error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Commit(ctx)
}

func (t *lazyTx) Rollback(ctx context.Context) error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Rollback(ctx)
}

// Conn is the connection, for its configuration: a statement sent on it
// before the transaction's first does not run in the transaction.
func (t *lazyTx) Conn() *pgx.Conn { return t.conn }

// batchRows are the rows of a batch's last query: closing them, or
// reading past the last, closes the batch.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

// Next closes the batch with the rows, as pgx's rows close themselves
// after the last.
func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.err = r.br.Close()
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}
