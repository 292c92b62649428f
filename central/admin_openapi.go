package central

import (
	"maps"

	"github.com/plinth-dev/plinth/internal/openapi"
)

// AdminOpenAPI describes the admin API (/admin/api) under its own tag.
func AdminOpenAPI(d *openapi.Doc) {
	const tag = "admin"
	d.Tag(tag, "The platform operator's API under /admin/api, with admin tokens (pln_admin_…) minted by `plinth admin-token create`: "+
		"workspaces (tenants) and their users, projects (plans, credits, suspension), shards and moves, exports and imports.")
	intM := func(min int) openapi.M { return openapi.M{"type": "integer", "minimum": min} }
	nullableInt := func(desc string) openapi.M {
		return openapi.With(openapi.Nullable(openapi.M{"type": "integer"}), openapi.M{"description": desc})
	}
	adminTenant := d.Schema("AdminTenant", openapi.Obj(openapi.M{
		"id": intM(1), "name": openapi.Str(), "domain": openapi.Str(),
		"projects": openapi.With(intM(0), openapi.M{"description": "Projects of the tenant, whatever their status."}),
		"users":    intM(0), "created_at": openapi.Timestamp(),
	}, "id", "name", "domain", "projects", "users", "created_at"))
	status := openapi.M{"type": "string", "enum": []any{StatusActive, StatusSuspended, StatusDeleting},
		"description": "suspended: keys 403, public surface 404, jobs and webhook deliveries wait; deleting: keys revoked, data dropped after the grace period."}
	projectProps := openapi.M{
		"id": openapi.Prefixed("prj_"), "name": openapi.Str(), "slug": openapi.Str(), "industry": openapi.Str(), "default_language": openapi.Str(),
		"target_languages": openapi.Arr(openapi.Str()), "timezone": openapi.Str(), "plan": openapi.Ref("Plan"),
		"allowed_origins": openapi.Arr(openapi.Str()), "site_url": openapi.Nullable(openapi.Str()), "created_at": openapi.Timestamp(),
		"fallback_languages": FallbacksSchema("The locale fallback chains; {} when none."),
		"tenant_id":          intM(1), "status": status,
		"status_reason": openapi.With(openapi.Str(), openapi.M{"description": "The reason given when it was suspended; empty otherwise."}),
		"shard":         openapi.Str(),
		"rate_rpm":      nullableInt("Enterprise: the project's own requests per minute; null: the plan's."),
		"rate_burst":    nullableInt("Enterprise: the project's own burst; null: twice rate_rpm, or the plan's."),
		"plan_credits":  nullableInt("Enterprise: the project's own credits per period; null: the plan's."),
		"usage": openapi.With(openapi.Ref("Usage"), openapi.M{"description": "The live pool's usage of the current period " +
			"(GET of one project that is not being deleted)."}),
	}
	projectRequired := []string{"id", "name", "slug", "industry", "default_language", "target_languages", "timezone", "plan", "allowed_origins", "site_url", "fallback_languages", "created_at",
		"tenant_id", "status", "status_reason", "shard", "rate_rpm", "rate_burst", "plan_credits"}
	project := d.Schema("AdminProject", openapi.Obj(projectProps, projectRequired...))
	deletedProps := maps.Clone(projectProps)
	deletedProps["export"] = openapi.With(openapi.Ref("Export"), openapi.M{"description": "The export started with export=true; the drop waits until it has completed."})
	deleted := d.Schema("DeletedProject", openapi.Obj(deletedProps, projectRequired...))
	tenantID := openapi.M{"id": openapi.M{"type": "string", "pattern": "^[0-9]+$"}}
	userIDs := openapi.M{"id": openapi.M{"type": "string", "pattern": "^[0-9]+$"}, "user_id": openapi.M{"type": "string", "pattern": "^[0-9]+$"}}
	projectID := openapi.M{"id": openapi.M{"type": "string", "pattern": "^prj_"}}
	op := func(o openapi.Op) openapi.Op {
		o.Tag, o.Auth = tag, openapi.Admin
		return o
	}
	str := func(min, max int) openapi.M { return openapi.M{"type": "string", "minLength": min, "maxLength": max} }

	d.Add("GET", "/admin/api/tenants", op(openapi.Op{ID: "adminListTenants", Summary: "Every tenant", Scope: "tenants:read",
		Desc: "By id, oldest first.", Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "A page of tenants.", Content: openapi.JSON(d.List("AdminTenant"))}}}))
	d.Add("POST", "/admin/api/tenants", op(openapi.Op{ID: "adminCreateTenant", Summary: "Create a tenant and its owner", Scope: "tenants:write",
		Desc: "The owner is the tenant's first dashboard user. A domain already taken is 409.",
		Body: openapi.JSON(d.Schema("AdminCreateTenantRequest", openapi.Obj(openapi.M{"name": str(1, 255), "domain": str(1, 255),
			"owner_email": openapi.Str(), "owner_password": openapi.M{"type": "string", "minLength": 8}}, "name", "domain", "owner_email", "owner_password"))),
		Errs: []int{409, 422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The tenant.", Content: openapi.JSON(adminTenant)}}}))
	d.Add("GET", "/admin/api/tenants/{id}", op(openapi.Op{ID: "adminGetTenant", Summary: "A tenant", Scope: "tenants:read", Params: tenantID,
		OK: []openapi.Resp{{Status: 200, Desc: "The tenant.", Content: openapi.JSON(adminTenant)}}}))
	d.Add("PATCH", "/admin/api/tenants/{id}", op(openapi.Op{ID: "adminUpdateTenant", Summary: "Rename a tenant or change its domain", Scope: "tenants:write",
		Params: tenantID, Errs: []int{409, 422},
		Body: openapi.JSON(d.Schema("AdminUpdateTenantRequest", openapi.Obj(openapi.M{"name": str(1, 255), "domain": str(1, 255)}))),
		OK:   []openapi.Resp{{Status: 200, Desc: "The tenant.", Content: openapi.JSON(adminTenant)}}}))
	d.Add("DELETE", "/admin/api/tenants/{id}", op(openapi.Op{ID: "adminDeleteTenant", Summary: "Delete an empty tenant", Scope: "tenants:write",
		Desc:   "Only a tenant without projects (deleted projects count until they are dropped): 409 otherwise. Its users go with it.",
		Params: tenantID, Errs: []int{409},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}}))
	d.Add("GET", "/admin/api/tenants/{id}/users", op(openapi.Op{ID: "adminListUsers", Summary: "Users of a tenant", Scope: "users:read",
		Params: tenantID, Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "By id, oldest first.", Content: openapi.JSON(d.List("User"))}}}))
	d.Add("POST", "/admin/api/tenants/{id}/users", op(openapi.Op{ID: "adminAddUser", Summary: "Add a user to a tenant", Scope: "users:write",
		Desc: "One email may belong to several tenants; twice in one tenant is 409.", Params: tenantID, Errs: []int{409, 422},
		Body: openapi.JSON(d.Schema("AdminAddUserRequest", openapi.Obj(openapi.M{"email": openapi.Str(), "password": openapi.M{"type": "string", "minLength": 8},
			"name": openapi.Str()}, "email", "password"))),
		OK: []openapi.Resp{{Status: 201, Desc: "The user.", Content: openapi.JSON(openapi.Ref("User"))}}}))
	d.Add("DELETE", "/admin/api/tenants/{id}/users/{user_id}", op(openapi.Op{ID: "adminRemoveUser", Summary: "Remove a user", Scope: "users:write",
		Desc: "The tenant's last user stays (409).", Params: userIDs, Errs: []int{409},
		OK: []openapi.Resp{{Status: 204, Desc: "Removed."}}}))
	d.Add("POST", "/admin/api/tenants/{id}/users/{user_id}/reset-password", op(openapi.Op{ID: "adminResetPassword", Summary: "Reset a user's password",
		Scope: "users:write", Desc: "Sets password, or a generated one when the body is empty or has none; the password is shown once. " +
			"Every dashboard session of the user ends at once: its tokens are 401 from the next request on.",
		Params: userIDs, Errs: []int{422}, BodyOptional: true,
		Body: openapi.JSON(d.Schema("AdminResetPasswordRequest", openapi.Obj(openapi.M{"password": openapi.M{"type": "string", "minLength": 8}}))),
		OK: []openapi.Resp{{Status: 200, Desc: "The new password.", Content: openapi.JSON(openapi.Obj(openapi.M{"user_id": intM(1), "password": openapi.Str()},
			"user_id", "password"))}}}))

	d.Add("GET", "/admin/api/projects", op(openapi.Op{ID: "adminListProjects", Summary: "Every project", Scope: "projects:read",
		Desc: "By id, oldest first, narrowed by tenant, plan and status.",
		Query: append(openapi.PageParams(),
			openapi.M{"name": "tenant_id", "in": "query", "schema": openapi.M{"type": "integer", "minimum": 1}},
			openapi.M{"name": "plan", "in": "query", "schema": openapi.Ref("Plan")},
			openapi.M{"name": "status", "in": "query", "schema": openapi.M{"type": "string", "enum": []any{StatusActive, StatusSuspended, StatusDeleting}}}),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 200, Desc: "A page of projects.", Content: openapi.JSON(d.List("AdminProject"))}}}))
	d.Add("POST", "/admin/api/projects", op(openapi.Op{ID: "adminCreateProject", Summary: "Create and provision a project", Scope: "projects:write",
		Desc: "A plan other than free needs projects:admin as well (403). A tenant with PLINTH_MAX_PROJECTS_PER_TENANT projects " +
			"(default 100; those being deleted aside) is 403 project_limit_reached, the detail and limit naming the cap. " +
			"The project goes to the active shard with the most room, or to `shard`, which needs shards:admin as well (403): " +
			"an unknown shard is 422, one draining or retired 409.",
		Body: openapi.JSON(d.Schema("AdminCreateProjectRequest", openapi.Obj(openapi.M{
			"tenant_id": intM(1), "name": str(1, 255), "plan": openapi.Ref("Plan"), "default_language": openapi.Str(),
			"target_languages": openapi.M{"type": "array", "maxItems": 50, "items": openapi.Str()}, "timezone": openapi.Str(),
			"industry": openapi.M{"type": "string", "maxLength": 100},
			"shard":    openapi.M{"type": "string", "description": "The shard to place the project on (an active one); absent: the active shard with the most room."},
		}, "tenant_id", "name"))),
		Errs: []int{404, 409, 422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The project.", Content: openapi.JSON(project)}}}))
	d.Add("GET", "/admin/api/projects/{id}", op(openapi.Op{ID: "adminGetProject", Summary: "A project with its usage", Scope: "projects:read",
		Params: projectID,
		OK:     []openapi.Resp{{Status: 200, Desc: "The project.", Content: openapi.JSON(project)}}}))
	d.Add("PATCH", "/admin/api/projects/{id}", op(openapi.Op{ID: "adminUpdateProject", Summary: "Change a project's name, plan or limits", Scope: "projects:write",
		Desc: "plan, rate_rpm, rate_burst and plan_credits need projects:admin as well (403). The limits are set on enterprise projects only " +
			"(422 otherwise); null clears one; a move to another plan clears them. They take effect on the next request, on every instance.",
		Params: projectID, Errs: []int{409, 422},
		Body: openapi.JSON(d.Schema("AdminUpdateProjectRequest", openapi.Obj(openapi.M{
			"name": str(1, 255), "plan": openapi.Ref("Plan"),
			"rate_rpm":     openapi.Nullable(openapi.M{"type": "integer", "minimum": 1, "maximum": 1000000}),
			"rate_burst":   openapi.Nullable(openapi.M{"type": "integer", "minimum": 1, "maximum": 1000000}),
			"plan_credits": openapi.Nullable(openapi.M{"type": "integer", "minimum": 0, "maximum": 1000000000}),
		}))),
		OK: []openapi.Resp{{Status: 200, Desc: "The project.", Content: openapi.JSON(project)}}}))
	d.Add("DELETE", "/admin/api/projects/{id}", op(openapi.Op{ID: "adminDeleteProject", Summary: "Delete a project", Scope: "projects:admin",
		Desc: "Revokes every key at once, makes the project `deleting` (public surface 404, jobs cancelled) and renames its schema out of the " +
			"way; a job drops its schema, media, jobs and rows after PLINTH_DELETE_GRACE (default 7 days), or at once with now=true. " +
			"With export=true (which needs exports:write as well) it first starts an export of the project to the archive store, answered " +
			"in `export`: the drop waits until it has completed (if it fails, until a later export of the project completes), and the " +
			"export and its archive outlive the project. A project already being deleted is 409.",
		Params: projectID, Errs: []int{409, 422},
		Query: []openapi.M{
			{"name": "now", "in": "query", "schema": openapi.M{"type": "string", "enum": []any{"true", "false"}}},
			{"name": "export", "in": "query", "schema": openapi.M{"type": "string", "enum": []any{"true", "false"}}},
		},
		OK: []openapi.Resp{{Status: 202, Desc: "The project, now deleting, and its export when asked.", Content: openapi.JSON(deleted)}}}))
	d.Add("POST", "/admin/api/projects/{id}/suspend", op(openapi.Op{ID: "adminSuspendProject", Summary: "Suspend a project", Scope: "projects:admin",
		Desc: "At once on every instance: its keys answer 403 forbidden (\"project suspended\"), its public surface 404, and its jobs and " +
			"webhook deliveries wait, without losing an attempt, until it is resumed. Suspending again changes the reason.",
		Params: projectID, Errs: []int{409, 422},
		Body: openapi.JSON(d.Schema("AdminSuspendRequest", openapi.Obj(openapi.M{"reason": str(1, 500)}, "reason"))),
		OK:   []openapi.Resp{{Status: 200, Desc: "The project, suspended.", Content: openapi.JSON(project)}}}))
	d.Add("POST", "/admin/api/projects/{id}/resume", op(openapi.Op{ID: "adminResumeProject", Summary: "Resume a suspended project", Scope: "projects:admin",
		Desc:   "Its keys and public surface answer again and the jobs that waited run now. Resuming an active project changes nothing.",
		Params: projectID, Errs: []int{409},
		OK: []openapi.Resp{{Status: 200, Desc: "The project, active.", Content: openapi.JSON(project)}}}))
	d.Add("POST", "/admin/api/projects/{id}/credits", op(openapi.Op{ID: "adminTopUpCredits", Summary: "Add top-up credits", Scope: "credits:write",
		Params: projectID, Errs: []int{422},
		Body: openapi.JSON(d.Schema("AdminCreditsRequest", openapi.Obj(openapi.M{"amount": openapi.M{"type": "integer", "minimum": 1, "maximum": 100000000}}, "amount"))),
		OK: []openapi.Resp{{Status: 200, Desc: "The live pool's balance after the top-up, in whole credits.", Content: openapi.JSON(openapi.Obj(openapi.M{
			"project_id": openapi.Prefixed("prj_"), "added": intM(1), "balance": openapi.M{"type": "integer"}}, "project_id", "added", "balance"))}}}))
}
