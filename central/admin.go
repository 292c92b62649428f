package central

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// The admin API (/admin/api): what platform admins do to tenants, users
// and projects, with scoped admin tokens (admintokens.go). server.go
// mounts it behind AdminAuth, a per-token rate limit and problem+json.

// AdminPath is the root of the admin API.
const AdminPath = "/admin/api"

// AdminRoutes mounts the admin API's routes; each names the scope it
// needs (RequireAdmin).
func (c *Central) AdminRoutes(r chi.Router) {
	need := c.RequireAdmin
	r.With(need("tenants:read")).Get("/tenants", httpapi.H(c.adminTenants))
	r.With(need("tenants:write")).Post("/tenants", httpapi.H(c.adminCreateTenant))
	r.With(need("tenants:read")).Get("/tenants/{id}", httpapi.H(c.adminTenant))
	r.With(need("tenants:write")).Patch("/tenants/{id}", httpapi.H(c.adminUpdateTenant))
	r.With(need("tenants:write")).Delete("/tenants/{id}", httpapi.H(c.adminDeleteTenant))
	r.With(need("users:read")).Get("/tenants/{id}/users", httpapi.H(c.adminUsers))
	r.With(need("users:write")).Post("/tenants/{id}/users", httpapi.H(c.adminAddUser))
	r.With(need("users:write")).Delete("/tenants/{id}/users/{user_id}", httpapi.H(c.adminRemoveUser))
	r.With(need("users:write")).Post("/tenants/{id}/users/{user_id}/reset-password", httpapi.H(c.adminResetPassword))
	r.With(need("projects:read")).Get("/projects", httpapi.H(c.adminProjects))
	r.With(need("projects:write")).Post("/projects", httpapi.H(c.adminCreateProject))
	r.With(need("projects:read")).Get("/projects/{id}", httpapi.H(c.adminProject))
	r.With(need("projects:write")).Patch("/projects/{id}", httpapi.H(c.adminUpdateProject))
	r.With(need("projects:admin")).Delete("/projects/{id}", httpapi.H(c.adminDeleteProject))
	r.With(need("projects:admin")).Post("/projects/{id}/suspend", httpapi.H(c.adminSuspend))
	r.With(need("projects:admin")).Post("/projects/{id}/resume", httpapi.H(c.adminResume))
	r.With(need("credits:write")).Post("/projects/{id}/credits", httpapi.H(c.adminCredits))
}

// AdminTenant is a tenant as the admin API shows it.
type AdminTenant struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Domain    string    `json:"domain"`
	Projects  int64     `json:"projects"`
	Users     int64     `json:"users"`
	CreatedAt time.Time `json:"created_at"`
}

// AdminTenants pages through every tenant by id.
func (c *Central) AdminTenants(ctx context.Context, after int64, limit int) ([]AdminTenant, error) {
	return adminTenants(ctx, c.pool, after, limit)
}

// AdminTenant loads one tenant (ErrNotFound when absent).
func (c *Central) AdminTenant(ctx context.Context, tenantID int64) (AdminTenant, error) {
	return adminTenant(ctx, c.pool, tenantID)
}

func tenantParam(r *http.Request) (int64, error) {
	return httpapi.PathID(r, "id", httpapi.NotFound("no such tenant"))
}

func (c *Central) adminTenants(w http.ResponseWriter, r *http.Request) error {
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(after int64, limit int) ([]AdminTenant, error) {
		return c.AdminTenants(r.Context(), after, limit)
	}, func(t AdminTenant) string { return httpapi.IDText(t.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, list)
}

func (c *Central) adminTenant(w http.ResponseWriter, r *http.Request) error {
	tid, err := tenantParam(r)
	if err != nil {
		return err
	}
	t, err := c.AdminTenant(r.Context(), tid)
	if err != nil {
		return notFoundAs(err, "no tenant "+strconv.FormatInt(tid, 10))
	}
	return httpapi.JSON(w, 200, t)
}

// notFoundAs gives a bare ErrNotFound the detail msg.
func notFoundAs(err error, msg string) error {
	if errors.Is(err, httpapi.ErrNotFound) {
		return httpapi.NotFound(msg)
	}
	return err
}

// AdminCreateTenantRequest is the body of POST /admin/api/tenants.
type AdminCreateTenantRequest struct {
	Name          string `json:"name" required:"true"`
	Domain        string `json:"domain" required:"true"`
	OwnerEmail    string `json:"owner_email" required:"true"`
	OwnerPassword string `json:"owner_password" required:"true"`
}

func (c *Central) adminCreateTenant(w http.ResponseWriter, r *http.Request) error {
	var req AdminCreateTenantRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	t, _, err := c.CreateTenant(r.Context(), req.Name, req.Domain, req.OwnerEmail, req.OwnerPassword)
	if err != nil {
		return err
	}
	at, err := c.AdminTenant(r.Context(), t.ID)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, at)
}

