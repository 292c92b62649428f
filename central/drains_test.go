package central_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// waitDrain polls shard name until its drain has finished and returns
// the shard.
func waitDrain(t *testing.T, env *apitest.Env, tok, name string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s := env.Do("GET", "/admin/api/shards/"+name, tok, nil).Expect(t, 200).JSON(t)
		if d, _ := s["drain"].(map[string]any); d != nil && d["finished"] == true {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard %s still draining after 2 min: %v\n%s", name, s["drain"], drainDebug(t, env))
		}
		time.Sleep(600 * time.Millisecond) // the admin API allows 120 requests a minute
	}
}

// drainDebug describes the moves under way and what each server's
// sessions wait on, for a drain that does not finish.
func drainDebug(t *testing.T, env *apitest.Env) string {
	ctx := context.Background()
	var b strings.Builder
	rows, _ := env.DB.Pool.Query(ctx, `SELECT id || ' ' || project_id || ' ' || from_shard || '->' || to_shard || ' ' || phase || ' ' || coalesce(method, '-') || ' ' || updated_at::text
		FROM central.moves WHERE phase NOT IN ('done', 'failed', 'cancelled')`)
	lines, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	fmt.Fprintf(&b, "moves under way: %v\n", lines)
	pools := map[string]*pgxpool.Pool{"default": env.DB.Pool}
	for name, db := range env.Shards {
		pools[name] = db.Pool
	}
	for name, pool := range pools {
		rows, _ := pool.Query(ctx, `SELECT coalesce(backend_type, '') || ' ' || coalesce(state, '') || ' ' || coalesce(wait_event_type, '') || ':' || coalesce(wait_event, '') || ' ' || left(coalesce(query, ''), 200)
			FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND (state IS DISTINCT FROM 'idle')`)
		lines, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		fmt.Fprintf(&b, "%s:\n\t%s\n", name, strings.Join(lines, "\n\t"))
		rows, _ = pool.Query(ctx, `SELECT s.subname || ' pid=' || coalesce(s.pid::text, '-') || ' recv=' || coalesce(s.received_lsn::text, '-') || ' apply_errors=' || st.apply_error_count || ' sync_errors=' || st.sync_error_count
			FROM pg_stat_subscription s JOIN pg_stat_subscription_stats st USING (subid)`)
		lines, _ = pgx.CollectRows(rows, pgx.RowTo[string])
		fmt.Fprintf(&b, "\tsubscriptions: %v\n", lines)
		rows, _ = pool.Query(ctx, `SELECT move_id || ':' || n FROM public.plinth_move_marks`)
		lines, _ = pgx.CollectRows(rows, pgx.RowTo[string])
		fmt.Fprintf(&b, "\tmarks: %v\n", lines)
	}
	return b.String()
}

