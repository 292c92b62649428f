package tenant

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Read runs one query in the project's schema in a single network round
// trip (ReadBatch with one query): fn reads the rows, and Read closes them.
func (s *Scope) Read(ctx context.Context, sql string, args []any, fn func(pgx.Rows) error) error {
	var b ReadBatch
	b.Queue(sql, args, fn)
	return s.ReadBatch(ctx, &b)
}

// A ReadBatch is the queries of one read-only request, for
// Scope.ReadBatch to send together.
type ReadBatch struct {
	queries []batchQuery
}

type batchQuery struct {
	sql  string
	args []any
	fn   func(pgx.Rows) error
}

// Queue adds a query with its arguments; fn reads its rows, in the order
// queued, once every query has been sent. A query may not depend on the
// result of another: each is sent before any answer is back. fn may run
// twice, when the batch is sent again (see ReadBatch), so it must set
// what it reads rather than add to it.
func (b *ReadBatch) Queue(sql string, args []any, fn func(pgx.Rows) error) {
	b.queries = append(b.queries, batchQuery{sql, args, fn})
}

// ReadBatch runs the queries of b in the project's schema in a single
// network round trip, for the read paths: no transaction of their own, no
// BEGIN or COMMIT.
//
// The schema binding: the search_path setting and the queries are sent as
// one pipeline ending in one Sync, which PostgreSQL runs as one implicit
// transaction. set_config(..., true) holds for the statements after it
// and ends with the Sync, whatever happens, so a pooled connection never
// keeps a project's search_path. Each query is parsed after it in the
// same pipeline, so its names resolve in the project's schema; a query
// is prepared on the connection on first use (Parse in the pipeline), and
// PostgreSQL re-parses a prepared statement whenever the search_path it
// runs under differs from the one it was parsed under, so a statement
// prepared for one project never reads another's tables.
//
// Arguments travel in text format; results come back in binary. Each
// statement takes its own snapshot (READ COMMITTED), as the reads of
// separate requests would. When the connection's prepared statements are
// not what ReadBatch believed (deallocated, or a statement whose result
// type changed under a migration), it forgets them and sends the batch
// once more.
//
// A read that finds the project's schema gone because the project has
// moved to another shard is sent once more there (Scope.relocated).
func (s *Scope) ReadBatch(ctx context.Context, b *ReadBatch) error {
	used := s.Pool()
	err := s.readBatch(ctx, used, b)
	if err != nil && s.relocated(ctx, err, used) {
		err = s.readBatch(ctx, s.Pool(), b)
	}
	return err
}

func (s *Scope) readBatch(ctx context.Context, pool *pgxpool.Pool, b *ReadBatch) error {
	path, err := s.searchPath()
	if err != nil {
		return err
	}
	c, err := pool.Acquire(acquireCtx(ctx))
	if err != nil {
		return err
	}
	defer c.Release()
	err = readBatch(ctx, c.Conn(), path, b)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "26000" || pe.Code == "0A000") {
		delete(c.Conn().PgConn().CustomData(), readStatementsKey)
		err = readBatch(ctx, c.Conn(), path, b)
	}
	return err
}

// readStatementsKey keeps, in a connection's CustomData, the statements
// ReadBatch prepared on it, by SQL text.
const readStatementsKey = "plinth.tenant.read"

type readStatement struct {
	name  string
	oids  []uint32 // the parameter types it was prepared with
	ready bool     // its Parse succeeded
}

// what ReadBatch expects back from each message it sent, in order.
type readResult struct {
	query    int            // index of the query whose rows come back, or -1
	prepared *readStatement // a Parse's statement, to mark ready
}

func readBatch(ctx context.Context, conn *pgx.Conn, path string, b *ReadBatch) error {
	pl, expect, session, err := sendBatch(ctx, conn, path, b.queries)
	if err != nil {
		return err
	}
	for _, e := range expect {
		rows, err := nextResult(pl, conn, e)
		if err != nil {
			pl.Close()
			return err
		}
		if rows == nil {
			continue
		}
		err = b.queries[e.query].fn(rows)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			pl.Close()
			return err
		}
	}
	if err := pl.Close(); err != nil {
		return err
	}
	if session {
		bound(conn, path)
	}
	return nil
}

