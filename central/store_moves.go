package central

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"golang.org/x/time/rate"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/provisioning"
)

// The SQL of moves (moves.go): the central.moves rows, and on the shards
// the publication, subscription, marks, fence and River jobs a move
// works with. Names built into statements are PostgreSQL identifiers read
// from the catalog or made by the move (plinth_move_<id>), each quoted
// with pgx.Identifier; CREATE PUBLICATION and CREATE SUBSCRIPTION, which
// take no parameters, are written by the server's format() (%I, %L).

const moveColumns = `id, project_id, from_shard, to_shard, phase, method, drain_id, rows_copied, lag_bytes, pause_ms, error, created_at, updated_at, finished_at`

func scanMove(row pgx.Row) (m Move, err error) {
	err = row.Scan(&m.ID, &m.ProjectID, &m.From, &m.To, &m.Phase, &m.Method, &m.DrainID, &m.RowsCopied, &m.LagBytes, &m.PauseMS, &m.Error,
		&m.CreatedAt, &m.UpdatedAt, &m.FinishedAt)
	return m, notFound(err)
}

// insertMove records a queued move of project from one shard to another,
// part of drain drainID when not empty; a move of the project under way
// already is 409.
func insertMove(ctx context.Context, tx pgx.Tx, projectID, from, to, drainID string) (_ Move, err error) {
	defer httpapi.Wrap(&err, "insertMove(%s)", projectID)
	m, err := scanMove(tx.QueryRow(ctx, `INSERT INTO central.moves (id, project_id, from_shard, to_shard, drain_id) VALUES ($1, $2, $3, $4, NULLIF($5, ''))
		RETURNING `+moveColumns, id.New("mov_"), projectID, from, to, drainID))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "moves_one_under_way" {
		return m, httpapi.Conflict(httpapi.CodeConflict, "project "+projectID+" is already moving (GET /admin/api/projects/"+projectID+"/moves)")
	}
	return m, err
}

// getMove reads move id.
func getMove(ctx context.Context, db dbtx, moveID string) (_ Move, err error) {
	defer httpapi.Wrap(&err, "getMove(%s)", moveID)
	return scanMove(db.QueryRow(ctx, `SELECT `+moveColumns+` FROM central.moves WHERE id = $1`, moveID))
}

// projectMoves lists a project's moves, newest first.
func projectMoves(ctx context.Context, db dbtx, projectID string) (_ []Move, err error) {
	defer httpapi.Wrap(&err, "projectMoves(%s)", projectID)
	rows, err := db.Query(ctx, `SELECT `+moveColumns+` FROM central.moves WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT 100`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Move, error) { return scanMove(r) })
}

// setMovePhase moves a move on to phase; a move asked to cancel does not
// enter switching (ok false), nor does one that ended.
func setMovePhase(ctx context.Context, db dbtx, moveID, phase string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "setMovePhase(%s, %s)", moveID, phase)
	tag, err := db.Exec(ctx, `UPDATE central.moves SET phase = $2, updated_at = now()
		WHERE id = $1 AND phase NOT IN ('done', 'failed', 'cancelled') AND NOT (cancel_requested AND $2 = 'switching')`, moveID, phase)
	return tag.RowsAffected() == 1, err
}

// setMoveMethod records how a move copies its project: replication or
// fenced_copy.
func setMoveMethod(ctx context.Context, db dbtx, moveID, method string) (err error) {
	defer httpapi.Wrap(&err, "setMoveMethod(%s)", moveID)
	_, err = db.Exec(ctx, `UPDATE central.moves SET method = $2, updated_at = now() WHERE id = $1`, moveID, method)
	return err
}

// insertDrain records a drain of shard.
func insertDrain(ctx context.Context, tx pgx.Tx, shard string) (drainID string, err error) {
	defer httpapi.Wrap(&err, "insertDrain(%s)", shard)
	drainID = id.New("drn_")
	_, err = tx.Exec(ctx, `INSERT INTO central.drains (id, shard) VALUES ($1, $2)`, drainID, shard)
	return drainID, err
}

