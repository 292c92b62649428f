package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/cache"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/radix"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/plinth-dev/plinth/central"
)

// Contract checks requests and responses against an OpenAPI document with
// pb33f/libopenapi-validator. Every Env.Send goes through the process-wide
// contract of the served document (DefaultContract), so every API test
// keeps the document exactly true.
type Contract struct {
	model *v3.Document
	v     validator.Validator
	// opts finds a request's path item the way the validator does: by
	// the document's path tree, and compiled path expressions kept.
	opts *config.ValidationOptions
	// mu serialises checks: libopenapi's schema proxies cache their hash
	// without a lock (a data race under -race when parallel tests check
	// at once).
	mu sync.Mutex
}

// NewContract builds a contract from an OpenAPI 3.1 document. Building is
// the slow part (parsing, resolving): do it once per process.
func NewContract(doc []byte) (*Contract, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("openapi model: %w", err)
	}
	// Compiled schemas and path expressions are kept for the whole
	// process: thousands of exchanges check against the same few hundred
	// schemas. The schemas are compiled as the checks first meet them,
	// not all up front (lazyCache).
	lazy := &lazyCache{DefaultCache: cache.NewDefaultCache()}
	lazy.building.Store(true)
	opts := config.NewValidationOptions(config.WithRegexCache(&sync.Map{}), config.WithSchemaCache(lazy))
	opts.PathTree = radix.BuildPathTree(&m.Model)
	v := validator.NewValidatorFromV3Model(&m.Model, config.WithExistingOpts(opts))
	lazy.building.Store(false)
	return &Contract{model: &m.Model, opts: opts, v: v}, nil
}

// lazyCache is the validator's schema cache, filled by the checks. While
// the validator is built it answers that every schema is cached, so the
// build compiles none: it would compile every schema of the document
// (22 s under -race, in every test binary), where a binary's checks meet
// a few dozen.
type lazyCache struct {
	*cache.DefaultCache
	building atomic.Bool
}

func (c *lazyCache) Load(key uint64) (*cache.SchemaCacheEntry, bool) {
	if c.building.Load() {
		return nil, true
	}
	return c.DefaultCache.Load(key)
}

var defaultContract = sync.OnceValues(func() (*Contract, error) { return NewContract(central.OpenAPIJSON) })

// DefaultContract is the contract of the document the server serves,
// built once per test process.
func DefaultContract() (*Contract, error) { return defaultContract() }

// Exchange is one request and its response as the client saw them.
type Exchange struct {
	Method     string
	Path       string // with the query string
	ReqHeader  http.Header
	ReqBody    []byte
	Status     int
	RespHeader http.Header
	RespBody   []byte
	// Routed tells that the router serves Method on Path: a request the
	// document does not describe is then a missing route of the document.
	// Unrouted requests (unknown routes, wrong methods) only have to be a
	// well-formed problem+json error.
	Routed bool
}

// Check returns what of ex the document does not allow; nil when all is
// well. The response is always checked (status, headers, and JSON bodies
// against their schema; SSE and binary bodies are not parsed). The
// request is checked only when the response is 2xx: a request the server
// refused on purpose is a negative test, and its 4xx is checked instead.
func (c *Contract) Check(ex Exchange) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	req, err := http.NewRequest(ex.Method, "http://plinth.test"+ex.Path, bytes.NewReader(ex.ReqBody))
	if err != nil {
		return []string{err.Error()}
	}
	req.Header = ex.ReqHeader.Clone()
	res := &http.Response{StatusCode: ex.Status, Header: ex.RespHeader, Request: req,
		Body: io.NopCloser(bytes.NewReader(ex.RespBody))}
	if len(ex.RespBody) == 0 {
		res.Body = http.NoBody
	}
	where := ex.Method + " " + ex.Path + fmt.Sprintf(" → %d", ex.Status)
	item, perrs, found := paths.FindPath(req, c.model, c.opts)
	if len(perrs) > 0 {
		if ex.Routed {
			return []string{where + ": the router serves this route but the OpenAPI document does not describe it"}
		}
		return checkUnrouted(where, ex)
	}
	var out []string
	if _, errs := c.v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(req, res, item, found); len(errs) > 0 {
		out = append(out, describe(where+": response", errs)...)
	}
	if ex.Status >= 200 && ex.Status < 300 {
		req.Body = io.NopCloser(bytes.NewReader(ex.ReqBody))
		if _, errs := c.v.ValidateHttpRequestSyncWithPathItem(req, item, found); len(errs) > 0 {
			out = append(out, describe(where+": request", errs)...)
		}
	}
	return out
}

// checkUnrouted checks the error of a request no route serves: 404 of an
// unknown route or 400 of a known route with another method.
func checkUnrouted(where string, ex Exchange) []string {
	var out []string
	if ex.Status != 404 && ex.Status != 400 && ex.Status != 429 && ex.Status < 500 {
		out = append(out, fmt.Sprintf("%s: a request no route serves must get 400, 404 or 429, got %d", where, ex.Status))
	}
	if ct := ex.RespHeader.Get("Content-Type"); ct != "application/problem+json" {
		out = append(out, where+": content type "+ct+", want application/problem+json")
	}
	var p map[string]any
	if err := json.Unmarshal(ex.RespBody, &p); err != nil {
		return append(out, where+": body is not JSON: "+err.Error())
	}
	for _, f := range []string{"type", "title", "status", "code", "instance"} {
		if _, ok := p[f]; !ok {
			out = append(out, where+": problem lacks "+f)
		}
	}
	if ex.RespHeader.Get("X-Request-Id") == "" {
		out = append(out, where+": no X-Request-Id")
	}
	return out
}

func describe(prefix string, errs []*verrors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		msg := prefix + ": " + e.Message
		if e.Reason != "" && e.Reason != e.Message {
			msg += " (" + e.Reason + ")"
		}
		for _, s := range e.SchemaValidationErrors {
			loc := s.KeywordLocation
			if s.FieldPath != "" {
				loc = s.FieldPath
			}
			msg += "\n\t" + strings.TrimSpace(loc+": "+s.Reason)
		}
		out = append(out, msg)
	}
	return out
}
