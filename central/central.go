// Package central is the control plane: tenants (workspaces), users,
// projects and their placement, API keys (format, hash, cache, revocation)
// and the routes that manage them.
package central

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
)

// Central is the control plane over the central database.
type Central struct {
	// pool is the central database, also the default shard's.
	pool *pgxpool.Pool
	// shards are the pools of the shards other than "default"
	// (shards.go), opened on first use.
	shards *shardPools
	secret []byte
	logger *slog.Logger
	keys   *keyCache
	// hashers hash presented keys (keyHasher).
	hashers *sync.Pool
	login   loginState
	// resolves counts the keys resolved, to show each request resolves
	// its key once.
	resolves atomic.Int64
	// spares wakes the spare-schema filler (KeepSpares) after a creation
	// may have claimed one.
	spares chan struct{}
	// shardsChanged is signalled when a shard was added or changed state
	// (a NOTIFY from any instance) and when LISTEN (re)starts, so the
	// server's per-shard workers follow the shards table (ShardsChanged).
	shardsChanged chan struct{}
	// cors writes the CORS answers of the public surface.
	cors publicCORS
	// life is what suspension and deletion need (SetLifecycle).
	life Lifecycle
	// dashboardPlans are the plans a workspace user may give a new
	// project, the first the default (DashboardRoutes sets them).
	dashboardPlans []string
	// archives runs exports and imports (admin_exports.go).
	archives archives
	// projectCap is the most projects of one workspace (SetProjectCap).
	projectCap int
}

// Open loads (or, on first start, generates and stores) the server secret.
// An explicit secret (PLINTH_SECRET) wins over the stored one.
func Open(ctx context.Context, pool *pgxpool.Pool, secret string, keyTTL time.Duration, logger *slog.Logger) (*Central, error) {
	if secret == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		var err error
		if secret, err = storedSecret(ctx, pool, hex.EncodeToString(b)); err != nil {
			return nil, err
		}
	}
	return &Central{pool: pool, secret: []byte(secret), logger: logger, keys: newKeyCache(keyTTL), hashers: newKeyHashers([]byte(secret)),
		login: newLoginState(), spares: make(chan struct{}, 1), cors: newPublicCORS(), shards: newShardPools([]byte(secret)),
		shardsChanged: make(chan struct{}, 1)}, nil
}

// Secret is the server secret (key-hash pepper, JWT, OAuth state, token encryption).
func (c *Central) Secret() []byte { return c.secret }

// Pool is the central database pool.
func (c *Central) Pool() *pgxpool.Pool { return c.pool }

// Tenant is a workspace.
type Tenant struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Domain    string    `json:"domain"`
	CreatedAt time.Time `json:"-"`
}

