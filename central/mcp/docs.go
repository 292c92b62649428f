package mcp

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// A document is one markdown file of the documentation, named by its
// path without .md: "operations", "api/content".
type document struct {
	name, title string
	text        []byte
}

// documents reads every *.md and api/*.md of fsys, in name order.
func documents(fsys fs.FS) ([]document, error) {
	var out []document
	for _, pattern := range []string{"*.md", "api/*.md"} {
		files, err := fs.Glob(fsys, pattern)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := fs.ReadFile(fsys, f)
			if err != nil {
				return nil, err
			}
			title, _, _ := strings.Cut(string(b), "\n")
			out = append(out, document{name: strings.TrimSuffix(f, ".md"), title: strings.TrimSpace(strings.TrimPrefix(title, "#")), text: b})
		}
	}
	slices.SortFunc(out, func(a, b document) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// docsURI is the URI template of the documentation resources.
const docsURI = "plinth://docs/{name}"

// addResources adds plinth://openapi and one plinth://docs/{name} per
// document (the template too, for clients that read by template).
func (s *Server) addResources() error {
	docs, err := documents(s.deps.Docs)
	if err != nil {
		return fmt.Errorf("mcp: the documentation: %w", err)
	}
	s.docs = docs
	openapiJSON := s.deps.OpenAPI
	s.server.AddResource(&sdk.Resource{URI: "plinth://openapi", Name: "openapi", Title: "OpenAPI document",
		Description: "The OpenAPI 3.1 document of the REST API the tools run.", MIMEType: "application/json", Size: int64(len(openapiJSON))},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(openapiJSON)}}}, nil
		})
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		name := strings.TrimPrefix(req.Params.URI, "plinth://docs/")
		d, ok := s.document(name)
		if !ok {
			return nil, sdk.ResourceNotFoundError(req.Params.URI)
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: string(d.text)}}}, nil
	}
	for _, d := range docs {
		s.server.AddResource(&sdk.Resource{URI: "plinth://docs/" + d.name, Name: d.name, Title: d.title,
			MIMEType: "text/markdown", Size: int64(len(d.text))}, read)
	}
	s.server.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: docsURI, Name: "docs", Title: "Documentation",
		Description: "A markdown document of the documentation (see resources/list for the names).", MIMEType: "text/markdown"}, read)
	return nil
}

// document returns the document named name.
func (s *Server) document(name string) (document, bool) {
	i := slices.IndexFunc(s.docs, func(d document) bool { return d.name == name })
	if i < 0 {
		return document{}, false
	}
	return s.docs[i], true
}

// ServeDoc serves GET /docs/{name}.md: a document as text.
func (s *Server) ServeDoc(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/docs/"), ".md")
	d, found := s.document(name)
	if !ok || !found || path.Clean(name) != name {
		httpapi.WriteError(w, r, httpapi.NotFound("no document "+r.URL.Path+": /llms.txt lists them"))
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(d.text)
}

// ServeLLMs serves GET /llms.txt: what the API is, how an agent reaches
// it (MCP or REST), the tools, and links to the markdown documents.
func (s *Server) ServeLLMs(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	b.WriteString("# Plinth\n\n")
	b.WriteString("> A multi-project REST backend for AI-built websites: content keys, pages, components, brand, galleries, " +
		"images, blog, social posts, commerce, bookings, forms, AI jobs and webhooks. Each website is a project reached with " +
		"its API key (`Authorization: Bearer pln_live_…`), within the key's scopes.\n\n")
	b.WriteString("Agents can operate a project over the Model Context Protocol: Streamable HTTP at `/v1/mcp` with the key as " +
		"`Authorization: Bearer`, or stdio with `plinth mcp` (PLINTH_URL, PLINTH_API_KEY); see [MCP](/docs/mcp.md). " +
		"The REST API is described by the OpenAPI document at [/v1/openapi.json](/v1/openapi.json).\n\n")
	b.WriteString("## Docs\n\n")
	for _, d := range s.docs {
		fmt.Fprintf(&b, "- [%s](/docs/%s.md)\n", d.title, d.name)
	}
	b.WriteString("\n## MCP tools\n\n")
	b.WriteString("A tool's arguments are its route's path and query parameters and its JSON body's fields side by side " +
		"(required ones marked *): `set_content` takes `{\"key\": \"home.title\", \"value\": \"Hi\", \"lang\": \"en\"}`.\n\n")
	for _, sp := range specs {
		t := s.tools[sp.name]
		fmt.Fprintf(&b, "- `%s`: %s %s", sp.name, t.method, t.path)
		if len(t.args) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(t.args, ", "))
		}
		b.WriteString("\n")
	}
	for _, wt := range workflowTools {
		fmt.Fprintf(&b, "- `%s`: the route of the item's type (type*, id, %s)\n", wt.name, strings.Join(slices.Sorted(maps.Keys(wt.props)), ", "))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write([]byte(b.String()))
}
