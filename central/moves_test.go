package central_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/webhooktest"
	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Moving a project online (issue 35): tests on two real clusters, the
// env's (central and "default") and b's.

// waitMove polls a move until it has ended and returns it.
func waitMove(t *testing.T, env *apitest.Env, tok, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m := env.Do("GET", "/admin/api/moves/"+id, tok, nil).Expect(t, 200).JSON(t)
		switch m["phase"] {
		case "done", "failed", "cancelled":
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("move %s still %v after 2 min: %v", id, m["phase"], m)
		}
		time.Sleep(600 * time.Millisecond) // the admin API allows 120 requests a minute
	}
}

// replicationLeft lists what a move left of its replication in pool's
// database: publications, slots and subscriptions (the test cluster is
// shared by the tests' databases: slots and subscriptions are the
// cluster's).
func replicationLeft(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT 'publication ' || pubname FROM pg_publication WHERE pubname LIKE 'plinth_move_%'
		UNION ALL SELECT 'slot ' || slot_name FROM pg_replication_slots WHERE slot_name LIKE 'plinth_move_%' AND database = current_database()
		UNION ALL SELECT 'subscription ' || subname FROM pg_subscription
			WHERE subname LIKE 'plinth_move_%' AND subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	require.NoError(t, err)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return left
}

