// Package docs holds Plinth's markdown documentation, embedded so that
// the server can serve it (GET /docs/{name}.md, /llms.txt, the MCP
// resources plinth://docs/{name}).
package docs

import "embed"

// FS holds docs/*.md and docs/api/*.md.
//
//go:embed *.md api/*.md
var FS embed.FS
