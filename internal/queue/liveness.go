package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// River's own rescuer retries a job left running by a dead process only
// after RescueStuckJobsAfter (an hour by default), since it cannot tell a
// dead worker from a slow one. Liveness tells them apart: every working
// client holds a session advisory lock named after its client id for as
// long as it lives. A job still "running" under a client whose lock is
// free belongs to a process that died (killed, crashed, lost its
// database), and any live client puts it back in the queue at once.

// ClientIDPrefix starts the id of every client that holds a liveness lock;
// jobs attempted by other clients are left to River's rescuer.
const ClientIDPrefix = "plinth-"

// NewClientID returns a unique River client id: the prefix, the host name
// and a random suffix.
func NewClientID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, host)
	if len(host) > 48 {
		host = host[:48]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return ClientIDPrefix + host + "-" + hex.EncodeToString(b[:])
}

const lockKeySQL = `hashtextextended('plinth.river.client:' || $1, 0)`

// Liveness holds a client's lock and rescues the jobs of dead clients.
type Liveness struct {
	pool     *pgxpool.Pool
	clientID string
	logger   *slog.Logger
	interval time.Duration

	mu   sync.Mutex
	conn *pgxpool.Conn

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// NewLiveness returns a Liveness that holds no lock yet and runs nothing:
// Sweep and Alive work on it. StartLiveness is what a worker uses.
func NewLiveness(pool *pgxpool.Pool, clientID string, logger *slog.Logger) *Liveness {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Liveness{pool: pool, clientID: clientID, logger: logger, stop: make(chan struct{}), done: make(chan struct{})}
}

// StartLiveness takes clientID's lock (before the client fetches any job)
// and then, every interval until Stop, checks the lock's connection and
// rescues orphaned jobs. The first sweep runs at once, so a restarted
// worker picks up what its killed predecessor left.
func StartLiveness(ctx context.Context, pool *pgxpool.Pool, clientID string, interval time.Duration, logger *slog.Logger) (*Liveness, error) {
	if !strings.HasPrefix(clientID, ClientIDPrefix) {
		return nil, fmt.Errorf("queue: client id %q lacks the prefix %q", clientID, ClientIDPrefix)
	}
	if interval <= 0 {
		interval = 5 * time.Second
	}
	l := NewLiveness(pool, clientID, logger)
	l.interval = interval
	if err := l.lock(ctx); err != nil {
		return nil, err
	}
	// Stop ends the loop between rounds, never by cancelling a round's
	// statement: a statement cancelled on the lock's connection can close
	// it, and the server frees a closed connection's lock only a moment
	// later, so Stop would leave the client alive for that moment.
	go l.run(context.WithoutCancel(ctx))
	return l, nil
}

func (l *Liveness) lock(ctx context.Context) error {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+lockKeySQL+`)`, l.clientID); err != nil {
		conn.Release()
		return fmt.Errorf("queue: liveness lock: %w", err)
	}
	l.mu.Lock()
	l.conn = conn
	l.mu.Unlock()
	return nil
}

// Stop ends the sweeps and releases the lock. Stop River first: once the
// lock is free, other workers treat this client's running jobs as orphans.
func (l *Liveness) Stop() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		// Unlock first (the backend of a closed connection frees its locks
		// only as it exits); closing frees the lock even if this fails.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock(`+lockKeySQL+`)`, l.clientID)
		cancel()
		_ = l.conn.Conn().Close(context.Background())
		l.conn.Release()
		l.conn = nil
	}
}

func (l *Liveness) run(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		round, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := l.check(round); err != nil {
			l.logger.Warn("liveness lock lost; taking it again", "client", l.clientID, "err", err)
		}
		n, err := l.Sweep(round)
		cancel()
		if err != nil {
			l.logger.Warn("rescuing orphaned jobs failed", "err", err)
		} else if n > 0 {
			l.logger.Info("rescued jobs of dead workers", "jobs", n)
		}
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
	}
}

// check pings the lock's connection and takes the lock again on a new one
// when it was lost.
func (l *Liveness) check(ctx context.Context) error {
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn != nil {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := conn.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		_ = conn.Conn().Close(context.Background())
		conn.Release()
		l.mu.Lock()
		l.conn = nil
		l.mu.Unlock()
	}
	return l.lock(ctx)
}

type orphan struct {
	id      int64
	queue   string
	attempt int
	client  string
}

// Sweep puts back in the queue every running job whose client's liveness
// lock is free, and returns how many it rescued.
func (l *Liveness) Sweep(ctx context.Context) (int, error) {
	var horizon time.Time
	rows, err := l.pool.Query(ctx, `SELECT id, queue, attempt, attempted_by[array_upper(attempted_by, 1)], now()
		FROM river.river_job
		WHERE state = 'running' AND attempted_by[array_upper(attempted_by, 1)] LIKE 'plinth-%' AND attempted_by[array_upper(attempted_by, 1)] <> $1`, l.clientID)
	if err != nil {
		return 0, err
	}
	byClient := map[string][]orphan{}
	for rows.Next() {
		var o orphan
		if err := rows.Scan(&o.id, &o.queue, &o.attempt, &o.client, &horizon); err != nil {
			rows.Close()
			return 0, err
		}
		byClient[o.client] = append(byClient[o.client], o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var dead []orphan
	for client, jobs := range byClient {
		alive, err := l.Alive(ctx, client)
		if err != nil {
			return 0, err
		}
		if !alive {
			dead = append(dead, jobs...)
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	exec := riverpgxv5.New(l.pool).GetExecutor()
	now := time.Now().UTC()
	p := &riverdriver.JobRescueManyParams{Schema: Schema, StuckHorizon: horizon.Add(time.Millisecond)}
	queues := map[string]bool{}
	for _, o := range dead {
		e, _ := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(o.attempt, 0), Error: "the worker process " + o.client + " died; job rescued by " + l.clientID})
		p.ID = append(p.ID, o.id)
		p.Error = append(p.Error, e)
		p.FinalizedAt = append(p.FinalizedAt, nil)
		p.ScheduledAt = append(p.ScheduledAt, now)
		p.State = append(p.State, string(rivertype.JobStateAvailable))
		queues[o.queue] = true
	}
	if _, err := exec.JobRescueMany(ctx, p); err != nil {
		return 0, err
	}
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		for q := range queues {
			if err := NotifyInsertTx(ctx, tx, q); err != nil {
				return err
			}
		}
		return nil
	})
	return len(dead), err
}

// Alive reports whether client holds its liveness lock: trying the lock
// in a transaction succeeds only when nobody holds it.
func (l *Liveness) Alive(ctx context.Context, client string) (bool, error) {
	var free bool
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(`+lockKeySQL+`)`, client).Scan(&free)
	})
	return !free, err
}

// NotifyInsertTx wakes the producers of queue when tx commits, as River
// does on insert: for jobs made available other than by an insert (a
// promoted or rescued job), which would otherwise wait for the next poll.
func NotifyInsertTx(ctx context.Context, tx pgx.Tx, queue string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, insertChannel, insertPayload(queue)); err != nil {
		return fmt.Errorf("queue: notify insert: %w", err)
	}
	return nil
}

// River's producers listen on "<schema>.river_insert" for {"queue": name}.
const insertChannel = Schema + ".river_insert"

func insertPayload(queue string) string {
	b, _ := json.Marshal(map[string]string{"queue": queue}) // a map of strings always marshals
	return string(b)
}
