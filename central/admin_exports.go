package central

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/archive"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/content"
)

// This file is the export and import of projects on the admin API
// (provisioning/archive writes and reads the archives): an export is a
// River job that stores its archive in the store, under
// storage.ExportsPrefix, where no media code reaches; an import creates a
// new project from an uploaded archive.

// archives is what exports and imports need beyond the central pool.
type archives struct {
	queue *queue.Client
	// store is the whole store: export archives under exports/.
	store storage.Store
	// media is its view of the projects' media (storage.ProjectMedia),
	// which is all an archive's media are read from and written to.
	media storage.Store
	// mediaURL is the base of the media URLs an import writes into the
	// rows (PLINTH_MEDIA_URL, else PLINTH_PUBLIC_URL).
	mediaURL string
}

// UseArchives gives the export routes and job their queue and store (the
// whole of PLINTH_STORAGE), and an import the base of the media URLs it
// writes; NewServer calls it.
func (c *Central) UseArchives(q *queue.Client, store storage.Store, mediaURL string) {
	c.archives = archives{queue: q, store: store, media: storage.ProjectMedia(store), mediaURL: mediaURL}
}

// AdminExportRoutes registers the export and import routes on the admin
// router (/admin/api); need(scope) is the admin token's scope check.
func (c *Central) AdminExportRoutes(r chi.Router, need func(scope string) func(http.Handler) http.Handler) {
	r.With(need("exports:write")).Post("/projects/{id}/exports", httpapi.H(c.createExport))
	r.With(need("exports:read")).Get("/exports/{id}", httpapi.H(c.getExport))
	r.With(need("exports:read")).Get("/exports/{id}/download", httpapi.H(c.downloadExport))
	r.With(need("exports:write"), need("projects:write")).Post("/projects/import", httpapi.H(c.importProject))
}

// ExportJSON is the Export resource.
type ExportJSON struct {
	ID          string           `json:"id"`
	ProjectID   string           `json:"project_id"`
	Status      string           `json:"status"`
	SizeBytes   *int64           `json:"size_bytes"`
	RowCounts   map[string]int64 `json:"row_counts"`
	Error       *string          `json:"error"`
	CreatedAt   time.Time        `json:"created_at"`
	CompletedAt *time.Time       `json:"completed_at"`
}

// ExportArgs is the River job that writes one export's archive.
type ExportArgs struct {
	ExportID string `json:"export_id"`
}

// Kind implements river.JobArgs.
func (ExportArgs) Kind() string { return "project.export" }

// exportAttempts bounds the job's tries: an export that failed three
// times (the store unreachable, the project gone) is reported failed.
const exportAttempts = 3

// StartExport records a pending export of a project and enqueues its job
// in the same transaction.
func (c *Central) StartExport(ctx context.Context, projectID string) (ExportJSON, error) {
	if _, err := c.Project(ctx, projectID); err != nil {
		return ExportJSON{}, err
	}
	var e ExportJSON
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		e, err = insertExport(ctx, tx, c.archives.queue, projectID)
		return err
	})
	return e, err
}

// insertExport records a pending export of a project in tx and enqueues
// its job with q.
func insertExport(ctx context.Context, tx pgx.Tx, q *queue.Client, projectID string) (ExportJSON, error) {
	e, err := insertExportRow(ctx, tx, projectID)
	if err != nil {
		return e, err
	}
	if _, err := q.InsertTx(ctx, tx, ExportArgs{ExportID: e.ID}, &river.InsertOpts{MaxAttempts: exportAttempts}); err != nil {
		return e, err
	}
	return e, queue.NotifyInsertTx(ctx, tx, river.QueueDefault)
}

// Export reads one export.
func (c *Central) Export(ctx context.Context, exportID string) (ExportJSON, error) {
	e, _, err := getExport(ctx, c.pool, exportID)
	return e, err
}

// ExportWorker works ExportArgs: pending → running → completed (or
// failed after the last attempt), the archive stored under
// exports/{id}.tar.gz (storage.ExportsPrefix).
type ExportWorker struct {
	river.WorkerDefaults[ExportArgs]
	c *Central
}

// NewExportWorker is the worker of c's exports.
func NewExportWorker(c *Central) *ExportWorker { return &ExportWorker{c: c} }

// Work runs one export.
func (w *ExportWorker) Work(ctx context.Context, job *river.Job[ExportArgs]) error {
	c := w.c
	projectID, err := startExport(ctx, c.pool, job.Args.ExportID)
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil // completed or failed already
	}
	if err != nil {
		return err
	}
	key := storage.ExportsPrefix + "/" + job.Args.ExportID + ".tar.gz"
	m, size, err := c.exportTo(ctx, projectID, key)
	if err != nil {
		status := "pending" // River tries again
		if job.Attempt >= job.MaxAttempts {
			status = "failed"
		}
		if uerr := setExportError(context.WithoutCancel(ctx), c.pool, job.Args.ExportID, status, err.Error()); uerr != nil {
			return errors.Join(err, uerr)
		}
		return err
	}
	return completeExport(ctx, c.pool, job.Args.ExportID, size, m.RowCounts(), key)
}

