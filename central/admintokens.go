package central

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/tenant"
)

// AdminPrefix starts every admin token: pln_admin_ then 32 base62.
const AdminPrefix = "pln_admin_"

// AdminPermissions are the scopes of admin tokens, by resource
// (docs/operations.md, "Admin tokens"); "*" and "resource:*" are valid
// too.
var AdminPermissions = map[string][]string{
	"tenants":  {"read", "write"},
	"users":    {"read", "write"},
	"projects": {"read", "write", "admin"},
	"credits":  {"write"},
	"exports":  {"read", "write"},
	"shards":   {"read", "admin"},
}

// adminImplied maps a scope to the one that grants it too: whoever may
// add, drain and retire shards may list them.
var adminImplied = map[string]string{"shards:read": "shards:admin"}

// ValidAdminScope reports whether s is "*", "resource:*" or "resource:permission".
func ValidAdminScope(s string) bool {
	if s == "*" {
		return true
	}
	res, perm, ok := strings.Cut(s, ":")
	perms, known := AdminPermissions[res]
	if !ok || !known {
		return false
	}
	return perm == "*" || containsString(perms, perm)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// AdminToken is an admin token; Secret is set only when minted.
type AdminToken struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	Secret     string     `json:"secret,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	// ExpiresAt, when set, is when the token stops working.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// MaxAdminTokenLife bounds an admin token's expiry.
const MaxAdminTokenLife = 10 * 365 * 24 * time.Hour

// Allows reports whether the token holds scope (or a wildcard of it, or
// the scope that implies it: adminImplied).
func (t *AdminToken) Allows(scope string) bool {
	if tenant.Grants(t.Scopes, scope) {
		return true
	}
	implied, ok := adminImplied[scope]
	return ok && tenant.Grants(t.Scopes, implied)
}

// parseAdminToken checks the format of a presented admin token.
func parseAdminToken(s string) bool {
	rest, ok := strings.CutPrefix(s, AdminPrefix)
	if !ok || len(rest) != secretLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// MintAdminToken creates an admin token that works until it is revoked
// and, when expiresAt is not nil, until then (in the future, within
// MaxAdminTokenLife). Its secret is returned once and stored only as its
// hash (HashKey, like API keys).
func (c *Central) MintAdminToken(ctx context.Context, name string, scopes []string, expiresAt *time.Time) (AdminToken, error) {
	var v httpapi.Validator
	v.Check(strings.TrimSpace(name) != "" && len(name) <= 100, "name", "must be 1 to 100 characters")
	v.Check(len(scopes) > 0 && len(scopes) <= 32, "scopes", "must list 1 to 32 scopes")
	for _, s := range scopes {
		v.Check(ValidAdminScope(s), "scopes", "unknown scope "+s)
	}
	if expiresAt != nil {
		in := time.Until(*expiresAt)
		v.Check(in > 0 && in <= MaxAdminTokenLife, "expires_at", "must be in the future, within ten years")
	}
	if err := v.Err(); err != nil {
		return AdminToken{}, err
	}
	b := make([]byte, secretLen)
	id.Random(b)
	secret := AdminPrefix + string(b)
	t := AdminToken{ID: id.New("adm_"), Name: name, Scopes: scopes, Secret: secret}
	err := insertAdminToken(ctx, c.pool, &t, HashKey(c.secret, secret), expiresAt)
	utcTimes(&t)
	return t, err
}

// utcTimes writes a token's times in UTC, as every answer does.
func utcTimes(t *AdminToken) {
	t.CreatedAt = t.CreatedAt.UTC()
	for _, p := range []*time.Time{t.LastUsedAt, t.ExpiresAt} {
		if p != nil {
			*p = p.UTC()
		}
	}
}

// AdminTokens lists the active admin tokens (neither revoked nor
// expired), newest first, without secrets.
func (c *Central) AdminTokens(ctx context.Context) ([]AdminToken, error) {
	out, err := activeAdminTokens(ctx, c.pool)
	if out == nil {
		out = []AdminToken{}
	}
	return out, err
}

// RevokeAdminToken revokes a token for good. Tokens are not cached, so
// the next request with it is refused on every instance.
func (c *Central) RevokeAdminToken(ctx context.Context, tokenID string) error {
	ok, err := revokeAdminToken(ctx, c.pool, tokenID)
	if err != nil {
		return err
	}
	if !ok {
		return httpapi.NotFound("no active admin token " + tokenID)
	}
	return nil
}

// resolveAdmin maps a presented admin token to its row. It reads the
// database on every request: the admin API is low traffic, and a
// revocation then needs no cache invalidation. A revoked or expired
// token is refused before its use is recorded: last_used_at tells when
// the token last got in, never when it was last tried.
func (c *Central) resolveAdmin(ctx context.Context, secret string) (*AdminToken, error) {
	if !parseAdminToken(secret) {
		return nil, httpapi.Unauthorized("an admin token is required: Authorization: Bearer pln_admin_…")
	}
	t, revoked, expired, err := useAdminToken(ctx, c.pool, HashKey(c.secret, secret))
	switch {
	case errors.Is(err, httpapi.ErrNotFound):
		return nil, httpapi.Unauthorized("the admin token is not valid")
	case err != nil:
		return nil, err
	case revoked:
		return nil, httpapi.Unauthorized("the admin token has been revoked")
	case expired:
		return nil, httpapi.Unauthorized("the admin token has expired")
	}
	return t, nil
}

type adminKey struct{}

// adminAuth is what AdminIdentify found: the token, or why it was refused.
type adminAuth struct {
	token *AdminToken
	err   error
}

// AdminFrom returns the admin token of a request behind AdminIdentify,
// or nil.
func AdminFrom(ctx context.Context) *AdminToken {
	a, _ := ctx.Value(adminKey{}).(*adminAuth)
	if a == nil {
		return nil
	}
	return a.token
}

// AdminIdentify resolves the admin token a request presents
// (Authorization: Bearer pln_admin_…) and records it, or why it is
// refused, for the rate limit (per token, or per IP without one) and
// AdminAuthenticated after it.
func (c *Central) AdminIdentify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := BearerToken(r)
		t, err := c.resolveAdmin(r.Context(), tok)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), adminKey{}, &adminAuth{token: t, err: err})))
	})
}

// AdminAuthenticated lets through only requests AdminIdentify found a
// valid admin token on: a project key, a dashboard token or nothing is
// 401.
func AdminAuthenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, _ := r.Context().Value(adminKey{}).(*adminAuth)
		switch {
		case a != nil && a.token != nil:
			next.ServeHTTP(w, r)
		case a != nil && a.err != nil:
			httpapi.WriteError(w, r, a.err)
		default:
			httpapi.WriteError(w, r, httpapi.Unauthorized("an admin token is required: Authorization: Bearer pln_admin_…"))
		}
	})
}

// RequireAdmin returns middleware that answers 403 forbidden, naming
// scope, to an admin token that lacks it.
func (c *Central) RequireAdmin(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t := AdminFrom(r.Context())
			if t == nil {
				httpapi.WriteError(w, r, httpapi.Unauthorized("an admin token is required: Authorization: Bearer pln_admin_…"))
				return
			}
			if !t.Allows(scope) {
				httpapi.WriteError(w, r, httpapi.Fail(httpapi.ErrForbidden, "this admin token lacks the scope "+scope))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
