package sites_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// query runs one scalar query in the project's schema.
func query[T any](t *testing.T, p *apitest.Project, sql string, args ...any) T {
	t.Helper()
	var v T
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), sql, args...).Scan(&v)
	})
	require.NoError(t, err)
	return v
}

// exec runs one statement in the project's schema.
func exec(t *testing.T, p *apitest.Project, sql string, args ...any) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), sql, args...)
		return err
	})
	require.NoError(t, err)
}

// ledger returns the net charge under ref by op.
func ledger(t *testing.T, p *apitest.Project, ref string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT op, sum(amount) FROM credit_ledger WHERE ref = $1 GROUP BY op`, ref)
		if err != nil {
			return err
		}
		var op string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&op, &n}, func() error { out[op] = n; return nil })
		return err
	})
	require.NoError(t, err)
	return out
}

// spent is the net of every charge of the project's live pool.
func spent(t *testing.T, p *apitest.Project) int64 {
	t.Helper()
	return query[int64](t, p, `SELECT COALESCE(sum(amount), 0)::bigint FROM credit_ledger WHERE pool = 'live' AND op <> 'topup'`)
}

// forgetAICharges moves the project's charges out of the AI ceiling's
// one-minute window: a website costs more than half the ceiling, and a
// test that runs two within a minute is not what the ceiling is for.
func forgetAICharges(t *testing.T, p *apitest.Project) {
	t.Helper()
	exec(t, p, `UPDATE credit_ledger SET created_at = created_at - interval '2 minutes'`)
}

type sseEvent struct{ Type, Data string }

// streamJob reads a job's SSE stream from its first event to done.
func streamJob(t *testing.T, env *apitest.Env, key, jobID string) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", env.URL+"/v1/jobs/"+jobID+"/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Last-Event-ID", "0")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	var out []sseEvent
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			break
		}
		out = append(out, sseEvent{ev.Type, ev.Data})
		if ev.Type == "done" {
			break
		}
	}
	return out
}

// stepOrder checks that each step of want was activated, then completed,
// in order, and returns the job of the done event.
func stepOrder(t *testing.T, evs []sseEvent, want []string) map[string]any {
	t.Helper()
	var activated, completed []string
	var done map[string]any
	for _, e := range evs {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.Data), &m), e.Data)
		switch e.Type {
		case "step":
			if m["active"] == true {
				activated = append(activated, m["name"].(string))
			}
			if m["completed"] == true {
				completed = append(completed, m["name"].(string))
			}
		case "done":
			done = m
		case "error":
			t.Fatalf("error event: %s", e.Data)
		}
	}
	require.Equal(t, want, activated, "steps activated")
	require.Equal(t, want, completed, "steps completed")
	require.NotNil(t, done, "the stream ends with done")
	return done
}

// public sends a keyless read of the public surface for p.
func public(env *apitest.Env, p *apitest.Project, path string) *apitest.Resp {
	return env.Send(apitest.Request{Method: "GET", Path: path, Header: map[string]string{"X-Service-Project-Key": p.ID}})
}

// str is m[k] as a string.
func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// idOf is a resource's numeric id as a path segment.
func idOf(v any) string { return fmt.Sprint(int64(v.(float64))) }
