package mcp

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// doc is the OpenAPI document as JSON values, read by the schema builders.
type doc map[string]any

// operation returns the operation of method on path, or an error naming it.
func (d doc) operation(method, path string) (map[string]any, error) {
	paths, _ := d["paths"].(map[string]any)
	item, _ := paths[path].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	if op == nil {
		return nil, fmt.Errorf("mcp: the OpenAPI document has no %s %s", method, path)
	}
	return op, nil
}

// component returns the named schema of components/schemas.
func (d doc) component(name string) (map[string]any, error) {
	comps, _ := d["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	s, _ := schemas[name].(map[string]any)
	if s == nil {
		return nil, fmt.Errorf("mcp: the OpenAPI document has no schema %s", name)
	}
	return s, nil
}

const componentRef = "#/components/schemas/"

// standalone returns schema as a JSON Schema of its own: every
// components/schemas reference it makes, directly or through another,
// points into its $defs, which hold copies of those schemas. A root that
// is a reference is replaced by the schema it names, since MCP wants the
// type of a tool's input and output at the root.
func (d doc) standalone(schema map[string]any) (map[string]any, error) {
	root := schema
	if ref, ok := schema["$ref"].(string); ok && len(schema) == 1 {
		s, err := d.component(strings.TrimPrefix(ref, componentRef))
		if err != nil {
			return nil, err
		}
		root = s
	}
	defs := map[string]any{}
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		switch v := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				if ref, ok := e.(string); ok && k == "$ref" {
					name, found := strings.CutPrefix(ref, componentRef)
					if !found {
						return nil, fmt.Errorf("mcp: unsupported reference %s", ref)
					}
					out[k] = "#/$defs/" + name
					if _, seen := defs[name]; !seen {
						defs[name] = nil // reserved: a schema that refers to itself ends here
						s, err := d.component(name)
						if err != nil {
							return nil, err
						}
						w, err := walk(s)
						if err != nil {
							return nil, err
						}
						defs[name] = w
					}
					continue
				}
				w, err := walk(e)
				if err != nil {
					return nil, err
				}
				out[k] = w
			}
			return out, nil
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				w, err := walk(e)
				if err != nil {
					return nil, err
				}
				out[i] = w
			}
			return out, nil
		}
		return v, nil
	}
	w, err := walk(root)
	if err != nil {
		return nil, err
	}
	out := w.(map[string]any)
	if len(defs) > 0 {
		out["$defs"] = defs
	}
	return out, nil
}

// param is a path, query or header parameter of an operation.
type param struct {
	name, in string
	required bool
	schema   map[string]any
	desc     string
}

// params returns the operation's parameters.
func params(op map[string]any) []param {
	var out []param
	list, _ := op["parameters"].([]any)
	for _, p := range list {
		m, _ := p.(map[string]any)
		name, _ := m["name"].(string)
		in, _ := m["in"].(string)
		required, _ := m["required"].(bool)
		schema, _ := m["schema"].(map[string]any)
		desc, _ := m["description"].(string)
		out = append(out, param{name: name, in: in, required: required || in == "path", schema: schema, desc: desc})
	}
	return out
}

// jsonBody returns the application/json request body schema of op and
// whether the body is required; nil when op takes no JSON body.
func jsonBody(op map[string]any) (map[string]any, bool) {
	rb, _ := op["requestBody"].(map[string]any)
	content, _ := rb["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	required, _ := rb["required"].(bool)
	return schema, required
}

// response returns the JSON schema of op's answer with status.
func response(op map[string]any, status int) (map[string]any, error) {
	res, _ := op["responses"].(map[string]any)
	r, _ := res[fmt.Sprint(status)].(map[string]any)
	content, _ := r["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	if schema == nil {
		return nil, fmt.Errorf("mcp: no JSON answer %d", status)
	}
	return schema, nil
}

// firstSuccess returns the lowest 2xx status op documents.
func firstSuccess(op map[string]any) int {
	res, _ := op["responses"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(res)) {
		if strings.HasPrefix(k, "2") {
			var n int
			_, _ = fmt.Sscan(k, &n)
			return n
		}
	}
	return 0
}

// scopePattern finds the scope internal/openapi appends to the
// description of every keyed operation.
var scopePattern = regexp.MustCompile("Scope: `([a-z_]+:[a-z]+)`")

// scopeOf returns the scope op documents, or "".
func scopeOf(op map[string]any) string {
	desc, _ := op["description"].(string)
	if m := scopePattern.FindStringSubmatch(desc); m != nil {
		return m[1]
	}
	return ""
}

// merged returns the $defs of schemas merged into one map, for a schema
// that nests several standalone ones (an upsert's body).
func merged(schemas ...map[string]any) map[string]any {
	defs := map[string]any{}
	for _, s := range schemas {
		if d, ok := s["$defs"].(map[string]any); ok {
			maps.Copy(defs, d)
			delete(s, "$defs")
		}
	}
	return defs
}
