package main

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestShardCommands: plinth shard add, list, drain and retire and
// project create --shard on a server of the test's own: a refusal is a
// one-line error (and, from the binary, exit status 1) that changes
// nothing and never prints the URL; once the server runs
// wal_level=logical it is added, listed as a table or JSON, takes a
// project by name, refuses to retire while it holds one, drains (its
// project moving to default) and retires.
func TestShardCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.ShardServer(t, "replica") // before env: it stops after it
	env := apitest.New(t)
	vars := map[string]string{"DATABASE_URL": env.DB.URL, "PLINTH_SECRET": env.Config.Secret, "PLINTH_STORAGE": env.Config.Storage}
	const secret = "Cli-shard-secret"
	good := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", secret, srv.Port)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable", secret, l.Addr())
	require.NoError(t, l.Close())
	tid := fmt.Sprint(env.TenantID())

	state := func() string {
		t.Helper()
		out, _, err := cli(t, vars, "shard", "list", "--json")
		require.NoError(t, err)
		return out
	}
	refused := func(want string, args ...string) {
		t.Helper()
		before := state()
		out, errs, err := cli(t, vars, args...)
		require.Error(t, err, "plinth %v", args)
		msg := err.Error()
		require.Contains(t, msg, want, "plinth %v", args)
		require.NotContains(t, msg, "\n", "plinth %v: not one line", args)
		require.NotContains(t, out+errs+msg, secret, "plinth %v printed the URL", args)
		require.Empty(t, out, "plinth %v printed a result", args)
		require.Equal(t, before, state(), "plinth %v changed the shards", args)
	}
	refused("wal_level=replica", "shard", "add", "--name", "b", "--url", good)
	refused("does not answer", "shard", "add", "--name", "b", "--url", closed)
	refused("PostgreSQL connection URL", "shard", "add", "--name", "b", "--url", "localhost:5432")
	refused(`"default" is the central database`, "shard", "add", "--name", "default", "--url", good)
	refused("--capacity: want a positive number", "shard", "add", "--name", "b", "--url", good, "--capacity", "0")
	refused("--capacity", "shard", "add", "--name", "b", "--url", good, "--capacity", "many")

	srv.Settings = []string{"wal_level=logical"}
	require.NoError(t, srv.Restart(t.Context()))
	out, errs, err := cli(t, vars, "shard", "add", "--name", "b", "--url", good, "--capacity", "3")
	require.NoError(t, err, errs)
	require.NotContains(t, out+errs, secret)
	added := mustJSON(t, vars, "shard", "list", "--json")["data"].([]any)
	require.Len(t, added, 2)
	b := added[1].(map[string]any)
	require.Equal(t, "b", b["name"])
	require.Equal(t, float64(3), b["capacity"])
	refused(`"b" exists`, "shard", "add", "--name", "b", "--url", good)

	// The table: a header and a row per shard.
	out, _, err = cli(t, vars, "shard", "list")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Regexp(t, `^NAME\s+STATE\s+PROJECTS\s+CAPACITY\s+WAL_LEVEL\s+VERSION\s+REACHABLE$`, lines[0])
	require.Regexp(t, `^default\s+active\s+0\s+10000\s+\S+\s+\S+\s+yes$`, lines[1])
	require.Regexp(t, `^b\s+active\s+0\s+3\s+logical\s+\d+\S*\s+yes$`, lines[2])

	refused(`no shard "zz"`, "project", "create", "--tenant", tid, "--name", "Nowhere", "--shard", "zz")
	p := mustJSON(t, vars, "project", "create", "--tenant", tid, "--name", "On b", "--shard", "b")
	require.Equal(t, "b", mustJSON(t, vars, "project", "get", "--project", p["id"].(string))["shard"])

	// A project moves to default and serves there; bad moves are refused.
	mv := mustJSON(t, vars, "project", "create", "--tenant", tid, "--name", "Mover", "--shard", "b")["id"].(string)
	refused(`no shard is named "zz"`, "project", "move", "--project", mv, "--to", "zz")
	refused(`on shard b already`, "project", "move", "--project", mv, "--to", "b")
	out, errs, err = cli(t, vars, "project", "move", "--project", mv, "--to", "default")
	require.NoError(t, err, errs)
	require.Contains(t, errs, ": switching (rows copied ")
	var moved map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &moved))
	require.Equal(t, "done", moved["phase"], out)
	require.Equal(t, "fenced_copy", moved["method"], out) // a small project: copied under its fence
	require.Equal(t, "default", mustJSON(t, vars, "project", "get", "--project", mv)["shard"])

	// Retire is refused while b holds a project: from the binary, the
	// message on one line and exit status 1.
	refused(`holds 1 project`, "shard", "retire", "--name", "b")
	refused(`cannot be retired`, "shard", "retire", "--name", "default")
	cmd, combined := plinthProcess(t, vars, "shard", "retire", "--name", "b")
	err = cmd.Wait()
	require.Error(t, err)
	require.Equal(t, 1, cmd.ProcessState.ExitCode())
	require.Regexp(t, regexp.MustCompile(`(?m)^plinth: shard "b" holds 1 project: .*\n\z`), combined.String())

	// Drain: b's project moves to default, here, with a line as it ends
	// and a summary; b takes no new project, and retires once empty.
	refused(`no shard "nope"`, "shard", "drain", "--name", "nope")
	refused(`--concurrency`, "shard", "drain", "--name", "b", "--concurrency", "0")
	out, errs, err = cli(t, vars, "shard", "drain", "--name", "b")
	require.NoError(t, err, errs)
	require.Contains(t, errs, "drain b: 1/1: project "+p["id"].(string)+" to default: done")
	require.Contains(t, errs, "drain b: 1 moved, 0 failed, 0 cancelled in ")
	var drained map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &drained))
	require.Equal(t, "draining", drained["state"])
	require.Equal(t, float64(0), drained["projects"])
	require.Equal(t, float64(1), drained["drain"].(map[string]any)["done"], out)
	require.Equal(t, true, drained["drain"].(map[string]any)["finished"], out)
	require.Equal(t, "default", mustJSON(t, vars, "project", "get", "--project", p["id"].(string))["shard"])
	refused(`"b" is draining`, "project", "create", "--tenant", tid, "--name", "Refused", "--shard", "b")
	// Nowhere to send default's projects: b drains.
	refused(`no other active shard`, "shard", "drain", "--name", "default")
	out, errs, err = cli(t, vars, "shard", "retire", "--name", "b")
	require.NoError(t, err, errs)
	require.Contains(t, out, `"state":"retired"`)
}
