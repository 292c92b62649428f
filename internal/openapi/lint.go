package openapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Operations lists "METHOD /path" of every operation of doc, sorted.
func Operations(doc M) []string {
	var out []string
	for p, item := range doc["paths"].(M) {
		for m := range item.(M) {
			if m == "parameters" || m == "summary" || m == "description" {
				continue
			}
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}

// Lint returns what in doc would make generated clients worse than the
// API, each as "where: what", sorted; nil when nothing does:
//   - a request body that is not a $ref of a named schema;
//   - an object schema with neither properties nor additionalProperties
//     (openapi-typescript makes it Record<string, never>, which no value fits);
//   - an object member of a oneOf or anyOf that is not a $ref: a union's
//     objects are named;
//   - a union of two or more objects without a discriminator whose
//     mapping names each member, or a member that does not declare the
//     discriminating property with its value: a client could not tell
//     which member it holds;
//   - a required property of a request body that has a default: a client
//     need not send what the server supplies;
//   - a tag or an operation without a description;
//   - a $ref to a component the document lacks, or a component schema no
//     $ref names.
func Lint(doc M) []string {
	var norm M // the document as JSON reads it: []any and M only
	b, err := json.Marshal(doc)
	if err == nil {
		err = json.Unmarshal(b, &norm)
	}
	if err != nil {
		return []string{"document: " + err.Error()}
	}
	components, _ := norm["components"].(M)
	schemas, _ := components["schemas"].(M)
	l := &linter{refs: map[string]int{}, schemas: schemas}
	paths, _ := norm["paths"].(M)
	for _, p := range sortedKeys(paths) {
		item, _ := paths[p].(M)
		for _, method := range sortedKeys(item) {
			op, _ := item[method].(M)
			if s, _ := op["description"].(string); strings.TrimSpace(s) == "" {
				l.problem(strings.ToUpper(method)+" "+p, "no description")
			}
			body, _ := op["requestBody"].(M)
			media, _ := body["content"].(M)
			for _, mt := range sortedKeys(media) {
				s, _ := media[mt].(M)["schema"].(M)
				if _, ok := s["$ref"]; !ok || len(s) != 1 {
					l.problem(strings.ToUpper(method)+" "+p, "request body "+mt+" is not a $ref of a named schema")
				}
				l.defaults(s, map[string]bool{})
			}
		}
	}
	tags, _ := norm["tags"].([]any)
	for _, t := range tags {
		if s, _ := t.(M)["description"].(string); strings.TrimSpace(s) == "" {
			l.problem(fmt.Sprintf("tag %v", t.(M)["name"]), "no description")
		}
	}
	l.walk("#", norm)
	for kind, c := range components {
		for name := range c.(M) {
			if kind == "schemas" && l.refs["#/components/schemas/"+name] == 0 {
				l.problem("#/components/schemas/"+name, "no $ref names it")
			}
		}
	}
	for ref := range l.refs {
		rest, local := strings.CutPrefix(ref, "#/components/")
		kind, name, _ := strings.Cut(rest, "/")
		if c, _ := components[kind].(M); !local || c[name] == nil {
			l.problem(ref, "a $ref to nothing")
		}
	}
	slices.Sort(l.out)
	return l.out
}

type linter struct {
	refs    map[string]int
	schemas M // the component schemas, by name
	out     []string
}

func (l *linter) problem(where, what string) { l.out = append(l.out, where+": "+what) }

func (l *linter) walk(at string, v any) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			l.walk(fmt.Sprintf("%s/%d", at, i), e)
		}
	case M:
		if r, ok := x["$ref"].(string); ok {
			l.refs[r]++
		}
		if isObjectType(x["type"]) && x["properties"] == nil && x["additionalProperties"] == nil && x["patternProperties"] == nil {
			l.problem(at, "an object with neither properties nor additionalProperties")
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			members, _ := x[k].([]any)
			for i, m := range members {
				if s, _ := m.(M); isObjectType(s["type"]) || s["properties"] != nil {
					l.problem(fmt.Sprintf("%s/%s/%d", at, k, i), "an object member of a union that is not a $ref")
				}
			}
			l.union(at+"/"+k, x, members)
		}
		for _, k := range sortedKeys(x) {
			l.walk(at+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), x[k])
		}
	}
}

// union checks that a union of named objects says how to tell them
// apart. A union of a named object and null (a nullable $ref) or of
// scalars needs nothing: the JSON type tells.
func (l *linter) union(at string, u M, members []any) {
	var objects []string
	for _, m := range members {
		ref, _ := m.(M)["$ref"].(string)
		if s := l.resolve(ref); s != nil && (isObjectType(s["type"]) || s["properties"] != nil) {
			objects = append(objects, ref)
		}
	}
	if len(objects) < 2 {
		return
	}
	d, _ := u["discriminator"].(M)
	prop, _ := d["propertyName"].(string)
	mapping, _ := d["mapping"].(M)
	if prop == "" || mapping == nil {
		l.problem(at, "a union of objects without a discriminator and its mapping")
		return
	}
	for _, ref := range objects {
		var values []string
		for v, r := range mapping {
			if r == ref {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			l.problem(at, "the discriminator's mapping does not name "+ref)
			continue
		}
		p, _ := l.resolve(ref)["properties"].(M)[prop].(M)
		for _, v := range values {
			enum, _ := p["enum"].([]any)
			if p["const"] != v && !(len(enum) == 1 && enum[0] == v) {
				l.problem(ref, fmt.Sprintf("does not declare %s as %q, the value the discriminator maps to it", prop, v))
			}
		}
	}
}

// defaults reports the required properties with a default of the
// request body s and of the objects it holds; seen stops at a schema
// already looked at.
func (l *linter) defaults(s M, seen map[string]bool) {
	if ref, ok := s["$ref"].(string); ok {
		if seen[ref] {
			return
		}
		seen[ref] = true
		if r := l.resolve(ref); r != nil {
			l.defaultsAt(ref, r, seen)
		}
	}
}

func (l *linter) defaultsAt(at string, s M, seen map[string]bool) {
	props, _ := s["properties"].(M)
	required, _ := s["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		p, _ := props[name].(M)
		if ref, ok := p["$ref"].(string); ok && p["default"] == nil {
			p = l.resolve(ref)
		}
		if _, ok := p["default"]; ok {
			l.problem(at+"/properties/"+name, "required, yet it has a default")
		}
	}
	next := func(where string, v any) {
		switch m, _ := v.(M); {
		case m == nil:
		case m["$ref"] != nil:
			l.defaults(m, seen)
		default:
			l.defaultsAt(where, m, seen)
		}
	}
	for _, k := range sortedKeys(props) {
		next(at+"/properties/"+k, props[k])
	}
	for _, k := range []string{"items", "additionalProperties"} {
		next(at+"/"+k, s[k])
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		members, _ := s[k].([]any)
		for i, m := range members {
			next(fmt.Sprintf("%s/%s/%d", at, k, i), m)
		}
	}
}

// resolve is the component schema ref names, nil for another ref.
func (l *linter) resolve(ref string) M {
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok {
		return nil
	}
	s, _ := l.schemas[name].(M)
	return s
}

// isObjectType tells whether a schema's type allows an object.
func isObjectType(t any) bool {
	switch x := t.(type) {
	case string:
		return x == "object"
	case []any:
		return slices.Contains(x, any("object"))
	}
	return false
}

func sortedKeys(m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
