package central

import (
	"context"
	"errors"
	"net/http"

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
	epoch, revoked, err := sessionUser(ctx, c.pool, s, claims.UserID(), claims.TenantID)
	switch {
	case errors.Is(err, httpapi.ErrNotFound):
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
	err := revokeSession(ctx, c.pool, s.id, s.expires.Add(tokenLeeway))
	c.pruneOld(ctx, &c.login.lastSessionPrune, "revoked sessions", func(ctx context.Context) error {
		return deleteExpiredSessions(ctx, c.pool)
	})
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
