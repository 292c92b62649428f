package central

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
)

// The SQL of exports: pending → running → completed (or failed), the
// archive's place in the store once written.

const exportColumns = `id, project_id, status, size_bytes, row_counts, error, created_at, completed_at, COALESCE(storage_key, '')`

// scanExport reads a row of exportColumns: the export and the key of its
// archive ("" until completed).
func scanExport(row pgx.Row) (ExportJSON, string, error) {
	var e ExportJSON
	var key string
	err := row.Scan(&e.ID, &e.ProjectID, &e.Status, &e.SizeBytes, &e.RowCounts, &e.Error, &e.CreatedAt, &e.CompletedAt, &key)
	e.CreatedAt = e.CreatedAt.UTC()
	if e.CompletedAt != nil {
		t := e.CompletedAt.UTC()
		e.CompletedAt = &t
	}
	return e, key, notFound(err)
}

// insertExportRow records a pending export of project id.
func insertExportRow(ctx context.Context, tx pgx.Tx, projectID string) (_ ExportJSON, err error) {
	defer httpapi.Wrap(&err, "insertExportRow(%s)", projectID)
	e, _, err := scanExport(tx.QueryRow(ctx, `INSERT INTO central.exports (id, project_id) VALUES ($1, $2) RETURNING `+exportColumns,
		id.New("exp_"), projectID))
	return e, err
}

// getExport reads export id and the key of its archive.
func getExport(ctx context.Context, db dbtx, exportID string) (_ ExportJSON, key string, err error) {
	defer httpapi.Wrap(&err, "getExport(%s)", exportID)
	return scanExport(db.QueryRow(ctx, `SELECT `+exportColumns+` FROM central.exports WHERE id = $1`, exportID))
}

// startExport marks export id running and returns its project;
// httpapi.ErrNotFound when it is completed or failed already.
func startExport(ctx context.Context, db dbtx, exportID string) (projectID string, err error) {
	defer httpapi.Wrap(&err, "startExport(%s)", exportID)
	err = db.QueryRow(ctx, `UPDATE central.exports SET status = 'running', error = NULL WHERE id = $1 AND status IN ('pending', 'running')
		RETURNING project_id`, exportID).Scan(&projectID)
	return projectID, notFound(err)
}

// setExportError records an attempt's error, with the status the export
// is left in: pending (it is tried again) or failed.
func setExportError(ctx context.Context, db dbtx, exportID, status, msg string) (err error) {
	defer httpapi.Wrap(&err, "setExportError(%s)", exportID)
	_, err = db.Exec(ctx, `UPDATE central.exports SET status = $2, error = $3 WHERE id = $1`,
		exportID, status, msg)
	return err
}

// completeExport records that export id's archive is stored under key.
func completeExport(ctx context.Context, db dbtx, exportID string, size int64, rowCounts map[string]int64, key string) (err error) {
	defer httpapi.Wrap(&err, "completeExport(%s)", exportID)
	_, err = db.Exec(ctx, `UPDATE central.exports SET status = 'completed', size_bytes = $2, row_counts = $3, storage_key = $4,
		completed_at = now(), error = NULL WHERE id = $1`, exportID, size, rowCounts, key)
	return err
}
