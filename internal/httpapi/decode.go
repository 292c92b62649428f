package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// MaxJSONBody bounds a JSON request body (413 above it).
const MaxJSONBody = 1 << 20

// Decode reads a JSON object body into dst strictly: the content type must
// be JSON, unknown fields and trailing data are refused, fields tagged
// `required:"true"` must be present and not null (400 bad_request naming the
// field), and a value of the wrong type is a 422 for that field. Optional
// fields should be pointers so a handler can tell absent from zero.
func Decode(r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return BadRequest("the body must be application/json")
		}
	} else {
		return BadRequest("the body must be application/json (Content-Type header missing)")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxJSONBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return NewError(413, CodeBadRequest, "the body is larger than 1 MiB")
		}
		return BadRequest("the body could not be read")
	}
	if len(body) > MaxJSONBody {
		return NewError(413, CodeBadRequest, "the body is larger than 1 MiB")
	}
	return DecodeBytes(body, dst)
}

// DecodeBytes is Decode for a body already read.
func DecodeBytes(body []byte, dst any) error {
	var present map[string]json.RawMessage
	if err := json.Unmarshal(body, &present); err != nil {
		if len(bytes.TrimSpace(body)) == 0 {
			return BadRequest("the body is empty; a JSON object is required")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return BadRequest("the body must be a JSON object")
		}
		return BadRequest("the body is not valid JSON: " + err.Error())
	}
	if present == nil {
		return BadRequest("the body must be a JSON object")
	}
	if err := checkText(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				field = "body"
			}
			return Invalid(field, "must be "+typeName(te.Type))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return BadRequest(fmt.Sprintf("unknown field %q", name))
		default:
			return Invalid("body", err.Error())
		}
	}
	if dec.More() {
		return BadRequest("the body has data after the JSON object")
	}
	return checkRequired(reflect.ValueOf(dst), present)
}

// checkText refuses a body with a string (a value or a key, at any depth)
// that holds a NUL character or is not valid UTF-8. PostgreSQL stores
// neither in text or jsonb, and encoding/json lets both through: NUL as
// is, invalid bytes verbatim in json.RawMessage fields (U+FFFD elsewhere).
// The body is valid JSON here; the scan naming the field runs only when
// the quick test finds a suspect.
func checkText(body []byte) error {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u0000`)) {
		return nil
	}
	if field, what := badString(body); field != "" {
		return BadRequest(fmt.Sprintf("the field %q %s", field, what))
	}
	return nil // `\\u0000` is a backslash and "u0000", not a NUL
}

// badString finds the first string of the valid JSON document b that
// holds a NUL or invalid UTF-8, and returns its field (items[0].name; a
// key is named by itself) and what is wrong with it.
func badString(b []byte) (field, what string) {
	var stack []jsonFrame
	expectKey := false
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, jsonFrame{})
			expectKey = true
		case '[':
			stack = append(stack, jsonFrame{array: true})
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false // {} ends without a key
		case ',':
			if top := &stack[len(stack)-1]; top.array {
				top.index++
			} else {
				expectKey = true
			}
		case '"':
			end := i + 1
			for b[end] != '"' {
				if b[end] == '\\' {
					end++
				}
				end++
			}
			raw := b[i+1 : end]
			switch {
			case !utf8.Valid(raw):
				what = "is not valid UTF-8"
			case hasNULEscape(raw):
				what = "contains a NUL character"
			}
			if expectKey {
				var key string
				_ = json.Unmarshal(b[i:end+1], &key)
				stack[len(stack)-1].key = key
				expectKey = false
			}
			if what != "" {
				return fieldPath(stack), what
			}
			i = end
		}
	}
	return "", ""
}

// jsonFrame is an object or an array badString is in: the key or the
// index it is at.
type jsonFrame struct {
	array bool
	index int
	key   string
}

// fieldPath names the place of the innermost frame: a.b[2].c.
func fieldPath(stack []jsonFrame) string {
	var sb strings.Builder
	for _, f := range stack {
		if f.array {
			fmt.Fprintf(&sb, "[%d]", f.index)
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(f.key)
	}
	if sb.Len() == 0 {
		return "body"
	}
	return sb.String()
}

// hasNULEscape reports whether the raw text of a JSON string holds the
// escape \u0000 (a backslash escape is skipped whole, so \\u0000 is not).
func hasNULEscape(raw []byte) bool {
	for j := 0; j < len(raw); j++ {
		if raw[j] != '\\' {
			continue
		}
		if j+5 < len(raw) && string(raw[j+1:j+6]) == "u0000" {
			return true
		}
		j++
	}
	return false
}

func checkRequired(v reflect.Value, present map[string]json.RawMessage) error {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("required") != "true" {
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" {
			name = f.Name
		}
		raw, ok := present[name]
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			return BadRequest(fmt.Sprintf("missing required field %q", name))
		}
	}
	return nil
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return "of another type"
}

// Validator collects field errors into one 422.
type Validator struct{ errs map[string][]string }

// Check records msg for field when ok is false.
func (v *Validator) Check(ok bool, field, msg string) {
	if ok {
		return
	}
	if v.errs == nil {
		v.errs = map[string][]string{}
	}
	v.errs[field] = append(v.errs[field], msg)
}

// Err returns the 422 error, or nil when every check passed.
func (v *Validator) Err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return &Failure{Kind: ErrInvalid, Detail: "the request has invalid fields", Fields: v.errs}
}
