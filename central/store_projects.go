package central

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
)

// The SQL of projects, their placements (project → shard and schema),
// the spare schemas and the processors' accounts.

const projectColumns = `p.id, p.tenant_id, p.name, p.slug, p.industry, p.default_language, p.target_languages, p.timezone, p.plan,
	p.plan_credits, p.rate_rpm, p.rate_burst, p.allowed_origins, p.site_url, p.status, p.status_reason, p.created_at, pl.shard, pl.schema_name,
	p.fallback_languages`

// scanProject reads a row of projectColumns, then extra;
// httpapi.ErrNotFound when there is none.
func scanProject(row pgx.Row, extra ...any) (*tenant.Project, error) {
	p := &tenant.Project{}
	dest := append([]any{&p.ID, &p.TenantID, &p.Name, &p.Slug, &p.Industry, &p.DefaultLanguage, &p.TargetLanguages, &p.Timezone, &p.Plan,
		&p.PlanCredits, &p.RateRPM, &p.RateBurst, &p.AllowedOrigins, &p.SiteURL, &p.Status, &p.StatusReason, &p.CreatedAt, &p.Shard, &p.Schema,
		&p.FallbackLanguages}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, notFound(err)
	}
	return p, nil
}

// collectProjects reads rows of projectColumns.
func collectProjects(rows pgx.Rows) ([]*tenant.Project, error) {
	defer rows.Close()
	var out []*tenant.Project
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// projectRow reads a placement's project for provisioning.Each.
var projectRow = provisioning.Row[*tenant.Project]{
	Columns: projectColumns,
	Scan:    func(r pgx.Row) (*tenant.Project, error) { return scanProject(r) },
}

// getProject reads project id with its placement.
func getProject(ctx context.Context, db dbtx, projectID string) (_ *tenant.Project, err error) {
	defer httpapi.Wrap(&err, "getProject(%s)", projectID)
	return scanProject(db.QueryRow(ctx, `SELECT `+projectColumns+` FROM central.projects p JOIN central.placements pl ON pl.project_id = p.id WHERE p.id = $1`, projectID))
}

// tenantProjects lists a tenant's projects, newest first.
func tenantProjects(ctx context.Context, db dbtx, tenantID int64) (_ []*tenant.Project, err error) {
	defer httpapi.Wrap(&err, "tenantProjects(%d)", tenantID)
	rows, err := db.Query(ctx, `SELECT `+projectColumns+` FROM central.projects p JOIN central.placements pl ON pl.project_id = p.id
		WHERE p.tenant_id = $1 ORDER BY p.created_at DESC, p.id DESC`, tenantID)
	if err != nil {
		return nil, err
	}
	return collectProjects(rows)
}

// tenantProjectsPage reads up to limit of a tenant's projects, newest
// first, after the project (after, afterID) when after is not nil.
func tenantProjectsPage(ctx context.Context, db dbtx, tenantID int64, after *time.Time, afterID string, limit int) (_ []*tenant.Project, err error) {
	defer httpapi.Wrap(&err, "tenantProjectsPage(%d)", tenantID)
	rows, err := db.Query(ctx, `SELECT `+projectColumns+` FROM central.projects p JOIN central.placements pl ON pl.project_id = p.id
		WHERE p.tenant_id = $1 AND ($2::timestamptz IS NULL OR (p.created_at, p.id) < ($2, $3))
		ORDER BY p.created_at DESC, p.id DESC LIMIT $4`, tenantID, after, afterID, limit)
	if err != nil {
		return nil, err
	}
	return collectProjects(rows)
}

// filteredProjects reads up to limit projects of the filter by id, after
// the id after.
func filteredProjects(ctx context.Context, db dbtx, f ProjectFilter, after string, limit int) (_ []*tenant.Project, err error) {
	defer httpapi.Wrap(&err, "filteredProjects")
	rows, err := db.Query(ctx, `SELECT `+projectColumns+` FROM central.projects p JOIN central.placements pl ON pl.project_id = p.id
		WHERE p.id > $1 AND ($2 = 0 OR p.tenant_id = $2) AND ($3 = '' OR p.plan = $3) AND ($4 = '' OR p.status = $4)
		ORDER BY p.id LIMIT $5`, after, f.TenantID, f.Plan, f.Status, limit)
	if err != nil {
		return nil, err
	}
	return collectProjects(rows)
}

// lockTenantTx are the options of a transaction that locks tenant
// tenantID's row as it begins (sent with BEGIN, so it costs no round
// trip; the id is an integer): the projects of one workspace are
// inserted one at a time.
func lockTenantTx(tenantID int64) pgx.TxOptions {
	return pgx.TxOptions{BeginQuery: fmt.Sprintf("BEGIN; SELECT 1 FROM central.tenants WHERE id = %d FOR NO KEY UPDATE", tenantID)}
}

// countTenantProjects counts a tenant's projects, those being deleted
// aside.
func countTenantProjects(ctx context.Context, tx pgx.Tx, tenantID int64) (n int, err error) {
	defer httpapi.Wrap(&err, "countTenantProjects(%d)", tenantID)
	err = tx.QueryRow(ctx, `SELECT count(*) FROM central.projects WHERE tenant_id = $1 AND status <> 'deleting'`, tenantID).Scan(&n)
	return n, err
}

// projectSlugTaken reports whether a project of the tenant has the slug.
func projectSlugTaken(ctx context.Context, tx pgx.Tx, tenantID int64, slug string) (exists bool, err error) {
	defer httpapi.Wrap(&err, "projectSlugTaken(%d, %q)", tenantID, slug)
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM central.projects WHERE tenant_id = $1 AND slug = $2)`, tenantID, slug).Scan(&exists)
	return exists, err
}

// insertProjectRow inserts a project of p with slug and its placement on
// shard, in one statement. The placement takes a spare
// schema at the tenant migrations latest and count when one is ready
// (spare is then true, and the placement already migrated: -1 asks for
// none); otherwise it names a new schema, project_<seq>, to provision.
// A spare is claimed by deleting its row; one another creation is
// claiming is skipped, not waited for (SKIP LOCKED).
func insertProjectRow(ctx context.Context, tx pgx.Tx, p ProjectParams, slug, shard string, latest int64, count int) (_ *tenant.Project, spare bool, err error) {
	defer httpapi.Wrap(&err, "insertProjectRow(%d, %q)", p.TenantID, slug)
	created, err := scanProject(tx.QueryRow(ctx, `WITH spare AS (
				DELETE FROM central.spare_schemas WHERE schema_name = (
					SELECT schema_name FROM central.spare_schemas
					WHERE shard = $12 AND schema_version = $10 AND migrations_applied = $11
					ORDER BY schema_name LIMIT 1 FOR UPDATE SKIP LOCKED)
				RETURNING schema_name, schema_version, migrations_applied
			), p AS (
				INSERT INTO central.projects (id, tenant_id, name, slug, industry, default_language, target_languages, timezone, plan)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *
			), pl AS (
				INSERT INTO central.placements (project_id, shard, schema_name, schema_version, migrations_applied, migrated_at)
				SELECT p.id, $12, COALESCE(spare.schema_name, 'project_' || p.seq), COALESCE(spare.schema_version, 0),
					COALESCE(spare.migrations_applied, 0), CASE WHEN spare.schema_name IS NOT NULL THEN now() END
				FROM p LEFT JOIN spare ON true
				RETURNING shard, schema_name, migrated_at IS NOT NULL AS spare
			)
			SELECT `+projectColumns+`, pl.spare FROM p, pl`,
		id.New("prj_"), p.TenantID, p.Name, slug, p.Industry, p.DefaultLanguage, p.TargetLanguages, p.Timezone, p.Plan,
		latest, count, shard), &spare)
	return created, spare, err
}

// lockProjectPlan reads project id's plan and locks its row for the
// transaction.
func lockProjectPlan(ctx context.Context, tx pgx.Tx, projectID string) (plan string, err error) {
	defer httpapi.Wrap(&err, "lockProjectPlan(%s)", projectID)
	err = tx.QueryRow(ctx, `SELECT plan FROM central.projects WHERE id = $1 FOR UPDATE`, projectID).Scan(&plan)
	return plan, notFound(err)
}

// updateProject applies u to project id. The enterprise overrides are
// cleared when the plan becomes another than enterprise, and otherwise
// set when u sets them.
func updateProject(ctx context.Context, tx pgx.Tx, projectID string, u ProjectUpdate) (err error) {
	defer httpapi.Wrap(&err, "updateProject(%s)", projectID)
	_, err = tx.Exec(ctx, `UPDATE central.projects SET
			name = COALESCE($2, name), industry = COALESCE($3, industry), default_language = COALESCE($4, default_language),
			target_languages = COALESCE($5, target_languages), timezone = COALESCE($6, timezone), plan = COALESCE($7, plan),
			allowed_origins = COALESCE($8, allowed_origins), site_url = COALESCE($9, site_url),
			fallback_languages = COALESCE($16::jsonb, fallback_languages),
			rate_rpm = CASE WHEN $7::text <> 'enterprise' THEN NULL WHEN $10 THEN $11 ELSE rate_rpm END,
			rate_burst = CASE WHEN $7::text <> 'enterprise' THEN NULL WHEN $12 THEN $13 ELSE rate_burst END,
			plan_credits = CASE WHEN $7::text <> 'enterprise' THEN NULL WHEN $14 THEN $15 ELSE plan_credits END
			WHERE id = $1`, projectID, u.Name, u.Industry, u.DefaultLanguage, u.TargetLanguages, u.Timezone, u.Plan, u.AllowedOrigins, u.SiteURL,
		u.RateRPM.Set, u.RateRPM.Value, u.RateBurst.Set, u.RateBurst.Value, u.PlanCredits.Set, u.PlanCredits.Value, u.FallbackLanguages)
	return err
}

// setRateOverride sets project id's own limits (nil clears one).
func setRateOverride(ctx context.Context, db dbtx, projectID string, rpm, burst *int, planCredits *int64) (err error) {
	defer httpapi.Wrap(&err, "setRateOverride(%s)", projectID)
	_, err = db.Exec(ctx, `UPDATE central.projects SET rate_rpm = $2, rate_burst = $3, plan_credits = $4 WHERE id = $1`, projectID, rpm, burst, planCredits)
	return err
}

// setProjectStatus sets project id's status and its reason, unless the
// project is being deleted; ok is false when it is, or is absent.
func setProjectStatus(ctx context.Context, db dbtx, projectID, status, reason string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "setProjectStatus(%s, %s)", projectID, status)
	var was string
	err = db.QueryRow(ctx, `WITH old AS (SELECT status FROM central.projects WHERE id = $1 FOR UPDATE)
		UPDATE central.projects p SET status = $2, status_reason = $3, status_at = now()
		FROM old WHERE p.id = $1 AND old.status <> 'deleting' RETURNING old.status`, projectID, status, reason).Scan(&was)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// lockProjectStatus reads project id's status and locks its row for the
// transaction.
func lockProjectStatus(ctx context.Context, tx pgx.Tx, projectID string) (status string, err error) {
	defer httpapi.Wrap(&err, "lockProjectStatus(%s)", projectID)
	err = tx.QueryRow(ctx, `SELECT status FROM central.projects WHERE id = $1 FOR UPDATE`, projectID).Scan(&status)
	return status, notFound(err)
}

// markDeleting revokes every key of project id and marks it deleting.
func markDeleting(ctx context.Context, tx pgx.Tx, projectID string) (err error) {
	defer httpapi.Wrap(&err, "markDeleting(%s)", projectID)
	if _, err := tx.Exec(ctx, `UPDATE central.api_keys SET revoked_at = now() WHERE project_id = $1 AND revoked_at IS NULL`, projectID); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE central.projects SET status = 'deleting', status_at = now() WHERE id = $1`, projectID)
	return err
}

