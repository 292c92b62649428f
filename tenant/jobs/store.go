package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Channel is the NOTIFY channel of job events; the payload is the job id.
const Channel = "plinth_jobs"

// row is a jobs row: the API resource plus the fields the framework keeps.
type row struct {
	Job
	WriteScope      string
	Admitted        bool
	CancelRequested bool
	RiverID         int64
	EventSeq        int
}

// Event kinds of the SSE stream.
const (
	EventProgress = "progress"
	EventStep     = "step"
	EventDone     = "done"
	EventError    = "error"
)

// event is one SSE event of a job, numbered by seq.
type event struct {
	Seq  int
	Kind string
	Data json.RawMessage
}

type progressData struct {
	Progress int    `json:"progress"`
	Message  string `json:"message"`
}

func newEvent(kind string, data any) event {
	b, _ := json.Marshal(data) // the data types here always marshal
	return event{Kind: kind, Data: b}
}

const columns = `id, type, status, progress, message, steps, result, error, created_at, updated_at,
	write_scope, admitted, cancel_requested, river_id, event_seq`

func scan(r pgx.Row) (*row, error) {
	j := &row{}
	var steps, result, errBody []byte
	if err := r.Scan(&j.ID, &j.Type, &j.Status, &j.Progress, &j.Message, &steps, &result, &errBody, &j.CreatedAt, &j.UpdatedAt,
		&j.WriteScope, &j.Admitted, &j.CancelRequested, &j.RiverID, &j.EventSeq); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, httpapi.ErrNotFound
		}
		return nil, err
	}
	if err := json.Unmarshal(steps, &j.Steps); err != nil {
		return nil, fmt.Errorf("jobs: steps of %s: %w", j.ID, err)
	}
	if j.Steps == nil {
		j.Steps = []Step{}
	}
	if len(result) > 0 {
		j.Result = result
	}
	if len(errBody) > 0 {
		j.Error = &ErrorBody{}
		if err := json.Unmarshal(errBody, j.Error); err != nil {
			return nil, fmt.Errorf("jobs: error of %s: %w", j.ID, err)
		}
	}
	j.CreatedAt, j.UpdatedAt = j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	return j, nil
}

func insert(ctx context.Context, tx pgx.Tx, j *row) (err error) {
	defer httpapi.Wrap(&err, "insert")
	steps, err := json.Marshal(j.Steps)
	if err != nil {
		return err
	}
	err = tx.QueryRow(ctx, `INSERT INTO jobs (id, type, status, message, steps, write_scope, admitted, river_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at, updated_at`,
		j.ID, j.Type, j.Status, j.Message, steps, j.WriteScope, j.Admitted, j.RiverID).Scan(&j.CreatedAt, &j.UpdatedAt)
	j.CreatedAt, j.UpdatedAt = j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	return err
}

// get reads a job; lock takes its row lock for the transaction.
func get(ctx context.Context, tx tenant.Querier, jobID string) (_ *row, err error) {
	defer httpapi.Wrap(&err, "get(%s)", jobID)
	return scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM jobs WHERE id = $1`, jobID))
}

func lock(ctx context.Context, tx pgx.Tx, jobID string) (_ *row, err error) {
	defer httpapi.Wrap(&err, "lock(%s)", jobID)
	return scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM jobs WHERE id = $1 FOR UPDATE`, jobID))
}