// drainCandidates lists, in tx, the projects placed on shard that a drain
// moves: all but those being deleted (their schemas are dropped where they
// are) and those with a move under way (it goes on). Oldest first, their
// rows locked as DeleteProject locks them, so none is deleted meanwhile.
func drainCandidates(ctx context.Context, tx pgx.Tx, shard string) (_ []string, err error) {
	defer httpapi.Wrap(&err, "drainCandidates(%s)", shard)
	rows, err := tx.Query(ctx, `SELECT p.id FROM central.placements pl JOIN central.projects p ON p.id = pl.project_id
		WHERE pl.shard = $1 AND p.status <> 'deleting'
		  AND NOT EXISTS (SELECT 1 FROM central.moves m WHERE m.project_id = p.id AND m.phase IN ('queued', 'copying', 'catching_up', 'switching'))
		ORDER BY p.seq
		FOR UPDATE OF p`, shard)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// moveUnderWay is the id of project's move under way, or "" (in tx, which
// holds the project's row: no move starts meanwhile).
func moveUnderWay(ctx context.Context, tx pgx.Tx, projectID string) (id string, err error) {
	defer httpapi.Wrap(&err, "moveUnderWay(%s)", projectID)
	err = tx.QueryRow(ctx, `SELECT id FROM central.moves WHERE project_id = $1 AND phase IN ('queued', 'copying', 'catching_up', 'switching')`, projectID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// drainMoves lists the moves of drain drainID, oldest first.
func drainMoves(ctx context.Context, db dbtx, drainID string) (_ []Move, err error) {
	defer httpapi.Wrap(&err, "drainMoves(%s)", drainID)
	rows, err := db.Query(ctx, `SELECT `+moveColumns+` FROM central.moves WHERE drain_id = $1 ORDER BY created_at, id`, drainID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Move, error) { return scanMove(r) })
}

// latestDrain reads the progress of shard's last drain; nil when it was
// never drained.
func latestDrain(ctx context.Context, db dbtx, shard string) (_ *Drain, err error) {
	defer httpapi.Wrap(&err, "latestDrain(%s)", shard)
	d := &Drain{Failures: []DrainFailure{}}
	var ended int
	err = db.QueryRow(ctx, `SELECT d.id, d.created_at,
			count(m.id), count(m.id) FILTER (WHERE m.phase = 'queued'),
			count(m.id) FILTER (WHERE m.phase IN ('copying', 'catching_up', 'switching')),
			count(m.id) FILTER (WHERE m.phase = 'done'), count(m.id) FILTER (WHERE m.phase = 'failed'),
			count(m.id) FILTER (WHERE m.phase = 'cancelled'), max(m.finished_at)
		FROM central.drains d LEFT JOIN central.moves m ON m.drain_id = d.id
		WHERE d.id = (SELECT id FROM central.drains WHERE shard = $1 ORDER BY created_at DESC, id DESC LIMIT 1)
		GROUP BY d.id, d.created_at`, shard).Scan(&d.ID, &d.StartedAt, &d.Moves, &d.Queued, &d.Moving, &d.Done, &d.Failed, &d.Cancelled, &d.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ended = d.Done + d.Failed + d.Cancelled
	if d.Finished = ended == d.Moves; !d.Finished {
		d.FinishedAt = nil
	}
	rows, err := db.Query(ctx, `SELECT id, project_id, coalesce(error, '') FROM central.moves
		WHERE drain_id = $1 AND phase = 'failed' ORDER BY finished_at, id LIMIT 20`, d.ID)
	if err != nil {
		return nil, err
	}
	d.Failures, err = pgx.CollectRows(rows, pgx.RowToStructByPos[DrainFailure])
	return d, err
}

// setMoveProgress records rows copied and the replication lag.
func setMoveProgress(ctx context.Context, db dbtx, moveID string, rows int64, lag *int64) (err error) {
	defer httpapi.Wrap(&err, "setMoveProgress(%s)", moveID)
	_, err = db.Exec(ctx, `UPDATE central.moves SET rows_copied = $2, lag_bytes = coalesce($3, lag_bytes), updated_at = now() WHERE id = $1`,
		moveID, rows, lag)
	return err
}

// endMove records how a move ended: done, failed (msg) or cancelled.
func endMove(ctx context.Context, db dbtx, moveID, phase, msg string, pauseMS *int) (err error) {
	defer httpapi.Wrap(&err, "endMove(%s, %s)", moveID, phase)
	_, err = db.Exec(ctx, `UPDATE central.moves SET phase = $2, error = nullif($3, ''), pause_ms = coalesce($4, pause_ms),
		finished_at = now(), updated_at = now() WHERE id = $1`, moveID, phase, msg, pauseMS)
	return err
}

// requestMoveCancel asks a move not yet switching to stop; ok is false
// when the move is switching or ended (or absent: httpapi.ErrNotFound).
func requestMoveCancel(ctx context.Context, db dbtx, moveID string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "requestMoveCancel(%s)", moveID)
	tag, err := db.Exec(ctx, `UPDATE central.moves SET cancel_requested = true, updated_at = now()
		WHERE id = $1 AND phase IN ('queued', 'copying', 'catching_up')`, moveID)
	return tag.RowsAffected() == 1, err
}

// moveCancelRequested reports whether move id was asked to cancel.
func moveCancelRequested(ctx context.Context, db dbtx, moveID string) (cancel bool, err error) {
	defer httpapi.Wrap(&err, "moveCancelRequested(%s)", moveID)
	err = db.QueryRow(ctx, `SELECT cancel_requested FROM central.moves WHERE id = $1`, moveID).Scan(&cancel)
	return cancel, notFound(err)
}

// flipPlacement places the project on shard to, when it is on from.
func flipPlacement(ctx context.Context, tx pgx.Tx, projectID, from, to string) (err error) {
	defer httpapi.Wrap(&err, "flipPlacement(%s, %s, %s)", projectID, from, to)
	tag, err := tx.Exec(ctx, `UPDATE central.placements SET shard = $3 WHERE project_id = $1 AND shard = $2`, projectID, from, to)
	if err == nil && tag.RowsAffected() != 1 {
		err = errors.New("the project is no longer placed on " + from)
	}
	return err
}

// tryMoveLock takes, on conn, the session lock only one runner of move id
// holds at a time; unlockMove gives it back.
func tryMoveLock(ctx context.Context, conn dbtx, moveID string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "tryMoveLock(%s)", moveID)
	err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('plinth move ' || $1, 0))`, moveID).Scan(&ok)
	return ok, err
}

func unlockMove(ctx context.Context, conn dbtx, moveID string) (err error) {
	defer httpapi.Wrap(&err, "unlockMove(%s)", moveID)
	_, err = conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('plinth move ' || $1, 0))`, moveID)
	return err
}

