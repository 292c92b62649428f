package central

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/usage"
)

// DashboardLimits are the rate limits of the dashboard API: Login per
// client IP on each login endpoint; IP per client IP and User per
// signed-in user on every other route (the in-process requests of one
// page are one request to both: ratelimit.Bundle).
type DashboardLimits struct {
	Login    *ratelimit.PerIP
	IP, User *ratelimit.PerKey
}

// DashboardRoutes mounts the central routes (served under /central/api):
// the two login endpoints, each limited per client IP, and the dashboard
// API behind a dashboard token, limited per client IP before the token
// is checked and per user after. A path or query that is not text
// reaches no handler (httpapi.ValidURL), and is refused after the per-IP
// limit, so its 400 carries the limit's headers like any answer. The
// project routes that mirror a /v1 route are served by api, the server's
// router of /v1; projects created here get one of plans (the first by
// default).
func (c *Central) DashboardRoutes(r chi.Router, limits DashboardLimits, api http.Handler, plans []string) {
	c.dashboardPlans = plans
	// Hash the dummy password now, so the first unknown-email login costs
	// one verification like every other.
	go func() { _, _ = c.dummyHash() }()

	r.With(limits.Login.Handler("tenants-for-email"), httpapi.ValidURL).Get("/tenants-for-email", httpapi.H(c.tenantsForEmail))
	r.With(limits.Login.Handler("login"), httpapi.ValidURL).Post("/login", httpapi.H(c.postLogin))
	r.Group(func(r chi.Router) {
		r.Use(limits.IP.Handler, httpapi.ValidURL, c.DashboardAuth, limits.User.Handler)
		r.Get("/me", httpapi.H(c.dashboardMe))
		r.Post("/logout", httpapi.H(c.postLogout))
		r.Get("/projects", httpapi.H(c.dashboardProjects))
		r.Post("/projects", httpapi.H(c.dashboardCreateProject))
		r.Get("/projects/{id}", httpapi.H(c.dashboardProject))
		r.Get("/projects/{id}/usage", httpapi.H(c.dashboardUsage))
		r.Get("/projects/{id}/api-keys", httpapi.H(c.dashboardKeys))
		r.Post("/projects/{id}/api-keys", httpapi.H(c.dashboardCreateKey))
		r.Delete("/projects/{id}/api-keys/{key_id}", httpapi.H(c.dashboardRevokeKey))
		c.mirrorRoutes(r, api)
	})
}

func (c *Central) tenantsForEmail(w http.ResponseWriter, r *http.Request) error {
	// The same query runs for every email, and the answer waits until the
	// floor, so its time does not tell known emails from unknown ones.
	floor := time.NewTimer(TenantsLookupFloor)
	defer floor.Stop()
	ts, err := c.TenantsForEmail(r.Context(), r.URL.Query().Get("email"))
	select {
	case <-floor.C:
	case <-r.Context().Done():
		return nil // the caller is gone
	}
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, map[string]any{"tenants": ts})
}

// LoginRequest is the body of POST /central/api/login.
type LoginRequest struct {
	Email    string `json:"email" required:"true"`
	Password string `json:"password" required:"true"`
	TenantID *int64 `json:"tenant_id"`
}

func (c *Central) postLogin(w http.ResponseWriter, r *http.Request) error {
	var req LoginRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	res, err := c.Login(r.Context(), req.Email, req.Password, req.TenantID)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, res)
}

// Session is the user and workspace a dashboard request acts as.
type Session struct {
	User   User   `json:"user"`
	Tenant Tenant `json:"tenant"`

	// id names the session of the request's token (sign-out records
	// it); expires is when the token expires.
	id      []byte
	expires time.Time
}

// sessionJSON is GET /central/api/me: the session and the plans its user
// may give a new project (PLINTH_DASHBOARD_PLANS), the default first.
type sessionJSON struct {
	*Session
	ProjectPlans []string `json:"project_plans"`
}

type sessionKey struct{}

// SessionFrom returns the dashboard session of a request behind DashboardAuth.
func SessionFrom(ctx context.Context) (*Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(*Session)
	return s, ok
}

// DashboardAuth verifies the dashboard token (Authorization: Bearer) and
// puts the session of its user on the context; anything else, a token
// whose session has ended included, is 401 with the Bearer challenge.
func (c *Central) DashboardAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := BearerToken(r)
		if !ok {
			httpapi.WriteError(w, r, httpapi.Unauthorized("a dashboard token is required: Authorization: Bearer <token from POST /central/api/login>"))
			return
		}
		claims, err := c.ParseToken(tok)
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		s, err := c.session(r.Context(), claims)
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	})
}

