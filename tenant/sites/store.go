package sites

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// The pillar's SQL: the stored content plans, and the marks of what
// website.generate wrote (generated.go says why).

const planCols = `id, topic, language_code, items, job_id, created_at`

// scanPlan reads a row of planCols.
func scanPlan(row pgx.Row) (Plan, error) {
	var p Plan
	var items []byte
	if err := row.Scan(&p.ID, &p.Topic, &p.LanguageCode, &items, &p.JobID, &p.CreatedAt); err != nil {
		return p, err
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return p, json.Unmarshal(items, &p.Items)
}

// loadPlan reads plan id; errNoPlan when absent.
func loadPlan(ctx context.Context, tx tenant.Querier, id int64) (_ Plan, err error) {
	defer httpapi.Wrap(&err, "loadPlan(%d)", id)
	p, err := scanPlan(tx.QueryRow(ctx, `SELECT `+planCols+` FROM content_plans WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, errNoPlan
	}
	return p, err
}

// readPlans reads up to limit plans, newest first, before the id before
// (0: from the newest), of the job jobID only when it is not "".
func readPlans(ctx context.Context, q tenant.Querier, jobID string, before int64, limit int) (_ []Plan, err error) {
	defer httpapi.Wrap(&err, "readPlans")
	rows, err := q.Query(ctx, `SELECT `+planCols+` FROM content_plans
			WHERE ($1 = 0 OR id < $1) AND ($2 = '' OR job_id = $2) ORDER BY id DESC LIMIT $3`, before, jobID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Plan, error) { return scanPlan(row) })
}

// insertPlan stores the plan job jobID made of topic: its items, as JSON.
func insertPlan(ctx context.Context, tx pgx.Tx, topic, lang string, items []byte, jobID string) (err error) {
	defer httpapi.Wrap(&err, "insertPlan(%s)", jobID)
	_, err = tx.Exec(ctx, `INSERT INTO content_plans (topic, language_code, items, job_id) VALUES ($1, $2, $3, $4)`,
		topic, lang, items, jobID)
	return err
}

// loadMarks reads the marks of what earlier runs generated, with the
// fingerprint each item had as they left it.
func loadMarks(ctx context.Context, tx pgx.Tx) (_ map[mark]string, err error) {
	defer httpapi.Wrap(&err, "loadMarks")
	rows, err := tx.Query(ctx, `SELECT kind, ref, lang, fingerprint FROM site_generated`)
	if err != nil {
		return nil, err
	}
	out := map[mark]string{}
	var m mark
	var fp string
	_, err = pgx.ForEachRow(rows, []any{&m.Kind, &m.Ref, &m.Lang, &fp}, func() error {
		out[m] = fp
		return nil
	})
	return out, err
}

// saveMarks records the items job jobID wrote, each with its
// fingerprint as written.
func saveMarks(ctx context.Context, tx pgx.Tx, jobID string, marks map[mark]string) (err error) {
	defer httpapi.Wrap(&err, "saveMarks(%s)", jobID)
	if len(marks) == 0 {
		return nil
	}
	var kinds, refs, langs, prints []string
	for m, fp := range marks {
		kinds, refs, langs, prints = append(kinds, m.Kind), append(refs, m.Ref), append(langs, m.Lang), append(prints, fp)
	}
	_, err = tx.Exec(ctx, `INSERT INTO site_generated (kind, ref, lang, fingerprint, job_id)
		SELECT k, r, l, f, $5 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(k, r, l, f)
		ON CONFLICT (kind, ref, lang) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, job_id = EXCLUDED.job_id, updated_at = now()`,
		kinds, refs, langs, prints, jobID)
	return err
}
