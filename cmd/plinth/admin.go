package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// The platform admins' commands: admin tokens, and the CLI mirror of the
// admin API (/admin/api). Each prints one JSON object; lists print a page
// {data, has_more, next_cursor} as the API does.

type adminTokenCreateCmd struct {
	Name      string `required:"" help:"Token name, to tell tokens apart."`
	Scopes    string `required:"" help:"Comma-separated scopes: tenants:read|write, users:read|write, projects:read|write|admin, credits:write, exports:read|write, shards:read|admin, resource:* or *."`
	ExpiresIn string `name:"expires-in" help:"Lifetime, after which the token is refused: days (90d) or a Go duration (12h); unset: until revoked."`
	databaseOnly
}

func (c *adminTokenCreateCmd) Run(e *env) error {
	var expires *time.Time
	if c.ExpiresIn != "" {
		d, err := lifetime(c.ExpiresIn)
		if err != nil {
			return err
		}
		at := time.Now().Add(d)
		expires = &at
	}
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		return cen.MintAdminToken(ctx, c.Name, list(c.Scopes), expires)
	})
}

// lifetime reads --expires-in: whole days written Nd, or a Go duration.
func lifetime(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
		if n > 100_000 {
			err = errors.New("too long")
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--expires-in: want days (90d) or a duration (12h) above zero, got %q", s)
	}
	return d, nil
}

type adminTokenListCmd struct {
	databaseOnly
}

func (adminTokenListCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		toks, err := cen.AdminTokens(ctx)
		return map[string]any{"data": toks}, err
	})
}

type adminTokenRevokeCmd struct {
	ID string `required:"" help:"Token id (adm_…)."`
	databaseOnly
}

func (c *adminTokenRevokeCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		if err := cen.RevokeAdminToken(ctx, c.ID); err != nil {
			return nil, err
		}
		return map[string]any{"id": c.ID, "revoked": true}, nil
	})
}

// pageFlags are the paging flags of the list commands.
type pageFlags struct {
	Limit  int    `default:"20" help:"Items per page, 1 to 100."`
	Cursor string `help:"next_cursor of the previous page."`
}

// page checks the flags as the API checks ?limit and ?cursor.
func (f pageFlags) page() (httpapi.Page, error) {
	p := httpapi.Page{Limit: f.Limit}
	if f.Limit < 1 || f.Limit > 100 {
		return p, fmt.Errorf("--limit: want 1 to 100, got %d", f.Limit)
	}
	if f.Cursor != "" {
		c, err := httpapi.DecodeCursor(f.Cursor)
		if err != nil {
			return p, fmt.Errorf("--cursor: not a cursor this command printed")
		}
		p.Cursor = c
	}
	return p, nil
}

// idPage is page for the lists ordered by id, whose cursor is the id of
// the last row shown (after).
func (f pageFlags) idPage() (p httpapi.Page, after int64, err error) {
	if p, err = f.page(); err != nil {
		return p, 0, err
	}
	if after, err = httpapi.CursorID(p.Cursor); err != nil {
		return p, 0, fmt.Errorf("--cursor: not a cursor this command printed")
	}
	return p, after, nil
}

type projectListCmd struct {
	pageFlags
	Tenant int64  `help:"Only this workspace's projects."`
	Plan   string `help:"Only projects on this plan."`
	Status string `enum:",active,suspended,deleting" default:"" help:"Only projects in this status: active, suspended or deleting."`
	remoteFlags
}

func (c *projectListCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		pg, err := c.page()
		if err != nil {
			return nil, err
		}
		rows, err := cen.AdminProjects(ctx, central.ProjectFilter{TenantID: c.Tenant, Plan: c.Plan, Status: c.Status}, pg.Cursor, pg.Limit+1)
		if err != nil {
			return nil, err
		}
		return httpapi.NewList(rows, pg.Limit, func(p central.AdminProject) string { return p.ID }), nil
	})
}

func (c *projectListCmd) Remote(e *env, api *adminClient) error {
	if _, err := c.page(); err != nil {
		return err
	}
	var tenant string
	if c.Tenant != 0 {
		tenant = strconv.FormatInt(c.Tenant, 10)
	}
	var l httpapi.List[central.AdminProject]
	if err := api.do(e.ctx, "GET", "/projects"+pageQuery(c.pageFlags, url.Values{"tenant_id": {tenant}, "plan": {c.Plan}, "status": {c.Status}}), nil, &l); err != nil {
		return err
	}
	return e.printJSON(l)
}

type projectGetCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	remoteFlags
}

func (c *projectGetCmd) Run(e *env) error {
	return e.adminProject(c.Project, func(ctx context.Context, cen *central.Central) (*tenant.Project, error) {
		return cen.Project(ctx, c.Project)
	})
}

// Remote prints the project without the usage the admin API adds to it,
// as the database mode does.
func (c *projectGetCmd) Remote(e *env, api *adminClient) error {
	return e.remoteProject(api, c.Project, "GET", "", nil)
}

