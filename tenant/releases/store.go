package releases

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// The statements of releases and preview links.

const releaseCols = `id, name, status, items, publish_at, published_at, error, created_at, updated_at`

func scanRelease(row pgx.Row) (Release, error) {
	var rel Release
	var items []byte
	if err := row.Scan(&rel.ID, &rel.Name, &rel.Status, &items, &rel.PublishAt, &rel.PublishedAt, &rel.Error, &rel.CreatedAt, &rel.UpdatedAt); err != nil {
		return rel, err
	}
	if err := json.Unmarshal(items, &rel.Items); err != nil {
		return rel, err
	}
	rel.CreatedAt, rel.UpdatedAt = rel.CreatedAt.UTC(), rel.UpdatedAt.UTC()
	for _, t := range []**time.Time{&rel.PublishAt, &rel.PublishedAt} {
		if *t != nil {
			u := (**t).UTC()
			*t = &u
		}
	}
	return rel, nil
}

func noRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRelease
	}
	return err
}

func insertRelease(ctx context.Context, tx pgx.Tx, name string, items []Item, status string, at *time.Time, actor string) (_ Release, err error) {
	defer httpapi.Wrap(&err, "insertRelease")
	raw, err := json.Marshal(items)
	if err != nil {
		return Release{}, err
	}
	return scanRelease(tx.QueryRow(ctx, `INSERT INTO releases (name, items, status, publish_at, created_by)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+releaseCols, name, raw, status, at, actor))
}

// findRelease reads release id; lock holds it until the transaction ends.
func findRelease(ctx context.Context, q tenant.Querier, id int64, lock bool) (_ Release, err error) {
	defer httpapi.Wrap(&err, "findRelease(%d)", id)
	sql := `SELECT ` + releaseCols + ` FROM releases WHERE id = $1`
	if lock {
		sql += ` FOR UPDATE`
	}
	rel, err := scanRelease(q.QueryRow(ctx, sql, id))
	return rel, noRows(err)
}

func listReleases(ctx context.Context, q tenant.Querier, before int64, status string, limit int) (_ []Release, err error) {
	defer httpapi.Wrap(&err, "listReleases")
	rows, err := q.Query(ctx, `SELECT `+releaseCols+` FROM releases WHERE ($1 = 0 OR id < $1) AND ($2 = '' OR status = $2)
		ORDER BY id DESC LIMIT $3`, before, status, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Release, error) { return scanRelease(row) })
}

func markPublished(ctx context.Context, tx pgx.Tx, id int64) (_ Release, err error) {
	defer httpapi.Wrap(&err, "markPublished(%d)", id)
	rel, err := scanRelease(tx.QueryRow(ctx, `UPDATE releases SET status = 'published', published_at = now(), error = NULL, updated_at = now()
		WHERE id = $1 RETURNING `+releaseCols, id))
	return rel, noRows(err)
}

func setStatus(ctx context.Context, tx pgx.Tx, id int64, status string) (_ Release, err error) {
	defer httpapi.Wrap(&err, "setStatus(%d, %s)", id, status)
	rel, err := scanRelease(tx.QueryRow(ctx, `UPDATE releases SET status = $2, updated_at = now() WHERE id = $1 RETURNING `+releaseCols, id, status))
	return rel, noRows(err)
}

// setError records why the release could not publish, and its new status
// ("": unchanged).
func setError(ctx context.Context, tx pgx.Tx, id int64, msg, status string) (err error) {
	defer httpapi.Wrap(&err, "setError(%d)", id)
	_, err = tx.Exec(ctx, `UPDATE releases SET error = $2, status = COALESCE(NULLIF($3, ''), status), updated_at = now() WHERE id = $1`, id, msg, status)
	return err
}

// claimScheduled takes the release id if it is still scheduled at at: of
// however many jobs run for it, one claims it (the row stays locked by
// the UPDATE until the claim's transaction ends; the others then find it
// published, failed or cancelled).
func claimScheduled(ctx context.Context, tx pgx.Tx, id int64, at time.Time) (_ bool, err error) {
	defer httpapi.Wrap(&err, "claimScheduled(%d)", id)
	tag, err := tx.Exec(ctx, `UPDATE releases SET updated_at = now() WHERE id = $1 AND status = 'scheduled' AND publish_at = $2`, id, at)
	return tag.RowsAffected() == 1, err
}

// scheduledSQL reads the id and time of every scheduled release.
const scheduledSQL = `SELECT id, publish_at FROM releases WHERE status = 'scheduled' ORDER BY id`

// insertPreview stores the preview link p (its id, release and items
// set) with the hash of its token, for ttl; it sets p's times.
func insertPreview(ctx context.Context, tx pgx.Tx, p *Preview, hash, items []byte, ttl time.Duration, actor string) (err error) {
	defer httpapi.Wrap(&err, "insertPreview")
	err = tx.QueryRow(ctx, `INSERT INTO previews (id, secret_hash, release_id, items, expires_at, created_by)
		VALUES ($1, $2, $3, $4, now() + $5 * interval '1 second', $6) RETURNING expires_at, created_at`,
		p.ID, hash, p.ReleaseID, items, int64(ttl/time.Second), actor).Scan(&p.ExpiresAt, &p.CreatedAt)
	p.ExpiresAt, p.CreatedAt = p.ExpiresAt.UTC(), p.CreatedAt.UTC()
	return err
}

// revokePreview ends the preview link id (errNoPreview when none).
func revokePreview(ctx context.Context, tx pgx.Tx, id string) (err error) {
	defer httpapi.Wrap(&err, "revokePreview(%s)", id)
	tag, err := tx.Exec(ctx, `UPDATE previews SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return errNoPreview
	}
	return err
}

// listPreviews reads up to limit preview links, newest id first, before
// the id before ("" from the first). Ids sort by creation (id.New).
func listPreviews(ctx context.Context, q tenant.Querier, before string, limit int) (_ []Preview, err error) {
	defer httpapi.Wrap(&err, "listPreviews")
	rows, err := q.Query(ctx, `SELECT p.id, p.release_id, CASE WHEN p.release_id IS NULL THEN p.items ELSE r.items END,
			p.expires_at, p.revoked_at, p.created_at
		FROM previews p LEFT JOIN releases r ON r.id = p.release_id
		WHERE ($1 = '' OR p.id < $1) ORDER BY p.id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Preview, error) {
		var p Preview
		var items []byte
		if err := row.Scan(&p.ID, &p.ReleaseID, &items, &p.ExpiresAt, &p.RevokedAt, &p.CreatedAt); err != nil {
			return p, err
		}
		p.ExpiresAt, p.CreatedAt = p.ExpiresAt.UTC(), p.CreatedAt.UTC()
		if p.RevokedAt != nil {
			t := p.RevokedAt.UTC()
			p.RevokedAt = &t
		}
		return p, json.Unmarshal(items, &p.Items)
	})
}