// sendBatch sends queries under the search_path path as one pipeline,
// after the statement that sets it when the connection is not bound to
// path already (see binding), and returns the pipeline with what to
// expect back from it, and whether the read leaves the binding on the
// connection (bound records it once the read succeeded). The binding is
// a prepared statement of the connection like the queries, so
// PostgreSQL parses and plans it once per connection, not once per read.
func sendBatch(ctx context.Context, conn *pgx.Conn, path string, queries []batchQuery) (pl *pgconn.Pipeline, expect []readResult, session bool, err error) {
	tm := conn.TypeMap()
	pc := conn.PgConn()
	stmts, _ := pc.CustomData()[readStatementsKey].(map[string]*readStatement)
	if stmts == nil {
		stmts = map[string]*readStatement{}
		pc.CustomData()[readStatementsKey] = stmts
	}
	// Encode first: an argument that cannot be sent fails before
	// anything is.
	vals := make([][][]byte, len(queries))
	oids := make([][]uint32, len(queries))
	for q, bq := range queries {
		vals[q] = make([][]byte, len(bq.args))
		oids[q] = make([]uint32, len(bq.args))
		for i, a := range bq.args {
			var err error
			if oids[q][i], vals[q][i], err = encodeArg(tm, a); err != nil {
				return nil, nil, false, err
			}
		}
	}
	pl = pc.StartPipeline(ctx)
	expect = make([]readResult, 0, 1+len(queries))
	send := func(sql string, vals [][]byte, oids []uint32, query int) {
		st, ok := stmts[sql]
		switch {
		case !ok:
			// Close first: a statement of this name may outlive what
			// this connection's map remembers (closing none is no error).
			st = &readStatement{name: "plinth_read_" + strconv.Itoa(len(stmts)), oids: oids}
			stmts[sql] = st
			pl.SendDeallocate(st.name)
			pl.SendPrepare(st.name, sql, st.oids)
			pl.SendQueryPrepared(st.name, vals, nil, binaryResults)
			expect = append(expect, readResult{query: -1}, readResult{query: -1, prepared: st}, readResult{query: query})
		case st.ready && slices.Equal(st.oids, oids):
			pl.SendQueryPrepared(st.name, vals, nil, binaryResults)
			expect = append(expect, readResult{query: query})
		default:
			// Other parameter types, or a statement that failed to
			// prepare: unnamed, parsed for this use only.
			pl.SendQueryParams(sql, vals, oids, nil, binaryResults)
			expect = append(expect, readResult{query: query})
		}
	}
	bind, session := binding(conn, path)
	if bind != "" {
		send(bind, [][]byte{[]byte(path)}, bindOIDs, -1)
	}
	for q, bq := range queries {
		send(bq.sql, vals[q], oids[q], q)
	}
	if err := pl.Sync(); err != nil {
		pl.Close()
		return nil, nil, false, err
	}
	return pl, expect, session, nil
}

// bindOIDs are the parameter types of a read's binding: text, typed by
// PostgreSQL.
var bindOIDs = []uint32{0}

