package blog_test

import (
	"context"
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
)

// TestReadPostOneRoundTrip: the read of GET /blog-posts/{ref}, a post
// with its category, two translations and its tags, is one query in one
// network round trip to PostgreSQL, counted on the wire.
func TestReadPostOneRoundTrip(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	tagA := term(t, env, p.Key, "tags", "Go")
	tagB := term(t, env, p.Key, "tags", "Postgres")
	m := post(t, env, p.Key, map[string]any{"title": "Hello", "content": "<p>Hi</p>", "language_code": "en",
		"tag_ids": []any{tagB["id"], tagA["id"]}})
	env.Do("PUT", "/v1/blog-posts/"+idOf(m)+"/translations/fr", p.Key, map[string]any{"title": "Bonjour"}).Expect(t, 200)
	bare := post(t, env, p.Key, map[string]any{"title": "Bare", "language_code": "en"})

	pool, rt := pgtest.CountingPool(t, env.DB)
	s, err := tenant.NewScope(pool, p.Project, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		ref         string
		langs, tags []string
	}{{"hello", []string{"en", "fr"}, []string{"go", "postgres"}}, {idOf(m), []string{"en", "fr"}, []string{"go", "postgres"}},
		{bare["slug"].(string), []string{"en"}, nil}} {
		before := rt.Count()
		langs, tags, err := blog.ReadPostTags(ctx, s, c.ref)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(langs, c.langs) || !slices.Equal(tags, c.tags) {
			t.Fatalf("post %s: languages %v tags %v, want %v %v", c.ref, langs, tags, c.langs, c.tags)
		}
		if n := rt.Count() - before; n != 1 {
			t.Fatalf("the read of %s took %d round trips, want 1", c.ref, n)
		}
	}
	if _, _, err := blog.ReadPostTags(ctx, s, "no-such-post"); err == nil {
		t.Fatal("a missing post must be an error")
	}
}
