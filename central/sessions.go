package central

import (
	"context"
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// A dashboard token is a signed JWT, and its session still ends on the
// server (issue 33): signing out records the token's session as revoked,
// and a password change or reset raises the user's session epoch, which
// every token carries (sep). The request's one query that loads the
// user checks both, by primary key, so ending a session costs requests
// no extra round trip.

// session loads the user and the workspace a verified token names, or
// refuses the token (401) when its session has ended: signed out, or
// issued before the user's password last changed.
func (c *Central) session(ctx context.Context, claims *TokenClaims) (*Session, error) {
	s := &Session{id: claims.sessionID, expires: claims.ExpiresAt.Time}
	u, t := &s.User, &s.Tenant
	var epoch int64
	var revoked bool
	err := c.pool.QueryRow(ctx, `SELECT u.id, u.tenant_id, u.name, u.email, u.created_at, t.id, t.name, t.domain, t.created_at,
		u.session_epoch, EXISTS (SELECT 1 FROM central.revoked_sessions r WHERE r.id = $3)
		FROM central.users u JOIN central.tenants t ON t.id = u.tenant_id WHERE u.id = $1 AND u.tenant_id = $2`,
		claims.UserID(), claims.TenantID, s.id).
		Scan(&u.ID, &u.TenantID, &u.Name, &u.Email, &u.CreatedAt, &t.ID, &t.Name, &t.Domain, &t.CreatedAt, &epoch, &revoked)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, httpapi.Unauthorized("the user of this dashboard token no longer exists")
	case err != nil:
		return nil, err
	case revoked:
		return nil, httpapi.Unauthorized("this dashboard session has been signed out; log in again")
	case epoch != claims.Epoch:
		return nil, httpapi.Unauthorized("this dashboard session was ended by a change of the user's password; log in again")
	}
	return s, nil
}

// Logout ends the session s at once on every instance: its token is
// refused from the next request on. The record is kept until the token
// would have expired anyway.
func (c *Central) Logout(ctx context.Context, s *Session) error {
	_, err := c.pool.Exec(ctx, `INSERT INTO central.revoked_sessions (id, expires_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		s.id, s.expires.Add(tokenLeeway))
	c.pruneOld(ctx, &c.login.lastSessionPrune, "revoked sessions", `DELETE FROM central.revoked_sessions WHERE expires_at < now()`)
	return err
}

// postLogout is POST /central/api/logout: the token it carries stops
// working (204).
func (c *Central) postLogout(w http.ResponseWriter, r *http.Request) error {
	s, err := mustSession(r)
	if err != nil {
		return err
	}
	if err := c.Logout(r.Context(), s); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
