package blog_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ai"
)

// headingsWithMarkup is the offline provider, except that the post it
// writes has headings holding markup and an ampersand, as a model's
// answer may (the offline provider's own words are letters only).
type headingsWithMarkup struct{ ai.Offline }

func (p headingsWithMarkup) JSON(ctx context.Context, req ai.JSONRequest, out any) error {
	if req.Name != "post" {
		return p.Offline.JSON(ctx, req, out)
	}
	b, err := json.Marshal(map[string]any{"title": "Bread and butter", "excerpt": "Plain bread.", "sections": []map[string]string{
		{"heading": "Salt & <script>alert(1)</script>", "body": "Mix it."},
		{"heading": "<b>Bold</b> claims", "body": "Knead it."},
		{"heading": "Bake", "body": "Hot oven."},
	}})
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// TestGeneratedHeadingsAreText: the headings of a generated post are the
// model's text, never markup: escaped in the post's HTML, as its
// paragraphs are.
func TestGeneratedHeadingsAreText(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithAI(headingsWithMarkup{}))
	p := env.NewProject("build")
	j := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Bread"}).Expect(t, 202).JSON(t)
	m := generated(t, env, p, env.WaitJob(t, p.Key, j["id"].(string)), nil)
	require.Contains(t, m["content"], "<h2>Salt &amp; &lt;script&gt;alert(1)&lt;/script&gt;</h2>\n<p>Mix it.</p>")
	require.Contains(t, m["content"], "<h2>&lt;b&gt;Bold&lt;/b&gt; claims</h2>\n<p>Knead it.</p>")
}