// On a shard.

// projectTables lists the tables of a project's schema a move copies,
// each after the tables its foreign keys reference (rows copied in this
// order meet every key they point to): every table but goose's version
// table, which the target's provisioning writes. Like every catalog read
// of a move it finds the schema's relations through an index
// (provisioning.Tables), never by a filter on pg_class.relnamespace: that
// reads every relation of the shard, and made each move of a drain slower
// as the shard filled.
func projectTables(ctx context.Context, db dbtx, schema string) (_ []string, err error) {
	defer httpapi.Wrap(&err, "projectTables(%s)", schema)
	tables, err := provisioning.Tables(ctx, db, schema)
	if err != nil {
		return nil, err
	}
	tables = slices.DeleteFunc(tables, func(t provisioning.Table) bool { return t.Name == "goose_db_version" })
	if tables, err = provisioning.LoadOrder(ctx, db, tables); err != nil {
		return nil, err
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	return names, nil
}

// inSchema joins each name t of unnest($2::text[]) to its relation c in
// schema $1 by pg_class's index on the name.
const inSchema = `unnest($2::text[]) t JOIN pg_catalog.pg_class c ON c.oid = to_regclass(format('%I.%I', $1::text, t))`

// qualified quotes schema.table for each table.
func qualified(schema string, tables []string) string {
	q := make([]string, len(tables))
	for i, t := range tables {
		q[i] = pgx.Identifier{schema, t}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// identifyFully gives the tables of schema (among tables) with neither a
// primary key nor a replica identity REPLICA IDENTITY FULL, so that their
// updates and deletes replicate (on the source: its schema is dropped
// after the move).
func identifyFully(ctx context.Context, db dbtx, schema string, tables []string) (err error) {
	defer httpapi.Wrap(&err, "identifyFully(%s)", schema)
	rows, err := db.Query(ctx, `SELECT t FROM `+inSchema+` WHERE c.relreplident = 'd'
		AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)`, schema, tables)
	if err != nil {
		return err
	}
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := db.Exec(ctx, `ALTER TABLE `+pgx.Identifier{schema, t}.Sanitize()+` REPLICA IDENTITY FULL`); err != nil {
			return err
		}
	}
	return nil
}

// truncateTables empties the tables of a new target schema that hold a
// row (provisioning's own: the copy brings the source's): a TRUNCATE
// gives each table and index a new file, work an empty table need not
// cost.
func truncateTables(ctx context.Context, db dbtx, schema string, tables []string) (err error) {
	defer httpapi.Wrap(&err, "truncateTables(%s)", schema)
	b := &pgx.Batch{}
	filled := filledTables(b, schema, tables)
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if f := filled(); len(f) > 0 {
		_, err = db.Exec(ctx, `TRUNCATE `+qualified(schema, f))
	}
	return err
}

// filledTables queues on b the queries that find which of tables hold a
// row; once b ran, the function it answers lists those, in the order of
// tables.
func filledTables(b *pgx.Batch, schema string, tables []string) func() []string {
	has := make([]bool, len(tables))
	for i, t := range tables {
		b.Queue(`SELECT EXISTS (SELECT FROM ` + pgx.Identifier{schema, t}.Sanitize() + `)`).QueryRow(func(r pgx.Row) error {
			return r.Scan(&has[i])
		})
	}
	return func() []string {
		var filled []string
		for i, t := range tables {
			if has[i] {
				filled = append(filled, t)
			}
		}
		return filled
	}
}

// ensureMoveMarks creates the marks table a move's fence writes to on the
// source and waits to see on the target (serialised: two moves may start
// on one shard at once).
func ensureMoveMarks(ctx context.Context, db dbtx) (err error) {
	defer httpapi.Wrap(&err, "ensureMoveMarks")
	_, err = db.Exec(ctx, `DO $$ BEGIN
		PERFORM pg_advisory_xact_lock(hashtextextended('plinth move marks', 0));
		CREATE TABLE IF NOT EXISTS public.plinth_move_marks (move_id text NOT NULL, n integer NOT NULL, PRIMARY KEY (move_id, n));
	END $$`)
	return err
}

// insertMark writes mark n of a move (on the source), its commit flushed
// to the WAL whatever the server's synchronous_commit: a walsender sends
// only flushed WAL, so with synchronous_commit=off a mark would wait for
// the WAL writer (wal_writer_delay, 200 ms) on a server with no other
// writes, and a catch-up measured by marks would never finish.
func insertMark(ctx context.Context, db *pgxpool.Pool, moveID string, n int) (err error) {
	defer httpapi.Wrap(&err, "insertMark(%s, %d)", moveID, n)
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('synchronous_commit', 'on', true)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO public.plinth_move_marks (move_id, n) VALUES ($1, $2) ON CONFLICT DO NOTHING`, moveID, n)
		return err
	})
}

// markSeen reports whether mark n of a move has arrived (on the target).
func markSeen(ctx context.Context, db dbtx, moveID string, n int) (seen bool, err error) {
	defer httpapi.Wrap(&err, "markSeen(%s, %d)", moveID, n)
	err = db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM public.plinth_move_marks WHERE move_id = $1 AND n = $2)`, moveID, n).Scan(&seen)
	return seen, err
}

// deleteMarks deletes a move's marks, where the table exists.
func deleteMarks(ctx context.Context, db dbtx, moveID string) (err error) {
	defer httpapi.Wrap(&err, "deleteMarks(%s)", moveID)
	var exists bool
	if err := db.QueryRow(ctx, `SELECT to_regclass('public.plinth_move_marks') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return err
	}
	_, err = db.Exec(ctx, `DELETE FROM public.plinth_move_marks WHERE move_id = $1`, moveID)
	return err
}

// createPublication publishes the tables of schema, and the marks of move
// id, under name (on the source).
func createPublication(ctx context.Context, db dbtx, name, schema string, tables []string, moveID string) (err error) {
	defer httpapi.Wrap(&err, "createPublication(%s)", name)
	var stmt string
	if err := db.QueryRow(ctx, `SELECT format('CREATE PUBLICATION %I FOR TABLE %s, public.plinth_move_marks WHERE (move_id = %L)', $1::text, $2::text, $3::text)`,
		name, qualified(schema, tables), moveID).Scan(&stmt); err != nil {
		return err
	}
	_, err = db.Exec(ctx, stmt)
	return err
}

// dropPublication drops publication name when it exists.
func dropPublication(ctx context.Context, db dbtx, name string) (err error) {
	defer httpapi.Wrap(&err, "dropPublication(%s)", name)
	_, err = db.Exec(ctx, `DROP PUBLICATION IF EXISTS `+pgx.Identifier{name}.Sanitize())
	return err
}

// createSubscription subscribes, under name, to the publication name of
// the server conninfo reaches, from the slot of the same name that
// createSlot made there (on the target): the rows it had were copied in
// the slot's snapshot (moveRun.snapshotCopy), so the subscription copies
// none.
func createSubscription(ctx context.Context, db dbtx, name, conninfo string) (err error) {
	defer httpapi.Wrap(&err, "createSubscription(%s)", name)
	var stmt string
	if err := db.QueryRow(ctx, `SELECT format('CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I WITH (copy_data = false, create_slot = false, slot_name = %L)', $1::text, $2::text, $1::text, $1::text)`,
		name, conninfo).Scan(&stmt); err != nil {
		return err
	}
	_, err = db.Exec(ctx, stmt)
	return err
}

// createSlot creates logical replication slot name (pgoutput) on the
// replication connection rc, and answers the name of the snapshot it
// exported: what the slot's stream starts after. The snapshot can be
// imported (useSnapshot) until rc runs another command or closes. The
// name is one moveName made (checked by RunMove), quoted all the same.
func createSlot(ctx context.Context, rc *pgconn.PgConn, name string) (snapshot string, err error) {
	defer httpapi.Wrap(&err, "createSlot(%s)", name)
	res, err := rc.Exec(ctx, `CREATE_REPLICATION_SLOT `+pgx.Identifier{name}.Sanitize()+` LOGICAL pgoutput EXPORT_SNAPSHOT`).ReadAll()
	if err != nil {
		return "", err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) < 3 {
		return "", errors.New("CREATE_REPLICATION_SLOT answered no snapshot")
	}
	return string(res[0].Rows[0][2]), nil
}

// snapshotRe is the form of an exported snapshot's name (pg_export_snapshot).
var snapshotRe = regexp.MustCompile(`^[0-9A-F]+-[0-9A-F]+(-[0-9]+)?$`)

// useSnapshot makes tx (REPEATABLE READ, before its first query, so the
// statement is written here, its one value checked) see what the exported
// snapshot saw.
func useSnapshot(ctx context.Context, tx pgx.Tx, snapshot string) (err error) {
	defer httpapi.Wrap(&err, "useSnapshot(%s)", snapshot)
	if !snapshotRe.MatchString(snapshot) {
		return fmt.Errorf("not a snapshot name: %q", snapshot)
	}
	_, err = tx.Exec(ctx, `SET TRANSACTION SNAPSHOT '`+snapshot+`'`)
	return err
}

// subscriptionState counts a subscription's tables and those ready
// (copied, then streaming), and the errors its workers met.
func subscriptionState(ctx context.Context, db dbtx, name string) (ready, total, errs int64, err error) {
	defer httpapi.Wrap(&err, "subscriptionState(%s)", name)
	err = db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE r.srsubstate = 'r'), count(*),
			coalesce((SELECT apply_error_count + sync_error_count FROM pg_stat_subscription_stats WHERE subname = $1), 0)
		FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = $1`, name).Scan(&ready, &total, &errs)
	return ready, total, errs, err
}

// dropSubscription drops subscription name when it exists, leaving its
// slot on the source to dropSlot (so the target need not reach it).
func dropSubscription(ctx context.Context, db dbtx, name string) (err error) {
	defer httpapi.Wrap(&err, "dropSubscription(%s)", name)
	var exists bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_subscription WHERE subname = $1)`, name).Scan(&exists); err != nil || !exists {
		return err
	}
	sub := pgx.Identifier{name}.Sanitize()
	for _, stmt := range []string{`ALTER SUBSCRIPTION ` + sub + ` DISABLE`, `ALTER SUBSCRIPTION ` + sub + ` SET (slot_name = NONE)`, `DROP SUBSCRIPTION ` + sub} {
		if _, err := db.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// dropSlot drops replication slot name when it exists and no walsender
// holds it any more (ok false: held still; try again).
func dropSlot(ctx context.Context, db dbtx, name string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "dropSlot(%s)", name)
	var exists, active bool
	err = db.QueryRow(ctx, `SELECT true, active FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&exists, &active)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil || active {
		return false, err
	}
	_, err = db.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, name)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55006" { // object_in_use: taken again since
		return false, nil
	}
	return err == nil, err
}

