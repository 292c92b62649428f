// Package tenant defines the Scope every per-project request and job runs
// in: the project, the key that reached it, and Tx and Read, the only
// ways to query the project's schema.
package tenant

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
	SiteURL string
	// Status is active, suspended (by a platform admin: keys 403, public
	// surface 404, jobs wait) or deleting (keys revoked, schema renamed).
	Status       string
	StatusReason string
	CreatedAt    time.Time
	Shard        string
	Schema       string
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
	path    string // the search_path that binds the project's schema, made once by NewScope
}

var schemaRe = regexp.MustCompile(`^project_[0-9]+$`)

// NewScope binds project to the pool of its shard.
func NewScope(pool *pgxpool.Pool, p *Project, k *Key) (*Scope, error) {
	if !schemaRe.MatchString(p.Schema) {
		return nil, fmt.Errorf("tenant: invalid schema %q for project %s", p.Schema, p.ID)
	}
	return &Scope{Project: p, Key: k, pool: pool, path: pgx.Identifier{p.Schema}.Sanitize() + ", public"}, nil
}

// searchPath is the search_path of the project's schema; a Scope not made
// by NewScope has none, and reads nothing.
func (s *Scope) searchPath() (string, error) {
	if s.path == "" {
		return "", fmt.Errorf("tenant: a scope of project %s not made by NewScope", s.Project.ID)
	}
	return s.path, nil
}

// Pool is the shard pool of the project, for work that is not tenant data
// (River inserts, LISTEN).
func (s *Scope) Pool() *pgxpool.Pool { return s.pool }

// Test reports whether the request used a test key (separate credit pool).
func (s *Scope) Test() bool { return s.Key != nil && s.Key.Test }

// A Finisher is work a transaction keeps for its end (AtCommit). The
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
// transaction that is not Scope.Tx's (AtCommit answered false).
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

// AtCommit returns the finisher registered under key on tx, registering
// the one newFinisher returns on first use, so that it runs as the last
// statements of the transaction, just before its commit hook and COMMIT
// (with COMMIT, when they are sealed). It is for work that takes a row
// lock many transactions contend for (the credit pool): taken last, the
// lock is held for the commit only, not for the whole transaction; and
// for work whose statements do
// not depend on the transaction's others (the webhook outbox), which then
// shares their round trip. ok is false when tx is not a transaction of
// Scope.Tx (a job's own, a savepoint): the caller then does the work at
// once (Finish).
func AtCommit(tx pgx.Tx, key any, newFinisher func() Finisher) (f Finisher, ok bool) {
	t, ok := tx.(*lazyTx)
	if !ok {
		return nil, false
	}
	for _, kf := range t.finishers {
		if kf.key == key {
			return kf.v, true
		}
	}
	f = newFinisher()
	t.finishers = append(t.finishers, keyedFinisher{key, f})
	return f, true
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
