package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// noDatabase is a DATABASE_URL nothing answers at: a command that opened
// a database with it would fail.
const noDatabase = "postgres://plinth@127.0.0.1:1/none?connect_timeout=1"

// TestRemote: the operator's commands run against a server's admin API
// with --url and --admin-token (or PLINTH_URL and PLINTH_ADMIN_TOKEN),
// opening no database (DATABASE_URL unset, or one nothing answers at),
// and print what they print on the database: the same object equal to
// the byte, two objects made alike equal but for their ids and times.
// The admin API's refusals read as the database mode's errors with
// their code; a wrong token or a missing scope says so; a command that
// needs the database refuses --url.
func TestRemote(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers()) // its workers write the exports
	vars := map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage}
	token := mustJSON(t, vars, "admin-token", "create", "--name", "remote", "--scopes", "*")["secret"].(string)

	// database runs a command on the database, remote through the admin
	// API with no DATABASE_URL; each returns what it printed.
	database := func(args ...string) string {
		t.Helper()
		out, errs, err := cli(t, vars, args...)
		require.NoError(t, err, "plinth %s\n%s", strings.Join(args, " "), errs)
		return out
	}
	remoteIn := func(vars map[string]string, args ...string) string {
		t.Helper()
		out, errs, err := cli(t, vars, append(args, "--url", env.URL, "--admin-token", token)...)
		require.NoError(t, err, "plinth %s --url\n%s", strings.Join(args, " "), errs)
		require.NotContains(t, out+errs, token)
		return out
	}
	remote := func(args ...string) string {
		t.Helper()
		return remoteIn(nil, args...)
	}
	// Same object, same bytes; first with a database nothing answers at,
	// so that a command that opened one fails here, before any runs with
	// DATABASE_URL unset (which would start the private cluster).
	tid := fmt.Sprint(env.TenantID())
	require.Equal(t, database("tenant", "get", "--id", tid), remoteIn(map[string]string{"DATABASE_URL": noDatabase}, "tenant", "get", "--id", tid))
	out, errs, err := cli(t, map[string]string{"DATABASE_URL": noDatabase, "PLINTH_URL": env.URL, "PLINTH_ADMIN_TOKEN": token}, "tenant", "get", "--id", tid)
	require.NoError(t, err, errs)
	require.Equal(t, database("tenant", "get", "--id", tid), out, "PLINTH_URL and PLINTH_ADMIN_TOKEN select remote mode")

	// Workspaces: made alike in both modes (the domain is unique), then
	// one read both ways.
	createTenant := func(mode func(...string) string, domain string) map[string]any {
		out := mode("tenant", "create", "--name", "Acme", "--domain", domain, "--owner-email", "o@acme.test", "--owner-password", "long-password")
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		require.Equal(t, domain, m["domain"])
		return m
	}
	dbTenant, remoteTenant := createTenant(database, "db.acme.test"), createTenant(remote, "remote.acme.test")
	sameJSON(t, "tenant create", mustMarshal(t, dbTenant), mustMarshal(t, remoteTenant), "id", "created_at", "domain")
	rt, dt := fmt.Sprint(remoteTenant["id"]), fmt.Sprint(dbTenant["id"])
	require.Equal(t, database("tenant", "get", "--id", rt), remote("tenant", "get", "--id", rt))

	// Users.
	addUser := []string{"user", "add", "--email", "b@acme.test", "--password", "another-password", "--name", "Bob"}
	sameJSON(t, "user add", database(append(addUser, "--tenant", dt)...), remote(append(addUser, "--tenant", rt)...), "id", "created_at")
	require.Equal(t, database("user", "list", "--tenant", rt), remote("user", "list", "--tenant", rt))
	require.Contains(t, remote("user", "list", "--tenant", rt), `"email":"b@acme.test"`)

	// Projects: created, suspended, resumed alike; read both ways.
	create := []string{"project", "create", "--name", "Acme site", "--plan", "build", "--target-languages", "fr,de", "--industry", "bakery"}
	dbOut, remoteOut := database(append(create, "--tenant", dt)...), remote(append(create, "--tenant", rt)...)
	sameJSON(t, "project create", dbOut, remoteOut, "id", "created_at")
	var dp, rp struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(dbOut), &dp))
	require.NoError(t, json.Unmarshal([]byte(remoteOut), &rp))
	projectIDs := []string{"id", "tenant_id", "created_at", "project_id"}
	suspend := []string{"project", "suspend", "--reason", "abuse report #42", "--project"}
	sameJSON(t, "project suspend", database(append(suspend, dp.ID)...), remote(append(suspend, rp.ID)...), projectIDs...)
	require.Contains(t, remote("project", "get", "--project", rp.ID), `"status":"suspended"`)
	sameJSON(t, "project resume", database("project", "resume", "--project", dp.ID), remote("project", "resume", "--project", rp.ID), projectIDs...)
	require.Equal(t, database("project", "get", "--project", rp.ID), remote("project", "get", "--project", rp.ID))

	// Credits and shards.
	topup := []string{"credits", "topup", "--amount", "500", "--project"}
	sameJSON(t, "credits topup", database(append(topup, dp.ID)...), remote(append(topup, rp.ID)...), projectIDs...)
	require.Equal(t, database("shard", "list", "--json"), remote("shard", "list", "--json"))
	require.Equal(t, database("shard", "list"), remote("shard", "list"))

	// An export of one project both ways: the same rows; each file is
	// what was printed, an archive the other mode imports alike.
	key, err := env.Server.Central.MintKey(context.Background(), rp.ID, "test", []string{"*"}, nil, false)
	require.NoError(t, err)
	env.Do("PUT", "/v1/content/hero.title", key.Secret, map[string]any{"value": "Hello"}).Expect(t, 200)
	dir := t.TempDir()
	dbFile, remoteFile := filepath.Join(dir, "db.tar.gz"), filepath.Join(dir, "remote.tar.gz")
	dbOut, remoteOut = database("project", "export", "--project", rp.ID, "-o", dbFile), remote("project", "export", "--project", rp.ID, "-o", remoteFile)
	sameJSON(t, "project export", dbOut, remoteOut, "file", "size_bytes")
	for file, out := range map[string]string{dbFile: dbOut, remoteFile: remoteOut} {
		var printed struct {
			File      string
			SizeBytes int64            `json:"size_bytes"`
			RowCounts map[string]int64 `json:"row_counts"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &printed))
		st, err := os.Stat(file)
		require.NoError(t, err)
		require.Equal(t, file, printed.File)
		require.Equal(t, st.Size(), printed.SizeBytes, file)
		require.Equal(t, int64(1), printed.RowCounts["content_values"], out)
	}
	imp := []string{"project", "import", "--name", "Staging", "--tenant"}
	sameJSON(t, "project import", database(append(imp, dt, "--file", remoteFile)...), remote(append(imp, rt, "--file", dbFile)...), projectIDs...)

	// Refusals.
	refused := func(vars map[string]string, want []string, args ...string) {
		t.Helper()
		out, errs, err := cli(t, vars, args...)
		require.Error(t, err, "plinth %v", args)
		for _, w := range want {
			require.Contains(t, err.Error(), w, "plinth %v", args)
		}
		require.Empty(t, out, "plinth %v printed a result", args)
		require.NotContains(t, out+errs+err.Error(), token)
	}
	// A token of the right form that was never minted.
	wrong := "pln_admin_" + strings.Repeat("0", 32)
	refused(nil, []string{"refused the admin token", "--admin-token", "the admin token is not valid", "(unauthorized)"},
		"tenant", "get", "--id", tid, "--url", env.URL, "--admin-token", wrong)
	narrow := mustJSON(t, vars, "admin-token", "create", "--name", "narrow", "--scopes", "tenants:read")["secret"].(string)
	refused(nil, []string{"this admin token lacks the scope shards:read (forbidden)", "admin-token create --scopes"},
		"shard", "list", "--url", env.URL, "--admin-token", narrow)
	refused(nil, []string{`project "prj_000000000000000000000000": no project prj_000000000000000000000000 (not_found)`},
		"project", "get", "--project", "prj_000000000000000000000000", "--url", env.URL, "--admin-token", token)
	refused(nil, []string{"the request has invalid fields: amount must be whole credits from 1 to 100000000 (validation_failed)"},
		"credits", "topup", "--project", rp.ID, "--amount", "0", "--url", env.URL, "--admin-token", token)
	refused(nil, []string{"--url needs an admin token"}, "tenant", "list", "--url", env.URL)
	refused(nil, []string{"plinth migrate has no admin API equivalent", "DATABASE_URL"}, "migrate", "--url", env.URL, "--admin-token", token)
	refused(nil, []string{"plinth key create has no admin API equivalent", "mints no project key"},
		"key", "create", "--project", rp.ID, "--url", env.URL, "--admin-token", token)
	// Selected by the environment, a command that needs the database is
	// refused before it opens one.
	refused(map[string]string{"DATABASE_URL": noDatabase, "PLINTH_URL": env.URL, "PLINTH_ADMIN_TOKEN": token},
		[]string{"plinth admin-token create has no admin API equivalent", "PLINTH_URL"}, "admin-token", "create", "--name", "x", "--scopes", "*")
}

// TestRemoteShards: the shard commands through the admin API, whose
// workers run the moves: a move prints what the same move run on the
// database prints; a drain is followed to its end with its summary; a
// shard is added with the server's URL from PLINTH_URL (--url is the
// shard's) and retired.
func TestRemoteShards(t *testing.T) {
	t.Parallel()
	c := pgtest.NewOn(t, "b") // shard c, added below; before env: it is dropped after env stops
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithShards("b"))
	vars := map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage}
	token := mustJSON(t, vars, "admin-token", "create", "--name", "remote", "--scopes", "shards:admin,projects:read")["secret"].(string)
	server := map[string]string{"PLINTH_URL": env.URL}
	remote := func(args ...string) (string, string) {
		t.Helper()
		out, errs, err := cli(t, server, append(args, "--admin-token", token)...)
		require.NoError(t, err, "plinth %s --admin-token\n%s", strings.Join(args, " "), errs)
		return out, errs
	}

	// The same move of two projects made alike, one each way, queued
	// for the server's workers (which would take the database mode's
	// from under it, were it run here).
	p, q, r := env.NewProjectOn("default"), env.NewProjectOn("default"), env.NewProjectOn("default")
	dbOut, errs, err := cli(t, vars, "project", "move", "--project", p.ID, "--to", "b", "--detach")
	require.NoError(t, err, errs)
	remoteOut, _ := remote("project", "move", "--project", q.ID, "--to", "b", "--detach")
	sameJSON(t, "project move --detach", dbOut, remoteOut, "id", "project_id", "created_at", "updated_at")
	require.Contains(t, remoteOut, `"phase":"queued"`)
	// Followed to its end, a line per phase.
	out, errs := remote("project", "move", "--project", r.ID, "--to", "b")
	require.Contains(t, errs, ": done (rows copied ")
	require.Contains(t, out, `"phase":"done"`)
	for _, id := range []string{p.ID, q.ID} {
		deadline := time.Now().Add(time.Minute)
		for mustJSON(t, vars, "project", "get", "--project", id)["shard"] != "b" {
			require.True(t, time.Now().Before(deadline), "project %s never reached b", id)
			time.Sleep(50 * time.Millisecond)
		}
	}

	// A drain of b: its projects back to default, by the server's workers.
	_, _, err = cli(t, server, "shard", "drain", "--name", "b", "--concurrency", "2", "--admin-token", token)
	require.ErrorContains(t, err, "--concurrency: with --url the server's workers run the moves")
	out, errs = remote("shard", "drain", "--name", "b")
	require.Contains(t, errs, "drain b: 3/3 ended: 3 moved, 0 failed, 0 cancelled")
	require.Contains(t, errs, "drain b: 3 moved, 0 failed, 0 cancelled in ")
	var drained struct {
		State    string
		Projects int
		Drain    struct{ Done int }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &drained), out)
	require.Equal(t, "draining", drained.State, out)
	require.Zero(t, drained.Projects, out)
	require.Equal(t, 3, drained.Drain.Done, out)
	out, _ = remote("shard", "retire", "--name", "b")
	require.Contains(t, out, `"state":"retired"`)

	// Added through the server, which checks the shard's server.
	out, errs = remote("shard", "add", "--name", "c", "--url", c.URL, "--capacity", "7")
	require.NotContains(t, out+errs, c.URL)
	require.Contains(t, out, `"name":"c"`)
	require.Contains(t, out, `"capacity":7`)
	dbList, _, err := cli(t, vars, "shard", "list", "--json")
	require.NoError(t, err)
	remoteList, _ := remote("shard", "list", "--json")
	require.Equal(t, dbList, remoteList)
	_, _, err = cli(t, nil, "shard", "add", "--name", "d", "--url", c.URL, "--admin-token", token)
	require.ErrorContains(t, err, "--admin-token needs the server's URL: PLINTH_URL (--url is the shard's)")
}

// TestRemoteModes: every command either runs against the admin API
// (remoteCommand), or refuses remote mode saying why (databaseCommand),
// or is one of those that use neither the database nor the admin API.
func TestRemoteModes(t *testing.T) {
	t.Parallel()
	var grammar commands
	parser, err := kong.New(&grammar)
	require.NoError(t, err)
	neither := []string{"mcp", "listen", "version", "help"}
	for _, n := range parser.Model.Leaves(true) {
		cmd := n.Target.Addr().Interface()
		_, remote := cmd.(remoteCommand)
		_, database := cmd.(databaseCommand)
		switch {
		case slices.Contains(neither, n.Path()):
			require.False(t, remote || database, n.Path())
		case database:
			require.False(t, remote, n.Path())
			var url bool
			for _, f := range n.Flags {
				url = url || f.Name == "url" && f.Hidden
			}
			require.True(t, url, "plinth %s must take --url to refuse it", n.Path())
		default:
			require.True(t, remote, "plinth %s has neither mode", n.Path())
		}
	}
}

// sameJSON requires db and remote, each one JSON object, to be equal but
// for the values of the keys masked, at any depth.
func sameJSON(t *testing.T, what, db, remote string, masked ...string) {
	t.Helper()
	norm := func(s string) any {
		var v any
		require.NoError(t, json.Unmarshal([]byte(s), &v), "%s printed %q", what, s)
		return mask(v, masked)
	}
	require.Equal(t, norm(db), norm(remote), "%s: the database mode printed\n%s\nand the remote mode\n%s", what, db, remote)
}

func mask(v any, keys []string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if slices.Contains(keys, k) {
				v[k] = "(masked)"
			} else {
				v[k] = mask(x, keys)
			}
		}
	case []any:
		for i := range v {
			v[i] = mask(v[i], keys)
		}
	}
	return v
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
