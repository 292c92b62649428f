package content_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestPublicSiteReads: the public reads a site renders besides keys,
// pages and galleries (components, the brand, the list of published
// pages) are cached like the others, hide drafts and what the key holders
// keep (the brand's voice and audience), and show one project's data only.
func TestPublicSiteReads(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p, other := env.NewProject("build"), env.NewProject("build")

	env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Hero", "props": map[string]any{"title": "Fresh bread"},
		"translations": map[string]any{"fr": map[string]any{"title": "Pain frais"}}}).Expect(t, 201)
	env.Do("PATCH", "/v1/brand", p.Key, map[string]any{"name": "Bakery", "tagline": "Since 1900", "voice": "secret voice",
		"audience": "secret audience", "colors": map[string]any{"primary": "#aa0000"}}).Expect(t, 200)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home", "path": "/", "status": "published"}).Expect(t, 201)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "About", "status": "published",
		"translations": []any{map[string]any{"lang": "fr", "title": "À propos"}}}).Expect(t, 201)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Secret draft"}).Expect(t, 201)
	// The other project has a component of the same slug, a brand and a
	// published page of its own.
	env.Do("POST", "/v1/components", other.Key, map[string]any{"name": "Hero", "props": map[string]any{"title": "Other"}}).Expect(t, 201)
	env.Do("PATCH", "/v1/brand", other.Key, map[string]any{"name": "Other brand"}).Expect(t, 200)
	env.Do("POST", "/v1/pages", other.Key, map[string]any{"title": "Other page", "status": "published"}).Expect(t, 201)

	c := cached(t, env, p, "/v1/public/components/hero").JSON(t)
	require.Equal(t, map[string]any{"title": "Fresh bread"}, c["props"])
	require.Equal(t, map[string]any{"fr": map[string]any{"title": "Pain frais"}}, c["translations"])
	require.Equal(t, "Other", cached(t, env, other, "/v1/public/components/hero").JSON(t)["props"].(map[string]any)["title"])
	public(env, p, "/v1/public/components/nope").Problem(t, 404, "not_found")

	b := cached(t, env, p, "/v1/public/brand")
	bm := b.JSON(t)
	require.Equal(t, "Bakery", bm["name"])
	require.Equal(t, "Since 1900", bm["tagline"])
	require.Equal(t, map[string]any{"primary": "#aa0000"}, bm["colors"])
	require.NotContains(t, bm, "voice")
	require.NotContains(t, bm, "audience")
	require.NotContains(t, string(b.Body), "secret")
	require.Equal(t, "Other brand", cached(t, env, other, "/v1/public/brand").JSON(t)["name"])

	l := cached(t, env, p, "/v1/public/pages").JSON(t)
	var got []map[string]any
	for _, it := range l["data"].([]any) {
		got = append(got, it.(map[string]any))
	}
	require.Len(t, got, 2, "drafts and the other project's pages are not listed: %v", got)
	require.Equal(t, "about", got[0]["slug"]) // newest first
	require.Equal(t, "/about", got[0]["path"])
	require.Equal(t, "About", got[0]["title"])
	require.NotEmpty(t, got[0]["updated_at"])
	require.NotContains(t, got[0], "sections")
	require.Equal(t, "/", got[1]["path"])
	require.Equal(t, false, l["has_more"])

	// Translated titles, and pages of one.
	fr := cached(t, env, p, "/v1/public/pages?lang=fr").JSON(t)["data"].([]any)
	require.Equal(t, "À propos", fr[0].(map[string]any)["title"])
	require.Equal(t, "Home", fr[1].(map[string]any)["title"])
	first := public(env, p, "/v1/public/pages?limit=1").Expect(t, 200).JSON(t)
	require.Equal(t, true, first["has_more"])
	next := public(env, p, "/v1/public/pages?limit=1&cursor="+first["next_cursor"].(string)).Expect(t, 200).JSON(t)
	require.Equal(t, "home", next["data"].([]any)[0].(map[string]any)["slug"])
	require.Equal(t, false, next["has_more"])
	public(env, p, "/v1/public/pages?limit=0").Problem(t, 422, "validation_failed")
	public(env, p, "/v1/public/pages?lang=!").Problem(t, 422, "validation_failed")

	o := cached(t, env, other, "/v1/public/pages").JSON(t)["data"].([]any)
	require.Len(t, o, 1)
	require.Equal(t, "Other page", o[0].(map[string]any)["title"])

	// Publishing changes the list's tag.
	etag := public(env, p, "/v1/public/pages").Header.Get("ETag")
	env.Do("PATCH", "/v1/pages/secret-draft", p.Key, map[string]any{"status": "published"}).Expect(t, 200)
	r := public(env, p, "/v1/public/pages", "If-None-Match", etag).Expect(t, 200)
	require.Len(t, r.JSON(t)["data"], 3)
}
