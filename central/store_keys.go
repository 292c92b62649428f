package central

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// The SQL of the projects' API keys and of the admin tokens. Both are
// stored as their HMAC under the server secret (HashKey) and looked up
// by it.

// lockProjectRow locks project id's row for the transaction: concurrent
// mints of its keys then count one after another.
func lockProjectRow(ctx context.Context, tx pgx.Tx, projectID string) (err error) {
	defer httpapi.Wrap(&err, "lockProjectRow(%s)", projectID)
	_, err = tx.Exec(ctx, `SELECT 1 FROM central.projects WHERE id = $1 FOR UPDATE`, projectID)
	return err
}

// countActiveKeys counts project id's keys that are not revoked.
func countActiveKeys(ctx context.Context, tx pgx.Tx, projectID string) (n int, err error) {
	defer httpapi.Wrap(&err, "countActiveKeys(%s)", projectID)
	err = tx.QueryRow(ctx, `SELECT count(*) FROM central.api_keys WHERE project_id = $1 AND revoked_at IS NULL`, projectID).Scan(&n)
	return n, err
}

// insertKey stores key k of project id with the hash of its secret and
// sets its creation time.
func insertKey(ctx context.Context, tx pgx.Tx, projectID string, k *APIKey, hash []byte, test bool) (err error) {
	defer httpapi.Wrap(&err, "insertKey(%s)", projectID)
	return tx.QueryRow(ctx, `INSERT INTO central.api_keys (id, project_id, name, prefix, masked, hash, scopes, test)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at`,
		k.ID, projectID, k.Name, k.Prefix, k.Masked, hash, k.Scopes, test).Scan(&k.CreatedAt)
}

// activeKeys lists project id's keys that are not revoked, newest first.
func activeKeys(ctx context.Context, db dbtx, projectID string) (_ []APIKey, err error) {
	defer httpapi.Wrap(&err, "activeKeys(%s)", projectID)
	rows, err := db.Query(ctx, `SELECT id, name, prefix, masked, scopes, last_used_at, created_at FROM central.api_keys
		WHERE project_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id DESC`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (APIKey, error) {
		var k APIKey
		err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.Masked, &k.Scopes, &k.LastUsedAt, &k.CreatedAt)
		k.CreatedAt = k.CreatedAt.UTC()
		if k.LastUsedAt != nil {
			*k.LastUsedAt = k.LastUsedAt.UTC()
		}
		return k, err
	})
}

// revokeKey revokes key id of the project; ok is false when the project
// has no such active key.
func revokeKey(ctx context.Context, db dbtx, projectID, keyID string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "revokeKey(%s, %s)", projectID, keyID)
	tag, err := db.Exec(ctx, `UPDATE central.api_keys SET revoked_at = now() WHERE id = $1 AND project_id = $2 AND revoked_at IS NULL`, keyID, projectID)
	return tag.RowsAffected() > 0, err
}

// resolveSQL looks a key up by hash with its project and placement.
const resolveSQL = `SELECT ` + projectColumns + `, k.id, k.scopes, k.test, k.revoked_at
	FROM central.api_keys k JOIN central.projects p ON p.id = k.project_id JOIN central.placements pl ON pl.project_id = p.id
	WHERE k.hash = $1`

// keyByHash reads the key whose secret hashes to hash, with its project
// and when it was revoked (nil: active); httpapi.ErrNotFound when no key
// has it.
func keyByHash(ctx context.Context, db dbtx, hash []byte) (p *tenant.Project, k tenant.Key, revoked *time.Time, err error) {
	defer httpapi.Wrap(&err, "keyByHash")
	p, err = scanProject(db.QueryRow(ctx, resolveSQL, hash), &k.ID, &k.Scopes, &k.Test, &revoked)
	return p, k, revoked, err
}

// touchKey records that key id was used now.
func touchKey(ctx context.Context, db dbtx, keyID string) (err error) {
	defer httpapi.Wrap(&err, "touchKey(%s)", keyID)
	_, err = db.Exec(ctx, `UPDATE central.api_keys SET last_used_at = now() WHERE id = $1`, keyID)
	return err
}

// insertAdminToken stores admin token t with the hash of its secret and
// sets its creation time (and expiry as stored).
func insertAdminToken(ctx context.Context, db dbtx, t *AdminToken, hash []byte, expiresAt *time.Time) (err error) {
	defer httpapi.Wrap(&err, "insertAdminToken(%s)", t.ID)
	return db.QueryRow(ctx, `INSERT INTO central.admin_tokens (id, name, scopes, hash, expires_at) VALUES ($1, $2, $3, $4, $5)
		RETURNING created_at, expires_at`, t.ID, t.Name, t.Scopes, hash, expiresAt).Scan(&t.CreatedAt, &t.ExpiresAt)
}

// activeAdminTokens lists the admin tokens neither revoked nor expired,
// newest first.
func activeAdminTokens(ctx context.Context, db dbtx) (_ []AdminToken, err error) {
	defer httpapi.Wrap(&err, "activeAdminTokens")
	rows, err := db.Query(ctx, `SELECT id, name, scopes, created_at, last_used_at, expires_at FROM central.admin_tokens
		WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (AdminToken, error) {
		var t AdminToken
		err := r.Scan(&t.ID, &t.Name, &t.Scopes, &t.CreatedAt, &t.LastUsedAt, &t.ExpiresAt)
		utcTimes(&t)
		return t, err
	})
}

// revokeAdminToken revokes admin token id; ok is false when no active
// token has the id.
func revokeAdminToken(ctx context.Context, db dbtx, tokenID string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "revokeAdminToken(%s)", tokenID)
	tag, err := db.Exec(ctx, `UPDATE central.admin_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, tokenID)
	return tag.RowsAffected() > 0, err
}

// useAdminToken reads the admin token whose secret hashes to hash, with
// whether it is revoked or expired, and records its use (last_used_at)
// in the same statement when it is neither; httpapi.ErrNotFound when no
// token has the hash.
func useAdminToken(ctx context.Context, db dbtx, hash []byte) (t *AdminToken, revoked, expired bool, err error) {
	defer httpapi.Wrap(&err, "useAdminToken")
	t = &AdminToken{}
	err = db.QueryRow(ctx, `WITH t AS (
			SELECT id, name, scopes, created_at, revoked_at IS NOT NULL AS revoked, expires_at <= now() AS expired
			FROM central.admin_tokens WHERE hash = $1
		), used AS (
			UPDATE central.admin_tokens a SET last_used_at = now() FROM t
			WHERE a.id = t.id AND NOT t.revoked AND t.expired IS NOT TRUE
		)
		SELECT id, name, scopes, created_at, revoked, COALESCE(expired, false) FROM t`, hash).
		Scan(&t.ID, &t.Name, &t.Scopes, &t.CreatedAt, &revoked, &expired)
	return t, revoked, expired, notFound(err)
}
