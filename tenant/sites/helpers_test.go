package sites_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
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

// public sends a keyless read of the public surface for p.
func public(env *apitest.Env, p *apitest.Project, path string) *apitest.Resp {
	return env.Send(apitest.Request{Method: "GET", Path: path, Header: map[string]string{"X-Service-Project-Key": p.ID}})
}

// str is m[k] as a string.
func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// idOf is a resource's numeric id as a path segment.
func idOf(v any) string { return fmt.Sprint(int64(v.(float64))) }
