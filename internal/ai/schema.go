package ai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemas caches compiled answer schemas by their JSON text: the same few
// schemas are asked for again and again (every translation, every page
// of a website), and compiling one costs more than validating with it.
var schemas sync.Map // string → *jsonschema.Schema

// compileSchema compiles a JSONRequest's schema (JSON Schema 2020-12,
// the dialect structured outputs speak).
func compileSchema(schema map[string]any) (*jsonschema.Schema, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("ai: schema: %w", err)
	}
	if s, ok := schemas.Load(string(raw)); ok {
		return s.(*jsonschema.Schema), nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("ai: schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("answer.json", doc); err != nil {
		return nil, fmt.Errorf("ai: schema: %w", err)
	}
	s, err := c.Compile("answer.json")
	if err != nil {
		return nil, fmt.Errorf("ai: schema: %w", err)
	}
	schemas.Store(string(raw), s)
	return s, nil
}

// checkAnswer decodes a structured answer into out once it is JSON that
// matches schema: a model may answer with prose, cut its JSON short or
// leave out a required field, and a job must not store such an answer.
func checkAnswer(content string, schema map[string]any, out any) error {
	s, err := compileSchema(schema)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(content))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("does not match the schema: %s", oneLine(err.Error()))
	}
	return json.Unmarshal([]byte(content), out)
}

// oneLine joins a multi-line validation report, for logs.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