// renameSchema renames the schema from to to when it exists (a project
// whose provisioning failed may have none).
func renameSchema(ctx context.Context, tx pgx.Tx, from, to string) (err error) {
	defer httpapi.Wrap(&err, "renameSchema(%s, %s)", from, to)
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, from).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return nil
	}
	_, err = tx.Exec(ctx, `ALTER SCHEMA `+pgx.Identifier{from}.Sanitize()+` RENAME TO `+pgx.Identifier{to}.Sanitize())
	return err
}

// dropSchema drops the schema, and everything in it, from the shard db.
func dropSchema(ctx context.Context, db dbtx, schema string) (err error) {
	defer httpapi.Wrap(&err, "dropSchema(%s)", schema)
	_, err = db.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	return err
}

// deleteProjectRow deletes project id's row; its placement, keys and
// payment accounts go with it.
func deleteProjectRow(ctx context.Context, db dbtx, projectID string) (err error) {
	defer httpapi.Wrap(&err, "deleteProjectRow(%s)", projectID)
	_, err = db.Exec(ctx, `DELETE FROM central.projects WHERE id = $1`, projectID)
	return err
}

// deleteDeletedProject deletes project id's row if it is being deleted.
func deleteDeletedProject(ctx context.Context, db dbtx, projectID string) (err error) {
	defer httpapi.Wrap(&err, "deleteDeletedProject(%s)", projectID)
	_, err = db.Exec(ctx, `DELETE FROM central.projects WHERE id = $1 AND status = 'deleting'`, projectID)
	return err
}