// User is a dashboard user of one tenant.
type User struct {
	ID        int64     `json:"id"`
	TenantID  int64     `json:"-"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateTenant creates a workspace and its owner user.
func (c *Central) CreateTenant(ctx context.Context, name, domain, ownerEmail, ownerPassword string) (Tenant, User, error) {
	var v httpapi.Validator
	v.Check(strings.TrimSpace(name) != "", "name", "is required")
	v.Check(strings.TrimSpace(domain) != "", "domain", "is required")
	v.Check(httpapi.ValidEmail(ownerEmail), "owner_email", "must be an email address")
	v.Check(len(ownerPassword) >= 8, "owner_password", "must be at least 8 characters")
	if err := v.Err(); err != nil {
		return Tenant{}, User{}, err
	}
	var t Tenant
	var u User
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		if t, err = insertTenant(ctx, tx, name, domain); err != nil {
			return err
		}
		u, err = addUser(ctx, tx, t.ID, name, ownerEmail, ownerPassword)
		return err
	})
	return t, u, err
}

// AddUser adds a user to a tenant. One email may belong to several tenants.
func (c *Central) AddUser(ctx context.Context, tenantID int64, name, email, password string) (User, error) {
	var v httpapi.Validator
	v.Check(httpapi.ValidEmail(email), "email", "must be an email address")
	v.Check(len(password) >= 8, "password", "must be at least 8 characters")
	if err := v.Err(); err != nil {
		return User{}, err
	}
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	u, err := addUser(ctx, c.pool, tenantID, name, email, password)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23503": // foreign_key_violation
			return User{}, httpapi.NotFound(fmt.Sprintf("no tenant %d", tenantID))
		case "23505": // unique_violation
			return User{}, httpapi.Conflict(httpapi.CodeConflict, "this email already belongs to a user of this tenant")
		}
	}
	return u, err
}

// addUser hashes the password and inserts the user, on db.
func addUser(ctx context.Context, db dbtx, tenantID int64, name, email, password string) (User, error) {
	hash, err := HashPassword(password)
	if err != nil {
		return User{}, err
	}
	return insertUser(ctx, db, tenantID, name, email, hash)
}

// ProjectParams are the fields of a new project.
type ProjectParams struct {
	TenantID        int64
	Name            string
	Plan            string
	DefaultLanguage string
	TargetLanguages []string
	Timezone        string
	Industry        string
	// Shard places the project on this shard (an operator's choice:
	// plinth project create --shard, the admin API); empty: the active
	// shard with the most room.
	Shard string
}

// planMsg is the 422 message of an unknown plan.
var planMsg = "must be one of " + strings.Join(tenant.PlanNames, ", ")

// CreateProject creates a project, places it on a shard (chooseShard) and
// provisions and migrates its schema there.
func (c *Central) CreateProject(ctx context.Context, p ProjectParams) (*tenant.Project, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	created, spare, err := c.insertProject(ctx, p, true)
	if err != nil {
		return nil, err
	}
	c.kickSpares()
	if spare {
		return created, nil // its schema was created and migrated ahead
	}
	shard, err := c.ShardPool(created.Shard)
	if err != nil {
		return nil, err
	}
	if err := provisioning.ProvisionProject(ctx, c.pool, shard, created.Schema); err != nil {
		return nil, fmt.Errorf("provision %s: %w", created.ID, err)
	}
	return created, nil
}

// check fills the defaults of a new project's fields and validates them.
func (p *ProjectParams) check() error {
	if p.Plan == "" {
		p.Plan = tenant.PlanFree
	}
	if p.DefaultLanguage == "" {
		p.DefaultLanguage = "en"
	}
	if p.Timezone == "" {
		p.Timezone = "UTC"
	}
	if p.TargetLanguages == nil {
		p.TargetLanguages = []string{}
	}
	var v httpapi.Validator
	v.Check(strings.TrimSpace(p.Name) != "" && len(p.Name) <= 255, "name", "must be 1 to 255 characters")
	v.Check(tenant.ValidPlan(p.Plan), "plan", planMsg)
	v.Check(httpapi.ValidLanguage(p.DefaultLanguage), "default_language", "must be a language code")
	v.Check(len(p.TargetLanguages) <= 50, "target_languages", "must have at most 50 entries")
	for _, l := range p.TargetLanguages {
		v.Check(httpapi.ValidLanguage(l), "target_languages", "must be language codes")
	}
	v.Check(httpapi.ValidTimezone(p.Timezone), "timezone", "must be an IANA time zone name")
	v.Check(len(p.Industry) <= 100, "industry", "must be at most 100 characters")
	return v.Err()
}

// insertProject writes the project and its placement row in one
// transaction of three round trips (four under a project cap), refusing
// a project beyond the workspace's cap (every way of creating one comes
// here: the dashboard, the admin API and CLI, imports). The placement
// takes a current spare schema when one is ready (spare is then true,
// and the placement is already migrated) when allowSpare is set;
// otherwise it names a new schema for the caller to provision.
func (c *Central) insertProject(ctx context.Context, p ProjectParams, allowSpare bool) (created *tenant.Project, spare bool, err error) {
	latest, count, err := provisioning.TenantVersion()
	if err != nil {
		return nil, false, err
	}
	if !allowSpare {
		latest, count = -1, -1 // no spare is at this level
	}
	// Projects of one workspace are inserted one at a time (the tenant row
	// lock, sent with BEGIN), so two of one name created at once cannot
	// both pick the same free slug, and two created at once cannot both
	// take the workspace's last place.
	err = pgx.BeginTxFunc(ctx, c.pool, lockTenantTx(p.TenantID), func(tx pgx.Tx) error {
		if err := c.checkProjectCap(ctx, tx, p.TenantID); err != nil {
			return err
		}
		s, err := slug.Unique(ctx, slug.Make(p.Name), func(ctx context.Context, cand string) (bool, error) {
			return projectSlugTaken(ctx, tx, p.TenantID, cand)
		})
		if err != nil {
			return err
		}
		shard, err := c.chooseShard(ctx, tx, p.Shard)
		if err != nil {
			return err
		}
		created, spare, err = insertProjectRow(ctx, tx, p, s, shard, latest, count)
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation
		return nil, false, httpapi.NotFound(fmt.Sprintf("no tenant %d", p.TenantID))
	}
	return created, spare, err
}

// SetProjectCap sets the most projects one workspace may have, those
// being deleted aside (PLINTH_MAX_PROJECTS_PER_TENANT); 0, the default of
// a Central, is no cap. NewServer and the CLI set it from the config.
func (c *Central) SetProjectCap(n int) { c.projectCap = n }

// checkProjectCap refuses a new project of a workspace that has
// projectCap projects already (403 project_limit_reached). The caller
// holds the tenant row's lock, so concurrent creations count one after
// another. A project being deleted does not count: it is on its way out
// and its keys no longer work.
func (c *Central) checkProjectCap(ctx context.Context, tx pgx.Tx, tenantID int64) error {
	if c.projectCap <= 0 {
		return nil
	}
	n, err := countTenantProjects(ctx, tx, tenantID)
	if err != nil {
		return err
	}
	if n >= c.projectCap {
		return &httpapi.Failure{Kind: httpapi.ErrForbidden, Code: httpapi.CodeProjectLimitReached,
			Detail: fmt.Sprintf("this workspace has reached its limit of %d projects (PLINTH_MAX_PROJECTS_PER_TENANT); "+
				"a new one needs the platform operator to raise the limit or delete a project", c.projectCap),
			Extra: map[string]any{"limit": c.projectCap}}
	}
	return nil
}

// Project loads a project by id (ErrNotFound when absent).
func (c *Central) Project(ctx context.Context, projectID string) (*tenant.Project, error) {
	return getProject(ctx, c.pool, projectID)
}

// Projects lists a tenant's projects, newest first.
func (c *Central) Projects(ctx context.Context, tenantID int64) ([]*tenant.Project, error) {
	return tenantProjects(ctx, c.pool, tenantID)
}

// ScopeFor binds a project, by id, with no key, to the pool of its
// shard: for jobs and the public surface. The project comes from the
// cache when fresh, else from the database.
func (c *Central) ScopeFor(ctx context.Context, projectID string) (*tenant.Scope, error) {
	countScope(ctx)
	p, ok := c.keys.project(projectID)
	if !ok {
		gen := c.keys.generation()
		var err error
		if p, err = c.Project(ctx, projectID); err != nil {
			return nil, err
		}
		c.keys.putProject(p, gen)
	}
	return c.scope(p, nil)
}

// scope binds project p with key k to the pool of its shard, following
// the project when it moves (locate).
func (c *Central) scope(p *tenant.Project, k *tenant.Key) (*tenant.Scope, error) {
	pool, err := c.ShardPool(p.Shard)
	if err != nil {
		return nil, err
	}
	s, err := tenant.NewScope(pool, p, k)
	if err != nil {
		return nil, err
	}
	return s.Follow(c.locate), nil
}

// locate is the tenant.Locator of the scopes central makes: the pool of
// the shard the project's placement names now, read from the database,
// not the cache; the project's cached entries are dropped, since a scope
// asks only when its shard no longer has the project's schema.
func (c *Central) locate(ctx context.Context, projectID string) (*pgxpool.Pool, error) {
	c.keys.invalidate("project:" + projectID)
	p, err := c.Project(ctx, projectID)
	if err != nil {
		return nil, err
	}
	return c.ShardPool(p.Shard)
}

// ProjectUpdate holds the fields of a project to change (nil: unchanged).
// Plan is the operator's: PATCH /projects/me never sets it.
type ProjectUpdate struct {
	Name            *string
	Industry        *string
	DefaultLanguage *string
	TargetLanguages *[]string
	Timezone        *string
	AllowedOrigins  *[]string
	SiteURL         *string
	// FallbackLanguages replaces the project's locale fallback chains
	// whole ({} clears them).
	FallbackLanguages *tenant.Fallbacks
	Plan              *string
	// The enterprise overrides (admin API and CLI only): absent keeps
	// one, null clears it. A plan other than enterprise has none.
	RateRPM     Opt[int]
	RateBurst   Opt[int]
	PlanCredits Opt[int64]
}

// UpdateProject applies u and tells every instance to drop cached copies.
func (c *Central) UpdateProject(ctx context.Context, projectID string, u ProjectUpdate) (*tenant.Project, error) {
	var v httpapi.Validator
	if u.Name != nil {
		v.Check(strings.TrimSpace(*u.Name) != "" && len(*u.Name) <= 255, "name", "must be 1 to 255 characters")
	}
	if u.Industry != nil {
		v.Check(len(*u.Industry) <= 100, "industry", "must be at most 100 characters")
	}
	if u.DefaultLanguage != nil {
		v.Check(httpapi.ValidLanguage(*u.DefaultLanguage), "default_language", "must be a language code")
	}
	if u.TargetLanguages != nil {
		v.Check(len(*u.TargetLanguages) <= 50, "target_languages", "must have at most 50 entries")
		for _, l := range *u.TargetLanguages {
			v.Check(httpapi.ValidLanguage(l), "target_languages", "must be language codes")
		}
	}
	if u.Timezone != nil {
		v.Check(httpapi.ValidTimezone(*u.Timezone), "timezone", "must be an IANA time zone name")
	}
	if u.AllowedOrigins != nil {
		checkOrigins(&v, *u.AllowedOrigins)
	}
	if u.SiteURL != nil {
		checkSiteURL(&v, *u.SiteURL)
	}
	if u.FallbackLanguages != nil {
		tenant.CheckFallbacks(&v, "fallback_languages", *u.FallbackLanguages)
	}
	if u.Plan != nil {
		v.Check(tenant.ValidPlan(*u.Plan), "plan", planMsg)
	}
	if u.RateRPM.Value != nil {
		v.Check(*u.RateRPM.Value >= 1 && *u.RateRPM.Value <= 1_000_000, "rate_rpm", "must be from 1 to 1000000")
	}
	if u.RateBurst.Value != nil {
		v.Check(*u.RateBurst.Value >= 1 && *u.RateBurst.Value <= 1_000_000, "rate_burst", "must be from 1 to 1000000")
	}
	if u.PlanCredits.Value != nil {
		v.Check(*u.PlanCredits.Value >= 0 && *u.PlanCredits.Value <= 1_000_000_000, "plan_credits", "must be from 0 to 1000000000")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	overrides := u.RateRPM.Value != nil || u.RateBurst.Value != nil || u.PlanCredits.Value != nil
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// The overrides belong to enterprise projects: setting one on
		// another plan is refused, and leaving enterprise clears them
		// (Project.Limits would apply them whatever the plan). A change of
		// anything else leaves them as they are.
		plan, err := lockProjectPlan(ctx, tx, projectID)
		if err != nil {
			return err
		}
		if u.Plan != nil {
			plan = *u.Plan
		}
		if overrides && plan != tenant.PlanEnterprise {
			return httpapi.Invalid("plan", "rate_rpm, rate_burst and plan_credits are set only on enterprise projects")
		}
		return updateProject(ctx, tx, projectID, u)
	})
	if err != nil {
		return nil, err
	}
	c.notify(ctx, "project:"+projectID)
	return c.Project(ctx, projectID)
}

// SetRateOverride sets an enterprise project's own limits (nil clears).
func (c *Central) SetRateOverride(ctx context.Context, projectID string, rpm, burst *int, planCredits *int64) error {
	err := setRateOverride(ctx, c.pool, projectID, rpm, burst, planCredits)
	c.notify(ctx, "project:"+projectID)
	return err
}

// notify tells every instance (this one included) to drop cached entries.
func (c *Central) notify(ctx context.Context, payload string) {
	c.keys.invalidate(payload)
	if err := notifyCentral(ctx, c.pool, payload); err != nil {
		c.logger.WarnContext(ctx, "notify failed; other instances rely on the cache TTL", "err", err)
	}
}

// Listen keeps a LISTEN connection and applies invalidations from every
// instance until ctx ends. On a lost connection it drops the whole cache
// (notifications may have been missed) and reconnects.
func (c *Central) Listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		c.keys.clear()
		c.logger.Warn("central LISTEN connection lost; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *Central) listenOnce(ctx context.Context) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := listenCentral(ctx, conn); err != nil {
		return err
	}
	defer unlistenCentral(context.WithoutCancel(ctx), conn)
	c.keys.clear()   // anything cached before LISTEN began may be stale
	c.signalShards() // and a shard added before may have been missed
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if strings.HasPrefix(n.Payload, "shard:") {
			c.signalShards()
			continue
		}
		c.keys.invalidate(n.Payload)
	}
}
