package central_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
)

// Tests on three real clusters (issue 35): the env's (central and the
// "default" shard) and the extra clusters b and c of the harness
// (apitest.WithShards, pgtest.NewOn), added through Central.AddShard.

// setCapacities sets the shards' capacities in projects.
func setCapacities(t *testing.T, env *apitest.Env, caps map[string]int) {
	t.Helper()
	for name, c := range caps {
		if _, err := env.DB.Pool.Exec(context.Background(), `UPDATE central.shards SET capacity = $2 WHERE name = $1`, name, c); err != nil {
			t.Fatal(err)
		}
	}
}

// placed counts the projects of each shard.
func placed(t *testing.T, env *apitest.Env) map[string]int {
	t.Helper()
	rows, err := env.DB.Pool.Query(context.Background(), `SELECT shard, count(*)::int FROM central.placements GROUP BY shard`)
	require.NoError(t, err)
	got := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		got[s] = n
	}
	require.NoError(t, rows.Err())
	return got
}

// createMany creates n projects without naming a shard and returns the
// shard of each, in order.
func createMany(t *testing.T, env *apitest.Env, n int) []string {
	t.Helper()
	var shards []string
	for i := range n {
		p, err := env.Server.Central.CreateProject(context.Background(), central.ProjectParams{
			TenantID: env.TenantID(), Name: fmt.Sprintf("Spread %d", i), Plan: tenant.PlanBuild})
		require.NoError(t, err)
		shards = append(shards, p.Shard)
	}
	return shards
}

// TestShardPlacementByRoom: new projects go to the active shard with the
// most room (capacity less its projects), over three servers.
func TestShardPlacementByRoom(t *testing.T) {
	t.Parallel()
	t.Run("equal", func(t *testing.T) {
		t.Parallel()
		env := apitest.New(t, apitest.WithShards("b", "c"))
		setCapacities(t, env, map[string]int{"default": 10, "b": 10, "c": 10})
		createMany(t, env, 30)
		require.Equal(t, map[string]int{"default": 10, "b": 10, "c": 10}, placed(t, env))
		// Each project's schema is on its shard's server, and only there.
		rows, err := env.DB.Pool.Query(context.Background(), `SELECT shard, schema_name FROM central.placements`)
		require.NoError(t, err)
		type pl struct{ Shard, Schema string }
		all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pl])
		require.NoError(t, err)
		pools := map[string]*pgxpool.Pool{"default": env.DB.Pool, "b": env.Shards["b"].Pool, "c": env.Shards["c"].Pool}
		for _, p := range all {
			for name, pool := range pools {
				require.Equal(t, name == p.Shard, schemaExists(t, pool, p.Schema), "schema %s of shard %s on %s", p.Schema, p.Shard, name)
			}
		}
	})
	t.Run("unequal", func(t *testing.T) {
		t.Parallel()
		env := apitest.New(t, apitest.WithShards("b", "c"))
		setCapacities(t, env, map[string]int{"default": 2, "b": 6, "c": 4})
		got := createMany(t, env, 4)
		// b has the most room until it is down to c's (ties go by name).
		require.Equal(t, []string{"b", "b", "b", "c"}, got)
		createMany(t, env, 8)
		require.Equal(t, map[string]int{"default": 2, "b": 6, "c": 4}, placed(t, env), "every shard filled to its capacity")
	})
}

func schemaExists(t *testing.T, pool *pgxpool.Pool, schema string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok))
	return ok
}

