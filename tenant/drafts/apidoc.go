package drafts

import (
	"github.com/plinth-dev/plinth/internal/openapi"
)

// Ops describes one type of item's workflow operations for OpenAPI.
type Ops struct {
	Path   string    // the item's path, such as /v1/pages/{id_or_slug}
	Params openapi.M // its path parameters
	Name   string    // the operation ids' noun, such as Page
	Noun   string    // the item in summaries, such as page
	Tag    string
	Scope  string    // the pillar: content, galleries, brand, blog
	View   openapi.M // the item's schema (the answer of publish and restore)
	Errs   []int     // more statuses of publish (409 for a taken slug)
	Desc   string    // the publish's description
}

// Query are the query parameters of a write that may be a draft write.
func Query() []openapi.M {
	return []openapi.M{
		{"name": "draft", "in": "query", "description": "true: write the item's draft, not what is live (the public surface keeps serving the live item).", "schema": openapi.M{"type": "boolean"}},
		{"name": "autosave", "in": "query", "description": "true: a draft write recorded as the item's one autosave version (implies draft).", "schema": openapi.M{"type": "boolean"}},
	}
}

// ReadQuery is the query parameter of a read that may read the draft.
func ReadQuery() openapi.M {
	return openapi.M{"name": "draft", "in": "query", "description": "true: the draft view (the item's draft where it has one, else what is live).", "schema": openapi.M{"type": "boolean"}}
}

// BodyFields are the draft and autosave body fields of a draft write,
// the same as the query parameters.
func BodyFields() openapi.M {
	return openapi.M{
		"draft":    openapi.M{"type": "boolean", "description": "As the draft query parameter."},
		"autosave": openapi.M{"type": "boolean", "description": "As the autosave query parameter."},
	}
}

// HasDraft is the has_draft field of an item's schema.
func HasDraft() openapi.M {
	return openapi.M{"type": "boolean", "description": "The item has unpublished changes (a draft). Authenticated reads only."}
}

// OpenAPI adds the publish and versions operations of o.
func OpenAPI(d *openapi.Doc, o Ops) {
	if !d.Has("Version") {
		d.Schema("PublishRequest", openapi.Obj(openapi.M{
			"languages": openapi.M{"type": "array", "minItems": 1, "maxItems": MaxLanguages, "items": openapi.Str(),
				"description": "Publish these languages only; the others stay as they are live. Omit to publish the whole draft."},
		}))
		d.Schema("Version", openapi.Obj(openapi.M{
			"n":          openapi.M{"type": "integer", "minimum": 1},
			"kind":       openapi.M{"type": "string", "enum": []any{KindSave, KindAutosave, KindPublish, KindRestore}},
			"languages":  openapi.Arr(openapi.Str()),
			"actor":      openapi.M{"type": "string", "description": "The key (or the dashboard user's key) that made it."},
			"created_at": openapi.Timestamp(),
			"data":       openapi.AnyObject("The item as it was (GET …/versions/{n} only)."),
		}, "n", "kind", "languages", "actor", "created_at"))
	}
	nParam := openapi.With(o.Params, openapi.M{"n": openapi.M{"type": "integer", "minimum": 1}})
	d.Add("POST", o.Path+"/publish", openapi.Op{ID: "publish" + o.Name, Summary: "Publish the " + o.Noun + "'s draft", Tag: o.Tag, Scope: o.Scope + ":write",
		Desc:   o.Desc + " In one transaction; records a publish version and emits `content.published`. Publishing one language leaves the others as they are live.",
		Params: o.Params, Body: openapi.JSON(openapi.Ref("PublishRequest")), BodyOptional: true, Idempotent: true, Errs: append([]int{404, 422}, o.Errs...),
		OK: []openapi.Resp{{Status: 200, Desc: "The live " + o.Noun + ".", Content: openapi.JSON(o.View)}}})
	d.Add("GET", o.Path+"/versions", openapi.Op{ID: "list" + o.Name + "Versions", Summary: "The " + o.Noun + "'s versions, newest first", Tag: o.Tag, Scope: o.Scope + ":read",
		Params: o.Params, Query: openapi.PageParams(), Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The versions (without data).", Content: openapi.JSON(d.List("Version"))}}})
	d.Add("GET", o.Path+"/versions/{n}", openapi.Op{ID: "get" + o.Name + "Version", Summary: "A version of the " + o.Noun, Tag: o.Tag, Scope: o.Scope + ":read",
		Params: nParam, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The version with its data.", Content: openapi.JSON(openapi.Ref("Version"))}}})
	d.Add("POST", o.Path+"/versions/{n}/restore", openapi.Op{ID: "restore" + o.Name + "Version", Summary: "Restore a version into the " + o.Noun + "'s draft", Tag: o.Tag, Scope: o.Scope + ":write",
		Desc:   "The version becomes the draft (what is live does not change until a publish); records a restore version.",
		Params: nParam, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The draft view of the " + o.Noun + ".", Content: openapi.JSON(o.View)}}})
}