// AdminUpdateTenantRequest is the body of PATCH /admin/api/tenants/{id}.
type AdminUpdateTenantRequest struct {
	Name   *string `json:"name"`
	Domain *string `json:"domain"`
}

func (c *Central) adminUpdateTenant(w http.ResponseWriter, r *http.Request) error {
	tid, err := tenantParam(r)
	if err != nil {
		return err
	}
	var req AdminUpdateTenantRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	v.Check(req.Name == nil || strings.TrimSpace(*req.Name) != "" && len(*req.Name) <= 255, "name", "must be 1 to 255 characters")
	v.Check(req.Domain == nil || strings.TrimSpace(*req.Domain) != "" && len(*req.Domain) <= 255, "domain", "must be 1 to 255 characters")
	if err := v.Err(); err != nil {
		return err
	}
	ok, err := updateTenant(r.Context(), c.pool, tid, req.Name, req.Domain)
	if err != nil {
		return err
	}
	if !ok {
		return httpapi.NotFound("no tenant " + strconv.FormatInt(tid, 10))
	}
	t, err := c.AdminTenant(r.Context(), tid)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, t)
}

// DeleteTenant deletes a tenant that has no projects left (409
// otherwise), with its users.
func (c *Central) DeleteTenant(ctx context.Context, tenantID int64) error {
	deleted, err := deleteEmptyTenant(ctx, c.pool, tenantID)
	if err != nil {
		return err
	}
	if deleted {
		return nil
	}
	if _, err := c.AdminTenant(ctx, tenantID); err != nil {
		return notFoundAs(err, "no tenant "+strconv.FormatInt(tenantID, 10))
	}
	return httpapi.Conflict(httpapi.CodeConflict, "the tenant still has projects; delete them first")
}

func (c *Central) adminDeleteTenant(w http.ResponseWriter, r *http.Request) error {
	tid, err := tenantParam(r)
	if err != nil {
		return err
	}
	if err := c.DeleteTenant(r.Context(), tid); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// Users pages through a tenant's users by id (ErrNotFound for an unknown tenant).
func (c *Central) Users(ctx context.Context, tenantID, after int64, limit int) ([]User, error) {
	if _, err := c.AdminTenant(ctx, tenantID); err != nil {
		return nil, notFoundAs(err, "no tenant "+strconv.FormatInt(tenantID, 10))
	}
	return tenantUsers(ctx, c.pool, tenantID, after, limit)
}

func (c *Central) adminUsers(w http.ResponseWriter, r *http.Request) error {
	tid, err := tenantParam(r)
	if err != nil {
		return err
	}
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(after int64, limit int) ([]User, error) {
		return c.Users(r.Context(), tid, after, limit)
	}, func(u User) string { return httpapi.IDText(u.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, list)
}

// AdminAddUserRequest is the body of POST /admin/api/tenants/{id}/users.
type AdminAddUserRequest struct {
	Email    string `json:"email" required:"true"`
	Password string `json:"password" required:"true"`
	Name     string `json:"name"`
}

func (c *Central) adminAddUser(w http.ResponseWriter, r *http.Request) error {
	tid, err := tenantParam(r)
	if err != nil {
		return err
	}
	var req AdminAddUserRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	u, err := c.AddUser(r.Context(), tid, req.Name, req.Email, req.Password)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, u)
}

// RemoveUser removes a user from its tenant. The tenant's last user
// stays (409): a workspace nobody can log in to is managed only here.
func (c *Central) RemoveUser(ctx context.Context, tenantID, userID int64) error {
	var removed bool
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		users, err := lockTenantUsers(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		exists, err := userInTenant(ctx, tx, tenantID, userID)
		if err != nil {
			return err
		}
		if !exists {
			return httpapi.NotFound(fmt.Sprintf("no user %d in tenant %d", userID, tenantID))
		}
		if users == 1 {
			return httpapi.Conflict(httpapi.CodeConflict, "this is the tenant's last user; add another first")
		}
		err = deleteUser(ctx, tx, tenantID, userID)
		removed = err == nil
		return err
	})
	if err == nil && !removed {
		err = httpapi.ErrNotFound
	}
	return err
}