// exportTo writes the project's archive to the store under key and
// returns its manifest and size.
func (c *Central) exportTo(ctx context.Context, projectID, key string) (archive.Manifest, int64, error) {
	pr, pw := io.Pipe()
	type result struct {
		m   archive.Manifest
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := c.ExportProject(ctx, projectID, pw)
		pw.CloseWithError(err)
		done <- result{m, err}
	}()
	size, err := c.archives.store.Put(ctx, key, pr)
	pr.CloseWithError(err) // stops the export when the store failed
	res := <-done
	if res.err != nil {
		if errors.Is(res.err, httpapi.ErrNotFound) {
			return res.m, 0, fmt.Errorf("project %s no longer exists", projectID)
		}
		return res.m, 0, res.err
	}
	return res.m, size, err
}

func (c *Central) createExport(w http.ResponseWriter, r *http.Request) error {
	pid := chi.URLParam(r, "id")
	e, err := c.StartExport(r.Context(), pid)
	if errors.Is(err, httpapi.ErrNotFound) {
		return httpapi.NotFound("no project " + pid)
	}
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, e)
}

func (c *Central) getExport(w http.ResponseWriter, r *http.Request) error {
	e, err := c.Export(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, e)
}

func (c *Central) downloadExport(w http.ResponseWriter, r *http.Request) error {
	e, key, err := getExport(r.Context(), c.pool, chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	if e.Status != "completed" {
		return httpapi.Conflict(httpapi.CodeConflict, "the export is "+e.Status+"; its archive can be downloaded once it is completed")
	}
	obj, err := c.archives.store.Open(r.Context(), key)
	if errors.Is(err, storage.ErrNotFound) {
		return httpapi.NotFound("the archive of this export is no longer stored")
	}
	if err != nil {
		return err
	}
	defer obj.Close()
	h := w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.tar.gz"`, e.ProjectID, e.ID))
	h.Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "", obj.ModTime(), obj)
	return nil
}

// ImportedProjectJSON is the project an import created.
type ImportedProjectJSON struct {
	ProjectJSON
	TenantID  int64            `json:"tenant_id"`
	SourceID  string           `json:"source_project_id"`
	RowCounts map[string]int64 `json:"row_counts"`
}

// ImportLimits are the limits of an import (archive.Limits): a media
// object may be as large as an upload.
var ImportLimits = func() archive.Limits {
	l := archive.DefaultLimits
	l.Media = content.MaxUpload
	return l
}()

// ImportProject creates a project of tenantID from an archive (see
// archive.Import). authorize, when set, may refuse what the manifest
// asks for before anything is created (the admin API's scope of a plan);
// the CLI, run by the operator, sets none. Each media object is inspected
// as an upload is; once restored, the media rows are made to agree with
// the objects stored (content.ReconcileImport) and the blog's texts go
// through the blog's sanitisers (blog.SanitizeImported).
func (c *Central) ImportProject(ctx context.Context, tenantID int64, name string, r io.Reader, authorize func(archive.Manifest) error) (ImportedProjectJSON, error) {
	p, m, err := archive.Import(ctx, c, c.archives.media, tenantID, name, r, archive.Options{
		Limits:    ImportLimits,
		Authorize: authorize,
		Inspect:   inspectMedia,
		Fixups:    []archive.Fixup{c.reconcileMedia, sanitizeBlog},
	})
	if err != nil {
		return ImportedProjectJSON{}, err
	}
	return ImportedProjectJSON{ProjectJSON: ToProjectJSON(p), TenantID: p.TenantID, SourceID: m.Project.ID, RowCounts: m.RowCounts()}, nil
}

// inspectMedia checks an archive's media object as an upload is checked.
func inspectMedia(data []byte) (archive.MediaInfo, error) {
	info, err := content.InspectImage(data)
	return archive.MediaInfo{ContentType: info.ContentType, Width: info.Width, Height: info.Height}, err
}

// reconcileMedia is the content pillar's fixup of an import (an archive
// whose rows name media outside the new project is refused).
func (c *Central) reconcileMedia(ctx context.Context, tx pgx.Tx, p *tenant.Project, media map[string]archive.MediaInfo) error {
	objects := make(map[string]content.ImportedObject, len(media))
	for k, m := range media {
		objects[k] = content.ImportedObject{ImageInfo: content.ImageInfo{ContentType: m.ContentType, Width: m.Width, Height: m.Height}, Size: m.Size}
	}
	err := content.ReconcileImport(ctx, tx, p.ID, c.archives.mediaURL, objects)
	if errors.Is(err, httpapi.ErrInvalid) {
		return fmt.Errorf("%w: %s", archive.ErrInvalid, err.Error())
	}
	return err
}