// exportsSince reports whether an export of project id, exportID or one
// started after it, has completed, and whether one is still waiting or
// running.
func exportsSince(ctx context.Context, db dbtx, projectID, exportID string) (completed, waiting bool, err error) {
	defer httpapi.Wrap(&err, "exportsSince(%s, %s)", projectID, exportID)
	err = db.QueryRow(ctx, `SELECT COALESCE(bool_or(status = 'completed'), false), COALESCE(bool_or(status IN ('pending', 'running')), false)
			FROM central.exports WHERE project_id = $1 AND created_at >= (SELECT created_at FROM central.exports WHERE id = $2)`,
		projectID, exportID).Scan(&completed, &waiting)
	return completed, waiting, err
}

// countProjectJobs counts the River jobs of project id, whatever their
// state.
func countProjectJobs(ctx context.Context, db dbtx, projectID string) (n int, err error) {
	defer httpapi.Wrap(&err, "countProjectJobs(%s)", projectID)
	err = db.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE args->>'project_id' = $1`, projectID).Scan(&n)
	return n, err
}

// The conditions of River's job lists (river.NamedArgs "project"): the
// jobs of a project, and those of them a suspension snoozed.
const (
	projectJobsWhere = "args->>'project_id' = @project"
	snoozedJobsWhere = "args->>'project_id' = @project AND metadata->>'snoozes' IS NOT NULL"
)

// firstProjectID is the id of the first project created;
// httpapi.ErrNotFound when there is none.
func firstProjectID(ctx context.Context, db dbtx) (pid string, err error) {
	defer httpapi.Wrap(&err, "firstProjectID")
	err = db.QueryRow(ctx, `SELECT id FROM central.projects ORDER BY seq LIMIT 1`).Scan(&pid)
	return pid, notFound(err)
}

// staleSpares lists the spare schemas of shard not at the tenant
// migrations latest and count.
func staleSpares(ctx context.Context, db dbtx, shard string, latest int64, count int) (_ []string, err error) {
	defer httpapi.Wrap(&err, "staleSpares(%s)", shard)
	rows, err := db.Query(ctx, `SELECT schema_name FROM central.spare_schemas
		WHERE shard = $3 AND (schema_version <> $1 OR migrations_applied <> $2)`, latest, count, shard)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// countSpares counts the spare schemas of shard at the tenant
// migrations latest and count: those a new project may claim.
func countSpares(ctx context.Context, db dbtx, shard string, latest int64, count int) (n int, err error) {
	defer httpapi.Wrap(&err, "countSpares(%s)", shard)
	err = db.QueryRow(ctx, `SELECT count(*) FROM central.spare_schemas
			WHERE shard = $3 AND schema_version = $1 AND migrations_applied = $2`, latest, count, shard).Scan(&n)
	return n, err
}

// nextProjectSeq takes a value of the projects' sequence, which names
// schemas (project_<seq>).
func nextProjectSeq(ctx context.Context, db dbtx) (next int64, err error) {
	defer httpapi.Wrap(&err, "nextProjectSeq")
	err = db.QueryRow(ctx, `SELECT nextval('central.projects_seq_seq')`).Scan(&next)
	return next, err
}

// linkPaymentAccount records the project of a processor account; an
// account linked already is left as it is.
func linkPaymentAccount(ctx context.Context, db dbtx, projectID, accountID string) (err error) {
	defer httpapi.Wrap(&err, "linkPaymentAccount(%s, %s)", projectID, accountID)
	_, err = db.Exec(ctx, `INSERT INTO central.payment_accounts (account_id, project_id) VALUES ($1, $2)
		ON CONFLICT (account_id) DO NOTHING`, accountID, projectID)
	return err
}

// accountProject is the project of a processor account.
func accountProject(ctx context.Context, db dbtx, accountID string) (pid string, err error) {
	defer httpapi.Wrap(&err, "payment account %s", accountID)
	err = db.QueryRow(ctx, `SELECT project_id FROM central.payment_accounts WHERE account_id = $1`, accountID).Scan(&pid)
	return pid, notFound(err)
}
