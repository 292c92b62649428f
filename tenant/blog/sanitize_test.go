package blog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// hostile carries script in every form a stored post must not keep.
const hostile = `<p onclick="steal()">Intro</p><script>alert(1)</script>` +
	`<img src="https://example.com/x.png" onerror="alert(2)">` +
	`<a href="javascript:alert(3)">click</a><a href="https://example.com/ok">ok</a>` +
	`<iframe src="https://evil.example"></iframe><svg onload="alert(4)"></svg>`

// requireClean asserts that no form of script survives in s.
func requireClean(t *testing.T, s string) {
	t.Helper()
	low := strings.ToLower(s)
	for _, bad := range []string{"<script", "onerror", "onclick", "onload", "javascript:", "<iframe", "<svg"} {
		require.NotContains(t, low, bad, "stored: %s", s)
	}
}

func TestSanitisation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	m := post(t, env, p.Key, map[string]any{
		"title": `<script>alert(1)</script>Safe <b>title</b>`, "content": hostile,
		"excerpt": `<img src=x onerror=alert(1)>Short`, "meta_title": `&lt;script&gt;alert(1)&lt;/script&gt;Meta`,
		"meta_description": "2 < 3 & 4 > 1",
	})
	stored := query[string](t, p, `SELECT texts->'en'->>'content' FROM blog_posts WHERE id = $1`, int64(m["id"].(float64)))
	requireClean(t, stored)
	require.Equal(t, stored, m["content"], "the answer shows what is stored")
	// What is harmless stays.
	require.Contains(t, stored, "<p>Intro</p>")
	require.Contains(t, stored, `<img src="https://example.com/x.png">`)
	require.Contains(t, stored, `href="https://example.com/ok"`)
	// Plain-text fields keep no markup at all, even behind entities, and
	// keep their characters readable.
	require.Equal(t, "Safe title", m["title"])
	require.Equal(t, "Short", m["excerpt"])
	require.Equal(t, "Meta", m["meta_title"])
	require.Equal(t, "2 < 3 & 4 > 1", m["meta_description"])
	require.Equal(t, "safe-title", m["slug"])

	// PATCH and PUT translations are sanitised the same way.
	up := env.Do("PATCH", "/v1/blog-posts/"+idOf(m), p.Key, map[string]any{"content": hostile + "<p>patched</p>"}).Expect(t, 200).JSON(t)
	requireClean(t, up["content"].(string))
	require.Contains(t, up["content"], "<p>patched</p>")
	env.Do("PUT", "/v1/blog-posts/"+idOf(m)+"/translations/fr", p.Key, map[string]any{
		"title": `<script>x()</script>Titre`, "content": hostile,
	}).Expect(t, 200)
	// Every field of every language, as stored.
	requireClean(t, query[string](t, p, `SELECT string_agg(v, ' ') FROM blog_posts, jsonb_each(texts) AS l, jsonb_each_text(l.value) AS f (k, v)`))
	// Names of categories and tags too.
	cat := term(t, env, p.Key, "categories", `<script>alert(1)</script>Cat`)
	require.Equal(t, "Cat", cat["name"])
}
