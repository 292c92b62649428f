package central

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/tenant"
)

// MaxActiveKeys is the number of unrevoked keys a project may hold.
const MaxActiveKeys = 20

// APIKey is the API key resource; Secret is set only when minted.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Masked     string     `json:"masked"`
	Secret     string     `json:"secret,omitempty"`
	Scopes     []string   `json:"scopes"`
	LastUsedAt *time.Time `json:"last_used_at"`
	CreatedAt  time.Time  `json:"created_at"`
}

// Permissions of each pillar (docs/decisions.md section 3 and the scope table).
var Permissions = map[string][]string{
	"project":   {"read", "write", "admin"},
	"content":   {"read", "write"},
	"brand":     {"read", "write"},
	"images":    {"read", "write"},
	"blog":      {"read", "write"},
	"social":    {"read", "write", "publish", "connect"},
	"booking":   {"read", "write", "admin"},
	"commerce":  {"read", "write", "admin"},
	"webhooks":  {"read", "write"},
	"jobs":      {"read"},
	"galleries": {"read", "write"},
	"forms":     {"read", "write"},
}

// DefaultDashboardScopes is the scope set a dashboard key gets by default.
var DefaultDashboardScopes = []string{"content:read", "content:write", "blog:read", "blog:write", "social:read", "social:write"}

// ValidScope reports whether s is "*", "pillar:*" or "pillar:permission".
func ValidScope(s string) bool {
	if s == "*" {
		return true
	}
	pillar, perm, ok := strings.Cut(s, ":")
	perms, known := Permissions[pillar]
	if !ok || !known {
		return false
	}
	if perm == "*" {
		return true
	}
	for _, p := range perms {
		if p == perm {
			return true
		}
	}
	return false
}

// expand lists every concrete scope s covers.
func expand(s string) []string {
	if s == "*" {
		return []string{"*"}
	}
	pillar, perm, _ := strings.Cut(s, ":")
	if perm != "*" {
		return []string{s}
	}
	var out []string
	for _, p := range Permissions[pillar] {
		out = append(out, pillar+":"+p)
	}
	return out
}

// Subset reports whether every scope in want is granted by held.
func Subset(held, want []string) bool {
	for _, w := range want {
		if w == "*" {
			if !tenant.Grants(held, "*") {
				return false
			}
			continue
		}
		for _, c := range expand(w) {
			if !tenant.Grants(held, c) {
				return false
			}
		}
	}
	return true
}

// MintKey creates a key for a project. creatorScopes, when not nil, bounds
// the new key's scopes (403 otherwise). At most MaxActiveKeys may be active.
func (c *Central) MintKey(ctx context.Context, projectID, name string, scopes, creatorScopes []string, test bool) (APIKey, error) {
	var v httpapi.Validator
	v.Check(strings.TrimSpace(name) != "" && len(name) <= 100, "name", "must be 1 to 100 characters")
	v.Check(len(scopes) > 0 && len(scopes) <= 64, "scopes", "must list 1 to 64 scopes")
	for _, s := range scopes {
		v.Check(ValidScope(s), "scopes", "unknown scope "+s)
	}
	if err := v.Err(); err != nil {
		return APIKey{}, err
	}
	if creatorScopes != nil && !Subset(creatorScopes, scopes) {
		return APIKey{}, httpapi.Fail(httpapi.ErrForbidden, "a new key's scopes must be a subset of this key's scopes")
	}
	secret := NewKeySecret(test)
	k := APIKey{ID: id.New("key_"), Name: name, Prefix: secret[:len(LivePrefix)], Masked: Mask(secret), Secret: secret, Scopes: scopes}
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// The project row lock serialises concurrent mints, so the limit holds.
		if err := lockProjectRow(ctx, tx, projectID); err != nil {
			return err
		}
		active, err := countActiveKeys(ctx, tx, projectID)
		if err != nil {
			return err
		}
		if active >= MaxActiveKeys {
			return httpapi.Conflict(httpapi.CodeKeyLimitReached, "this project already has 20 active keys; revoke one first")
		}
		return insertKey(ctx, tx, projectID, &k, HashKey(c.secret, secret), test)
	})
	k.CreatedAt = k.CreatedAt.UTC()
	return k, err
}

// ListKeys lists a project's active keys, newest first, without secrets.
func (c *Central) ListKeys(ctx context.Context, projectID string) ([]APIKey, error) {
	out, err := activeKeys(ctx, c.pool, projectID)
	if out == nil {
		out = []APIKey{}
	}
	return out, err
}

// RevokeKey revokes a key of the project for good and invalidates caches
// on every instance at once.
func (c *Central) RevokeKey(ctx context.Context, projectID, keyID string) error {
	ok, err := revokeKey(ctx, c.pool, projectID, keyID)
	if err != nil {
		return err
	}
	if !ok {
		return httpapi.NotFound("no active key " + keyID + " in this project")
	}
	c.notify(ctx, "key:"+keyID)
	return nil
}

// Resolve maps a presented key to its scope: from the cache when fresh,
// else by hash from the database.
func (c *Central) Resolve(ctx context.Context, key string) (*tenant.Scope, error) {
	c.resolves.Add(1)
	test, ok := ParseKey(key)
	if !ok {
		return nil, httpapi.Unauthorized("the API key is malformed")
	}
	h := c.hashers.Get().(*keyHasher)
	e, ok := c.keys.get(h.hash(key))
	if ok {
		c.hashers.Put(h)
		if err := usable(e.scope.Project); err != nil {
			return nil, err
		}
		c.touch(e.scope.Key.ID)
		return e.scope, nil
	}
	hash := slices.Clone(h.sum)
	c.hashers.Put(h)
	hk := string(hash)
	gen := c.keys.generation()
	p, k, revoked, err := keyByHash(ctx, c.pool, hash)
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil, httpapi.Unauthorized("the API key is not valid")
	}
	if err != nil {
		return nil, err
	}
	if revoked != nil {
		return nil, httpapi.Unauthorized("the API key has been revoked")
	}
	if k.Test != test {
		return nil, httpapi.Unauthorized("the API key is not valid")
	}
	if err := usable(p); err != nil {
		return nil, err
	}
	s, err := c.scope(p, &k)
	if err != nil {
		return nil, err
	}
	c.keys.put(hk, s, gen)
	c.touch(k.ID)
	return s, nil
}

// touch records last_used_at at most once a minute per key and instance,
// off the request path, whatever the cache TTL.
func (c *Central) touch(keyID string) {
	if !c.keys.touchDue(keyID, time.Now()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := touchKey(ctx, c.pool, keyID); err != nil {
			c.logger.Debug("last_used_at update failed", "key", keyID, "err", err)
		}
	}()
}

// BearerToken returns the token of an "Authorization: Bearer" header.
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// Identify is the first step of every /v1 request: when the request
// presents a bearer key, it resolves it once, to the scope of its project
// (put on the context for the rate limiter, tenant.Authenticated and the
// handlers) or to the reason it is refused (recorded for
// tenant.Authenticated). The dashboard (/central/, JWT) and the public
// surface (no key) are not identified.
func (c *Central) Identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := BearerToken(r)
		if !ok || !strings.HasPrefix(r.URL.Path, "/v1/") || IsPublic(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		if s, err := c.Resolve(ctx, tok); err != nil {
			ctx = tenant.WithAuthError(ctx, err)
		} else {
			ctx = tenant.WithScope(ctx, s)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