// TestDrainShard: draining b moves its five projects to c and default,
// spread by room, while a writer uses one of them: every move is done
// (the small projects by a fenced copy, the one over
// PLINTH_MOVE_COPY_ROWS by replication), every acknowledged write and
// every row is on the new shard, b holds nothing and retires. A drain
// with nowhere to send the projects is 409 and changes nothing.
func TestDrainShard(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithShards("b", "c"), apitest.WithEnv("PLINTH_MOVE_COPY_ROWS", "1000"))
	ctx := context.Background()
	tok := adminToken(t, env, "shards:admin")
	var ps []*apitest.Project
	for i := range 5 {
		p := env.NewProjectOn("b")
		env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": fmt.Sprint("Project ", i)}).Expect(t, 200)
		ps = append(ps, p)
	}
	big := ps[4]
	for i := range 40 {
		env.Do("PUT", fmt.Sprintf("/v1/content/big.k%d", i), big.Key, map[string]any{"value": fmt.Sprint("big ", i)}).Expect(t, 200)
	}
	// Over the limit by far, so that the writer's project (4 writes a
	// second) stays under it however slow the machine is.
	_, err := env.Shards["b"].Pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{big.Schema, "content_values"}.Sanitize()+` (key, lang, value)
		SELECT 'bulk.k' || i, 'en', 'bulk ' || i FROM generate_series(1, 1500) i`)
	require.NoError(t, err)
	env.Do("POST", "/admin/api/shards/nope/drain", tok, nil).Problem(t, 404, "not_found")

	// A writer on one project, before, during and after its move.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		acked    []string
		failures []string
	)
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("w.k%d", i)
			res, err := env.TrySend(apitest.Request{Method: "PUT", Path: "/v1/content/" + key, Key: ps[0].Key, Body: map[string]any{"value": key}})
			mu.Lock()
			switch {
			case err != nil:
				failures = append(failures, fmt.Sprintf("%s: %v", key, err))
			case res.Status != 200:
				failures = append(failures, fmt.Sprintf("%s: %d %s", key, res.Status, res.Body))
			default:
				acked = append(acked, key)
			}
			mu.Unlock()
			time.Sleep(250 * time.Millisecond) // within the project's rate limit (240 a minute)
		}
	})
	time.Sleep(200 * time.Millisecond)
	s := env.Do("POST", "/admin/api/shards/b/drain", tok, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "draining", s["state"])
	require.Equal(t, float64(5), s["drain"].(map[string]any)["moves"], "%v", s)
	s = waitDrain(t, env, tok, "b")
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	d := s["drain"].(map[string]any)
	require.Equal(t, float64(5), d["done"], "%v", d)
	require.Equal(t, float64(0), d["failed"], "%v", d)
	require.Empty(t, d["failures"])
	require.NotNil(t, d["finished_at"])
	require.Equal(t, float64(0), s["projects"])
	require.Empty(t, failures, "requests failed during the drain")
	require.NotEmpty(t, acked)

	// Spread by room: c and default had the same, so 2 and 3.
	placed := map[string]int{}
	pools := map[string]*pgxpool.Pool{"default": env.DB.Pool, "c": env.Shards["c"].Pool}
	for i, p := range ps {
		var shard string
		require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT shard FROM central.placements WHERE project_id = $1`, p.ID).Scan(&shard))
		require.Contains(t, pools, shard)
		placed[shard]++
		moves := env.Do("GET", "/admin/api/projects/"+p.ID+"/moves", tok, nil).Expect(t, 200).JSON(t)["data"].([]any)
		require.Len(t, moves, 1)
		m := moves[0].(map[string]any)
		require.Equal(t, d["id"], m["drain_id"])
		want := "fenced_copy"
		if p == big {
			want = "replication"
		}
		require.Equal(t, want, m["method"], "%v", m)
		require.Equal(t, fmt.Sprint("Project ", i), env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"])
		require.False(t, schemaExists(t, env.Shards["b"].Pool, p.Schema), "b keeps %s under its name", p.Schema)
	}
	require.ElementsMatch(t, []int{2, 3}, []int{placed["c"], placed["default"]}, "%v", placed)
	// Row by row on the new shard: every acknowledged write, and big's rows.
	content := func(p *apitest.Project) map[string]string {
		var shard string
		require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT shard FROM central.placements WHERE project_id = $1`, p.ID).Scan(&shard))
		rows, err := pools[shard].Query(ctx, `SELECT key, value FROM `+pgx.Identifier{p.Schema, "content_values"}.Sanitize())
		require.NoError(t, err)
		kv := map[string]string{}
		for rows.Next() {
			var k, v string
			require.NoError(t, rows.Scan(&k, &v))
			kv[k] = v
		}
		require.NoError(t, rows.Err())
		return kv
	}
	written := content(ps[0])
	for _, k := range acked {
		require.Contains(t, written, k, "an acknowledged write is missing after the move")
	}
	onTarget := content(big)
	for i := range 40 {
		require.Contains(t, onTarget, fmt.Sprintf("big.k%d", i))
	}
	require.Len(t, onTarget, 1+40+1500)
	for _, pool := range []*pgxpool.Pool{env.DB.Pool, env.Shards["b"].Pool, env.Shards["c"].Pool} {
		require.Empty(t, replicationLeft(t, pool))
	}
	env.Do("POST", "/admin/api/shards/b/retire", tok, nil).Expect(t, 200)

	// c drains to default; then default has nowhere to send its projects:
	// 409, and it stays active with no drain.
	s = env.Do("POST", "/admin/api/shards/c/drain", tok, nil).Expect(t, 200).JSON(t)
	require.Equal(t, float64(placed["c"]), s["drain"].(map[string]any)["moves"])
	s = waitDrain(t, env, tok, "c")
	require.Equal(t, float64(placed["c"]), s["drain"].(map[string]any)["done"], "%v", s)
	m := env.Do("POST", "/admin/api/shards/default/drain", tok, nil).Problem(t, 409, "conflict")
	require.Contains(t, fmt.Sprint(m["detail"]), "no other active shard")
	def := env.Do("GET", "/admin/api/shards/default", tok, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "active", def["state"])
	require.Nil(t, def["drain"])
	for _, p := range ps {
		require.Equal(t, 200, env.Do("GET", "/v1/content/home.title", p.Key, nil).Status)
	}
}
