package central

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// The SQL of tenants (workspaces), their users, the dashboard's logins
// and the sessions signed out.

// insertTenant inserts a tenant (its domain lower-cased).
func insertTenant(ctx context.Context, tx pgx.Tx, name, domain string) (t Tenant, err error) {
	defer httpapi.Wrap(&err, "insertTenant")
	err = tx.QueryRow(ctx, `INSERT INTO central.tenants (name, domain) VALUES ($1, lower($2)) RETURNING id, name, domain, created_at`,
		name, domain).Scan(&t.ID, &t.Name, &t.Domain, &t.CreatedAt)
	return t, err
}

// insertUser inserts a user of tenant tenantID with a password hash.
func insertUser(ctx context.Context, db dbtx, tenantID int64, name, email, hash string) (u User, err error) {
	defer httpapi.Wrap(&err, "insertUser(%d)", tenantID)
	u.TenantID = tenantID
	err = db.QueryRow(ctx, `INSERT INTO central.users (tenant_id, name, email, password_hash) VALUES ($1, $2, $3, $4)
		RETURNING id, name, email, created_at`, tenantID, name, email, hash).Scan(&u.ID, &u.Name, &u.Email, &u.CreatedAt)
	u.CreatedAt = u.CreatedAt.UTC()
	return u, err
}

const adminTenantSQL = `SELECT t.id, t.name, t.domain,
	(SELECT count(*) FROM central.projects p WHERE p.tenant_id = t.id),
	(SELECT count(*) FROM central.users u WHERE u.tenant_id = t.id), t.created_at FROM central.tenants t`

func scanAdminTenant(row pgx.Row) (AdminTenant, error) {
	var t AdminTenant
	err := row.Scan(&t.ID, &t.Name, &t.Domain, &t.Projects, &t.Users, &t.CreatedAt)
	t.CreatedAt = t.CreatedAt.UTC()
	return t, notFound(err)
}

// adminTenants reads up to limit tenants by id, after the id after, with
// their counts of projects and users.
func adminTenants(ctx context.Context, db dbtx, after int64, limit int) (_ []AdminTenant, err error) {
	defer httpapi.Wrap(&err, "adminTenants")
	rows, err := db.Query(ctx, adminTenantSQL+` WHERE t.id > $1 ORDER BY t.id LIMIT $2`, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (AdminTenant, error) { return scanAdminTenant(r) })
}

// adminTenant reads tenant id with its counts of projects and users.
func adminTenant(ctx context.Context, db dbtx, tenantID int64) (_ AdminTenant, err error) {
	defer httpapi.Wrap(&err, "adminTenant(%d)", tenantID)
	return scanAdminTenant(db.QueryRow(ctx, adminTenantSQL+` WHERE t.id = $1`, tenantID))
}

// updateTenant sets tenant id's name and domain (lower-cased; nil keeps
// one); ok is false when there is no such tenant.
func updateTenant(ctx context.Context, db dbtx, tenantID int64, name, domain *string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "updateTenant(%d)", tenantID)
	tag, err := db.Exec(ctx, `UPDATE central.tenants SET name = COALESCE($2, name), domain = COALESCE(lower($3), domain) WHERE id = $1`,
		tenantID, name, domain)
	return tag.RowsAffected() > 0, err
}

// deleteEmptyTenant deletes tenant id, with its users, if it has no
// projects; ok is false when it was not deleted.
func deleteEmptyTenant(ctx context.Context, db dbtx, tenantID int64) (ok bool, err error) {
	defer httpapi.Wrap(&err, "deleteEmptyTenant(%d)", tenantID)
	tag, err := db.Exec(ctx, `DELETE FROM central.tenants t WHERE id = $1
		AND NOT EXISTS (SELECT 1 FROM central.projects p WHERE p.tenant_id = t.id)`, tenantID)
	return tag.RowsAffected() == 1, err
}

