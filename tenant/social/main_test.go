package social_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/socialtest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// setup starts a server with fakes of the platforms configured.
func setup(t *testing.T, platforms []string, opts ...apitest.Option) (*apitest.Env, map[string]*socialtest.Platform) {
	t.Helper()
	fakes := map[string]*socialtest.Platform{}
	var kv []string
	for _, name := range platforms {
		f := socialtest.New(t, name)
		fakes[name] = f
		kv = append(kv, f.Env()...)
	}
	return apitest.New(t, append([]apitest.Option{apitest.WithEnv(kv...)}, opts...)...), fakes
}

// waitPost polls a post until its status leaves publishing.
func waitPost(t testing.TB, env *apitest.Env, key string, id any) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := env.Do("GET", fmt.Sprintf("/v1/social-posts/%v", id), key, nil).Expect(t, 200).JSON(t)
		if p["status"] != "publishing" && p["status"] != "scheduled" {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("post %v still %v", id, p["status"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// query runs one query in p's schema and scans its row into dst.
func query(t testing.TB, p *apitest.Project, sql string, args []any, dst ...any) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error { return tx.QueryRow(context.Background(), sql, args...).Scan(dst...) })
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// results indexes a post's results by platform.
func results(t testing.TB, post map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range post["results"].([]any) {
		m := r.(map[string]any)
		out[m["platform"].(string)] = m
	}
	return out
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
