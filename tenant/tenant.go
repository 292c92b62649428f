// Package tenant defines the Scope every per-project request and job runs
// in: the project, the key that reached it, and Tx, the only way to query
// the project's schema.
package tenant

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Project is a project as the central plane knows it.
type Project struct {
	ID              string
	TenantID        int64
	Name            string
	Slug            string
	Industry        string
	DefaultLanguage string
	TargetLanguages []string
	Timezone        string
	Plan            string
	PlanCredits     *int64 // enterprise allowance override
	RateRPM         *int   // enterprise rate override
	RateBurst       *int
	// AllowedOrigins are the browser origins (https://bakery.example)
	// the public surface answers; empty: any origin.
	AllowedOrigins []string
	// SiteURL is the public address of the project's website, the base of
	// its sitemap's URLs; empty when not set.
	SiteURL   string
	CreatedAt time.Time
	Shard     string
	Schema    string
}

// Key is the API key a request came with (nil on the public surface).
type Key struct {
	ID     string
	Scopes []string
	Test   bool
}

// Scope binds a request or job to one project.
type Scope struct {
	Project *Project
	Key     *Key
	pool    *pgxpool.Pool
}

var schemaRe = regexp.MustCompile(`^project_[0-9]+$`)

// NewScope binds project to the pool of its shard.
func NewScope(pool *pgxpool.Pool, p *Project, k *Key) (*Scope, error) {
	if !schemaRe.MatchString(p.Schema) {
		return nil, fmt.Errorf("tenant: invalid schema %q for project %s", p.Schema, p.ID)
	}
	return &Scope{Project: p, Key: k, pool: pool}, nil
}

// Pool is the shard pool of the project, for work that is not tenant data
// (River inserts, LISTEN).
func (s *Scope) Pool() *pgxpool.Pool { return s.pool }

// Test reports whether the request used a test key (separate credit pool).
func (s *Scope) Test() bool { return s.Key != nil && s.Key.Test }

// Tx runs fn in a transaction whose search_path is the project's schema
// (then public). It commits when fn returns nil and rolls back otherwise.
// A commit hook ctx carries (WithCommitHook) runs after fn, in the same
// transaction; its error rolls the transaction back.
//
// BEGIN and SET LOCAL travel in one simple-protocol message, so binding the
// schema costs no round trip of its own; SET LOCAL ends with the
// transaction, so a pooled connection never keeps a project's search_path.
func (s *Scope) Tx(ctx context.Context, fn func(pgx.Tx) error) error {
	if !schemaRe.MatchString(s.Project.Schema) {
		return fmt.Errorf("tenant: invalid schema %q for project %s", s.Project.Schema, s.Project.ID)
	}
	if hook, _ := ctx.Value(commitHookKey).(CommitHook); hook != nil {
		body := fn
		fn = func(tx pgx.Tx) error {
			if err := body(tx); err != nil {
				return err
			}
			return hook(ctx, s, tx)
		}
	}
	begin := "BEGIN; SET LOCAL search_path TO " + pgx.Identifier{s.Project.Schema}.Sanitize() + ", public"
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{BeginQuery: begin}, fn)
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

// Read runs one query in the project's schema in a single network round
// trip, for hot read paths (the public surface). The search_path setting
// and the query are sent as one pipeline ending in one Sync, which
// PostgreSQL runs as one implicit transaction: the setting holds for the
// query (parsed after it, as an unnamed statement) and ends with it. args
// are sent in text format; fn reads the rows, and Read closes them.
func (s *Scope) Read(ctx context.Context, sql string, args []any, fn func(pgx.Rows) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	tm := c.Conn().TypeMap()
	vals := make([][]byte, len(args))
	oids := make([]uint32, len(args))
	for i, a := range args {
		t, ok := tm.TypeForValue(a)
		if !ok {
			return fmt.Errorf("tenant: Read cannot send a %T", a)
		}
		oids[i] = t.OID
		if vals[i], err = tm.Encode(t.OID, pgtype.TextFormatCode, a, nil); err != nil {
			return err
		}
	}
	b := &pgconn.Batch{}
	b.ExecParams("SELECT set_config('search_path', $1, true)", [][]byte{[]byte(pgx.Identifier{s.Project.Schema}.Sanitize() + ", public")}, nil, nil, nil)
	b.ExecParams(sql, vals, oids, nil, nil)
	mrr := c.Conn().PgConn().ExecBatch(ctx, b)
	if !mrr.NextResult() {
		return errors.Join(mrr.Close(), errors.New("tenant: Read got no result"))
	}
	if _, err := mrr.ResultReader().Close(); err != nil {
		mrr.Close()
		return err
	}
	if !mrr.NextResult() {
		return errors.Join(mrr.Close(), errors.New("tenant: Read got no rows"))
	}
	rows := pgx.RowsFromResultReader(tm, mrr.ResultReader())
	err = fn(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if cerr := mrr.Close(); err == nil {
		err = cerr
	}
	return err
}

// Allows reports whether the key grants scope ("pillar:permission"). A key
// scope "*" grants everything; "pillar:*" grants every permission of the pillar.
func (s *Scope) Allows(scope string) bool {
	if s.Key == nil {
		return false
	}
	return Grants(s.Key.Scopes, scope)
}

// Grants reports whether the scope set held grants scope.
func Grants(held []string, scope string) bool {
	pillar, _, _ := strings.Cut(scope, ":")
	for _, h := range held {
		if h == "*" || h == scope || h == pillar+":*" {
			return true
		}
	}
	return false
}

// Require returns 403 forbidden naming scope when the key lacks it.
func (s *Scope) Require(scope string) error {
	if !s.Allows(scope) {
		return httpapi.Forbidden(scope)
	}
	return nil
}