// slotLag is how many bytes of WAL the source has written past what the
// target confirmed of slot name.
func slotLag(ctx context.Context, db dbtx, name string) (lag int64, err error) {
	defer httpapi.Wrap(&err, "slotLag(%s)", name)
	err = db.QueryRow(ctx, `SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn), 0)::bigint
		FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&lag)
	return lag, notFound(err)
}

// countRows counts the rows of the tables of schema.
func countRows(ctx context.Context, db *pgxpool.Pool, schema string, tables []string) (n int64, err error) {
	defer httpapi.Wrap(&err, "countRows(%s)", schema)
	b := &pgx.Batch{}
	for _, t := range tables {
		b.Queue(`SELECT count(*) FROM ` + pgx.Identifier{schema, t}.Sanitize()).QueryRow(func(r pgx.Row) error {
			var c int64
			err := r.Scan(&c)
			n += c
			return err
		})
	}
	return n, db.SendBatch(ctx, b).Close()
}

// projectSize is how many rows (counted up to limit+1 per table, so a
// large table costs no more than that) and bytes the tables of schema
// hold: the fenced copy's rule reads it.
func projectSize(ctx context.Context, db *pgxpool.Pool, schema string, tables []string, limit int64) (rows, bytes int64, err error) {
	defer httpapi.Wrap(&err, "projectSize(%s)", schema)
	b := &pgx.Batch{}
	for _, t := range tables {
		b.Queue(`SELECT count(*) FROM (SELECT FROM `+pgx.Identifier{schema, t}.Sanitize()+` LIMIT $1) r`, limit+1).QueryRow(func(r pgx.Row) error {
			var c int64
			err := r.Scan(&c)
			rows += c
			return err
		})
	}
	b.Queue(`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM `+inSchema, schema, tables).QueryRow(func(r pgx.Row) error { return r.Scan(&bytes) })
	return rows, bytes, db.SendBatch(ctx, b).Close()
}

// copyPlan lists, in one round trip, the tables of schema (among tables)
// that hold a row, in the order of tables, each with the columns a copy
// carries, in order and quoted (dropped and generated columns left out):
// what a fenced copy copies, the empty tables (most of a small project's)
// skipped.
func copyPlan(ctx context.Context, db dbtx, schema string, tables []string) (_ []tableCopy, err error) {
	defer httpapi.Wrap(&err, "copyPlan(%s)", schema)
	b := &pgx.Batch{}
	filled := filledTables(b, schema, tables)
	cols := map[string]string{}
	b.Queue(`SELECT t, string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
		FROM `+inSchema+` JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
		WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		GROUP BY t`, schema, tables).Query(func(rows pgx.Rows) error {
		var t, c string
		_, err := pgx.ForEachRow(rows, []any{&t, &c}, func() error {
			cols[t] = c
			return nil
		})
		return err
	})
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	var plan []tableCopy
	for _, t := range filled() {
		plan = append(plan, tableCopy{Table: t, Columns: cols[t]})
	}
	return plan, nil
}

// tableCopy is a table a fenced copy copies, with its columns.
type tableCopy struct{ Table, Columns string }

// copyTable copies the rows of schema.table (columns cols) from the
// source connection src, inside the fence's transaction, to dst, in the
// target's transaction, as COPY streams in text format (binary would name
// a type of the schema by its OID, which differs on the target): the rows
// copied.
func copyTable(ctx context.Context, src, dst *pgconn.PgConn, schema, table, cols string, lim *rate.Limiter, rows *atomic.Int64) (n int64, err error) {
	defer httpapi.Wrap(&err, "copyTable(%s.%s)", schema, table)
	name := pgx.Identifier{schema, table}.Sanitize()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := src.CopyTo(ctx, pw, `COPY `+name+` (`+cols+`) TO STDOUT`)
		pw.CloseWithError(err)
		done <- err
	}()
	var in io.Reader = pr
	if lim != nil || rows != nil {
		in = &copyReader{ctx: ctx, r: pr, lim: lim, rows: rows}
	}
	tag, err := dst.CopyFrom(ctx, in, `COPY `+name+` (`+cols+`) FROM STDIN`)
	pr.CloseWithError(errors.New("the target stopped reading"))
	if serr := <-done; err == nil && serr != nil {
		err = serr
	}
	return tag.RowsAffected(), err
}

// copyReader reads a COPY stream in text format from r, at most what lim
// allows (when not nil), adding the rows that went through to rows (when
// not nil): a row is a line, its own newlines escaped.
type copyReader struct {
	ctx  context.Context
	r    io.Reader
	lim  *rate.Limiter
	rows *atomic.Int64
}

func (c *copyReader) Read(b []byte) (int, error) {
	if c.lim != nil && len(b) > c.lim.Burst() {
		b = b[:c.lim.Burst()]
	}
	n, err := c.r.Read(b)
	if n > 0 && c.rows != nil {
		var lines int64
		for _, ch := range b[:n] {
			if ch == '\n' {
				lines++
			}
		}
		c.rows.Add(lines)
	}
	if n > 0 && c.lim != nil {
		if werr := c.lim.WaitN(c.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// fenceTables takes, in tx, the lock that stops every write to the tables
// of schema and lets reads go on (EXCLUSIVE), waiting at most wait for
// the writes under way (55P03 lock_not_available past it).
func fenceTables(ctx context.Context, tx pgx.Tx, schema string, tables []string, waitMS int64) (err error) {
	defer httpapi.Wrap(&err, "fenceTables(%s)", schema)
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, strconv.FormatInt(waitMS, 10)); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `LOCK TABLE `+qualified(schema, tables)+` IN EXCLUSIVE MODE`)
	return err
}

// A sequence's state, to carry to the target (logical replication copies
// rows, not sequences).
type sequenceValue struct {
	Name     string
	Last     *int64
	IsCalled bool
}

// readSequences reads the sequences of schema.
func readSequences(ctx context.Context, db dbtx, schema string) (_ []sequenceValue, err error) {
	defer httpapi.Wrap(&err, "readSequences(%s)", schema)
	// pg_sequences filters pg_class by schema (every relation of the
	// shard, under the fence): walk pg_depend from the schema instead.
	rows, err := db.Query(ctx, `SELECT c.relname, pg_sequence_last_value(c.oid), pg_sequence_last_value(c.oid) IS NOT NULL
		FROM `+provisioning.SchemaRelations+` AND c.relkind = 'S'`, schema)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[sequenceValue])
}

// writeSequences sets the sequences of schema (on the target), in one
// round trip.
func writeSequences(ctx context.Context, db dbtx, schema string, seqs []sequenceValue) (err error) {
	defer httpapi.Wrap(&err, "writeSequences(%s)", schema)
	b := &pgx.Batch{}
	for _, s := range seqs {
		if s.Last != nil {
			b.Queue(`SELECT setval($1::regclass, $2, $3)`, pgx.Identifier{schema, s.Name}.Sanitize(), *s.Last, s.IsCalled)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return db.SendBatch(ctx, b).Close()
}

// movableJobStates are the states of a project's River jobs that a move
// carries to the target shard: those not running nor ended.
const movableJobStates = `('available', 'scheduled', 'retryable', 'pending')`

// lockProjectJobs reads, and locks in tx until it ends, the project's
// River jobs waiting on the source (River's fetch skips locked rows): their
// ids and their rows as JSON.
func lockProjectJobs(ctx context.Context, tx pgx.Tx, projectID string) (ids []int64, rows []byte, err error) {
	defer httpapi.Wrap(&err, "lockProjectJobs(%s)", projectID)
	err = tx.QueryRow(ctx, `WITH j AS (SELECT * FROM river.river_job WHERE args->>'project_id' = $1 AND state IN `+movableJobStates+` FOR UPDATE)
		SELECT coalesce(array_agg(id), '{}'), coalesce(json_agg(j), '[]') FROM j`, projectID).Scan(&ids, &rows)
	return ids, rows, err
}

// insertJobs inserts River job rows read by lockProjectJobs, each with a
// new id, keeping their schedule, attempts and errors (on the target).
func insertJobs(ctx context.Context, db dbtx, rows []byte) (ids []int64, err error) {
	defer httpapi.Wrap(&err, "insertJobs")
	var cols string
	if err := db.QueryRow(ctx, `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
		WHERE attrelid = 'river.river_job'::regclass AND attnum > 0 AND NOT attisdropped AND attname <> 'id' AND attgenerated = ''`).Scan(&cols); err != nil {
		return nil, err
	}
	r, err := db.Query(ctx, `INSERT INTO river.river_job (`+cols+`) SELECT `+cols+` FROM json_populate_recordset(NULL::river.river_job, $1) RETURNING id`, rows)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(r, pgx.RowTo[int64])
}

// deleteJobs deletes River jobs by id.
func deleteJobs(ctx context.Context, db dbtx, ids []int64) (err error) {
	defer httpapi.Wrap(&err, "deleteJobs")
	if len(ids) == 0 {
		return nil
	}
	_, err = db.Exec(ctx, `DELETE FROM river.river_job WHERE id = ANY($1)`, ids)
	return err
}

// carryJob inserts a copy of job on the River of pool, due now, with the
// attempts it had before the one running (the copy's run counts as that
// one).
func carryJob(ctx context.Context, db dbtx, job *rivertype.JobRow) (err error) {
	defer httpapi.Wrap(&err, "carryJob(%d)", job.ID)
	_, err = db.Exec(ctx, `INSERT INTO river.river_job (args, kind, max_attempts, metadata, priority, queue, state, scheduled_at, tags, attempt)
		VALUES ($1, $2, $3, $4, $5, $6, 'available', now(), $7, $8)`,
		job.EncodedArgs, job.Kind, job.MaxAttempts, job.Metadata, job.Priority, job.Queue, job.Tags, max(job.Attempt-1, 0))
	return err
}