// TestMoveUnderLoad: a project moves from default to b while 4 writers
// and 4 readers use it (half of them through a second instance) and a
// writer uses another project on default: no request fails, every write
// acknowledged is on b afterwards, row by row, the waiting jobs (a post
// scheduled to publish, a webhook delivery waiting to be tried again)
// follow the project and run once, there; the source schema is renamed
// out of the way and the replication is gone from both servers.
func TestMoveUnderLoad(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	var okMu sync.Mutex
	delivered := map[string]int{} // 200s answered, by X-Service-Delivery
	rc := webhooktest.NewTLS(t, func(r *http.Request, attempt int) int {
		if down.Load() {
			return 503
		}
		okMu.Lock()
		defer okMu.Unlock()
		delivered[r.Header.Get("X-Service-Delivery")]++
		return 200
	})
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithRootCAs(rc.RootCAs()), apitest.WithShards("b"),
		apitest.WithEnv("PLINTH_WEBHOOK_RETRY_DELAYS", "1h", "PLINTH_MOVE_COPY_ROWS", "0")) // replication, however small
	inst := env.Instance(apitest.WithRootCAs(rc.RootCAs()))
	ctx := context.Background()
	tok := adminToken(t, env, "shards:admin")
	p := env.NewProjectOn("default")
	other := env.NewProjectOn("default")
	b := env.Shards["b"].Pool
	unlimited, credits := 1<<30, int64(1e9)
	for _, q := range []*apitest.Project{p, other} {
		require.NoError(t, env.Server.Central.SetRateOverride(ctx, q.ID, &unlimited, &unlimited, &credits))
	}

	// Rows to copy, a post scheduled an hour ahead, and a delivery that
	// failed once and waits an hour for its next attempt.
	for i := range 40 {
		env.Do("PUT", fmt.Sprintf("/v1/content/seed.k%d", i), p.Key, map[string]any{"value": fmt.Sprint("seed ", i)}).Expect(t, 200)
	}
	post := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Publishes after the move"}).Expect(t, 201).JSON(t)
	postPath := fmt.Sprintf("/v1/blog-posts/%d", int64(post["id"].(float64)))
	env.Do("POST", postPath+"/schedule", p.Key, map[string]any{"scheduled_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}).Expect(t, 200)
	postArgs := map[string]any{"project_id": p.ID, "post_id": post["id"]}
	_, secret := webhooktest.Endpoint(t, env, p.Key, rc.URL, "blog_post.published")
	rc.SetSecret(secret)
	announced := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Announced before the move"}).Expect(t, 201).JSON(t)
	env.Do("POST", fmt.Sprintf("/v1/blog-posts/%d/publish", int64(announced["id"].(float64))), p.Key, nil).Expect(t, 200)
	first := rc.WaitN(t, 20*time.Second, 1)[0]
	hookArgs := map[string]any{"project_id": p.ID}
	require.Eventually(t, func() bool {
		for _, j := range env.RiverJobs(t, "webhook.deliver", hookArgs) {
			if j.State == "retryable" || j.State == "scheduled" {
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "the delivery waits for its next attempt")

	// The load: each client sends a request every few milliseconds (flat
	// out, nine clients would starve the other tests of a 2-core machine).
	const pace = 5 * time.Millisecond
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	acked := map[string]string{} // key → value acknowledged
	fail := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, a...))
		}
	}
	// client sends a request every pace until stop through via, counting
	// those answered 200 in ok; req makes the nth request and, after a
	// 200, acknowledges it (nil: nothing to record).
	client := func(via *apitest.Env, ok *atomic.Int64, req func(n int) (apitest.Request, func())) {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(pace):
				}
				r, ack := req(n)
				res, err := via.TrySend(r)
				if err != nil || res.Status != 200 {
					fail("%s %s: %s", r.Method, r.Path, describe(res, err))
					continue
				}
				ok.Add(1)
				if ack != nil {
					ack()
				}
			}
		})
	}
	var writes, reads, otherWrites atomic.Int64
	for c := range 4 {
		via := env
		if c%2 == 1 {
			via = inst
		}
		client(via, &writes, func(n int) (apitest.Request, func()) {
			key, val := fmt.Sprintf("load.w%d.n%d", c, n), fmt.Sprintf("v%d-%d", c, n)
			return apitest.Request{Method: "PUT", Path: "/v1/content/" + key, Key: p.Key, Body: map[string]any{"value": val}}, func() {
				mu.Lock()
				acked[key] = val
				mu.Unlock()
			}
		})
		client(via, &reads, func(n int) (apitest.Request, func()) {
			return apitest.Request{Method: "GET", Path: fmt.Sprintf("/v1/content/seed.k%d", n%40), Key: p.Key}, nil
		})
	}
	client(env, &otherWrites, func(n int) (apitest.Request, func()) {
		return apitest.Request{Method: "PUT", Path: fmt.Sprintf("/v1/content/o.n%d", n), Key: other.Key, Body: map[string]any{"value": "x"}}, nil
	})

	time.Sleep(300 * time.Millisecond) // the load runs before the move too
	mv := env.Do("POST", "/admin/api/projects/"+p.ID+"/move", tok, map[string]any{"shard": "b"}).Expect(t, 202)
	require.Equal(t, "/admin/api/moves/"+mv.JSON(t)["id"].(string), mv.Header.Get("Location"))
	m := waitMove(t, env, tok, mv.JSON(t)["id"].(string))
	time.Sleep(300 * time.Millisecond) // and after it
	close(stop)
	wg.Wait()
	t.Logf("move %v: pause %v ms, %v rows; %d writes, %d reads, %d writes to the other project",
		m["id"], m["pause_ms"], m["rows_copied"], writes.Load(), reads.Load(), otherWrites.Load())
	require.Equal(t, "done", m["phase"], "%v", m)
	require.Equal(t, "replication", m["method"], "%v", m)
	require.Empty(t, failures, "requests failed during the move")
	require.NotZero(t, writes.Load())
	require.LessOrEqual(t, m["pause_ms"].(float64), 5000.0)

	// Placed on b; every acknowledged write is there, row by row; the
	// source schema waits under its moved name.
	var shard string
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT shard FROM central.placements WHERE project_id = $1`, p.ID).Scan(&shard))
	require.Equal(t, "b", shard)
	rows, err := b.Query(ctx, `SELECT key, value FROM `+pgx.Identifier{p.Schema, "content_values"}.Sanitize())
	require.NoError(t, err)
	onB := map[string]string{}
	for rows.Next() {
		var k, v string
		require.NoError(t, rows.Scan(&k, &v))
		onB[k] = v
	}
	require.NoError(t, rows.Err())
	for k, v := range acked {
		require.Equal(t, v, onB[k], "acknowledged write %s", k)
	}
	for i := range 40 {
		require.Equal(t, fmt.Sprint("seed ", i), onB[fmt.Sprintf("seed.k%d", i)])
	}
	require.False(t, schemaExists(t, env.DB.Pool, p.Schema), "the source schema keeps its name")
	require.True(t, schemaExists(t, env.DB.Pool, "moved_"+strings.ToLower(m["id"].(string))))
	require.Empty(t, replicationLeft(t, env.DB.Pool))
	require.Empty(t, replicationLeft(t, b))

	// Both instances serve the project from b.
	env.Do("PUT", "/v1/content/after.k", p.Key, map[string]any{"value": "after"}).Expect(t, 200)
	require.Equal(t, "after", inst.Do("GET", "/v1/content/after.k", p.Key, nil).Expect(t, 200).JSON(t)["value"])

	// The delivery that waited before the move went with it, and is
	// delivered once, from b.
	down.Store(false)
	_, err = b.Exec(ctx, `UPDATE `+pgx.Identifier{p.Schema, "webhook_deliveries"}.Sanitize()+` SET next_attempt_at = now() WHERE status = 'pending'`)
	require.NoError(t, err)
	env.DueNow(t, "webhook.deliver", hookArgs)
	deliveredTo := func(n int) func() bool {
		return func() bool {
			okMu.Lock()
			defer okMu.Unlock()
			return delivered[first.Delivery()] == 1 && len(delivered) == n
		}
	}
	require.Eventually(t, deliveredTo(1), 30*time.Second, 50*time.Millisecond, "the waiting delivery, after the move")
	env.WaitRiverJobs(t, "webhook.deliver", hookArgs)

	// The scheduled post's job moved to b and publishes once, there (then
	// its own delivery, after the one that waited: an endpoint's
	// deliveries go in order).
	var onDefault int
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE args->>'project_id' = $1 AND kind = 'blog.publish_scheduled'`, p.ID).Scan(&onDefault))
	require.Zero(t, onDefault, "the scheduled post's job left on default")
	require.Len(t, env.RiverJobs(t, "blog.publish_scheduled", postArgs), 1)
	env.DueNow(t, "blog.publish_scheduled", postArgs)
	jobs := env.WaitRiverJobs(t, "blog.publish_scheduled", postArgs)
	require.Len(t, jobs, 1)
	require.Equal(t, "completed", jobs[0].State)
	require.Equal(t, "published", env.Do("GET", postPath, p.Key, nil).Expect(t, 200).JSON(t)["status"])
	require.Eventually(t, deliveredTo(2), 30*time.Second, 50*time.Millisecond, "the published post's delivery")
	env.WaitRiverJobs(t, "webhook.deliver", hookArgs)
	time.Sleep(300 * time.Millisecond)
	okMu.Lock()
	defer okMu.Unlock()
	require.Len(t, delivered, 2)
	for id, n := range delivered {
		require.Equal(t, 1, n, "delivery %s delivered %d times", id, n)
	}
}