type projectSetCmd struct {
	Project     string `required:"" help:"Project id (prj_…)."`
	Name        string `help:"New name."`
	Plan        string `help:"New plan: free, hobby, build, scale or enterprise (another plan than enterprise clears the limits below)."`
	RateRPM     string `name:"rate-rpm" help:"Enterprise: the project's own requests per minute; none clears it."`
	RateBurst   string `name:"rate-burst" help:"Enterprise: the project's own burst; none clears it."`
	PlanCredits string `name:"plan-credits" help:"Enterprise: the project's own credits per period; none clears it."`
	remoteFlags
}

// optFlag reads a limit flag: "" leaves it, "none" clears it.
func optFlag[T int | int64](name, v string) (central.Opt[T], error) {
	switch v {
	case "":
		return central.Opt[T]{}, nil
	case "none":
		return central.Opt[T]{Set: true}, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return central.Opt[T]{}, fmt.Errorf("--%s: want a whole number or none, got %q", name, v)
	}
	t := T(n)
	return central.Opt[T]{Set: true, Value: &t}, nil
}

// update is the change the flags ask for.
func (c *projectSetCmd) update() (central.ProjectUpdate, error) {
	var u central.ProjectUpdate
	if c.Name != "" {
		u.Name = &c.Name
	}
	if c.Plan != "" {
		u.Plan = &c.Plan
	}
	var err error
	if u.RateRPM, err = optFlag[int]("rate-rpm", c.RateRPM); err != nil {
		return u, err
	}
	if u.RateBurst, err = optFlag[int]("rate-burst", c.RateBurst); err != nil {
		return u, err
	}
	u.PlanCredits, err = optFlag[int64]("plan-credits", c.PlanCredits)
	return u, err
}

func (c *projectSetCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		u, err := c.update()
		if err != nil {
			return nil, err
		}
		p, err := cen.UpdateProject(ctx, c.Project, u)
		if err != nil {
			return nil, fmt.Errorf("project %q: %w", c.Project, err)
		}
		return central.ToAdminProject(p), nil
	})
}

// Remote sends the change as the PATCH body: an absent field is kept, a
// null limit cleared.
func (c *projectSetCmd) Remote(e *env, api *adminClient) error {
	u, err := c.update()
	if err != nil {
		return err
	}
	body := map[string]any{}
	if u.Name != nil {
		body["name"] = *u.Name
	}
	if u.Plan != nil {
		body["plan"] = *u.Plan
	}
	if u.RateRPM.Set {
		body["rate_rpm"] = u.RateRPM.Value
	}
	if u.RateBurst.Set {
		body["rate_burst"] = u.RateBurst.Value
	}
	if u.PlanCredits.Set {
		body["plan_credits"] = u.PlanCredits.Value
	}
	return e.remoteProject(api, c.Project, "PATCH", "", body)
}

type projectSuspendCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	Reason  string `required:"" help:"Why, shown to admins (status_reason)."`
	remoteFlags
}

func (c *projectSuspendCmd) Run(e *env) error {
	return e.adminProject(c.Project, func(ctx context.Context, cen *central.Central) (*tenant.Project, error) {
		return cen.SuspendProject(ctx, c.Project, c.Reason)
	})
}

func (c *projectSuspendCmd) Remote(e *env, api *adminClient) error {
	return e.remoteProject(api, c.Project, "POST", "/suspend", central.AdminSuspendRequest{Reason: c.Reason})
}

type projectResumeCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	remoteFlags
}

func (c *projectResumeCmd) Run(e *env) error {
	return e.adminProject(c.Project, func(ctx context.Context, cen *central.Central) (*tenant.Project, error) {
		return cen.ResumeProject(ctx, c.Project)
	})
}

func (c *projectResumeCmd) Remote(e *env, api *adminClient) error {
	return e.remoteProject(api, c.Project, "POST", "/resume", nil)
}

type projectDeleteCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	Now     bool   `help:"Drop the data at once instead of after PLINTH_DELETE_GRACE (a worker runs the drop)."`
	Export  bool   `help:"Export the project to the archive store first (a worker runs it; the drop waits for it); the export's id is printed."`
	remoteFlags
}

func (c *projectDeleteCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		d, err := cen.DeleteProject(ctx, c.Project, central.DeleteOptions{Now: c.Now, Export: c.Export})
		if err != nil {
			return nil, fmt.Errorf("project %q: %w", c.Project, err)
		}
		return central.ToDeletedProject(d), nil
	})
}

func (c *projectDeleteCmd) Remote(e *env, api *adminClient) error {
	q := url.Values{"now": {strconv.FormatBool(c.Now)}, "export": {strconv.FormatBool(c.Export)}}
	var d central.DeletedProject
	if err := api.do(e.ctx, "DELETE", "/projects/"+url.PathEscape(c.Project)+"?"+q.Encode(), nil, &d); err != nil {
		return fmt.Errorf("project %q: %w", c.Project, err)
	}
	return e.printJSON(d)
}

type tenantListCmd struct {
	pageFlags
	remoteFlags
}

