package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plinth-dev/plinth/central/inproc"
)

// The content workflow's tools (docs/api/content-workflow.md) act on an
// item of any type with drafts, named by type and id, so each runs the
// route of that type: save_draft its write with draft=true (or
// autosave=true), publish its POST …/publish, list_versions and
// restore_version its versions routes. They are not built from one
// operation as the other tools are; the routes check the scopes as
// always.

// itemRoute is where an item type's routes are and how it is written.
type itemRoute struct {
	path  string // with %s for the id, or none (the brand)
	write string // the method of its draft write
}

var itemRoutes = map[string]itemRoute{
	"page":        {"/v1/pages/%s", http.MethodPatch},
	"component":   {"/v1/components/%s", http.MethodPatch},
	"content_key": {"/v1/content/%s", http.MethodPut},
	"gallery":     {"/v1/galleries/%s", http.MethodPatch},
	"brand":       {"/v1/brand", http.MethodPatch},
	"blog_post":   {"/v1/blog-posts/%s", http.MethodPatch},
}

// itemTypes are the types, in the order the schemas list them.
var itemTypes = []any{"page", "component", "content_key", "gallery", "brand", "blog_post"}

// workflowTool is one of the workflow's tools.
type workflowTool struct {
	name, title, desc string
	scope             string
	props             map[string]any
	required          []any
	readOnly          bool
	destructive       bool // changes what is live
	// route returns the request the arguments make: method, path below
	// the item's, query and body.
	route func(in map[string]any, r itemRoute) (method, path string, q url.Values, body any)
}

var workflowTools = []workflowTool{
	{name: "save_draft", title: "Save an item's draft", scope: "content:write",
		desc: "Writes fields into the draft of an item (a page, component, content key, gallery, the brand or a blog post), not what is live: " +
			"the public site keeps showing the live item until publish. `fields` are the fields of the item's usual write (a page's title, " +
			"sections, seo, translations; a content key's value and lang; …). Free. With autosave, the draft is saved as the item's one autosave version.",
		props: map[string]any{
			"fields":   map[string]any{"type": "object", "description": "The body of the item's write (PATCH, or PUT for a content key), without draft."},
			"autosave": map[string]any{"type": "boolean"},
		},
		required: []any{"fields"},
		route: func(in map[string]any, r itemRoute) (string, string, url.Values, any) {
			q := url.Values{"draft": {"true"}}
			if in["autosave"] == true {
				q = url.Values{"autosave": {"true"}}
			}
			return r.write, "", q, in["fields"]
		}},
	{name: "publish", title: "Publish an item's draft", scope: "content:write", destructive: true,
		desc: "Makes the item's draft live in one transaction (whole, or only `languages`), recording a version: what its POST …/publish does " +
			"(a page costs 1 credit, each changed content value 1).",
		props: map[string]any{"languages": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1}},
		route: func(in map[string]any, r itemRoute) (string, string, url.Values, any) {
			var body any
			if l, ok := in["languages"]; ok {
				body = map[string]any{"languages": l}
			}
			return http.MethodPost, "/publish", nil, body
		}},
	{name: "list_versions", title: "An item's versions", scope: "content:read", readOnly: true,
		desc:  "The item's versions, newest first: every publish, every explicit save, one autosave version.",
		props: map[string]any{"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100}, "cursor": map[string]any{"type": "string"}},
		route: func(in map[string]any, r itemRoute) (string, string, url.Values, any) {
			q := url.Values{}
			for _, k := range []string{"limit", "cursor"} {
				if v, ok := in[k]; ok {
					q.Set(k, scalar(v))
				}
			}
			return http.MethodGet, "/versions", q, nil
		}},
	{name: "restore_version", title: "Restore a version into an item's draft", scope: "content:write",
		desc:     "Version n becomes the item's draft; nothing live changes until publish.",
		props:    map[string]any{"n": map[string]any{"type": "integer", "minimum": 1}},
		required: []any{"n"},
		route: func(in map[string]any, r itemRoute) (string, string, url.Values, any) {
			return http.MethodPost, "/versions/" + scalar(in["n"]) + "/restore", nil, nil
		}},
}

// addWorkflowTools adds the workflow's tools to the server.
func (s *Server) addWorkflowTools() error {
	for _, wt := range workflowTools {
		props := map[string]any{
			"type": map[string]any{"type": "string", "enum": itemTypes},
			"id": map[string]any{"type": []any{"string", "integer"},
				"description": "The item: a page's or post's id or slug, a component's or gallery's slug, a content key; omitted for the brand."},
		}
		for k, v := range wt.props {
			props[k] = v
		}
		input := map[string]any{"type": "object", "properties": props, "additionalProperties": false,
			"required": append([]any{"type"}, wt.required...)}
		check, err := compile(input, nil)
		if err != nil {
			return fmt.Errorf("mcp: %s: %w", wt.name, err)
		}
		output := map[string]any{"type": "object", "additionalProperties": true, "properties": map[string]any{
			"has_draft": map[string]any{"type": "boolean"}, "data": map[string]any{}}}
		destructive := wt.destructive
		mt := &sdk.Tool{Name: wt.name, Title: wt.title, Description: wt.desc + " Runs the route of the item's type (see docs/api/content-workflow.md).",
			InputSchema: input, OutputSchema: output,
			Annotations: &sdk.ToolAnnotations{Title: wt.title, ReadOnlyHint: wt.readOnly, IdempotentHint: wt.readOnly, DestructiveHint: &destructive, OpenWorldHint: new(bool)},
			Meta:        sdk.Meta{"plinth/scope": wt.scope, "plinth/route": "the item type's route"}}
		s.server.AddTool(mt, s.workflowHandler(wt, check))
	}
	return nil
}

func (s *Server) workflowHandler(wt workflowTool, check *jsonschema.Schema) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		parent, ok := ctx.Value(parentKey{}).(inproc.Parent)
		if !ok || parent.Scope == nil {
			return nil, errNoParent
		}
		var v any = map[string]any{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			var err error
			if v, err = jsonschema.UnmarshalJSON(strings.NewReader(string(raw))); err != nil {
				return toolError("the arguments are not JSON: " + err.Error()), nil
			}
		}
		if err := check.Validate(v); err != nil {
			return toolError(invalidArguments(err)), nil
		}
		in := v.(map[string]any)
		typ := in["type"].(string)
		r := itemRoutes[typ]
		path := r.path
		id, hasID := in["id"]
		switch {
		case strings.Contains(path, "%s") && !hasID:
			return toolError("id is required for a " + typ), nil
		case strings.Contains(path, "%s"):
			path = fmt.Sprintf(path, url.PathEscape(scalar(id)))
		case hasID:
			return toolError("the brand has no id: omit it"), nil
		}
		method, sub, q, body := wt.route(in, r)
		var raw []byte
		if body != nil {
			raw, _ = json.Marshal(body)
		}
		parent.Label = req.Params.Name
		c := &call{s: s, t: &tool{}, parent: parent}
		status, res, err := c.serve(ctx, method, path+sub, q, raw, nil)
		if err != nil {
			return nil, err
		}
		if status < 200 || status > 299 {
			return problemResult(status, res), nil
		}
		return result(res)
	}
}