// dashboardUser is the bucket of a request's user (DashboardLimits.User,
// behind DashboardAuth).
func dashboardUser(r *http.Request) string {
	if s, ok := SessionFrom(r.Context()); ok {
		return strconv.FormatInt(s.User.ID, 10)
	}
	return ""
}

func mustSession(r *http.Request) (*Session, error) {
	s, ok := SessionFrom(r.Context())
	if !ok {
		return nil, errors.New("central: dashboard route without DashboardAuth")
	}
	return s, nil
}

func (c *Central) dashboardMe(w http.ResponseWriter, r *http.Request) error {
	s, err := mustSession(r)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, sessionJSON{Session: s, ProjectPlans: c.dashboardPlans})
}

// DashboardProject is a project as the dashboard API shows it: the
// Project resource and its status (active, suspended, or deleting: being
// deleted, its data no longer readable, until the drop removes it).
type DashboardProject struct {
	ProjectJSON
	Status string `json:"status"`
}

// ToDashboardProject converts a project to the dashboard API's shape.
func ToDashboardProject(p *tenant.Project) DashboardProject {
	return DashboardProject{ProjectJSON: ToProjectJSON(p), Status: p.Status}
}

// ListProjects pages through a tenant's projects, newest first, those
// being deleted included (with their status).
func (c *Central) ListProjects(ctx context.Context, tenantID int64, page httpapi.Page) (httpapi.List[DashboardProject], error) {
	var after *time.Time
	afterID := ""
	if page.Cursor != "" {
		ts, pid, ok := strings.Cut(page.Cursor, "|")
		t, err := time.Parse(time.RFC3339Nano, ts)
		if !ok || err != nil || !id.Valid("prj_", pid) {
			return httpapi.List[DashboardProject]{}, httpapi.BadCursor()
		}
		after, afterID = &t, pid
	}
	out, err := tenantProjectsPage(ctx, c.pool, tenantID, after, afterID, page.Limit+1)
	if err != nil {
		return httpapi.List[DashboardProject]{}, err
	}
	list := httpapi.NewList(out, page.Limit, func(p *tenant.Project) string {
		return p.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + p.ID
	})
	res := httpapi.List[DashboardProject]{Data: make([]DashboardProject, 0, len(list.Data)), HasMore: list.HasMore, NextCursor: list.NextCursor}
	for _, p := range list.Data {
		res.Data = append(res.Data, ToDashboardProject(p))
	}
	return res, nil
}

func (c *Central) dashboardProjects(w http.ResponseWriter, r *http.Request) error {
	s, err := mustSession(r)
	if err != nil {
		return err
	}
	page, err := httpapi.ParsePage(r)
	if err != nil {
		return err
	}
	list, err := c.ListProjects(r.Context(), s.Tenant.ID, page)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, list)
}

