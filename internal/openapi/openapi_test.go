package openapi_test

import (
	"encoding/json"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/internal/openapi"
)

type M = openapi.M

// widgets and gadgets are two parts as a pillar writes them.
func widgets(d *openapi.Doc) {
	d.Tag("widgets", "Widgets and gadgets.")
	widget := d.Schema("Widget", openapi.Obj(M{"id": openapi.Prefixed("wid_"), "name": openapi.Str(),
		"labels": openapi.MapOf(openapi.Str()), "created_at": openapi.Timestamp()}, "id", "name", "labels", "created_at"))
	d.Add("GET", "/v1/widgets", openapi.Op{ID: "listWidgets", Summary: "Widgets", Tag: "widgets", Scope: "widgets:read",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The widgets.", Content: openapi.JSON(d.List("Widget"))}}})
	d.Add("POST", "/v1/widgets/{id}/rename", openapi.Op{ID: "renameWidget", Summary: "Rename", Tag: "widgets", Idempotent: true,
		Desc: "Renames the widget.",
		Body: openapi.JSON(d.Schema("RenameWidgetRequest", openapi.Obj(M{"name": openapi.Str()}, "name"))),
		OK:   []openapi.Resp{{Status: 200, Desc: "The widget.", Content: openapi.JSON(widget)}}})
}

func gadgets(d *openapi.Doc) {
	d.Tag("public", "The public surface.")
	d.Add("GET", "/v1/public/widgets", openapi.Op{ID: "listPublicWidgets", Summary: "Widgets (public)", Tag: "public", Auth: openapi.Public,
		Desc: "The widgets, without a key.",
		OK:   []openapi.Resp{{Status: 200, Desc: "The widgets.", Content: openapi.JSON(d.List("Widget"))}}})
	d.Add("GET", "/central/api/gadgets", openapi.Op{ID: "listGadgets", Summary: "Gadgets", Tag: "widgets", Auth: openapi.JWT,
		Desc: "The gadgets.",
		OK:   []openapi.Resp{{Status: 204, Desc: "None."}}})
	d.Add("GET", "/central/api/gadget-count", openapi.Op{ID: "countGadgets", Summary: "Gadget count", Tag: "widgets", Auth: openapi.None,
		Desc: "How many gadgets.",
		OK:   []openapi.Resp{{Status: 204, Desc: "None."}}})
}

// roundTrip is doc as a client reads it.
func roundTrip(t *testing.T, doc M) M {
	t.Helper()
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	var out M
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, k := range path {
		m, ok := v.(M)
		require.True(t, ok, "%v: not an object at %s", path, k)
		v = m[k]
	}
	return v
}

// TestDocumentAssemblesParts: Build joins the parts' operations and schemas
// and adds to each operation what its kind implies.
func TestDocumentAssemblesParts(t *testing.T) {
	t.Parallel()
	doc := roundTrip(t, openapi.Build(widgets, gadgets))

	require.Equal(t, "3.1.0", doc["openapi"])
	require.Equal(t, openapi.Version, at(t, doc, "info", "version"))
	require.Equal(t, []any{M{"name": "widgets", "description": "Widgets and gadgets."}, M{"name": "public", "description": "The public surface."}},
		doc["tags"], "in the order of first use, with their descriptions")
	require.Equal(t, M{"name": "MIT", "identifier": "MIT"}, at(t, doc, "info", "license"))
	require.Equal(t, []string{"GET /central/api/gadget-count", "GET /central/api/gadgets", "GET /v1/public/widgets", "GET /v1/widgets", "OPTIONS /v1/public/widgets", "POST /v1/widgets/{id}/rename"},
		openapi.Operations(doc), "a public path gets its CORS preflight")

	list := at(t, doc, "paths", "/v1/widgets", "get").(M)
	require.Equal(t, "Scope: `widgets:read`.", list["description"])
	require.Nil(t, list["security"], "a key: the document's default security")
	require.Equal(t, M{"$ref": "#/components/schemas/WidgetList"}, at(t, list, "responses", "200", "content", "application/json", "schema"))
	require.ElementsMatch(t, []string{"200", "400", "401", "403", "422", "429", "500", "503"}, keys(at(t, list, "responses").(M)), "any query may be malformed (400)")
	require.Contains(t, at(t, list, "responses", "200", "headers"), "X-RateLimit-Remaining")

	rename := at(t, doc, "paths", "/v1/widgets/{id}/rename", "post").(M)
	params := rename["parameters"].([]any)
	require.Equal(t, M{"name": "id", "in": "path", "required": true, "schema": M{"type": "string"}}, params[0])
	require.Equal(t, "Idempotency-Key", at(t, params[1], "name"))
	require.Equal(t, M{"required": true, "content": M{"application/json": M{"schema": M{"$ref": "#/components/schemas/RenameWidgetRequest"}}}},
		rename["requestBody"])
	require.ElementsMatch(t, []string{"200", "400", "401", "403", "404", "409", "413", "429", "500", "503"}, keys(rename["responses"].(M)), "a path parameter may name nothing (404)")

	public := at(t, doc, "paths", "/v1/public/widgets", "get").(M)
	require.Equal(t, []any{}, public["security"])
	require.Len(t, public["parameters"], 2, "X-Service-Project-Key and project_id")
	require.ElementsMatch(t, []string{"200", "400", "404", "429", "500", "503"}, keys(public["responses"].(M)))
	require.Contains(t, at(t, public, "responses", "200", "headers"), "Vary", "a public answer varies with the project header")
	require.NotContains(t, at(t, list, "responses", "200", "headers"), "Vary")
	for _, h := range []string{"Access-Control-Allow-Origin", "Access-Control-Expose-Headers"} {
		require.Contains(t, at(t, public, "responses", "200", "headers"), h, "a public answer is readable by pages")
		require.NotContains(t, at(t, list, "responses", "200", "headers"), h, "a keyed answer is not")
	}
	pre := at(t, doc, "paths", "/v1/public/widgets", "options").(M)
	require.Equal(t, "preflightListPublicWidgets", pre["operationId"])
	require.Equal(t, []any{}, pre["security"])
	require.Contains(t, pre["description"], "CORS preflight", "a preflight is described like any operation")
	require.ElementsMatch(t, []string{"204", "400", "404", "429", "500"}, keys(pre["responses"].(M)))
	require.Contains(t, at(t, pre, "responses", "204", "headers"), "Access-Control-Allow-Headers")
	require.Contains(t, at(t, pre, "responses", "204", "headers"), "X-RateLimit-Remaining", "a preflight is counted")

	dash := at(t, doc, "paths", "/central/api/gadgets", "get").(M)
	require.Equal(t, []any{M{"dashboardJWT": []any{}}}, dash["security"])
	require.ElementsMatch(t, []string{"204", "400", "401", "429", "500", "503"}, keys(dash["responses"].(M)), "the dashboard API is limited per IP and per user")
	require.Contains(t, at(t, dash, "responses", "204", "headers"), "X-RateLimit-Remaining")
	require.Equal(t, M{"$ref": "#/components/responses/Problem401"}, at(t, dash, "responses", "401"), "refused after the per-IP limit: with its headers")
	count := at(t, doc, "paths", "/central/api/gadget-count", "get").(M)
	require.ElementsMatch(t, []string{"204", "400", "500", "503"}, keys(count["responses"].(M)), "the API's limiter skips /central: no 429")
	require.NotContains(t, at(t, count, "responses", "204", "headers"), "X-RateLimit-Remaining")
	require.NotContains(t, at(t, doc, "components", "responses", "CentralProblem400", "headers"), "X-RateLimit-Limit")
	require.Contains(t, at(t, doc, "components", "responses", "Problem401", "headers"), "WWW-Authenticate")

	require.ElementsMatch(t, []string{"Problem", "Widget", "WidgetList", "RenameWidgetRequest"}, keys(at(t, doc, "components", "schemas").(M)))
	require.Empty(t, openapi.Lint(doc))

	b, err := json.Marshal(doc)
	require.NoError(t, err)
	parsed, err := libopenapi.NewDocument(b)
	require.NoError(t, err)
	v, errs := validator.NewValidator(parsed)
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	require.True(t, ok, "%v", verrs)
}

// TestDocumentNamesAreAddedOnce: two parts that claim one schema name or one route
// fail at build time.
func TestDocumentNamesAreAddedOnce(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "openapi: schema Widget defined twice", func() {
		openapi.Build(widgets, func(d *openapi.Doc) { d.Schema("Widget", openapi.Obj(M{})) })
	})
	require.PanicsWithValue(t, "openapi: GET /v1/widgets added twice", func() {
		openapi.Build(widgets, func(d *openapi.Doc) {
			d.Add("GET", "/v1/widgets", openapi.Op{ID: "again", OK: []openapi.Resp{{Status: 204, Desc: "x"}}})
		})
	})
	require.PanicsWithValue(t, "openapi: schema Problem defined twice", func() {
		openapi.Build(func(d *openapi.Doc) { d.Schema("Problem", openapi.Obj(M{})) })
	})
	require.PanicsWithValue(t, "openapi: tag widgets described twice", func() {
		openapi.Build(widgets, func(d *openapi.Doc) { d.Tag("widgets", "Again.") })
	})
}

// TestDocumentLint: each rule reports where it is broken.
func TestDocumentLint(t *testing.T) {
	t.Parallel()
	bad := func(d *openapi.Doc) {
		d.Tag("t", "Tagged.")
		d.Schema("Orphan", openapi.Obj(M{"x": openapi.Str()}))
		d.Schema("Loose", openapi.Obj(M{"props": M{"type": "object"}, "maybe": M{"type": []any{"object", "null"}}}))
		d.Add("POST", "/v1/inline", openapi.Op{ID: "inline", Tag: "t", Desc: "d", Body: openapi.JSON(openapi.Obj(M{"a": openapi.Str()})),
			OK: []openapi.Resp{{Status: 200, Desc: "ok", Content: openapi.JSON(M{"oneOf": []any{openapi.Ref("Loose"), openapi.Obj(M{})}})}}})
		d.Add("POST", "/v1/typo", openapi.Op{ID: "typo", Tag: "t", Desc: "d", Body: openapi.JSON(openapi.Ref("Nope")),
			OK: []openapi.Resp{{Status: 200, Desc: "ok", Content: openapi.JSON(M{"oneOf": []any{openapi.Ref("Loose"), M{"type": "null"}}})}}})
		// Unions of objects: one with no discriminator, one whose mapping
		// misses a member, one whose member lacks its value.
		cat := d.Schema("Cat", openapi.Obj(M{"kind": M{"type": "string", "enum": []any{"cat"}}}, "kind"))
		dog := d.Schema("Dog", openapi.Obj(M{"kind": M{"type": "string", "enum": []any{"hound"}}}, "kind"))
		d.Add("GET", "/v1/pets", openapi.Op{ID: "pets", Tag: "t", Desc: "d",
			OK: []openapi.Resp{{Status: 200, Desc: "ok", Content: openapi.JSON(d.Schema("Pet", M{"oneOf": []any{cat, dog}}))}}})
		d.Add("GET", "/v1/pet", openapi.Op{ID: "pet", Tag: "t", Desc: "d", OK: []openapi.Resp{{Status: 200, Desc: "ok",
			Content: openapi.JSON(d.Schema("Pet2", M{"oneOf": []any{cat, dog}, "discriminator": M{"propertyName": "kind", "mapping": M{"cat": cat["$ref"]}}}))}}})
		d.Add("GET", "/v1/pet3", openapi.Op{ID: "pet3", Tag: "t", Desc: "d", OK: []openapi.Resp{{Status: 200, Desc: "ok",
			Content: openapi.JSON(d.Schema("Pet3", openapi.OneOf("kind", openapi.Variant{Value: "cat", Schema: cat}, openapi.Variant{Value: "dog", Schema: dog})))}}})
		// A required property with a default, inline and through a $ref.
		size := d.Schema("Size", M{"type": "integer", "default": 3})
		d.Add("POST", "/v1/sized", openapi.Op{ID: "sized", Tag: "t", Desc: "d",
			Body: openapi.JSON(d.Schema("SizedRequest", openapi.Obj(M{"n": M{"type": "integer", "default": 1}, "size": size,
				"items": openapi.Arr(openapi.Obj(M{"m": M{"type": "integer", "default": 2}}, "m"))}, "n", "size"))),
			OK: []openapi.Resp{{Status: 204, Desc: "ok"}}})
		// No description, no tag description.
		d.Add("GET", "/v1/bare", openapi.Op{ID: "bare", Tag: "u", OK: []openapi.Resp{{Status: 204, Desc: "ok"}}})
	}
	require.Equal(t, []string{
		"#/components/schemas/Dog: does not declare kind as \"dog\", the value the discriminator maps to it",
		"#/components/schemas/Loose/properties/maybe: an object with neither properties nor additionalProperties",
		"#/components/schemas/Loose/properties/props: an object with neither properties nor additionalProperties",
		"#/components/schemas/Nope: a $ref to nothing",
		"#/components/schemas/Orphan: no $ref names it",
		"#/components/schemas/Pet/oneOf: a union of objects without a discriminator and its mapping",
		"#/components/schemas/Pet2/oneOf: the discriminator's mapping does not name #/components/schemas/Dog",
		"#/components/schemas/SizedRequest/properties/items/items/properties/m: required, yet it has a default",
		"#/components/schemas/SizedRequest/properties/n: required, yet it has a default",
		"#/components/schemas/SizedRequest/properties/size: required, yet it has a default",
		"#/paths/~1v1~1inline/post/responses/200/content/application~1json/schema/oneOf/1: an object member of a union that is not a $ref",
		"GET /v1/bare: no description",
		"POST /v1/inline: request body application/json is not a $ref of a named schema",
		"tag u: no description",
	}, openapi.Lint(openapi.Build(bad)))
}

// TestDocumentOneOf: a discriminated union maps each value to its member.
func TestDocumentOneOf(t *testing.T) {
	t.Parallel()
	a, b := openapi.Ref("A"), openapi.Ref("B")
	require.Equal(t, M{"oneOf": []any{a, b}, "discriminator": M{"propertyName": "type",
		"mapping": M{"a": "#/components/schemas/A", "b": "#/components/schemas/B"}}},
		openapi.OneOf("type", openapi.Variant{Value: "a", Schema: a}, openapi.Variant{Value: "b", Schema: b}))
}

// TestDocumentSchemaHelpers: the schema helpers spell what the document needs.
func TestDocumentSchemaHelpers(t *testing.T) {
	t.Parallel()
	require.Equal(t, M{"type": "object", "properties": M{"a": M{"type": "string"}}, "additionalProperties": false, "required": []any{"a"}},
		openapi.Obj(M{"a": openapi.Str()}, "a"))
	require.Equal(t, M{"type": "object", "properties": M{}, "additionalProperties": false}, openapi.Obj(M{}))
	ts := openapi.Timestamp()
	n := openapi.Nullable(ts)
	require.Equal(t, []any{"string", "null"}, n["type"])
	require.Equal(t, "string", ts["type"], "Nullable copies")
	require.Equal(t, "date-time", n["format"])
	w := openapi.With(ts, M{"description": "when"})
	require.Equal(t, "when", w["description"])
	require.Equal(t, "RFC 3339, UTC", ts["description"], "With copies")
	require.Equal(t, M{"type": "object", "additionalProperties": M{"type": "string"}}, openapi.MapOf(openapi.Str()))
	require.Equal(t, true, openapi.AnyObject("x")["additionalProperties"])
	require.Equal(t, "^key_[0-9A-Za-z]{24}$", openapi.Prefixed("key_")["pattern"])
	require.Equal(t, []any{}, openapi.Absent("Left out.")["enum"], "no value is allowed")
}

func keys(m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