// sanitizeBlog is the blog pillar's fixup of an import.
func sanitizeBlog(ctx context.Context, tx pgx.Tx, _ *tenant.Project, _ map[string]archive.MediaInfo) error {
	return blog.SanitizeImported(ctx, tx)
}

func (c *Central) importProject(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httpapi.NewError(http.StatusRequestEntityTooLarge, httpapi.CodeBadRequest, "the body is larger than the server's request limit; import larger archives with plinth project import")
		}
		return httpapi.BadRequest("the body must be multipart/form-data with a file part")
	}
	defer r.MultipartForm.RemoveAll()
	form := r.MultipartForm
	for name := range form.Value {
		if name != "tenant_id" && name != "name" {
			return httpapi.BadRequest(fmt.Sprintf("unknown field %q", name))
		}
	}
	for name := range form.File {
		if name != "file" {
			return httpapi.BadRequest(fmt.Sprintf("unknown field %q", name))
		}
	}
	files := form.File["file"]
	if len(files) != 1 {
		return httpapi.BadRequest(`the form needs one "file" part: the archive`)
	}
	if len(form.Value["tenant_id"]) != 1 {
		return httpapi.BadRequest(`the form needs one "tenant_id" field`)
	}
	tenantID, err := strconv.ParseInt(form.Value["tenant_id"][0], 10, 64)
	if err != nil || tenantID <= 0 {
		return httpapi.Invalid("tenant_id", "must be a tenant id")
	}
	var name string
	if names := form.Value["name"]; len(names) > 0 {
		name = names[0]
	}
	f, err := files[0].Open()
	if err != nil {
		return err
	}
	defer f.Close()
	// The archive's plan is chosen as on create: a plan other than free
	// needs projects:admin.
	p, err := c.ImportProject(r.Context(), tenantID, name, f, func(m archive.Manifest) error {
		return needPlanScope(r.Context(), m.Project.Plan, "the archive's project is on plan "+m.Project.Plan)
	})
	if errors.Is(err, archive.ErrInvalid) {
		return httpapi.Invalid("file", strings.TrimPrefix(err.Error(), archive.ErrInvalid.Error()+": "))
	}
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, p)
}

// CreateForImport creates a project whose schema has exactly the tenant
// migrations numbered in applied (archive.Creator): never a spare, which
// is at the current level.
func (c *Central) CreateForImport(ctx context.Context, s archive.Spec, applied []int64) (*tenant.Project, error) {
	p := ProjectParams{TenantID: s.TenantID, Name: s.Name, Plan: s.Plan, Industry: s.Industry, DefaultLanguage: s.DefaultLanguage,
		TargetLanguages: s.TargetLanguages, Timezone: s.Timezone}
	if err := p.check(); err != nil {
		return nil, err
	}
	var v httpapi.Validator
	if tenant.CheckFallbacks(&v, "fallback_languages", s.FallbackLanguages); v.Err() != nil {
		return nil, v.Err()
	}
	created, _, err := c.insertProject(ctx, p, false)
	if err != nil {
		return nil, err
	}
	shard, err := c.ShardPool(created.Shard)
	if err == nil {
		err = provisioning.ProvisionProjectAt(ctx, c.pool, shard, created.Schema, applied)
	}
	if err == nil && len(s.FallbackLanguages) > 0 {
		created, err = c.UpdateProject(ctx, created.ID, ProjectUpdate{FallbackLanguages: &s.FallbackLanguages})
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("provision %s: %w", created.ID, err), c.DiscardImport(context.WithoutCancel(ctx), created.ID))
	}
	return created, nil
}

// DiscardImport removes a project whose import failed: its schema, then
// its row (the placement goes with it). It has no keys yet.
func (c *Central) DiscardImport(ctx context.Context, projectID string) error {
	p, err := c.Project(ctx, projectID)
	if err != nil {
		return err
	}
	shard, err := c.ShardPool(p.Shard)
	if err != nil {
		return err
	}
	if err := dropSchema(ctx, shard, p.Schema); err != nil {
		return err
	}
	return deleteProjectRow(ctx, c.pool, projectID)
}

// ExportProject writes the project's archive to w at once, without a job
// (plinth project export).
func (c *Central) ExportProject(ctx context.Context, projectID string, w io.Writer) (archive.Manifest, error) {
	return archive.Export(ctx, exportPlane{c}, c.archives.media, projectID, w)
}

// exportPlane is the control plane as an export sees it: a project being
// deleted is read from the schema it waits under until it is dropped
// (DeleteProject with an export asked for).
type exportPlane struct{ *Central }

func (e exportPlane) Project(ctx context.Context, id string) (*tenant.Project, error) {
	p, err := e.Central.Project(ctx, id)
	if err != nil || p.Status != StatusDeleting {
		return p, err
	}
	moved := *p
	moved.Schema = deletedSchema(p.Schema)
	return &moved, nil
}
