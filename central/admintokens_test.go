package central_test

import (
	"context"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central/apitest"
)

// lastUsed reads an admin token's last_used_at.
func lastUsed(t *testing.T, env *apitest.Env, id string) *time.Time {
	t.Helper()
	var at *time.Time
	if err := env.DB.Pool.QueryRow(context.Background(), `SELECT last_used_at FROM central.admin_tokens WHERE id = $1`, id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// TestAdminTokenRefusedUnused: a revoked or expired admin token is
// refused before its use is recorded, so last_used_at keeps telling when
// the token last got in.
func TestAdminTokenRefusedUnused(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	c := env.Server.Central

	never, err := c.MintAdminToken(ctx, "never used", []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeAdminToken(ctx, never.ID); err != nil {
		t.Fatal(err)
	}
	p := env.Do("GET", "/admin/api/tenants", never.Secret, nil).Problem(t, 401, "unauthorized")
	if p["detail"] != "the admin token has been revoked" {
		t.Fatalf("revoked: %v", p)
	}
	if at := lastUsed(t, env, never.ID); at != nil {
		t.Fatalf("a revoked token's refused request set last_used_at to %v", at)
	}

	used, err := c.MintAdminToken(ctx, "used", []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Do("GET", "/admin/api/tenants", used.Secret, nil).Expect(t, 200)
	before := lastUsed(t, env, used.ID)
	if before == nil {
		t.Fatal("a request that got in did not set last_used_at")
	}
	if err := c.RevokeAdminToken(ctx, used.ID); err != nil {
		t.Fatal(err)
	}
	env.Do("GET", "/admin/api/tenants", used.Secret, nil).Problem(t, 401, "unauthorized")
	if after := lastUsed(t, env, used.ID); after == nil || !after.Equal(*before) {
		t.Fatalf("last_used_at %v after a refused request, was %v", after, before)
	}
}

// TestAdminTokenExpiry: a token minted with an expiry works until then
// and is 401 after, unrecorded and off the list; an expiry in the past
// or beyond ten years is refused at minting.
func TestAdminTokenExpiry(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	c := env.Server.Central

	in := time.Now().Add(time.Hour)
	tok, err := c.MintAdminToken(ctx, "temporary", []string{"tenants:read"}, &in)
	if err != nil {
		t.Fatal(err)
	}
	if tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(in.Truncate(time.Microsecond)) || tok.ExpiresAt.Location() != time.UTC {
		t.Fatalf("expires_at %v, want %v in UTC", tok.ExpiresAt, in)
	}
	env.Do("GET", "/admin/api/tenants", tok.Secret, nil).Expect(t, 200)
	listed, err := c.AdminTokens(ctx)
	if err != nil || len(listed) != 1 || listed[0].ExpiresAt == nil {
		t.Fatalf("list: %+v %v", listed, err)
	}
	used := lastUsed(t, env, tok.ID)

	// The hour has passed.
	if _, err := env.DB.Pool.Exec(ctx, `UPDATE central.admin_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	p := env.Do("GET", "/admin/api/tenants", tok.Secret, nil).Problem(t, 401, "unauthorized")
	if p["detail"] != "the admin token has expired" {
		t.Fatalf("expired: %v", p)
	}
	if after := lastUsed(t, env, tok.ID); after == nil || !after.Equal(*used) {
		t.Fatalf("last_used_at %v after a refused request, was %v", after, used)
	}
	if listed, err := c.AdminTokens(ctx); err != nil || len(listed) != 0 {
		t.Fatalf("an expired token is listed as active: %+v %v", listed, err)
	}

	for _, at := range []time.Time{time.Now().Add(-time.Minute), time.Now().Add(11 * 365 * 24 * time.Hour)} {
		if _, err := c.MintAdminToken(ctx, "bad", []string{"*"}, &at); err == nil {
			t.Fatalf("expiry %v accepted", at)
		}
	}
}