func userParam(r *http.Request) (int64, int64, error) {
	tid, err := tenantParam(r)
	if err != nil {
		return 0, 0, err
	}
	uid, err := httpapi.PathID(r, "user_id", httpapi.NotFound("no such user"))
	return tid, uid, err
}

func (c *Central) adminRemoveUser(w http.ResponseWriter, r *http.Request) error {
	tid, uid, err := userParam(r)
	if err != nil {
		return err
	}
	if err := c.RemoveUser(r.Context(), tid, uid); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// ResetPassword sets a user's password; an empty password is replaced by
// a generated one, returned (shown once). It ends every dashboard session
// of the user at once (the session epoch goes up).
func (c *Central) ResetPassword(ctx context.Context, tenantID, userID int64, password string) (string, error) {
	if password == "" {
		b := make([]byte, 20)
		id.Random(b)
		password = string(b)
	}
	if len(password) < 8 {
		return "", httpapi.Invalid("password", "must be at least 8 characters")
	}
	hash, err := HashPassword(password)
	if err != nil {
		return "", err
	}
	ok, err := setPassword(ctx, c.pool, tenantID, userID, hash)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", httpapi.NotFound(fmt.Sprintf("no user %d in tenant %d", userID, tenantID))
	}
	return password, nil
}

// AdminResetPasswordRequest is the body of a password reset; without a
// password one is generated.
type AdminResetPasswordRequest struct {
	Password string `json:"password"`
}

func (c *Central) adminResetPassword(w http.ResponseWriter, r *http.Request) error {
	tid, uid, err := userParam(r)
	if err != nil {
		return err
	}
	var req AdminResetPasswordRequest
	if r.ContentLength != 0 {
		if err := httpapi.Decode(r, &req); err != nil {
			return err
		}
	}
	pw, err := c.ResetPassword(r.Context(), tid, uid, req.Password)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, map[string]any{"user_id": uid, "password": pw})
}

// AdminProject is a project as the admin API shows it: the Project
// resource with what only the operator sees.
type AdminProject struct {
	ProjectJSON
	TenantID     int64  `json:"tenant_id"`
	Status       string `json:"status"`
	StatusReason string `json:"status_reason"`
	Shard        string `json:"shard"`
	RateRPM      *int   `json:"rate_rpm"`
	RateBurst    *int   `json:"rate_burst"`
	PlanCredits  *int64 `json:"plan_credits"`
	// Usage is the live pool's usage of the current period (GET of one
	// project only).
	Usage *credits.Usage `json:"usage,omitempty"`
}

// ToAdminProject converts a project to the admin API's shape.
func ToAdminProject(p *tenant.Project) AdminProject {
	return AdminProject{ProjectJSON: ToProjectJSON(p), TenantID: p.TenantID, Status: p.Status, StatusReason: p.StatusReason,
		Shard: p.Shard, RateRPM: p.RateRPM, RateBurst: p.RateBurst, PlanCredits: p.PlanCredits}
}

// ProjectFilter narrows the admin project list.
type ProjectFilter struct {
	TenantID int64
	Plan     string
	Status   string
}

// AdminProjects pages through every project by id with the filter.
func (c *Central) AdminProjects(ctx context.Context, f ProjectFilter, after string, limit int) ([]AdminProject, error) {
	ps, err := filteredProjects(ctx, c.pool, f, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]AdminProject, 0, len(ps))
	for _, p := range ps {
		out = append(out, ToAdminProject(p))
	}
	return out, nil
}

