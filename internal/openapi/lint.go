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
	l := &linter{refs: map[string]int{}}
	paths, _ := norm["paths"].(M)
	for _, p := range sortedKeys(paths) {
		item, _ := paths[p].(M)
		for _, method := range sortedKeys(item) {
			op, _ := item[method].(M)
			body, _ := op["requestBody"].(M)
			media, _ := body["content"].(M)
			for _, mt := range sortedKeys(media) {
				s, _ := media[mt].(M)["schema"].(M)
				if _, ok := s["$ref"]; !ok || len(s) != 1 {
					l.problem(strings.ToUpper(method)+" "+p, "request body "+mt+" is not a $ref of a named schema")
				}
			}
		}
	}
	l.walk("#", norm)
	components, _ := norm["components"].(M)
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
	refs map[string]int
	out  []string
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
		}
		for _, k := range sortedKeys(x) {
			l.walk(at+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), x[k])
		}
	}
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