// describe tells what a failed request got.
func describe(res *apitest.Resp, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d %s", res.Status, res.Body)
}

// TestMoveCancelAndBadInput: each bad request is a clear 4xx that changes
// nothing; a move cancelled before its switch leaves the project serving
// on its shard and nothing on the target.
func TestMoveCancelAndBadInput(t *testing.T) {
	t.Parallel()
	// Replication, however small: a move is cancelled mid-copy.
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithShards("b", "c"), apitest.WithEnv("PLINTH_MOVE_COPY_ROWS", "0"))
	ctx := context.Background()
	tok := adminToken(t, env, "shards:admin")
	reader := adminToken(t, env, "shards:read")
	p := env.NewProjectOn("default")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Stays"}).Expect(t, 200)
	env.Do("POST", "/admin/api/shards/c/drain", tok, nil).Expect(t, 200)

	move := func(id string, body any) *apitest.Resp {
		return env.Do("POST", "/admin/api/projects/"+id+"/move", tok, body)
	}
	move(p.ID, map[string]any{"shard": "nowhere"}).Problem(t, 422, "validation_failed")
	move(p.ID, map[string]any{}).Problem(t, 400, "bad_request")
	move(p.ID, map[string]any{"shard": 5}).Problem(t, 422, "validation_failed")
	move(p.ID, map[string]any{"shard": "default"}).Problem(t, 409, "conflict")
	move(p.ID, map[string]any{"shard": "c"}).Problem(t, 409, "conflict")
	move("prj_nope", map[string]any{"shard": "b"}).Problem(t, 404, "not_found")
	env.Do("POST", "/admin/api/projects/"+p.ID+"/move", reader, map[string]any{"shard": "b"}).Problem(t, 403, "forbidden")
	env.Do("GET", "/admin/api/moves/mov_nope", reader, nil).Problem(t, 404, "not_found")
	var moves int
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.moves`).Scan(&moves))
	require.Zero(t, moves, "a refused move was recorded")

	// A move, and a second while it is under way; then cancelled.
	m := move(p.ID, map[string]any{"shard": "b"}).Expect(t, 202).JSON(t)
	id := m["id"].(string)
	move(p.ID, map[string]any{"shard": "b"}).Problem(t, 409, "conflict")
	// Nor is a moving project deleted: the move copies what it would drop.
	_, err := env.Server.Central.DeleteProject(ctx, p.ID, central.DeleteOptions{})
	require.ErrorIs(t, err, httpapi.ErrConflict)
	require.ErrorContains(t, err, id)
	env.Do("POST", "/admin/api/moves/"+id+"/cancel", tok, nil).Expect(t, 200)
	m = waitMove(t, env, tok, id)
	require.Equal(t, "cancelled", m["phase"], "%v", m)
	env.Do("POST", "/admin/api/moves/"+id+"/cancel", tok, nil).Problem(t, 409, "conflict")
	list := env.Do("GET", "/admin/api/projects/"+p.ID+"/moves", reader, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Len(t, list, 1)

	b := env.Shards["b"].Pool
	require.False(t, schemaExists(t, b, p.Schema), "the cancelled move left the schema on b")
	require.Empty(t, replicationLeft(t, env.DB.Pool))
	require.Empty(t, replicationLeft(t, b))
	require.Equal(t, "Stays", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Still here"}).Expect(t, 200)
	require.True(t, schemaExists(t, env.DB.Pool, p.Schema))

	// Moved after all, then back: a project may move again.
	m = waitMove(t, env, tok, move(p.ID, map[string]any{"shard": "b"}).Expect(t, 202).JSON(t)["id"].(string))
	require.Equal(t, "done", m["phase"], "%v", m)
	require.Equal(t, "Still here", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
	m = waitMove(t, env, tok, move(p.ID, map[string]any{"shard": "default"}).Expect(t, 202).JSON(t)["id"].(string))
	require.Equal(t, "done", m["phase"], "%v", m)
	require.Equal(t, "Still here", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
	require.False(t, schemaExists(t, b, p.Schema), "b keeps the schema under its own name after the move back")
}

// TestMoveCancelledWhileCopying: a move by replication copies its rows at
// PLINTH_MOVE_COPY_RATE, which may take minutes; a cancel stops the copy
// within a poll and undoes the move: here 40 KB at 200 bytes a second
// (200 s, past waitMove's 2 minutes) is cancelled as it copies, once it
// shows rows copied.
func TestMoveCancelledWhileCopying(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithShards("b"),
		apitest.WithEnv("PLINTH_MOVE_COPY_ROWS", "0", "PLINTH_MOVE_COPY_RATE", "200"))
	ctx := context.Background()
	tok := adminToken(t, env, "shards:admin")
	p := env.NewProjectOn("default")
	_, err := env.DB.Pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{p.Schema, "content_values"}.Sanitize()+` (key, lang, value)
		SELECT 'bulk.k' || i, 'en', repeat('x', 100) FROM generate_series(1, 400) i`)
	require.NoError(t, err)
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Stays"}).Expect(t, 200)

	id := env.Do("POST", "/admin/api/projects/"+p.ID+"/move", tok, map[string]any{"shard": "b"}).Expect(t, 202).JSON(t)["id"].(string)
	// Copying: the target schema exists and the slot is there.
	b := env.Shards["b"].Pool
	require.Eventually(t, func() bool {
		m := env.Do("GET", "/admin/api/moves/"+id, tok, nil).Expect(t, 200).JSON(t)
		return m["phase"] == "copying" && m["rows_copied"].(float64) > 0 && schemaExists(t, b, p.Schema) && len(replicationLeft(t, env.DB.Pool)) > 0
	}, time.Minute, 700*time.Millisecond, "a copying move shows the rows it copied so far")
	env.Do("POST", "/admin/api/moves/"+id+"/cancel", tok, nil).Expect(t, 200)
	m := waitMove(t, env, tok, id)
	require.Equal(t, "cancelled", m["phase"], "%v", m)
	require.False(t, schemaExists(t, b, p.Schema), "the cancelled move left the schema on b")
	require.Empty(t, replicationLeft(t, env.DB.Pool))
	require.Empty(t, replicationLeft(t, b))
	require.Equal(t, "Stays", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
}

// sparesOn lists shard's spare schemas.
func sparesOn(t testing.TB, env *apitest.Env, shard string) []string {
	t.Helper()
	rows, err := env.DB.Pool.Query(context.Background(), `SELECT schema_name FROM central.spare_schemas WHERE shard = $1 ORDER BY schema_name`, shard)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// TestMoveTakesASpare: a move creates the project's schema on the target
// from one of the target's spare schemas, renamed (no tenant migration
// runs there), and the spares are refilled; there and back, to a shard
// of its own and to the central database's.
func TestMoveTakesASpare(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithShards("b"), apitest.WithEnv("PLINTH_SPARE_SCHEMAS", "1"))
	tok := adminToken(t, env, "shards:admin")
	ready := func(shard string) string {
		var got []string
		require.Eventually(t, func() bool {
			got = sparesOn(t, env, shard)
			return len(got) == 1
		}, 30*time.Second, 50*time.Millisecond, "one spare on %s: %v", shard, got)
		return got[0]
	}
	ready("default")
	p := env.NewProjectOn("default")
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Moves"}).Expect(t, 200)

	for _, to := range []string{"b", "default"} {
		pool := env.DB.Pool
		if to != "default" {
			pool = env.Shards[to].Pool
		}
		spare := ready(to)
		m := waitMove(t, env, tok, env.Do("POST", "/admin/api/projects/"+p.ID+"/move", tok, map[string]any{"shard": to}).Expect(t, 202).JSON(t)["id"].(string))
		require.Equal(t, "done", m["phase"], "%v", m)
		require.False(t, schemaExists(t, pool, spare), "%s's spare %s was not the one taken", to, spare)
		require.True(t, schemaExists(t, pool, p.Schema))
		require.Equal(t, "Moves", env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
		require.NotEqual(t, spare, ready(to), "%s's spares were refilled", to)
	}
}