func (c *Central) adminProjects(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := ProjectFilter{Plan: q.Get("plan"), Status: q.Get("status")}
	var v httpapi.Validator
	if s := q.Get("tenant_id"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		v.Check(err == nil && n > 0, "tenant_id", "must be a tenant id")
		f.TenantID = n
	}
	v.Check(f.Plan == "" || tenant.ValidPlan(f.Plan), "plan", planMsg)
	v.Check(f.Status == "" || f.Status == StatusActive || f.Status == StatusSuspended || f.Status == StatusDeleting,
		"status", "must be active, suspended or deleting")
	if err := v.Err(); err != nil {
		return err
	}
	list, err := httpapi.ListOf(r, func(s string) (string, error) {
		if !id.Valid("prj_", s) {
			return "", httpapi.BadCursor()
		}
		return s, nil
	}, func(after string, limit int) ([]AdminProject, error) {
		return c.AdminProjects(r.Context(), f, after, limit)
	}, func(p AdminProject) string { return p.ID })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, list)
}

// adminProjectParam loads the project of the path.
func (c *Central) adminProjectParam(r *http.Request) (*tenant.Project, error) {
	pid := chi.URLParam(r, "id")
	if !id.Valid("prj_", pid) {
		return nil, httpapi.NotFound("no project " + pid)
	}
	p, err := c.Project(r.Context(), pid)
	return p, notFoundAs(err, "no project "+pid)
}

func (c *Central) adminProject(w http.ResponseWriter, r *http.Request) error {
	p, err := c.adminProjectParam(r)
	if err != nil {
		return err
	}
	out := ToAdminProject(p)
	if p.Status != StatusDeleting {
		sc, err := c.ScopeFor(r.Context(), p.ID)
		if err != nil {
			return err
		}
		u, err := credits.Report(r.Context(), sc, false, time.Now())
		if err != nil {
			return err
		}
		out.Usage = &u
	}
	return httpapi.JSON(w, 200, out)
}

// AdminCreateProjectRequest is the body of POST /admin/api/projects.
type AdminCreateProjectRequest struct {
	TenantID        int64    `json:"tenant_id" required:"true"`
	Name            string   `json:"name" required:"true"`
	Plan            string   `json:"plan"`
	DefaultLanguage string   `json:"default_language"`
	TargetLanguages []string `json:"target_languages"`
	Timezone        string   `json:"timezone"`
	Industry        string   `json:"industry"`
	// Shard places the project on this shard (scope shards:admin);
	// absent: the active shard with the most room.
	Shard string `json:"shard"`
}

func (c *Central) adminCreateProject(w http.ResponseWriter, r *http.Request) error {
	var req AdminCreateProjectRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if err := needPlanScope(r.Context(), req.Plan, ""); err != nil {
		return err
	}
	if req.Shard != "" && !AdminFrom(r.Context()).Allows("shards:admin") {
		return httpapi.Fail(httpapi.ErrForbidden, "this admin token lacks the scope shards:admin (needed to choose a shard)")
	}
	p, err := c.CreateProject(r.Context(), ProjectParams(req))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, ToAdminProject(p))
}

// needPlanScope refuses a plan other than free to an admin token without
// projects:admin: creating a project on a plan (POST /projects, an
// import) sets what it is allowed, the operator's scope, as for PATCH.
// why, when set, says where the plan comes from.
func needPlanScope(ctx context.Context, plan, why string) error {
	if plan == "" || plan == tenant.PlanFree || AdminFrom(ctx).Allows("projects:admin") {
		return nil
	}
	msg := "this admin token lacks the scope projects:admin (needed to choose a plan)"
	if why != "" {
		msg = "this admin token lacks the scope projects:admin (needed to choose a plan; " + why + ")"
	}
	return httpapi.Fail(httpapi.ErrForbidden, msg)
}

// Opt is a field of a PATCH body that tells absent (Set false) from
// null (Set, Value nil): null clears an override, absent keeps it.
type Opt[T any] struct {
	Set   bool
	Value *T
}

