package mcp

import (
	"strings"
	"testing"
)

// thingDoc is an OpenAPI document of one operation, PUT /v1/things/{slug},
// with the body given.
func thingDoc(body map[string]any) doc {
	return doc{"paths": map[string]any{"/v1/things/{slug}": map[string]any{"put": map[string]any{
		"summary":     "Set a thing",
		"description": "Scope: `things:write`",
		"parameters":  []any{map[string]any{"name": "slug", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}},
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": body}}},
		"responses": map[string]any{"200": map[string]any{"content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"type": "object", "properties": map[string]any{"slug": map[string]any{"type": "string"}}}}}}},
	}}}}
}

// TestBodyFieldsBuild: a body field named as a parameter is body_ + its
// name; a body whose fields cannot be arguments fails the build, naming
// the tool, rather than making a tool that cannot be called right.
func TestBodyFieldsBuild(t *testing.T) {
	t.Parallel()
	sp := spec{name: "set_thing", route: route{"PUT", "/v1/things/{slug}"}}
	object := func(props map[string]any, required ...any) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props, "required": required}
	}
	str := map[string]any{"type": "string"}

	tl, mt, err := build(thingDoc(object(map[string]any{"slug": str, "name": str}, "name")), sp)
	if err != nil {
		t.Fatal(err)
	}
	props := mt.InputSchema.(map[string]any)["properties"].(map[string]any)
	if _, ok := props["body_slug"]; !ok || tl.body["body_slug"] != "slug" || tl.body["name"] != "name" {
		t.Fatalf("properties %v, body fields %v", props, tl.body)
	}
	a, refused := tl.arguments([]byte(`{"slug": "a", "body_slug": "b", "name": "N"}`))
	if refused != "" || a.params["slug"] != "a" || a.body["slug"] != "b" || a.body["name"] != "N" || len(a.body) != 2 {
		t.Fatalf("split %+v (%s)", a, refused)
	}

	for _, c := range []struct {
		name string
		body map[string]any
		says string
	}{
		{"an array", map[string]any{"type": "array", "items": str}, "not an object of named fields"},
		{"an open object", map[string]any{"type": "object", "properties": map[string]any{"name": str}}, "not an object of named fields"},
		{"the prefix taken too", object(map[string]any{"slug": str, "body_slug": str}), "the field slug has a parameter's name, and so does body_slug"},
	} {
		_, _, err := build(thingDoc(c.body), sp)
		if err == nil || !strings.Contains(err.Error(), "set_thing") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
