package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
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
func (s *Scope) ReadBatch(ctx context.Context, b *ReadBatch) error {
	if !schemaRe.MatchString(s.Project.Schema) {
		return fmt.Errorf("tenant: invalid schema %q for project %s", s.Project.Schema, s.Project.ID)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	err = s.readBatch(ctx, c.Conn(), b)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "26000" || pe.Code == "0A000") {
		delete(c.Conn().PgConn().CustomData(), readStatementsKey)
		err = s.readBatch(ctx, c.Conn(), b)
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

func (s *Scope) readBatch(ctx context.Context, conn *pgx.Conn, b *ReadBatch) error {
	tm := conn.TypeMap()
	pc := conn.PgConn()
	stmts, _ := pc.CustomData()[readStatementsKey].(map[string]*readStatement)
	if stmts == nil {
		stmts = map[string]*readStatement{}
		pc.CustomData()[readStatementsKey] = stmts
	}
	// Encode first: an argument that cannot be sent fails before
	// anything is.
	vals := make([][][]byte, len(b.queries))
	oids := make([][]uint32, len(b.queries))
	for q, bq := range b.queries {
		vals[q] = make([][]byte, len(bq.args))
		oids[q] = make([]uint32, len(bq.args))
		for i, a := range bq.args {
			t, ok := tm.TypeForValue(a)
			if !ok {
				return fmt.Errorf("tenant: ReadBatch cannot send a %T", a)
			}
			oids[q][i] = t.OID
			var err error
			if vals[q][i], err = tm.Encode(t.OID, pgtype.TextFormatCode, a, nil); err != nil {
				return err
			}
		}
	}
	pl := pc.StartPipeline(ctx)
	pl.SendQueryParams("SELECT set_config('search_path', $1, true)", [][]byte{[]byte(pgx.Identifier{s.Project.Schema}.Sanitize() + ", public")}, nil, nil, nil)
	expect := []readResult{{query: -1}}
	for q, bq := range b.queries {
		st, ok := stmts[bq.sql]
		switch {
		case !ok:
			// Close first: a statement of this name may outlive what
			// this connection's map remembers (closing none is no error).
			st = &readStatement{name: "plinth_read_" + strconv.Itoa(len(stmts)), oids: oids[q]}
			stmts[bq.sql] = st
			pl.SendDeallocate(st.name)
			pl.SendPrepare(st.name, bq.sql, st.oids)
			pl.SendQueryPrepared(st.name, vals[q], nil, binaryResults)
			expect = append(expect, readResult{query: -1}, readResult{query: -1, prepared: st}, readResult{query: q})
		case st.ready && slices.Equal(st.oids, oids[q]):
			pl.SendQueryPrepared(st.name, vals[q], nil, binaryResults)
			expect = append(expect, readResult{query: q})
		default:
			// Other parameter types, or a statement that failed to
			// prepare: unnamed, parsed for this use only.
			pl.SendQueryParams(bq.sql, vals[q], oids[q], nil, binaryResults)
			expect = append(expect, readResult{query: q})
		}
	}
	if err := pl.Sync(); err != nil {
		pl.Close()
		return err
	}
	for _, e := range expect {
		res, err := pl.GetResults()
		if err != nil {
			pl.Close()
			return err
		}
		switch r := res.(type) {
		case *pgconn.StatementDescription:
			e.prepared.ready = true
		case *pgconn.ResultReader:
			if e.query < 0 {
				if _, err := r.Close(); err != nil {
					pl.Close()
					return err
				}
				continue
			}
			rows := pgx.RowsFromResultReader(tm, r)
			err := b.queries[e.query].fn(rows)
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
			if err != nil {
				pl.Close()
				return err
			}
		}
	}
	return pl.Close()
}

// binaryResults asks for every result column in binary, which pgx
// decodes without parsing text (timestamps keep their UTC location).
var binaryResults = []int16{pgtype.BinaryFormatCode}
