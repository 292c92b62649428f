package blog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// term creates a category or a tag (kind: "categories" or "tags") named
// name and returns it.
func term(t *testing.T, env *apitest.Env, key, kind, name string) map[string]any {
	t.Helper()
	return env.Do("POST", "/v1/"+kind, key, map[string]any{"name": name}).Expect(t, 201).JSON(t)
}

// post creates a manual post and returns it.
func post(t *testing.T, env *apitest.Env, key string, body map[string]any) map[string]any {
	t.Helper()
	return env.Do("POST", "/v1/blog-posts", key, body).Expect(t, 201).JSON(t)
}

// idOf is the id of a resource as a path segment.
func idOf(m map[string]any) string { return fmt.Sprint(int64(m["id"].(float64))) }

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

// checkPost asserts the contract's shape of a blog post.
func checkPost(t *testing.T, m map[string]any) {
	t.Helper()
	for _, f := range []string{"id", "slug", "status", "featured_image", "published_at", "scheduled_at", "title", "excerpt", "content",
		"meta_title", "meta_description", "category", "tags", "translations"} {
		_, ok := m[f]
		require.True(t, ok, "post lacks %s: %v", f, m)
	}
	id, ok := m["id"].(float64)
	require.True(t, ok && id > 0 && id == float64(int64(id)), "id must be a positive integer: %v", m["id"])
	require.Contains(t, []any{"draft", "published", "scheduled", "archived"}, m["status"])
	_, ok = m["tags"].([]any)
	require.True(t, ok, "tags must be an array: %v", m["tags"])
	tr, ok := m["translations"].([]any)
	require.True(t, ok && len(tr) >= 1, "translations must list every locale: %v", m["translations"])
	for _, x := range tr {
		for _, f := range []string{"lang", "title", "excerpt", "content", "meta_title", "meta_description"} {
			require.Contains(t, x.(map[string]any), f)
		}
	}
	for _, f := range []string{"published_at", "scheduled_at", "created_at", "updated_at"} {
		if s, ok := m[f].(string); ok {
			_, err := time.Parse(time.RFC3339, s)
			require.NoError(t, err, f)
			require.True(t, strings.HasSuffix(s, "Z"), "%s must be UTC with Z: %s", f, s)
		}
	}
}

// langs lists the lang of each translation of a post.
func langs(m map[string]any) []string {
	var out []string
	for _, x := range m["translations"].([]any) {
		out = append(out, x.(map[string]any)["lang"].(string))
	}
	return out
}

// ledger returns the net charge and the rows under ref by op.
func ledger(t *testing.T, p *apitest.Project, ref string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT op, sum(amount) FROM credit_ledger WHERE ref = $1 GROUP BY op`, ref)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var op string
			var n int64
			if err := rows.Scan(&op, &n); err != nil {
				return err
			}
			out[op] = n
		}
		return rows.Err()
	})
	require.NoError(t, err)
	return out
}

// subscribe makes p's blog events recorded: an endpoint subscribed to
// both blog topics (the outbox stores nothing without one).
func subscribe(t *testing.T, env *apitest.Env, p *apitest.Project, url string) {
	t.Helper()
	if url == "" {
		url = "https://127.0.0.1:9/hook" // never answers; events are stored all the same
	}
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": url,
		"events": []string{"blog_post.published", "blog_post.translated"}}).Expect(t, 201)
}

// events returns the data of p's recorded events of topic, oldest first.
func events(t *testing.T, p *apitest.Project, topic string) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT payload FROM webhook_events WHERE type = $1 ORDER BY id`, topic)
		if err != nil {
			return err
		}
		payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, pl := range payloads {
			var env struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal([]byte(pl), &env); err != nil {
				return err
			}
			require.Equal(t, topic, env.Type)
			out = append(out, env.Data)
		}
		return err
	})
	require.NoError(t, err)
	return out
}