// TestProjectOnShardFlows: a project placed on shard b works end to end
// and is never read from default, where the same schema exists, empty
// (a path that reached the central pool would read or write there):
// content keys (private and public reads), a blog post scheduled to
// publish (its River job inserted and worked on b, once), its signed
// webhook delivery to a real receiver, a job whose SSE stream sees the
// progress written on b, and its credits in the usage report.
func TestProjectOnShardFlows(t *testing.T) {
	t.Parallel()
	rc := webhooktest.NewTLS(t, nil)
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()), apitest.WithShards("b"))
	ctx := context.Background()
	p := env.NewProjectOn("b")
	require.Equal(t, "b", p.Shard)
	b := env.Shards["b"].Pool

	require.True(t, schemaExists(t, b, p.Schema))
	require.False(t, schemaExists(t, env.DB.Pool, p.Schema))
	// The decoy: the same schema on default, empty.
	require.NoError(t, provisioning.ProvisionProject(ctx, env.DB.Pool, env.DB.Pool, p.Schema))
	count := func(pool *pgxpool.Pool, table string) int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{p.Schema, table}.Sanitize()).Scan(&n))
		return n
	}

	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "blog_post.published")
	rc.SetSecret(secret)

	// Content keys.
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "On b"}).Expect(t, 200)
	require.Equal(t, "On b", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
	pub := env.Send(apitest.Request{Method: "GET", Path: "/v1/public/content/home.title", Header: map[string]string{"X-Service-Project-Key": p.ID}}).Expect(t, 200).JSON(t)
	require.Equal(t, "On b", pub["value"])

	// A post scheduled to publish: the job is on b, worked there once.
	start := time.Now()
	m := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Scheduled on b"}).Expect(t, 201).JSON(t)
	path := fmt.Sprintf("/v1/blog-posts/%d", int64(m["id"].(float64)))
	at := apitest.AheadOf(time.Since(start))
	env.Do("POST", path+"/schedule", p.Key, map[string]any{"scheduled_at": at.Format(time.RFC3339Nano)}).Expect(t, 200)
	args := map[string]any{"project_id": p.ID, "post_id": m["id"]}
	require.Len(t, env.RiverJobs(t, "blog.publish_scheduled", args), 1)
	env.DueNow(t, "blog.publish_scheduled", args)
	jobs := env.WaitRiverJobs(t, "blog.publish_scheduled", args)
	require.Len(t, jobs, 1)
	require.Equal(t, "completed", jobs[0].State)
	require.Equal(t, "published", env.Do("GET", path, p.Key, nil).Expect(t, 200).JSON(t)["status"])
	var onDefault int
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE args->>'project_id' = $1`, p.ID).Scan(&onDefault))
	require.Zero(t, onDefault, "no job of the project on default's River")

	// Its delivery, signed, once.
	reqs := rc.WaitN(t, 20*time.Second, 1)
	require.NoError(t, reqs[0].Verified)
	require.Equal(t, "blog_post.published", reqs[0].Header.Get("X-Service-Event"))

	// A job with SSE progress, and its credits.
	j := env.Do("POST", path+"/translate", p.Key, map[string]any{"languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	env.JobSteps(t, p.Key, j["id"].(string), []string{"fr"})
	require.Equal(t, "completed", env.WaitJob(t, p.Key, j["id"].(string))["status"])
	usage := env.Do("GET", "/v1/projects/me/usage?period=current", p.Key, nil).Expect(t, 200).JSON(t)
	require.NotZero(t, usage["credits_used"], "the translation's credits: %v", usage)

	// Everything above lives on b; default's copy of the schema is empty.
	for _, table := range []string{"content_values", "blog_posts", "jobs", "job_events", "credit_ledger", "webhook_endpoints", "webhook_deliveries"} {
		require.NotZero(t, count(b, table), "%s on b", table)
		require.Zero(t, count(env.DB.Pool, table), "%s on default", table)
	}
	require.Len(t, rc.Requests(), 1, "delivered once")
}

// TestSuspendResumeOnShard: TestSuspendResume for a project on b.
func TestSuspendResumeOnShard(t *testing.T) {
	t.Parallel()
	suspendResume(t, "b")
}

// TestDeleteLeavesNothingOnShard: TestDeleteLeavesNothing for projects on
// b: the drop job runs on b and leaves nothing of the project there.
func TestDeleteLeavesNothingOnShard(t *testing.T) {
	t.Parallel()
	deleteLeavesNothing(t, "b")
}

// TestSparesPerShard: spare schemas are kept on every active shard, each
// on its own server, and a project placed on b claims one of b's.
func TestSparesPerShard(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_SPARE_SCHEMAS", "2"), apitest.WithShards("b"))
	spares := func() map[string][]string {
		rows, err := env.DB.Pool.Query(context.Background(), `SELECT shard, schema_name FROM central.spare_schemas ORDER BY schema_name`)
		require.NoError(t, err)
		got := map[string][]string{}
		for rows.Next() {
			var s, n string
			require.NoError(t, rows.Scan(&s, &n))
			got[s] = append(got[s], n)
		}
		require.NoError(t, rows.Err())
		return got
	}
	var got map[string][]string
	require.Eventually(t, func() bool {
		got = spares()
		return len(got["default"]) == 2 && len(got["b"]) == 2
	}, 30*time.Second, 50*time.Millisecond, "two spares per shard: %v", got)
	for _, s := range got["b"] {
		require.True(t, schemaExists(t, env.Shards["b"].Pool, s), "b's spare %s on b", s)
		require.False(t, schemaExists(t, env.DB.Pool, s), "b's spare %s not on default", s)
	}
	p := env.NewProjectOn("b")
	require.True(t, slices.Contains(got["b"], p.Schema), "project on b has schema %s, not one of b's spares %v", p.Schema, got["b"])
	require.False(t, slices.Contains(got["default"], p.Schema))
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	q := env.NewProject("build")
	require.Equal(t, "default", q.Shard)
	require.True(t, slices.Contains(got["default"], q.Schema), "project on default has schema %s, not one of default's spares %v", q.Schema, got["default"])
}

// TestExportImportOnShard: a project on b is exported by a job that runs
// on b and reads b, and its archive imports into a project placed on b
// (the shard with the most room) holding the same rows, there.
func TestExportImportOnShard(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithShards("b"))
	setCapacities(t, env, map[string]int{"default": 1}) // b has the most room
	admin := newAdminAPI(t, env)
	src := env.NewProjectOn("b")
	fillProject(t, env, src)
	b := env.Shards["b"].Pool
	// The decoy: the same schema, empty, on default.
	require.NoError(t, provisioning.ProvisionProject(context.Background(), env.DB.Pool, env.DB.Pool, src.Schema))

	id := admin.adminSend(t, "POST", "/admin/api/projects/"+src.ID+"/exports", nil, "").Expect(t, 202).JSON(t)["id"].(string)
	waitExport(t, env, id, "completed")
	done := admin.adminSend(t, "GET", "/admin/api/exports/"+id, nil, "").Expect(t, 200).JSON(t)
	counts := done["row_counts"].(map[string]any)
	require.Equal(t, float64(2), counts["content_values"], "the export read b: %v", counts)
	dl := admin.adminSend(t, "GET", "/admin/api/exports/"+id+"/download", nil, "").Expect(t, 200)

	body, ct := importForm(dl.Body, "tenant_id", fmt.Sprint(env.TenantID()), "name", "Copy on b")
	copyID := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Expect(t, 201).JSON(t)["id"].(string)
	copied, err := env.Server.Central.Project(context.Background(), copyID)
	require.NoError(t, err)
	require.Equal(t, "b", copied.Shard)
	require.True(t, schemaExists(t, b, copied.Schema))
	require.False(t, schemaExists(t, env.DB.Pool, copied.Schema))
	want := tableDigestsOn(t, b, src.Schema, src.ID, copyID)
	got := tableDigestsOn(t, b, copied.Schema, "", "")
	require.Equal(t, want["content_values"], got["content_values"])
	require.Equal(t, want["blog_posts"], got["blog_posts"])
	key, err := env.Server.Central.MintKey(context.Background(), copyID, "test", []string{"*"}, nil, false)
	require.NoError(t, err)
	require.Equal(t, "Bonjour", env.Do("GET", "/v1/content/hero.title?lang=fr", key.Secret, nil).Expect(t, 200).JSON(t)["value"])
}

// TestShardRestart: while a shard's server is down, its project's
// requests answer 503 with Retry-After, never 500, and a project on
// another shard is served as before; once the server is back, the
// project is served again without restarting anything.
func TestShardRestart(t *testing.T) {
	t.Parallel()
	srv := apitest.ShardServer(t, "logical") // before env: it stops after it
	env := apitest.New(t)
	ctx := context.Background()
	_, err := env.Server.Central.AddShard(ctx, central.ShardParams{Name: "b", URL: shardURL(srv.Port)})
	require.NoError(t, err)
	onB, here := env.NewProjectOn("b"), env.NewProjectOn("default")
	for _, p := range []*apitest.Project{onB, here} {
		env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Before"}).Expect(t, 200)
	}

	require.NoError(t, srv.Stop())
	for i := range 3 {
		for _, res := range []*apitest.Resp{
			env.Do("GET", "/v1/content/home.title", onB.Key, nil),
			env.Do("PUT", "/v1/content/home.title", onB.Key, map[string]any{"value": "Lost"}),
		} {
			res.Problem(t, 503, "service_unavailable")
			require.NotEmpty(t, res.Header.Get("Retry-After"))
		}
		env.Do("PUT", "/v1/content/home.title", here.Key, map[string]any{"value": fmt.Sprint("Here ", i)}).Expect(t, 200)
		require.Equal(t, fmt.Sprint("Here ", i), env.Do("GET", "/v1/content/home.title", here.Key, nil).Expect(t, 200).JSON(t)["value"])
	}

	_, err = srv.Start(ctx)
	require.NoError(t, err)
	deadline := time.Now().Add(15 * time.Second)
	for {
		res := env.Do("GET", "/v1/content/home.title", onB.Key, nil)
		if res.Status == 200 {
			require.Equal(t, "Before", res.JSON(t)["value"], "a write answered 503 was kept")
			break
		}
		res.Problem(t, 503, "service_unavailable")
		if time.Now().After(deadline) {
			t.Fatalf("the project on b is not served 15 s after its server is back: %s", res.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	env.Do("PUT", "/v1/content/home.title", onB.Key, map[string]any{"value": "After"}).Expect(t, 200)
}
