package central_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestLogoutEndsSession: signing out ends that token's session at once,
// on every instance, and only that one: another login of the same user
// goes on working.
func TestLogoutEndsSession(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	newWorkspace(t, env, "Leave", "leave@example.com", "right-password")
	first := loginToken(t, env, "leave@example.com", "right-password")
	second := loginToken(t, env, "leave@example.com", "right-password")
	if first == second {
		t.Fatal("two logins got one token: signing out one would sign out both")
	}
	env.Do("GET", "/central/api/me", first, nil).Expect(t, 200)

	env.Do("POST", "/central/api/logout", first, nil).Expect(t, 204)
	other := env.Instance()
	for _, e := range []*apitest.Env{env, other} {
		for _, path := range []string{"/central/api/me", "/central/api/projects"} {
			p := e.Do("GET", path, first, nil).Problem(t, 401, "unauthorized")
			if p["detail"] != "this dashboard session has been signed out; log in again" {
				t.Fatalf("%s after logout: %v", path, p)
			}
		}
		e.Do("GET", "/central/api/me", second, nil).Expect(t, 200)
	}
	// the signed-out token cannot sign out again, nor create anything
	env.Do("POST", "/central/api/logout", first, nil).Problem(t, 401, "unauthorized")
	env.Do("POST", "/central/api/projects", first, map[string]any{"name": "After"}).Problem(t, 401, "unauthorized")
	env.Do("POST", "/central/api/logout", "", nil).Problem(t, 401, "unauthorized")

	// The token's signature written another way (the last base64url
	// character's spare bits) still names the signed-out session.
	if alt := first[:len(first)-1] + string(spareBitsTwin(first[len(first)-1])); alt != first {
		r := env.Do("GET", "/central/api/me", alt, nil)
		if r.Status != 401 {
			t.Fatalf("the signed-out token with its signature re-encoded: %d %s", r.Status, r.Body)
		}
	}
}

// spareBitsTwin is the base64url character that differs from c only in
// the bits a 43-character (256-bit) signature leaves unused: a lenient
// decoder reads both as the same signature.
func spareBitsTwin(c byte) byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := 0; i < len(alphabet); i++ {
		if alphabet[i] == c {
			return alphabet[i^1]
		}
	}
	return c
}

// TestPasswordResetEndsSessions: a password reset ends every session of
// the user, tokens made elsewhere with the secret included, and only
// that user's; a login with the new password works.
func TestPasswordResetEndsSessions(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ws := newWorkspace(t, env, "Reset", "reset@example.com", "old-password")
	newWorkspace(t, env, "Near", "near@example.com", "near-password")
	a := loginToken(t, env, "reset@example.com", "old-password")
	b := loginToken(t, env, "reset@example.com", "old-password")
	near := loginToken(t, env, "near@example.com", "near-password")
	now := time.Now()
	minted := sign(t, jwt.SigningMethodHS256, []byte(env.Config.Secret), jwt.MapClaims{"sub": strconv.FormatInt(ws.User.ID, 10), "tid": ws.ID,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	for _, tok := range []string{a, b, minted} {
		env.Do("GET", "/central/api/me", tok, nil).Expect(t, 200)
	}

	admin := adminToken(t, env, "users:write")
	env.Do("POST", "/admin/api/tenants/"+strconv.FormatInt(ws.ID, 10)+"/users/"+strconv.FormatInt(ws.User.ID, 10)+"/reset-password", admin,
		map[string]any{"password": "new-password"}).Expect(t, 200)
	for _, tok := range []string{a, b, minted} {
		p := env.Do("GET", "/central/api/projects", tok, nil).Problem(t, 401, "unauthorized")
		if p["detail"] != "this dashboard session was ended by a change of the user's password; log in again" {
			t.Fatalf("after the reset: %v", p)
		}
	}
	env.Do("GET", "/central/api/me", near, nil).Expect(t, 200)
	login(env, map[string]any{"email": "reset@example.com", "password": "old-password"}).Problem(t, 422, "validation_failed")
	fresh := loginToken(t, env, "reset@example.com", "new-password")
	env.Do("GET", "/central/api/me", fresh, nil).Expect(t, 200)

	// The CLI's reset is the same function: it ends the fresh session too.
	if _, err := env.Server.Central.ResetPassword(context.Background(), ws.ID, ws.User.ID, ""); err != nil {
		t.Fatal(err)
	}
	env.Do("GET", "/central/api/me", fresh, nil).Problem(t, 401, "unauthorized")
}
