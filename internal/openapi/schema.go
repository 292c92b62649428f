package openapi

// The schema helpers the parts describe their requests and answers with.

// Str is a string.
func Str() M { return M{"type": "string"} }

// Timestamp is an instant as the API writes it: RFC 3339 in UTC.
func Timestamp() M {
	return M{"type": "string", "format": "date-time", "pattern": `Z$`, "description": "RFC 3339, UTC"}
}

// Prefixed is an id of the form <p><24 base62>, as internal/id makes them.
func Prefixed(p string) M {
	return M{"type": "string", "pattern": "^" + p + "[0-9A-Za-z]{24}$"}
}

// Arr is an array of items.
func Arr(items M) M { return M{"type": "array", "items": items} }

// Ref is the $ref of the component schema name (see Doc.Schema).
func Ref(name string) M { return M{"$ref": "#/components/schemas/" + name} }

// Obj is a closed object: the server neither sends nor accepts other fields.
func Obj(props M, required ...string) M {
	o := M{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		r := make([]any, len(required))
		for i, s := range required {
			r[i] = s
		}
		o["required"] = r
	}
	return o
}

// MapOf is an object whose every value is a values: a map by key.
func MapOf(values M) M { return M{"type": "object", "additionalProperties": values} }

// AnyObject is an object of any members, for JSON the API stores as given
// (component props, product metadata, the processor's objects).
func AnyObject(desc string) M {
	return M{"type": "object", "additionalProperties": true, "description": desc}
}

// Nullable is s or null.
func Nullable(s M) M {
	out := With(s, nil)
	out["type"] = []any{s["type"], "null"}
	return out
}

// With is a copy of s with extra's keys set.
func With(s, extra M) M {
	out := make(M, len(s)+len(extra))
	for k, v := range s {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// JSON is the content of an application/json body of schema s.
func JSON(s M) M { return M{"application/json": s} }

// PageParams are the query parameters of a paginated list.
func PageParams() []M {
	return []M{
		{"name": "limit", "in": "query", "schema": M{"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
		{"name": "cursor", "in": "query", "description": "Opaque; next_cursor of the previous page.", "schema": Str()},
	}
}

// Variant is a member of a discriminated union: the value its
// discriminating property takes, and the $ref of its named schema.
type Variant struct {
	Value  string
	Schema M
}

// OneOf is the union of variants told apart by the value of their
// property prop: a oneOf with a discriminator mapping each value to its
// schema, so that a generated client decodes each answer or body to its
// own type (oapi-codegen's ValueByDiscriminator, a TypeScript union
// narrowed by prop). Each variant declares prop with its value.
func OneOf(prop string, variants ...Variant) M {
	members := make([]any, len(variants))
	mapping := M{}
	for i, v := range variants {
		members[i] = v.Schema
		mapping[v.Value] = v.Schema["$ref"]
	}
	return M{"oneOf": members, "discriminator": M{"propertyName": prop, "mapping": mapping}}
}

// Absent is a property an object must leave out: no value is allowed (an
// empty enum). Declaring it lets the object sit in a union beside members
// discriminated by that property (see OneOf) and keep the union
// discriminated for TypeScript: openapi-typescript types it as never, so
// a value that names the property narrows to the members that have it.
func Absent(desc string) M { return M{"type": "string", "enum": []any{}, "description": desc} }
