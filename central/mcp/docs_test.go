package mcp_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/docs"
)

// TestResources: plinth://openapi is the served document, and every
// markdown document is a resource plinth://docs/{name}.
func TestResources(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	eachTransport(t, func(t *testing.T, transport string) {
		cs := connect(t, env, transport, p.Key, nil)
		ctx := context.Background()
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "plinth://openapi"})
		require.NoError(t, err)
		require.Equal(t, "application/json", res.Contents[0].MIMEType)
		require.Equal(t, string(central.OpenAPIJSON), res.Contents[0].Text)

		list, err := cs.ListResources(ctx, nil)
		require.NoError(t, err)
		var uris []string
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
		}
		require.Contains(t, uris, "plinth://docs/mcp")
		require.Contains(t, uris, "plinth://docs/api/content")
		require.Contains(t, uris, "plinth://docs/decisions")
		templates, err := cs.ListResourceTemplates(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, "plinth://docs/{name}", templates.ResourceTemplates[0].URITemplate)

		want, err := docs.FS.ReadFile("api/content.md")
		require.NoError(t, err)
		res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "plinth://docs/api/content"})
		require.NoError(t, err)
		require.Equal(t, string(want), res.Contents[0].Text)
		require.Equal(t, "text/markdown", res.Contents[0].MIMEType)

		_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "plinth://docs/nope"})
		require.Error(t, err)
	})
}

// TestLLMsTxt: /llms.txt needs no key and links the documents, each
// served as markdown at /docs/{name}.md.
func TestLLMsTxt(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	get := func(path string) (*http.Response, string) {
		res, err := env.HTTP.Client().Get(env.URL + path)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	res, body := get("/llms.txt")
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "text/plain; charset=utf-8", res.Header.Get("Content-Type"))
	require.Contains(t, body, "# Plinth")
	require.Contains(t, body, "/v1/mcp")
	require.Contains(t, body, "](/docs/api/content.md)")
	require.Contains(t, body, "](/docs/mcp.md)")
	require.Contains(t, body, "`set_content`: PUT /v1/content/{key} (key*, value*, autosave, draft, idempotency_key, lang)")
	require.Contains(t, body, "`upsert_component`: POST /v1/components (name* (to create), autosave, body_slug, draft, idempotency_key, props, slug, translations)")
	require.Contains(t, body, "`get_project`: GET /v1/projects/me\n", "a tool without arguments lists none")

	res, body = get("/docs/api/content.md")
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "text/markdown; charset=utf-8", res.Header.Get("Content-Type"))
	want, err := docs.FS.ReadFile("api/content.md")
	require.NoError(t, err)
	require.Equal(t, string(want), body)

	for _, path := range []string{"/docs/nope.md", "/docs/api/content", "/docs/../go.mod", "/docs/embed.go", "/docs/./mcp.md"} {
		res, _ = get(path)
		require.Equal(t, 404, res.StatusCode, path)
	}
}
