package central_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// shardURLSecret is the password in the shard URLs of the tests: no
// answer may carry it (the servers trust loopback, so any password
// connects).
const shardURLSecret = "Sh4rd-url-secret"

// shardURL is the URL of server c's database postgres, with the password.
func shardURL(port int) string {
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", shardURLSecret, port)
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// shardState is what a refused request must leave as it was: the shards
// and the projects with their shards.
func shardState(t *testing.T, env *apitest.Env) string {
	t.Helper()
	rows, err := env.DB.Pool.Query(context.Background(), `
		SELECT 'shard ' || name || ' ' || state || ' ' || capacity FROM central.shards
		UNION ALL SELECT 'project ' || p.id || ' ' || pl.shard FROM central.projects p JOIN central.placements pl ON pl.project_id = p.id
		ORDER BY 1`)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// readyz gets /readyz (not part of the API's document), which must
// answer status.
func readyz(t *testing.T, env *apitest.Env, status int) map[string]any {
	t.Helper()
	st, body := getBearer(t, env.URL+"/readyz", "")
	require.Equal(t, status, st, body)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	return m
}

// TestAdminShards: the shards of the admin API on a server of the test's
// own: a server with wal_level=replica and every other bad input refused
// with a clear 4xx and nothing changed; once the server runs
// wal_level=logical it is added (its URL never shown), listed, probed,
// projects placed on it by name, counted by /readyz and /metrics; drain
// turns placement away, retire is refused while it holds a project; a
// shard that stops answering makes /readyz 503 naming it.
func TestAdminShards(t *testing.T) {
	t.Parallel()
	srv := apitest.ShardServer(t, "replica") // before env: it stops after it
	env := apitest.New(t, apitest.WithEnv("PLINTH_METRICS_TOKEN", "scrape-token"))
	ctx := context.Background()
	admin := adminToken(t, env, "shards:admin", "projects:write")
	reader := adminToken(t, env, "shards:read")
	projectsOnly := adminToken(t, env, "projects:*")
	tid := env.TenantID()

	before := shardState(t, env)
	unchanged := func(what string) {
		t.Helper()
		require.Equal(t, before, shardState(t, env), "%s changed the shards or the placements", what)
	}
	noSecret := func(body []byte) {
		t.Helper()
		require.NotContains(t, string(body), shardURLSecret, "an answer carries the shard's URL")
	}
	add := func(body map[string]any, status int, code, field, detail string) {
		t.Helper()
		start := time.Now()
		res := env.Do("POST", "/admin/api/shards", admin, body)
		m := res.Problem(t, status, code)
		noSecret(res.Body)
		if field != "" {
			errs, _ := m["errors"].(map[string]any)
			require.Contains(t, errs, field, "%v", m)
			require.Contains(t, fmt.Sprint(errs[field]), detail, "%v", m)
		} else {
			require.Contains(t, fmt.Sprint(m["detail"]), detail, "%v", m)
		}
		require.Less(t, time.Since(start), 5*time.Second, "%v took %v", body, time.Since(start))
		unchanged(fmt.Sprint(body))
	}
	good := shardURL(srv.Port)
	add(map[string]any{"name": "Bad-Name", "url": good}, 422, "validation_failed", "name", "lowercase")
	add(map[string]any{"name": "default", "url": good}, 422, "validation_failed", "name", "central database")
	add(map[string]any{"name": "b", "url": good, "capacity": 0}, 422, "validation_failed", "capacity", "positive")
	add(map[string]any{"name": "b", "url": good, "capacity": -5}, 422, "validation_failed", "capacity", "positive")
	add(map[string]any{"name": "b", "url": good, "capacity": 2.5}, 422, "validation_failed", "capacity", "integer")
	add(map[string]any{"name": "b", "url": good, "capacity": "ten"}, 422, "validation_failed", "capacity", "integer")
	add(map[string]any{"name": "b", "url": "not a url"}, 422, "validation_failed", "url", "PostgreSQL connection URL")
	add(map[string]any{"name": "b", "url": "https://example.com/db"}, 422, "validation_failed", "url", "PostgreSQL connection URL")
	add(map[string]any{"name": "b", "url": shardURL(closedPort(t))}, 422, "validation_failed", "url", "does not answer")
	add(map[string]any{"name": "b", "url": good}, 422, "validation_failed", "url", "wal_level=replica")

	// The operator sets wal_level=logical and restarts the server.
	srv.Settings = []string{"wal_level=logical"}
	require.NoError(t, srv.Restart(ctx))
	res := env.Do("POST", "/admin/api/shards", admin, map[string]any{"name": "b", "url": good, "capacity": 5}).Expect(t, 201)
	noSecret(res.Body)
	b := res.JSON(t)
	require.Equal(t, "b", b["name"])
	require.Equal(t, "active", b["state"])
	require.Equal(t, float64(5), b["capacity"])
	require.Equal(t, true, b["reachable"])
	require.Equal(t, "logical", b["wal_level"])
	require.NotEmpty(t, b["version"])
	require.NotContains(t, b, "url")
	var sealed []byte
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT url_sealed FROM central.shards WHERE name = 'b'`).Scan(&sealed))
	require.NotContains(t, string(sealed), shardURLSecret, "the URL is stored in the clear")
	// River's tables are on the new server.
	shardDB, err := pgx.Connect(ctx, good)
	require.NoError(t, err)
	defer shardDB.Close(ctx)
	var riverJobs bool
	require.NoError(t, shardDB.QueryRow(ctx, `SELECT to_regclass('river.river_job') IS NOT NULL`).Scan(&riverJobs))
	require.True(t, riverJobs, "River is not migrated on the shard")

	before = shardState(t, env)
	add(map[string]any{"name": "b", "url": good}, 409, "conflict", "", `"b" exists`)

	// Reading: shards:read, or shards:admin; nothing else.
	var list struct {
		Data []map[string]any `json:"data"`
	}
	res = env.Do("GET", "/admin/api/shards", reader, nil).Expect(t, 200)
	noSecret(res.Body)
	res.Decode(t, &list)
	require.Len(t, list.Data, 2)
	require.Equal(t, "default", list.Data[0]["name"])
	require.Equal(t, true, list.Data[0]["reachable"])
	require.Equal(t, "b", list.Data[1]["name"])
	require.Equal(t, "logical", list.Data[1]["wal_level"])
	env.Do("GET", "/admin/api/shards", admin, nil).Expect(t, 200)
	env.Do("GET", "/admin/api/shards/b", reader, nil).Expect(t, 200)
	env.Do("GET", "/admin/api/shards", projectsOnly, nil).Problem(t, 403, "forbidden")
	env.Do("POST", "/admin/api/shards/b/drain", reader, nil).Problem(t, 403, "forbidden")
	env.Do("GET", "/admin/api/shards/nope", reader, nil).Problem(t, 404, "not_found")

	// A project placed by name: that needs shards:admin too.
	create := map[string]any{"tenant_id": tid, "name": "On b", "shard": "b"}
	m := env.Do("POST", "/admin/api/projects", adminToken(t, env, "projects:write"), create).Problem(t, 403, "forbidden")
	require.Contains(t, fmt.Sprint(m["detail"]), "shards:admin")
	unchanged("a create on a shard without shards:admin")
	m = env.Do("POST", "/admin/api/projects", admin, map[string]any{"tenant_id": tid, "name": "Nowhere", "shard": "zz"}).Problem(t, 422, "validation_failed")
	require.Contains(t, fmt.Sprint(m["errors"]), `no shard "zz"`)
	unchanged("a create on an unknown shard")
	onB := env.Do("POST", "/admin/api/projects", admin, create).Expect(t, 201).JSON(t)
	require.Equal(t, "b", onB["shard"])
	var schema string
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT schema_name FROM central.placements WHERE project_id = $1`, onB["id"]).Scan(&schema))
	var onServer bool
	require.NoError(t, shardDB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&onServer))
	require.True(t, onServer, "the project's schema is not on shard b")
	got := env.Do("GET", "/admin/api/shards/b", reader, nil).Expect(t, 200).JSON(t)
	require.Equal(t, float64(1), got["projects"])

	// /readyz names the shard; /metrics shows its figures and its pool
	// (the pool's once the server started its work there, on the
	// shard's NOTIFY).
	ready := readyz(t, env, 200)
	require.Equal(t, "ok", ready["checks"].(map[string]any)["shard:b"], "%v", ready)
	want := []string{
		`plinth_shard_reachable{shard="b"} 1`, `plinth_shard_projects{shard="b"} 1`, `plinth_shard_capacity{shard="b"} 5`,
		`plinth_shard_reachable{shard="default"} 1`, `plinth_shard_capacity{shard="default"} 10000`,
		`plinth_db_pool_max_conns{pool="shard:b"}`, `plinth_db_pool_max_conns{pool="central"}`,
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st int
		st, body = scrape(t, env.URL, "scrape-token")
		require.Equal(t, 200, st)
		missing := missingLines(body, want)
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks:\n\t%s\nin:\n%s", strings.Join(missing, "\n\t"), body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	promtool(t, body)

	// Drain: new projects skip it; a create naming it is 409.
	before = shardState(t, env)
	env.Do("POST", "/admin/api/shards/nope/drain", admin, nil).Problem(t, 404, "not_found")
	unchanged("a drain of an unknown shard")
	drained := env.Do("POST", "/admin/api/shards/b/drain", admin, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "draining", drained["state"])
	require.Equal(t, true, drained["reachable"])
	before = shardState(t, env)
	m = env.Do("POST", "/admin/api/projects", admin, create).Problem(t, 409, "conflict")
	require.Contains(t, fmt.Sprint(m["detail"]), "draining")
	unchanged("a create on a draining shard")
	// b has the most room, but drains: the new project goes to default.
	elsewhere := env.Do("POST", "/admin/api/projects", admin, map[string]any{"tenant_id": tid, "name": "Elsewhere"}).Expect(t, 201).JSON(t)
	require.Equal(t, "default", elsewhere["shard"])

	// Retire: refused while it holds a project, and for default.
	before = shardState(t, env)
	m = env.Do("POST", "/admin/api/shards/b/retire", admin, nil).Problem(t, 409, "conflict")
	require.Contains(t, fmt.Sprint(m["detail"]), "holds 1 project")
	m = env.Do("POST", "/admin/api/shards/default/retire", admin, nil).Problem(t, 409, "conflict")
	require.Contains(t, fmt.Sprint(m["detail"]), "central database")
	env.Do("POST", "/admin/api/shards/nope/retire", admin, nil).Problem(t, 404, "not_found")
	unchanged("a refused retire")
	// A shard without projects retires; it is no longer asked.
	env.Do("POST", "/admin/api/shards", admin, map[string]any{"name": "c", "url": good}).Expect(t, 201)
	retired := env.Do("POST", "/admin/api/shards/c/retire", admin, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "retired", retired["state"])
	env.Do("POST", "/admin/api/shards/c/drain", admin, nil).Problem(t, 409, "conflict")
	ready = readyz(t, env, 200)
	require.NotContains(t, ready["checks"], "shard:c")

	// A shard that does not answer: /readyz is 503 naming it, and its
	// gauge says so.
	require.NoError(t, srv.Stop())
	ready = readyz(t, env, 503)
	require.Contains(t, fmt.Sprint(ready["checks"].(map[string]any)["shard:b"]), "unreachable", "%v", ready)
	require.Equal(t, "ok", ready["checks"].(map[string]any)["database"])
	require.NotContains(t, fmt.Sprint(ready), shardURLSecret)
	_, body = scrape(t, env.URL, "scrape-token")
	require.Empty(t, missingLines(body, []string{`plinth_shard_reachable{shard="b"} 0`, `plinth_shard_reachable{shard="default"} 1`}), body)
	list.Data = nil
	env.Do("GET", "/admin/api/shards", reader, nil).Expect(t, 200).Decode(t, &list)
	require.Equal(t, false, list.Data[1]["reachable"])
	require.NotEmpty(t, list.Data[1]["error"])
}
