package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// A tool's arguments are flat: the route's path and query parameters,
// idempotency_key (the Idempotency-Key header) and the fields of its JSON
// body side by side, set_content taking {"key": "home.title", "value":
// "Hi", "lang": "en"}. The body's fields keep their schemas, descriptions
// and required list. A body field named as a parameter is the argument
// "body_" + its name (upsert_component's slug names the component to
// update, body_slug renames it); a body that is not an object of named
// fields, or a clash that the prefix does not settle, fails New.
//
// The arguments are validated against the input schema before anything
// runs: an unknown, missing or mistyped argument is a tool error naming
// it.

// bodyPrefix prefixes a body field that has a parameter's name.
const bodyPrefix = "body_"

// fields adds the fields of a tool's JSON body (or bodies: an upsert's
// create and update bodies) to its input's properties.
type fields struct {
	t     *tool
	props map[string]any
	// schemas are the fields' schemas as the bodies give them, by
	// argument; in the bodies that have each (create, update).
	schemas map[string][]map[string]any
	in      map[string][]string
}

// add adds the fields of body, a standalone object schema, of which
// request ("creating", "updating"); it returns the arguments of its
// required fields.
func (f *fields) add(body map[string]any, which string) ([]any, error) {
	if body["type"] != "object" || body["additionalProperties"] != false {
		return nil, errors.New("not an object of named fields (additionalProperties false): its fields cannot be arguments")
	}
	props, _ := body["properties"].(map[string]any)
	if f.t.body == nil {
		f.t.body = map[string]string{}
		f.schemas, f.in = map[string][]map[string]any{}, map[string][]string{}
	}
	argOf := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		arg, ok := f.arg(name)
		if !ok {
			return nil, fmt.Errorf("the field %s has a parameter's name, and so does %s%s", name, bodyPrefix, name)
		}
		schema, _ := props[name].(map[string]any)
		f.t.body[arg], argOf[name] = name, arg
		f.schemas[arg] = append(f.schemas[arg], schema)
		f.in[arg] = append(f.in[arg], which)
		f.props[arg] = true // named, described by describe
	}
	var required []any
	r, _ := body["required"].([]any)
	for _, name := range r {
		required = append(required, argOf[name.(string)])
	}
	return required, nil
}

// arg returns the argument of the body field name: its name, or, when a
// parameter has it, the prefixed name; false when that is taken too.
func (f *fields) arg(name string) (string, bool) {
	for _, arg := range []string{name, bodyPrefix + name} {
		if field, ok := f.t.body[arg]; ok && field == name {
			return arg, true // the other body's field
		}
		if _, taken := f.props[arg]; !taken {
			return arg, true
		}
	}
	return "", false
}

// describe sets the properties of the fields once every body is added:
// a field the bodies give alike is its schema; one they give apart is
// either; one only a create (or an update) takes says so, and so does
// one an upsert requires to create (createRequired).
func (f *fields) describe(createRequired []any) {
	bodies := 0
	for _, in := range f.in {
		bodies = max(bodies, len(in))
	}
	for arg, schemas := range f.schemas {
		schema := schemas[0]
		if len(schemas) > 1 && !reflect.DeepEqual(schemas[0], schemas[1]) {
			schema = map[string]any{"anyOf": []any{schemas[0], schemas[1]}}
		}
		schema = maps.Clone(schema)
		desc, _ := schema["description"].(string)
		if field := f.t.body[arg]; field != arg {
			desc = strings.TrimSpace("The body's field " + field + " (the argument " + field + " is the route's parameter). " + desc)
		}
		if bodies > 1 && len(schemas) == 1 {
			desc = strings.TrimSpace(desc + " Only when " + f.in[arg][0] + ".")
		}
		if slices.Contains(createRequired, any(arg)) {
			desc = strings.TrimSpace(desc + " Required when creating.")
		}
		if desc != "" {
			schema["description"] = desc
		}
		f.props[arg] = schema
	}
}

// argNames are the names of a tool's arguments: the required ones, then
// those an upsert requires to create, then the others, each in name
// order, the required ones marked with "*" ("key*").
func argNames(props map[string]any, required, createRequired []any) []string {
	var first, then, rest []string
	for _, name := range slices.Sorted(maps.Keys(props)) {
		switch {
		case slices.Contains(required, any(name)):
			first = append(first, name+"*")
		case slices.Contains(createRequired, any(name)):
			then = append(then, name+"* (to create)")
		default:
			rest = append(rest, name)
		}
	}
	return slices.Concat(first, then, rest)
}

// compile compiles the input schema, with the further required
// arguments (nil: none).
func compile(input map[string]any, required []any) (*jsonschema.Schema, error) {
	s := maps.Clone(input)
	if len(required) > 0 {
		r, _ := s["required"].([]any)
		s["required"] = append(slices.Clone(r), required...)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("input.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("input.json")
}

// args are a tool call's arguments, split.
type args struct {
	// params are the path and query parameters and idempotency_key.
	params map[string]any
	// body is the route's JSON body; nil when the route takes none.
	body map[string]any
}

// arguments validates the call's arguments and splits them into the
// route's parameters and body; refused is the tool error of arguments
// that do not match the input schema, naming each that is wrong.
func (t *tool) arguments(raw json.RawMessage) (a args, refused string) {
	var v any = map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw)); err != nil {
			return args{}, "the arguments are not JSON: " + err.Error()
		}
	}
	if err := t.check.Validate(v); err != nil {
		return args{}, invalidArguments(err)
	}
	in := v.(map[string]any) // the schema is of an object
	if _, update := in[t.updateParam]; t.create != nil && !update {
		if err := t.create.Validate(v); err != nil {
			return args{}, invalidArguments(err)
		}
	}
	a = args{params: map[string]any{}}
	if t.body != nil {
		a.body = map[string]any{}
	}
	for k, x := range in {
		if field, ok := t.body[k]; ok {
			a.body[field] = x
		} else {
			a.params[k] = x
		}
	}
	return a, ""
}

// english prints the validation failures.
var english = message.NewPrinter(language.English)

// invalidArguments is the tool error of arguments that do not match the
// input schema: each failure with the argument it is about ("value: got
// number, want string"), or at the top ("missing property 'value'",
// "additional properties 'colour' not allowed").
func invalidArguments(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "invalid arguments: " + err.Error()
	}
	var msgs []string
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				leaves(c)
			}
			return
		}
		msg := e.ErrorKind.LocalizedString(english)
		if len(e.InstanceLocation) > 0 {
			msg = strings.Join(e.InstanceLocation, "/") + ": " + msg
		}
		msgs = append(msgs, msg)
	}
	leaves(ve)
	slices.Sort(msgs)
	return "invalid arguments: " + strings.Join(slices.Compact(msgs), "; ")
}