// UnmarshalJSON records that the field was present.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(b, []byte("null")) {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// AdminUpdateProjectRequest is the body of PATCH /admin/api/projects/{id}.
type AdminUpdateProjectRequest struct {
	Name        *string    `json:"name"`
	Plan        *string    `json:"plan"`
	RateRPM     Opt[int]   `json:"rate_rpm"`
	RateBurst   Opt[int]   `json:"rate_burst"`
	PlanCredits Opt[int64] `json:"plan_credits"`
}

func (c *Central) adminUpdateProject(w http.ResponseWriter, r *http.Request) error {
	p, err := c.adminProjectParam(r)
	if err != nil {
		return err
	}
	var req AdminUpdateProjectRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if (req.Plan != nil || req.RateRPM.Set || req.RateBurst.Set || req.PlanCredits.Set) && !AdminFrom(r.Context()).Allows("projects:admin") {
		return httpapi.Fail(httpapi.ErrForbidden, "this admin token lacks the scope projects:admin (needed to change the plan or the limits)")
	}
	u := ProjectUpdate{Name: req.Name, Plan: req.Plan, RateRPM: req.RateRPM, RateBurst: req.RateBurst, PlanCredits: req.PlanCredits}
	np, err := c.UpdateProject(r.Context(), p.ID, u)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, ToAdminProject(np))
}

func (c *Central) adminDeleteProject(w http.ResponseWriter, r *http.Request) error {
	p, err := c.adminProjectParam(r)
	if err != nil {
		return err
	}
	var o DeleteOptions
	for name, to := range map[string]*bool{"now": &o.Now, "export": &o.Export} {
		switch r.URL.Query().Get(name) {
		case "", "false":
		case "true":
			*to = true
		default:
			return httpapi.Invalid(name, "must be true or false")
		}
	}
	if o.Export && !AdminFrom(r.Context()).Allows("exports:write") {
		return httpapi.Fail(httpapi.ErrForbidden, "this admin token lacks the scope exports:write (needed for export=true)")
	}
	d, err := c.DeleteProject(r.Context(), p.ID, o)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 202, ToDeletedProject(d))
}

// DeletedProject is the answer of a delete: the project, now deleting,
// and the export started when export=true.
type DeletedProject struct {
	AdminProject
	Export *ExportJSON `json:"export,omitempty"`
}

// ToDeletedProject converts a Deletion to its admin API shape.
func ToDeletedProject(d Deletion) DeletedProject {
	return DeletedProject{AdminProject: ToAdminProject(d.Project), Export: d.Export}
}

// AdminSuspendRequest is the body of POST /admin/api/projects/{id}/suspend.
type AdminSuspendRequest struct {
	Reason string `json:"reason" required:"true"`
}

func (c *Central) adminSuspend(w http.ResponseWriter, r *http.Request) error {
	p, err := c.adminProjectParam(r)
	if err != nil {
		return err
	}
	var req AdminSuspendRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Reason) == "" {
		return httpapi.Invalid("reason", "is required")
	}
	sp, err := c.SuspendProject(r.Context(), p.ID, req.Reason)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, ToAdminProject(sp))
}

func (c *Central) adminResume(w http.ResponseWriter, r *http.Request) error {
	p, err := c.adminProjectParam(r)
	if err != nil {
		return err
	}
	rp, err := c.ResumeProject(r.Context(), p.ID)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, ToAdminProject(rp))
}

// AdminCreditsRequest is the body of POST /admin/api/projects/{id}/credits.
type AdminCreditsRequest struct {
	Amount int64 `json:"amount" required:"true"`
}

func (c *Central) adminCredits(w http.ResponseWriter, r *http.Request) error {
	p, err := c.adminProjectParam(r)
	if err != nil {
		return err
	}
	var req AdminCreditsRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Amount < 1 || req.Amount > 100_000_000 {
		return httpapi.Invalid("amount", "must be whole credits from 1 to 100000000")
	}
	bal, err := c.TopUp(r.Context(), p.ID, req.Amount)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, map[string]any{"project_id": p.ID, "added": req.Amount, "balance": bal})
}