func (c *tenantListCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		pg, after, err := c.idPage()
		if err != nil {
			return nil, err
		}
		rows, err := cen.AdminTenants(ctx, after, pg.Limit+1)
		if err != nil {
			return nil, err
		}
		return httpapi.NewList(rows, pg.Limit, func(t central.AdminTenant) string { return httpapi.IDText(t.ID) }), nil
	})
}

func (c *tenantListCmd) Remote(e *env, api *adminClient) error {
	if _, _, err := c.idPage(); err != nil {
		return err
	}
	var l httpapi.List[central.AdminTenant]
	if err := api.do(e.ctx, "GET", "/tenants"+pageQuery(c.pageFlags, nil), nil, &l); err != nil {
		return err
	}
	return e.printJSON(l)
}

type tenantGetCmd struct {
	ID int64 `required:"" help:"Workspace id."`
	remoteFlags
}

func (c *tenantGetCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		t, err := cen.AdminTenant(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("tenant %d: %w", c.ID, err)
		}
		return t, nil
	})
}

func (c *tenantGetCmd) Remote(e *env, api *adminClient) error {
	var t central.AdminTenant
	if err := api.do(e.ctx, "GET", fmt.Sprintf("/tenants/%d", c.ID), nil, &t); err != nil {
		return fmt.Errorf("tenant %d: %w", c.ID, err)
	}
	return e.printJSON(t)
}

type userListCmd struct {
	pageFlags
	Tenant int64 `required:"" help:"Workspace id."`
	remoteFlags
}

func (c *userListCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		pg, after, err := c.idPage()
		if err != nil {
			return nil, err
		}
		rows, err := cen.Users(ctx, c.Tenant, after, pg.Limit+1)
		if err != nil {
			return nil, fmt.Errorf("tenant %d: %w", c.Tenant, err)
		}
		return httpapi.NewList(rows, pg.Limit, func(u central.User) string { return httpapi.IDText(u.ID) }), nil
	})
}

func (c *userListCmd) Remote(e *env, api *adminClient) error {
	if _, _, err := c.idPage(); err != nil {
		return err
	}
	var l httpapi.List[central.User]
	if err := api.do(e.ctx, "GET", fmt.Sprintf("/tenants/%d/users", c.Tenant)+pageQuery(c.pageFlags, nil), nil, &l); err != nil {
		return fmt.Errorf("tenant %d: %w", c.Tenant, err)
	}
	return e.printJSON(l)
}

type userRemoveCmd struct {
	Tenant int64 `required:"" help:"Workspace id."`
	User   int64 `required:"" help:"User id."`
	remoteFlags
}

func (c *userRemoveCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		if err := cen.RemoveUser(ctx, c.Tenant, c.User); err != nil {
			return nil, err
		}
		return map[string]any{"tenant_id": c.Tenant, "user_id": c.User, "removed": true}, nil
	})
}

func (c *userRemoveCmd) Remote(e *env, api *adminClient) error {
	if err := api.do(e.ctx, "DELETE", fmt.Sprintf("/tenants/%d/users/%d", c.Tenant, c.User), nil, nil); err != nil {
		return err
	}
	return e.printJSON(map[string]any{"tenant_id": c.Tenant, "user_id": c.User, "removed": true})
}

type userResetPasswordCmd struct {
	Tenant   int64  `required:"" help:"Workspace id."`
	User     int64  `required:"" help:"User id."`
	Password string `help:"The new password (at least 8 characters); unset: one is generated and printed."`
	remoteFlags
}

func (c *userResetPasswordCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		pw, err := cen.ResetPassword(ctx, c.Tenant, c.User, c.Password)
		if err != nil {
			return nil, err
		}
		return map[string]any{"user_id": c.User, "password": pw}, nil
	})
}

// Remote asks for the password the flag gives, or a generated one.
func (c *userResetPasswordCmd) Remote(e *env, api *adminClient) error {
	var r struct {
		Password string `json:"password"`
	}
	err := api.do(e.ctx, "POST", fmt.Sprintf("/tenants/%d/users/%d/reset-password", c.Tenant, c.User), central.AdminResetPasswordRequest{Password: c.Password}, &r)
	if err != nil {
		return err
	}
	return e.printJSON(map[string]any{"user_id": c.User, "password": r.Password})
}

// adminProject runs one change or read of project id and prints the
// project as the admin API shows it.
func (e *env) adminProject(id string, fn func(context.Context, *central.Central) (*tenant.Project, error)) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		p, err := fn(ctx, cen)
		if err != nil {
			return nil, fmt.Errorf("project %q: %w", id, err)
		}
		return central.ToAdminProject(p), nil
	})
}

// remoteProject sends method to the project's path plus sub and prints
// the project answered as the database mode prints it: without the
// usage GET adds.
func (e *env) remoteProject(api *adminClient, id, method, sub string, body any) error {
	var p central.AdminProject
	if err := api.do(e.ctx, method, "/projects/"+url.PathEscape(id)+sub, body, &p); err != nil {
		return fmt.Errorf("project %q: %w", id, err)
	}
	p.Usage = nil
	return e.printJSON(p)
}