// listenJobs subscribes conn to the job notifications (Channel) and the
// hub's other channels.
func listenJobs(ctx context.Context, conn *pgx.Conn, channels []string) (err error) {
	defer httpapi.Wrap(&err, "listenJobs")
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

// unlistenJobs ends listenJobs.
func unlistenJobs(ctx context.Context, conn *pgx.Conn, channels []string) (err error) {
	defer httpapi.Wrap(&err, "unlistenJobs")
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "UNLISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

// Filter narrows a list.
type Filter struct {
	Status string
	Type   string
}

// list returns up to limit jobs older than the job id after (empty: from
// the newest), newest first.
func list(ctx context.Context, tx tenant.Querier, f Filter, after string, limit int) (_ []Job, err error) {
	defer httpapi.Wrap(&err, "list")
	rows, err := tx.Query(ctx, `SELECT `+columns+` FROM jobs
		WHERE ($1 = '' OR id < $1) AND ($2 = '' OR status = $2) AND ($3 = '' OR type = $3)
		ORDER BY id DESC LIMIT $4`, after, f.Status, f.Type, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Job{}
	for rows.Next() {
		j, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j.Job)
	}
	return out, rows.Err()
}

// save writes j as it now stands, appends events (a done event without
// data carries the job as saved) and notifies listeners on commit, in one
// statement.
func save(ctx context.Context, tx pgx.Tx, j *row, events ...event) (err error) {
	defer httpapi.Wrap(&err, "save")
	steps, err := json.Marshal(j.Steps)
	if err != nil {
		return err
	}
	var errBody []byte
	if j.Error != nil {
		if errBody, err = json.Marshal(j.Error); err != nil {
			return err
		}
	}
	var result []byte
	if j.Result != nil {
		result = j.Result
	}
	j.UpdatedAt = time.Now().UTC().Truncate(time.Microsecond)
	kinds, data := make([]string, len(events)), make([]string, len(events))
	for i, e := range events {
		if e.Kind == EventDone && e.Data == nil {
			e.Data, _ = json.Marshal(j.Job)
		}
		kinds[i], data[i] = e.Kind, string(e.Data)
	}
	err = tx.QueryRow(ctx, `WITH u AS (
			UPDATE jobs SET status = $2, progress = $3, message = $4, steps = $5, result = $6, error = $7,
				cancel_requested = $8, admitted = $9, event_seq = event_seq + cardinality($11::text[]), updated_at = $10
			WHERE id = $1 RETURNING event_seq
		), e AS (
			INSERT INTO job_events (job_id, seq, kind, data)
			SELECT $1, u.event_seq - cardinality($11::text[]) + k.ord, k.kind, k.data::json
			FROM u, unnest($11::text[], $12::text[]) WITH ORDINALITY AS k(kind, data, ord)
		)
		SELECT event_seq, CASE WHEN cardinality($11::text[]) > 0 THEN pg_notify($13, $1) END IS NULL FROM u`,
		j.ID, j.Status, j.Progress, j.Message, steps, result, errBody, j.CancelRequested, j.Admitted, j.UpdatedAt,
		kinds, data, Channel).Scan(&j.EventSeq, new(bool))
	return err
}

// eventsAfter returns the job's events numbered above seq, in order.
func eventsAfter(ctx context.Context, tx tenant.Querier, jobID string, seq, limit int) (_ []event, err error) {
	defer httpapi.Wrap(&err, "eventsAfter(%s)", jobID)
	rows, err := tx.Query(ctx, `SELECT seq, kind, data FROM job_events WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, jobID, seq, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var e event
		if err := rows.Scan(&e.Seq, &e.Kind, &e.Data); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func lockAdmission(ctx context.Context, tx pgx.Tx) (err error) {
	defer httpapi.Wrap(&err, "lockAdmission")
	// current_schema() is the project's schema inside Scope.Tx.
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('plinth.jobs.admission:' || current_schema(), 0))`)
	return err
}

func activeCount(ctx context.Context, tx pgx.Tx) (_ int, err error) {
	defer httpapi.Wrap(&err, "activeCount")
	var n int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM jobs WHERE status IN ('pending','processing') AND admitted LIMIT $1) a`,
		MaxActivePerProject).Scan(&n)
	return n, err
}

type waitingJob struct {
	id      string
	riverID int64
}

// admissible returns the oldest waiting jobs that fit in the project's
// free slots (run under the admission lock).
func admissible(ctx context.Context, tx pgx.Tx) (_ []waitingJob, err error) {
	defer httpapi.Wrap(&err, "admissible")
	rows, err := tx.Query(ctx, `SELECT w.id, w.river_id, a.active FROM
			(SELECT count(*) AS active FROM (SELECT 1 FROM jobs WHERE status IN ('pending','processing') AND admitted LIMIT $1) x) a,
			LATERAL (SELECT id, river_id FROM jobs WHERE status = 'pending' AND NOT admitted ORDER BY id LIMIT $1 - a.active FOR UPDATE) w`,
		MaxActivePerProject)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []waitingJob
	for rows.Next() {
		var w waitingJob
		var active int
		if err := rows.Scan(&w.id, &w.riverID, &active); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

func setAdmitted(ctx context.Context, tx pgx.Tx, jobID string) (err error) {
	defer httpapi.Wrap(&err, "setAdmitted(%s)", jobID)
	_, err = tx.Exec(ctx, `UPDATE jobs SET admitted = true, updated_at = clock_timestamp() WHERE id = $1`, jobID)
	return err
}
