package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// cliURL runs one plinth command against db and decodes its JSON output.
func cliURL(t *testing.T, url string, args ...string) (map[string]any, error) {
	t.Helper()
	env := map[string]string{"DATABASE_URL": url, "PLINTH_SECRET": "cli-test-secret"}
	var out, errb bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v printed %q, not one JSON object: %v", args, out.String(), err)
	}
	return m, nil
}

// TestUserAdd: one email in two tenants with different passwords, each
// password logging in to its own tenant.
func TestUserAdd(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	id := func(m map[string]any) string { return strconv.FormatInt(int64(m["id"].(float64)), 10) }

	t1, err := cliURL(t, db.URL, "tenant", "create", "--name", "Acme", "--domain", "acme.test", "--owner-email", "owner@acme.test", "--owner-password", "owner-password")
	if err != nil {
		t.Fatal(err)
	}
	if t1["name"] != "Acme" || t1["domain"] != "acme.test" || t1["owner"].(map[string]any)["email"] != "owner@acme.test" {
		t.Fatalf("tenant create: %v", t1)
	}
	t2, err := cliURL(t, db.URL, "tenant", "create", "--name", "Beta", "--domain", "beta.test", "--owner-email", "owner@beta.test", "--owner-password", "owner-password")
	if err != nil {
		t.Fatal(err)
	}

	u1, err := cliURL(t, db.URL, "user", "add", "--tenant", id(t1), "--email", "Dev@Example.com", "--password", "password-one", "--name", "Dev One")
	if err != nil {
		t.Fatal(err)
	}
	if u1["email"] != "Dev@Example.com" || u1["name"] != "Dev One" || u1["id"] == nil || !strings.HasSuffix(u1["created_at"].(string), "Z") {
		t.Fatalf("user add: %v", u1)
	}
	if _, ok := u1["password_hash"]; ok {
		t.Fatalf("user add prints the hash: %v", u1)
	}
	u2, err := cliURL(t, db.URL, "user", "add", "--tenant", id(t2), "--email", "dev@example.com", "--password", "password-two")
	if err != nil {
		t.Fatal(err)
	}
	if u2["name"] != "dev" {
		t.Fatalf("user add without --name: %v", u2)
	}

	// refused: the same email twice in one tenant, an unknown tenant, a short password
	for name, args := range map[string][]string{
		"duplicate":      {"--tenant", id(t1), "--email", "DEV@example.com", "--password", "password-three"},
		"unknown tenant": {"--tenant", "987654", "--email", "x@example.com", "--password", "password-three"},
		"short password": {"--tenant", id(t1), "--email", "y@example.com", "--password", "short"},
		"bad email":      {"--tenant", id(t1), "--email", "not-an-email", "--password", "password-three"},
	} {
		_, err := cliURL(t, db.URL, append([]string{"user", "add"}, args...)...)
		if ae := httpapi.AsError(err); err == nil || ae.Status >= 500 {
			t.Fatalf("%s: %v", name, err)
		}
	}

	// the stored hashes are argon2id and each password reaches its own tenant
	var hash string
	if err := db.Pool.QueryRow(context.Background(), `SELECT password_hash FROM central.users WHERE id = $1`, int64(u1["id"].(float64))).Scan(&hash); err != nil || !strings.HasPrefix(hash, "$argon2id$") {
		t.Fatalf("stored hash %q: %v", hash, err)
	}
	c, err := central.Open(context.Background(), db.Pool, "cli-test-secret", 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for pw, want := range map[string]map[string]any{"password-one": t1, "password-two": t2} {
		res, err := c.Login(context.Background(), "DEV@example.com", pw, nil)
		if err != nil || strconv.FormatInt(res.Tenant.ID, 10) != id(want) {
			t.Fatalf("login with %s: %+v %v, want tenant %s", pw, res.Tenant, err, id(want))
		}
	}
	ts, err := c.TenantsForEmail(context.Background(), "dev@EXAMPLE.com")
	if err != nil || len(ts) != 2 {
		t.Fatalf("tenants for the email: %v %v", ts, err)
	}
}
