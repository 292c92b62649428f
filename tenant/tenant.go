// Package tenant defines the Scope every per-project request and job runs
// in: the project, the key that reached it, and Tx and Read, the only
// ways to query the project's schema.
package tenant

import (
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