// CreateProjectRequest is the body of POST /central/api/projects.
type CreateProjectRequest struct {
	Name            string   `json:"name" required:"true"`
	Plan            *string  `json:"plan"`
	DefaultLanguage *string  `json:"default_language"`
	TargetLanguages []string `json:"target_languages"`
	Timezone        *string  `json:"timezone"`
	Industry        *string  `json:"industry"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (c *Central) dashboardCreateProject(w http.ResponseWriter, r *http.Request) error {
	s, err := mustSession(r)
	if err != nil {
		return err
	}
	var req CreateProjectRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	// An explicit empty value is a bad value, not a request for the default.
	var v httpapi.Validator
	for field, p := range map[string]*string{"plan": req.Plan, "default_language": req.DefaultLanguage, "timezone": req.Timezone} {
		v.Check(p == nil || *p != "", field, "must not be empty")
	}
	if err := v.Err(); err != nil {
		return err
	}
	// A plan decides what the project may spend: a workspace user chooses
	// among those the operator allows, and the operator sets any other.
	// An unknown plan stays CreateProject's 422.
	plan := c.dashboardPlans[0]
	if req.Plan != nil {
		plan = *req.Plan
	}
	if tenant.ValidPlan(plan) && !slices.Contains(c.dashboardPlans, plan) {
		return httpapi.Fail(httpapi.ErrForbidden, "the plan "+plan+" is not one a project created from the dashboard may have (allowed: "+
			strings.Join(c.dashboardPlans, ", ")+"); the platform operator sets other plans")
	}
	p, err := c.CreateProject(r.Context(), ProjectParams{TenantID: s.Tenant.ID, Name: req.Name, Plan: plan,
		DefaultLanguage: deref(req.DefaultLanguage), TargetLanguages: req.TargetLanguages, Timezone: deref(req.Timezone), Industry: deref(req.Industry)})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, ToDashboardProject(p))
}

// tenantProject is the project of the path if it belongs to the session's
// tenant; another tenant's project is as absent as an unknown one.
func (c *Central) tenantProject(r *http.Request) (*tenant.Project, error) {
	s, err := mustSession(r)
	if err != nil {
		return nil, err
	}
	pid := chi.URLParam(r, "id")
	notFound := httpapi.NotFound("no project " + pid + " in this workspace")
	if !id.Valid("prj_", pid) {
		return nil, notFound
	}
	p, err := c.Project(r.Context(), pid)
	if errors.Is(err, httpapi.ErrNotFound) || err == nil && p.TenantID != s.Tenant.ID {
		return nil, notFound
	}
	return p, err
}

// What a project's status lets a workspace user do, as it does a key:
// an active project anything; a suspended one is read, not changed (its
// keys answer 403 project suspended); a deleting one is listed and shown
// with its status, and otherwise gone (its keys are revoked, its data
// about to be dropped). Revoking a key is never refused for the status:
// it only takes access away, and a suspended project's leaked key would
// otherwise work again when the project is resumed.

// readableProject is the project of the path, for a route that reads its
// data (usage, the mirrored reads): 404 while it is being deleted.
func (c *Central) readableProject(r *http.Request) (*tenant.Project, error) {
	p, err := c.tenantProject(r)
	if err == nil && p.Status == StatusDeleting {
		return nil, httpapi.NotFound("project " + p.ID + " is being deleted")
	}
	return p, err
}

// writableProject is the project of the path, for a route that changes
// it: 403 forbidden naming the status unless it is active.
func (c *Central) writableProject(r *http.Request) (*tenant.Project, error) {
	p, err := c.tenantProject(r)
	if err != nil {
		return nil, err
	}
	return p, statusRefusal(p)
}

// statusRefusal is the 403 of a change to a project that is not active:
// code forbidden, the detail the /v1 routes give a suspended project's
// keys, and project_status naming the status for clients to branch on.
func statusRefusal(p *tenant.Project) error {
	var detail string
	switch p.Status {
	case StatusActive:
		return nil
	case StatusSuspended:
		detail = "project suspended"
	case StatusDeleting:
		detail = "project being deleted"
	default:
		detail = "project " + p.Status
	}
	return &httpapi.Failure{Kind: httpapi.ErrForbidden, Detail: detail + ": it can be read, not changed",
		Extra: map[string]any{"project_status": p.Status}}
}

func (c *Central) dashboardProject(w http.ResponseWriter, r *http.Request) error {
	p, err := c.tenantProject(r)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, ToDashboardProject(p))
}

// dashboardUsage is the project's usage report, by the handler keys call
// (usage.Get), over a scope without a key: the live pool.
func (c *Central) dashboardUsage(w http.ResponseWriter, r *http.Request) error {
	p, err := c.readableProject(r)
	if err != nil {
		return err
	}
	sc, err := c.ScopeFor(r.Context(), p.ID)
	if err != nil {
		return err
	}
	return usage.Get(w, r, sc)
}

// dashboardKeys lists the project's active keys (none once it is being
// deleted: its keys were revoked with it).
func (c *Central) dashboardKeys(w http.ResponseWriter, r *http.Request) error {
	p, err := c.tenantProject(r)
	if err != nil {
		return err
	}
	keys, err := c.ListKeys(r.Context(), p.ID)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, httpapi.List[APIKey]{Data: keys})
}

// DashboardKeyRequest is the body of POST /central/api/projects/{id}/api-keys;
// scopes default to DefaultDashboardScopes.
type DashboardKeyRequest struct {
	Name   string   `json:"name" required:"true"`
	Scopes []string `json:"scopes"`
	Test   *bool    `json:"test"`
}

func (c *Central) dashboardCreateKey(w http.ResponseWriter, r *http.Request) error {
	p, err := c.writableProject(r)
	if err != nil {
		return err
	}
	var req DashboardKeyRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Scopes == nil {
		req.Scopes = append([]string(nil), DefaultDashboardScopes...)
	}
	test := req.Test != nil && *req.Test
	// A workspace user holds every scope of the workspace's projects.
	k, err := c.MintKey(r.Context(), p.ID, req.Name, req.Scopes, nil, test)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, k)
}

func (c *Central) dashboardRevokeKey(w http.ResponseWriter, r *http.Request) error {
	p, err := c.tenantProject(r) // whatever its status: see readableProject
	if err != nil {
		return err
	}
	if err := c.RevokeKey(r.Context(), p.ID, chi.URLParam(r, "key_id")); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