// tenantUsers reads up to limit users of a tenant by id, after the id
// after.
func tenantUsers(ctx context.Context, db dbtx, tenantID, after int64, limit int) (_ []User, err error) {
	defer httpapi.Wrap(&err, "tenantUsers(%d)", tenantID)
	rows, err := db.Query(ctx, `SELECT id, tenant_id, name, email, created_at FROM central.users
		WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3`, tenantID, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) {
		var u User
		err := r.Scan(&u.ID, &u.TenantID, &u.Name, &u.Email, &u.CreatedAt)
		u.CreatedAt = u.CreatedAt.UTC()
		return u, err
	})
}

// lockTenantUsers counts a tenant's users and locks their rows for the
// transaction, so that two removals cannot both leave it none.
func lockTenantUsers(ctx context.Context, tx pgx.Tx, tenantID int64) (n int, err error) {
	defer httpapi.Wrap(&err, "lockTenantUsers(%d)", tenantID)
	err = tx.QueryRow(ctx, `SELECT count(*) FROM central.users WHERE tenant_id = $1 AND id IN (
			SELECT id FROM central.users WHERE tenant_id = $1 FOR UPDATE)`, tenantID).Scan(&n)
	return n, err
}

// userInTenant reports whether user id belongs to the tenant.
func userInTenant(ctx context.Context, tx pgx.Tx, tenantID, userID int64) (exists bool, err error) {
	defer httpapi.Wrap(&err, "userInTenant(%d, %d)", tenantID, userID)
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM central.users WHERE id = $1 AND tenant_id = $2)`, userID, tenantID).Scan(&exists)
	return exists, err
}

// deleteUser deletes user id of the tenant.
func deleteUser(ctx context.Context, tx pgx.Tx, tenantID, userID int64) (err error) {
	defer httpapi.Wrap(&err, "deleteUser(%d, %d)", tenantID, userID)
	_, err = tx.Exec(ctx, `DELETE FROM central.users WHERE id = $1 AND tenant_id = $2`, userID, tenantID)
	return err
}

// setPassword sets user id's password hash and ends its sessions (the
// session epoch goes up); ok is false when the tenant has no such user.
func setPassword(ctx context.Context, db dbtx, tenantID, userID int64, hash string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "setPassword(%d, %d)", tenantID, userID)
	tag, err := db.Exec(ctx, `UPDATE central.users SET password_hash = $3, session_epoch = session_epoch + 1 WHERE id = $1 AND tenant_id = $2`, userID, tenantID, hash)
	return tag.RowsAffected() > 0, err
}

// tenantsOfEmail lists the tenants of the users with the email (any
// case), by id.
func tenantsOfEmail(ctx context.Context, db dbtx, email string) (_ []Tenant, err error) {
	defer httpapi.Wrap(&err, "tenantsOfEmail")
	rows, err := db.Query(ctx, `SELECT t.id, t.name, t.domain, t.created_at
		FROM central.users u JOIN central.tenants t ON t.id = u.tenant_id
		WHERE lower(u.email) = lower($1) ORDER BY t.id`, email)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Tenant, error) {
		var t Tenant
		return t, r.Scan(&t.ID, &t.Name, &t.Domain, &t.CreatedAt)
	})
}

// loginCandidates reads the users with the email (any case), in tenant
// tenantID or, when nil, in every tenant by id, with their password
// hashes and session epochs.
func loginCandidates(ctx context.Context, db dbtx, email string, tenantID *int64) (_ []loginCandidate, err error) {
	defer httpapi.Wrap(&err, "loginCandidates")
	rows, err := db.Query(ctx, `SELECT u.id, u.tenant_id, u.name, u.email, u.created_at, u.password_hash, u.session_epoch, t.id, t.name, t.domain, t.created_at
		FROM central.users u JOIN central.tenants t ON t.id = u.tenant_id
		WHERE lower(u.email) = lower($1) AND ($2::bigint IS NULL OR u.tenant_id = $2) ORDER BY t.id`,
		email, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (loginCandidate, error) {
		var lc loginCandidate
		u, t := &lc.user, &lc.tenant
		return lc, r.Scan(&u.ID, &u.TenantID, &u.Name, &u.Email, &u.CreatedAt, &lc.hash, &lc.epoch, &t.ID, &t.Name, &t.Domain, &t.CreatedAt)
	})
}

// lockLoginEmail takes the transaction's advisory lock of the email key
// (loginKey): the attempts of one email are counted one at a time on
// every instance.
func lockLoginEmail(ctx context.Context, tx pgx.Tx, key string) (err error) {
	defer httpapi.Wrap(&err, "lockLoginEmail")
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "plinth.login:"+key)
	return err
}

// recentLoginFailures counts the email key's failures within the last
// window seconds and, when there are at least limit, the seconds until
// the limit-th newest leaves the window (retry).
func recentLoginFailures(ctx context.Context, tx pgx.Tx, key string, window float64, limit int) (n, retry int, err error) {
	defer httpapi.Wrap(&err, "recentLoginFailures")
	err = tx.QueryRow(ctx, `SELECT count(*),
			COALESCE(ceil(extract(epoch FROM (array_agg(failed_at ORDER BY failed_at DESC))[$3] + $2 * interval '1 second' - now())), 0)::int
			FROM central.login_failures WHERE email = $1 AND failed_at > now() - $2 * interval '1 second'`,
		key, window, limit).Scan(&n, &retry)
	return n, retry, err
}

// recordLoginFailure records an attempt of the email key as a failure.
func recordLoginFailure(ctx context.Context, tx pgx.Tx, key string) (err error) {
	defer httpapi.Wrap(&err, "recordLoginFailure")
	_, err = tx.Exec(ctx, `INSERT INTO central.login_failures (email) VALUES ($1)`, key)
	return err
}

// clearLoginFailures forgets the email key's failures.
func clearLoginFailures(ctx context.Context, db dbtx, key string) (err error) {
	defer httpapi.Wrap(&err, "clearLoginFailures")
	_, err = db.Exec(ctx, `DELETE FROM central.login_failures WHERE email = $1`, key)
	return err
}

// deleteOldLoginFailures deletes the failures older than window seconds.
func deleteOldLoginFailures(ctx context.Context, db dbtx, window float64) (err error) {
	defer httpapi.Wrap(&err, "deleteOldLoginFailures")
	_, err = db.Exec(ctx, `DELETE FROM central.login_failures WHERE failed_at < now() - $1 * interval '1 second'`, window)
	return err
}

// sessionUser fills s with the user userID of tenant tenantID and its
// tenant, and reads the user's session epoch and whether the session
// s.id was signed out, in one query by primary key;
// httpapi.ErrNotFound when the tenant has no such user.
func sessionUser(ctx context.Context, db dbtx, s *Session, userID, tenantID int64) (epoch int64, revoked bool, err error) {
	defer httpapi.Wrap(&err, "sessionUser(%d, %d)", tenantID, userID)
	u, t := &s.User, &s.Tenant
	err = db.QueryRow(ctx, `SELECT u.id, u.tenant_id, u.name, u.email, u.created_at, t.id, t.name, t.domain, t.created_at,
		u.session_epoch, EXISTS (SELECT 1 FROM central.revoked_sessions r WHERE r.id = $3)
		FROM central.users u JOIN central.tenants t ON t.id = u.tenant_id WHERE u.id = $1 AND u.tenant_id = $2`,
		userID, tenantID, s.id).
		Scan(&u.ID, &u.TenantID, &u.Name, &u.Email, &u.CreatedAt, &t.ID, &t.Name, &t.Domain, &t.CreatedAt, &epoch, &revoked)
	return epoch, revoked, notFound(err)
}

// revokeSession records session id as signed out until expires.
func revokeSession(ctx context.Context, db dbtx, id []byte, expires time.Time) (err error) {
	defer httpapi.Wrap(&err, "revokeSession")
	_, err = db.Exec(ctx, `INSERT INTO central.revoked_sessions (id, expires_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		id, expires)
	return err
}

// deleteExpiredSessions deletes the records of signed-out sessions whose
// tokens have expired.
func deleteExpiredSessions(ctx context.Context, db dbtx) (err error) {
	defer httpapi.Wrap(&err, "deleteExpiredSessions")
	_, err = db.Exec(ctx, `DELETE FROM central.revoked_sessions WHERE expires_at < now()`)
	return err
}
