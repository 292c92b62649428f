package blog_test

import (
	"reflect"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestFallbackChainPosts: a post read in fr-CA takes each text from the
// first language of the project's chain (fr-CA → fr → en) that has it,
// and says where each came from; never an empty text while a language of
// the chain has one.
func TestFallbackChainPosts(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"fallback_languages": map[string]any{"fr-CA": []string{"fr"}}}).Expect(t, 200)
	m := post(t, env, p.Key, map[string]any{"title": "Sourdough", "content": "<p>Flour, water, salt.</p>", "excerpt": "Bread",
		"meta_description": "All about sourdough", "language_code": "en", "status": "published", "slug": "sourdough"})
	id := idOf(m)
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/fr", p.Key, map[string]any{"title": "Levain", "content": "<p>Farine, eau, sel.</p>"}).Expect(t, 200)
	env.Do("PUT", "/v1/blog-posts/"+id+"/translations/fr-CA", p.Key, map[string]any{"title": "Levain du Québec"}).Expect(t, 200)

	want := map[string]any{"lang": "fr-CA", "title": "Levain du Québec", "content": "<p>Farine, eau, sel.</p>", "excerpt": "Bread",
		"meta_description": "All about sourdough",
		"fallback":         map[string]any{"content": "fr", "excerpt": "en", "meta_description": "en"}}
	list := env.Do("GET", "/v1/blog-posts?lang=fr-CA", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	for who, got := range map[string]map[string]any{
		"authenticated": env.Do("GET", "/v1/blog-posts/"+id+"?lang=fr-CA", p.Key, nil).Expect(t, 200).JSON(t),
		"list":          list[0].(map[string]any),
		"public":        public(env, p, "/v1/public/blog-posts/sourdough?lang=fr-CA").Expect(t, 200).JSON(t),
	} {
		flat := map[string]any{}
		for k := range want {
			flat[k] = got[k]
		}
		if !reflect.DeepEqual(flat, want) {
			t.Errorf("%s post in fr-CA: %v, want %v", who, flat, want)
		}
	}
	// A language the post lacks altogether: its chain's first text, fr.
	got := env.Do("GET", "/v1/blog-posts/"+id+"?lang=fr-BE", p.Key, nil).Expect(t, 200).JSON(t)
	if got["lang"] != "en" || got["title"] != "Sourdough" {
		t.Fatalf("fr-BE has no chain: the default language: %v %v", got["lang"], got["title"])
	}
	got = env.Do("GET", "/v1/blog-posts/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	if got["title"] != "Sourdough" || got["fallback"] != nil {
		t.Fatalf("without lang the post is in its own language, no fallback: %v %v", got["title"], got["fallback"])
	}
}