// nextResult reads the answer e of pl: the rows of a query, or nil for
// the answers that only tell success.
func nextResult(pl *pgconn.Pipeline, conn *pgx.Conn, e readResult) (pgx.Rows, error) {
	res, err := pl.GetResults()
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case *pgconn.StatementDescription:
		e.prepared.ready = true
	case *pgconn.ResultReader:
		if e.query >= 0 {
			return pgx.RowsFromResultReader(conn.TypeMap(), r), nil
		}
		if _, err := r.Close(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// encodeArg encodes a for a read in text format, with the type the
// statement declares for it: none (0) but for bytes, so that PostgreSQL
// types each parameter from the statement, as pgx's own queries have it
// do (a string compared with an enum, a uuid or a date column is that
// type's literal), and a bytea is not read as another type's text.
// Encoding into a non-nil buffer keeps an empty string apart from NULL,
// which Encode answers with nil.
func encodeArg(tm *pgtype.Map, a any) (oid uint32, val []byte, err error) {
	if a == nil {
		return 0, nil, nil
	}
	t, ok := tm.TypeForValue(a)
	if !ok {
		// A named type (type Status string): the type of its kind,
		// which Encode reaches by unwrapping it.
		if t, ok = typeOfKind(tm, a); !ok {
			return 0, nil, fmt.Errorf("tenant: a read cannot send a %T", a)
		}
	}
	if val, err = tm.Encode(t.OID, pgtype.TextFormatCode, a, []byte{}); err != nil {
		return 0, nil, err
	}
	if t.OID == pgtype.ByteaOID {
		oid = pgtype.ByteaOID
	}
	return oid, val, nil
}

// typeOfKind is the type of the basic kind under a's named type.
func typeOfKind(tm *pgtype.Map, a any) (*pgtype.Type, bool) {
	v := reflect.ValueOf(a)
	for v.Kind() == reflect.Pointer {
		v = reflect.New(v.Type().Elem()).Elem()
	}
	var oid uint32
	switch v.Kind() {
	case reflect.String:
		oid = pgtype.TextOID
	case reflect.Bool:
		oid = pgtype.BoolOID
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		oid = pgtype.Int8OID
	default:
		return nil, false
	}
	return tm.TypeForOID(oid)
}

// A Querier reads rows: a transaction (pgx.Tx), or the Reader of a
// read-only request. The store functions a read shares with the writes
// take one, so a GET reads with the same code a write's transaction does.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Reader returns the Querier of a read-only request: each query runs in
// the project's schema in one round trip, as Read runs it (schema binding
// and query in one pipeline, no transaction), and its rows are read as
// they come. Queries that do not depend on each other are one round trip
// together only in a ReadBatch.
func (s *Scope) Reader() Querier { return reader{s} }

type reader struct{ s *Scope }

// Query sends sql and returns its rows; the connection goes back to the
// pool when they are closed (or read to the end).
func (r reader) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	used := r.s.Pool()
	rows, err := r.query(ctx, used, sql, args)
	if err != nil && r.s.relocated(ctx, err, used) {
		rows, err = r.query(ctx, r.s.Pool(), sql, args)
	}
	return rows, err
}

func (r reader) query(ctx context.Context, pool *pgxpool.Pool, sql string, args []any) (pgx.Rows, error) {
	path, err := r.s.searchPath()
	if err != nil {
		return nil, err
	}
	c, err := pool.Acquire(acquireCtx(ctx))
	if err != nil {
		return nil, err
	}
	rows, err := stream(ctx, c.Conn(), path, sql, args)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "26000" || pe.Code == "0A000") {
		delete(c.Conn().PgConn().CustomData(), readStatementsKey)
		rows, err = stream(ctx, c.Conn(), path, sql, args)
	}
	if err != nil {
		c.Release()
		return nil, err
	}
	rows.release = c.Release
	return rows, nil
}

// stream sends sql and reads up to its first row, so that an error of
// the statement itself (one ReadBatch sends again) comes back here, not
// from the rows.
func stream(ctx context.Context, conn *pgx.Conn, path, sql string, args []any) (*streamRows, error) {
	pl, expect, session, err := sendBatch(ctx, conn, path, []batchQuery{{sql: sql, args: args}})
	if err != nil {
		return nil, err
	}
	for _, e := range expect {
		rows, err := nextResult(pl, conn, e)
		if err != nil {
			pl.Close()
			return nil, err
		}
		if rows == nil {
			continue
		}
		sr := &streamRows{Rows: rows, pl: pl, first: rows.Next()}
		if session {
			sr.conn, sr.path = conn, path
		}
		if !sr.first {
			if err := rows.Err(); err != nil {
				rows.Close()
				pl.Close()
				return nil, err
			}
		}
		return sr, nil
	}
	pl.Close()
	return nil, errors.New("tenant: a read's pipeline answered no rows")
}

// streamRows are the rows of a Reader's query: the pipeline they come
// from is closed and the connection released with them.
type streamRows struct {
	pgx.Rows
	pl      *pgconn.Pipeline
	conn    *pgx.Conn // with path: the read leaves its binding on conn (bound, once it succeeded)
	path    string
	release func()
	first   bool // the first row is read already (stream), not yet handed out
	closed  bool
	err     error
}

func (r *streamRows) Next() bool {
	if r.first {
		r.first = false
		return true
	}
	if r.closed {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *streamRows) Close() {
	if r.closed {
		return
	}
	r.closed, r.first = true, false
	r.Rows.Close()
	if err := r.pl.Close(); err != nil {
		r.err = err
	}
	if r.conn != nil && r.err == nil && r.Rows.Err() == nil {
		bound(r.conn, r.path)
	}
	r.release()
}

func (r *streamRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// QueryRow is Query of one row, as pgx.Tx's: pgx.ErrNoRows when there
// is none.
func (r reader) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := r.Query(ctx, sql, args...)
	return row{rows, err}
}

type row struct {
	rows pgx.Rows
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// binaryResults asks for every result column in binary, which pgx
// decodes without parsing text (timestamps keep their UTC location).
var binaryResults = []int16{pgtype.BinaryFormatCode}
