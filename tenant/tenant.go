// Package tenant defines the Scope every per-project request and job runs
// in: the project, the key that reached it, and Tx and Read, the only
// ways to query the project's schema.
package tenant

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	// FallbackLanguages are the project's locale fallback chains
	// (Project.Chain).
	FallbackLanguages Fallbacks
	Timezone          string
	Plan              string
	PlanCredits       *int64 // enterprise allowance override
	RateRPM           *int   // enterprise rate override
	RateBurst         *int
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
	// pool is the pool of the project's shard; a move re-points it
	// (relocated), and a cached scope is shared by requests.
	pool   atomic.Pointer[pgxpool.Pool]
	path   string  // the search_path that binds the project's schema, made once by NewScope
	locate Locator // nil: the scope does not follow a move
}

// A Locator answers the pool of the shard a project is placed on now,
// read past every cache: a scope asks it when a statement finds the
// project's schema gone from its shard (Scope.Follow).
type Locator func(ctx context.Context, projectID string) (*pgxpool.Pool, error)

var schemaRe = regexp.MustCompile(`^project_[0-9]+$`)

// NewScope binds project to the pool of its shard.
func NewScope(pool *pgxpool.Pool, p *Project, k *Key) (*Scope, error) {
	if !schemaRe.MatchString(p.Schema) {
		return nil, fmt.Errorf("tenant: invalid schema %q for project %s", p.Schema, p.ID)
	}
	s := &Scope{Project: p, Key: k, path: pgx.Identifier{p.Schema}.Sanitize() + ", public"}
	s.pool.Store(pool)
	return s, nil
}

// Follow makes s follow its project to another shard (Locator), before s
// is shared; the control plane sets it on every scope it makes.
func (s *Scope) Follow(l Locator) *Scope {
	s.locate = l
	return s
}

// WithKey returns a scope of the same project, pool and Locator with key k:
// a test job's or a dashboard user's view of a project's live scope.
func (s *Scope) WithKey(k *Key) (*Scope, error) {
	n, err := NewScope(s.Pool(), s.Project, k)
	if err != nil {
		return nil, err
	}
	return n.Follow(s.locate), nil
}

// notFoundCodes are the SQLSTATEs of a name not found (see relocated).
var notFoundCodes = []string{"42P01", "42883", "42704", "3F000"}

// relocated reports whether err is what a statement answers on the shard
// a project has moved away from (its schema renamed out of the way at the
// end of the move, so what it names there is not found: a table 42P01, a
// function 42883 (outbox's webhooks_unwanted), a type 42704, or 3F000 for
// a schema-qualified name), where used is the pool the statement ran on,
// and the project's placement names another pool now; s then points at
// it (unless another request sharing s got there first), and the caller
// runs its work again there. A move fences the project's writes until the
// placement has changed, so a statement that fails this way wrote nothing.
func (s *Scope) relocated(ctx context.Context, err error, used *pgxpool.Pool) bool {
	var pe *pgconn.PgError
	if s.locate == nil || !errors.As(err, &pe) || !slices.Contains(notFoundCodes, pe.Code) {
		return false
	}
	pool, lerr := s.locate(ctx, s.Project.ID)
	if lerr != nil || pool == nil || pool == used {
		return false
	}
	s.pool.CompareAndSwap(used, pool)
	return true
}

// Pooled runs fn with the project's pool, and once more with its new pool
// when the project has moved (see relocated): for the single statements
// outside a transaction (autocommit) that some services send on the pool.
func (s *Scope) Pooled(ctx context.Context, fn func(*pgxpool.Pool) error) error {
	used := s.Pool()
	err := fn(used)
	if err != nil && s.relocated(ctx, err, used) {
		err = fn(s.Pool())
	}
	return err
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
func (s *Scope) Pool() *pgxpool.Pool { return s.pool.Load() }

// Test reports whether the request used a test key (separate credit pool).
func (s *Scope) Test() bool { return s.Key != nil && s.Key.Test }

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
