package central

import (
	"maps"

	"github.com/plinth-dev/plinth/internal/openapi"
)

// AdminExportsOpenAPI describes the export and import routes of the admin
// API (AdminExportRoutes), under the admin tag.
func AdminExportsOpenAPI(d *openapi.Doc) {
	export := openapi.JSON(d.Schema("Export", openapi.Obj(openapi.M{
		"id":         openapi.Prefixed("exp_"),
		"project_id": openapi.Prefixed("prj_"),
		"status":     openapi.M{"type": "string", "enum": []any{"pending", "running", "completed", "failed"}},
		"size_bytes": openapi.With(openapi.Nullable(openapi.M{"type": "integer", "minimum": 0}), openapi.M{"description": "The archive's size once completed."}),
		"row_counts": openapi.With(openapi.Nullable(openapi.MapOf(openapi.M{"type": "integer", "minimum": 0})),
			openapi.M{"description": "Rows exported per table, once completed."}),
		"error":        openapi.With(openapi.Nullable(openapi.Str()), openapi.M{"description": "Why the last attempt failed."}),
		"created_at":   openapi.Timestamp(),
		"completed_at": openapi.Nullable(openapi.Timestamp()),
	}, "id", "project_id", "status", "size_bytes", "row_counts", "error", "created_at", "completed_at")))
	props := maps.Clone(projectProps(openapi.Ref("Plan")))
	props["tenant_id"] = openapi.M{"type": "integer"}
	props["source_project_id"] = openapi.With(openapi.Prefixed("prj_"), openapi.M{"description": "The project the archive was exported from."})
	props["row_counts"] = openapi.With(openapi.MapOf(openapi.M{"type": "integer", "minimum": 0}), openapi.M{"description": "Rows imported per table."})
	imported := openapi.JSON(d.Schema("ImportedProject", openapi.Obj(props, append(projectRequired, "tenant_id", "source_project_id", "row_counts")...)))
	projectID := openapi.M{"id": openapi.Prefixed("prj_")}
	exportID := openapi.M{"id": openapi.Prefixed("exp_")}

	d.Add("POST", "/admin/api/projects/{id}/exports", openapi.Op{ID: "adminCreateExport", Summary: "Export a project", Tag: "admin", Auth: openapi.Admin,
		Scope: "exports:write", Params: projectID, Errs: []int{404},
		Desc: "Starts a project.export job that writes the project's archive (a .tar.gz: manifest.json, one NDJSON file per table, the media; " +
			"docs/operations.md, \"Export and import\"). 202 with the pending export; poll GET /admin/api/exports/{id}.",
		OK: []openapi.Resp{{Status: 202, Desc: "The pending export.", Content: export}}})
	d.Add("GET", "/admin/api/exports/{id}", openapi.Op{ID: "adminGetExport", Summary: "An export", Tag: "admin", Auth: openapi.Admin,
		Scope: "exports:read", Params: exportID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The export: pending, running, completed (with size_bytes and row_counts) or failed (with error).", Content: export}}})
	d.Add("GET", "/admin/api/exports/{id}/download", openapi.Op{ID: "adminDownloadExport", Summary: "Download an export's archive", Tag: "admin", Auth: openapi.Admin,
		Scope: "exports:read", Params: exportID, Errs: []int{404, 409},
		Desc: "The archive of a completed export (409 before). Ranges are served.",
		OK: []openapi.Resp{{Status: 200, Desc: "The archive.", Content: openapi.M{"application/gzip": openapi.M{"type": "string", "contentMediaType": "application/gzip"}},
			Headers: openapi.M{"Content-Disposition": openapi.M{"required": true, "schema": openapi.Str(), "description": "attachment; filename=\"{project}-{export}.tar.gz\""}}}}})
	d.Add("POST", "/admin/api/projects/import", openapi.Op{ID: "adminImportProject", Summary: "Create a project from an archive", Tag: "admin", Auth: openapi.Admin,
		Scope: "exports:write and projects:write (and projects:admin for a plan other than free)", Errs: []int{404, 413, 422},
		Desc: "A multipart/form-data body: `file` (an archive of an export), `tenant_id`, and optionally `name` (default: the archived project's). " +
			"Creates a new project on the archive's plan (a plan other than free needs projects:admin, 403, as on create): its rows with their ids, " +
			"and its media; API keys, webhooks, social and payment accounts and credits are not copied. " +
			"An archive of an older release is migrated after import. Each media object must be an image an upload would take (PNG, JPEG, GIF or WebP, " +
			"at most 10 MiB); image rows and the logo must name objects of the archive's own project (their type, size and URL are then the server's); " +
			"the blog's HTML is sanitised as on a write. An archive that is malformed, of an unknown format, holds a path outside its place, " +
			"names media outside its project, holds a media object that is no such image, a row over 8 MiB, or entries inflating to more than " +
			"100 times its size (at least 16 MiB, at most 16 GiB) is a 422 on `file`; an unknown tenant a 404. " +
			"The request body limit of the server applies: import larger archives with `plinth project import`.",
		Body: openapi.M{"multipart/form-data": d.Schema("ImportProjectRequest", openapi.Obj(openapi.M{
			"file":      openapi.M{"type": "string", "contentMediaType": "application/gzip"},
			"tenant_id": openapi.M{"type": "string", "pattern": "^[0-9]+$"},
			"name":      openapi.M{"type": "string", "maxLength": 255},
		}, "file", "tenant_id"))},
		OK: []openapi.Resp{{Status: 201, Desc: "The new project.", Content: imported}}})
}
