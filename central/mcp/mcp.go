// Package mcp is Plinth's Model Context Protocol server: the tools an
// agent operates a project with, the documentation as resources, and the
// stdio proxy of `plinth mcp`.
//
// Every tool runs the REST route it mirrors: it builds the route's
// request (path, query, JSON body, the caller's Idempotency-Key) and
// serves it through the API's own router in the process (central/inproc),
// with the project and key the /v1/mcp request was identified with.
// Validation, scopes, credits, events and idempotency are then the REST
// ones by construction, and a refusal is the route's problem, returned as
// a tool error.
package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plinth-dev/plinth/central/inproc"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Deps are what the server needs.
type Deps struct {
	// API serves the REST routes the tools run: the API router behind
	// the request basics (request id, body limit), without the access
	// log. Its rate limiter lets the tools' requests through uncharged:
	// the /v1/mcp request that carries a tool call was charged once
	// (Handler is mounted behind the limiter).
	API http.Handler
	// OpenAPI is the API's OpenAPI document (openapi.json).
	OpenAPI []byte
	// Docs holds the markdown documentation: *.md and api/*.md.
	Docs   fs.FS
	Logger *slog.Logger
	// Poll is how often a followed job is read; zero is 250 ms.
	Poll time.Duration
}

// Server is the MCP server of the API.
type Server struct {
	deps Deps
	// api runs the tools' routes (Deps.API), each a request of its own
	// for the /v1/mcp request that carried the call.
	api    *inproc.Caller
	server *sdk.Server
	tools  map[string]*tool
	docs   []document
}

// tool is a spec made ready to run.
type tool struct {
	spec
	idempotencyKey bool // the route accepts Idempotency-Key
	pathParams     []string
	queryParams    []string
	updateParam    string // the update route's path parameter
	// body maps each argument that is a field of the route's JSON body
	// to that field (body_slug → slug); nil when the route takes none.
	body map[string]string
	// args are the arguments' names, the required ones first (llms.txt).
	args []string
	// check validates the arguments against the input schema; create,
	// of an upsert, also those that name nothing to update against the
	// create body's required fields.
	check, create *jsonschema.Schema
}

// New builds the server: one tool per spec, with the schemas of its
// route's OpenAPI operation, and the documentation resources.
func New(deps Deps) (*Server, error) {
	if deps.Poll == 0 {
		deps.Poll = 250 * time.Millisecond
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	var d doc
	if err := json.Unmarshal(deps.OpenAPI, &d); err != nil {
		return nil, fmt.Errorf("mcp: the OpenAPI document: %w", err)
	}
	info, _ := d["info"].(map[string]any)
	version, _ := info["version"].(string)
	s := &Server{deps: deps, tools: map[string]*tool{}, api: &inproc.Caller{Handler: deps.API, Headers: toolHeaders, Detach: true}}
	s.server = sdk.NewServer(&sdk.Implementation{Name: "plinth", Title: "Plinth", Version: version}, &sdk.ServerOptions{
		Logger: deps.Logger,
		Instructions: "Plinth is the backend of this website project: its content keys, pages, components, brand, galleries, blog, " +
			"catalogue, bookings and AI jobs. Every tool runs one REST route of the API (see plinth://openapi) with the project " +
			"API key this connection uses, within that key's scopes; tools that cost credits say so. A tool's arguments are its " +
			"route's path and query parameters and its JSON body's fields side by side, as its input schema says " +
			"(set_content: {\"key\": \"home.title\", \"value\": \"Hi\"}); arguments that do not match it are refused, naming them.",
	})
	for _, sp := range specs {
		t, mt, err := build(d, sp)
		if err != nil {
			return nil, err
		}
		s.tools[sp.name] = t
		s.server.AddTool(mt, s.handler(t))
	}
	if err := s.addWorkflowTools(); err != nil {
		return nil, err
	}
	if err := s.addResources(); err != nil {
		return nil, err
	}
	return s, nil
}

// build returns the tool of sp and its MCP declaration.
func build(d doc, sp spec) (*tool, *sdk.Tool, error) {
	op, err := d.operation(sp.method, sp.path)
	if err != nil {
		return nil, nil, err
	}
	t := &tool{spec: sp}
	props := map[string]any{}
	var required []any
	var parts []map[string]any
	addParams := func(ps []param, optional bool) error {
		for _, p := range ps {
			name := p.name
			switch {
			case p.in == "header" && p.name == "Idempotency-Key":
				name, t.idempotencyKey = "idempotency_key", true
			case p.in == "header":
				continue
			case p.in == "path" && optional:
				t.updateParam = p.name
			case p.in == "path":
				t.pathParams = append(t.pathParams, p.name)
			default:
				t.queryParams = append(t.queryParams, p.name)
			}
			if _, dup := props[name]; dup {
				continue
			}
			schema, err := d.standalone(p.schema)
			if err != nil {
				return err
			}
			parts = append(parts, schema)
			if p.desc != "" {
				schema["description"] = p.desc
			}
			if name == "idempotency_key" {
				schema["description"] = "Idempotency-Key: " + p.desc
			}
			if t.updateParam == p.name && optional {
				schema["description"] = "An existing one to update (" + sp.update.method + " " + sp.update.path + "); " +
					"without it, or when there is none, one is created (" + sp.method + " " + sp.path + ")."
			}
			if p.in == "path" && schema["type"] == "string" {
				// A path is text, and the answers give numeric ids as
				// numbers: ref 42 is /v1/blog-posts/42.
				schema["type"] = []any{"string", "integer"}
			}
			props[name] = schema
			if p.required && !optional {
				required = append(required, name)
			}
		}
		return nil
	}
	if err := addParams(params(op), false); err != nil {
		return nil, nil, err
	}
	body, _ := jsonBody(op)
	if sp.body != "" {
		body = map[string]any{"$ref": componentRef + sp.body}
	}
	var updateBody map[string]any
	if sp.update != nil {
		uop, err := d.operation(sp.update.method, sp.update.path)
		if err != nil {
			return nil, nil, err
		}
		if err := addParams(params(uop), true); err != nil {
			return nil, nil, err
		}
		updateBody, _ = jsonBody(uop)
	}
	// The body's fields are arguments beside the parameters.
	var createRequired []any
	if body != nil {
		f := &fields{t: t, props: props}
		b, err := d.standalone(body)
		if err != nil {
			return nil, nil, err
		}
		dropQueryTwins(b, t.queryParams)
		for k := range sp.set {
			// The tool sets these; the agent does not choose them.
			if p, ok := b["properties"].(map[string]any); ok {
				delete(p, k)
			}
			if r, ok := b["required"].([]any); ok {
				b["required"] = without(r, k)
			}
		}
		parts = append(parts, b)
		req, err := f.add(b, "creating")
		if err != nil {
			return nil, nil, fmt.Errorf("mcp: %s: the body of %s %s: %w", sp.name, sp.method, sp.path, err)
		}
		if updateBody == nil {
			required = append(required, req...)
		} else {
			// Required to create, not to update: checked when the
			// arguments name nothing to update (tool.create).
			createRequired = req
			u, err := d.standalone(updateBody)
			if err != nil {
				return nil, nil, err
			}
			dropQueryTwins(u, t.queryParams)
			parts = append(parts, u)
			req, err := f.add(u, "updating")
			if err == nil && len(req) > 0 {
				err = fmt.Errorf("it requires %v: an upsert's update requires nothing but its path parameter", req)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("mcp: %s: the body of %s %s: %w", sp.name, sp.update.method, sp.update.path, err)
			}
		}
		f.describe(createRequired)
	}
	input := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		input["required"] = required
	}
	if defs := merged(parts...); len(defs) > 0 {
		input["$defs"] = defs
	}
	t.args = argNames(props, required, createRequired)
	if t.check, err = compile(input, nil); err != nil {
		return nil, nil, fmt.Errorf("mcp: %s: the input schema: %w", sp.name, err)
	}
	if len(createRequired) > 0 {
		if t.create, err = compile(input, createRequired); err != nil {
			return nil, nil, fmt.Errorf("mcp: %s: the input schema of a create: %w", sp.name, err)
		}
	}
	status := sp.status
	if status == 0 {
		status = firstSuccess(op)
	}
	out, err := response(op, status)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: %s %s: %w", sp.method, sp.path, err)
	}
	output, err := d.standalone(out)
	if err != nil {
		return nil, nil, err
	}
	if output["type"] != "object" {
		return nil, nil, fmt.Errorf("mcp: %s: the answer of %s %s is not an object", sp.name, sp.method, sp.path)
	}
	scope := scopeOf(op)
	if scope == "" {
		return nil, nil, fmt.Errorf("mcp: %s %s documents no scope", sp.method, sp.path)
	}
	summary, _ := op["summary"].(string)
	opDesc, _ := op["description"].(string)
	desc := summary + ". "
	if sp.note != "" {
		desc += sp.note + " "
	}
	desc += "Runs " + sp.method + " " + sp.path
	if sp.update != nil {
		desc += " (" + sp.update.method + " " + sp.update.path + " with " + t.updateParam + ")"
	}
	desc += ".\n\n" + opDesc
	if sp.job {
		desc += "\n\nWith a progress token, the tool reports the job's progress and answers with the job once it has ended."
	}
	destructive, openWorld := sp.destructive, sp.openWorld
	mt := &sdk.Tool{
		Name:         sp.name,
		Title:        summary,
		Description:  strings.TrimSpace(desc),
		InputSchema:  input,
		OutputSchema: output,
		Annotations: &sdk.ToolAnnotations{Title: summary, ReadOnlyHint: sp.readOnly, IdempotentHint: sp.idempotent || sp.readOnly,
			DestructiveHint: &destructive, OpenWorldHint: &openWorld},
		Meta: sdk.Meta{"plinth/scope": scope, "plinth/route": sp.method + " " + sp.path},
	}
	return t, mt, nil
}

// queryTwins are body fields that mean what the query parameters of the
// same names mean (the content workflow's draft and autosave): a tool
// takes them once, as the parameters.
var queryTwins = []string{"draft", "autosave"}

// dropQueryTwins removes from the body schema b the twins of the query
// parameters query.
func dropQueryTwins(b map[string]any, query []string) {
	props, _ := b["properties"].(map[string]any)
	for _, name := range queryTwins {
		if slices.Contains(query, name) {
			delete(props, name)
		}
	}
}

func without(list []any, v any) []any {
	var out []any
	for _, e := range list {
		if e != v {
			out = append(out, e)
		}
	}
	return out
}

// toolHeaders are the headers of the /v1/mcp request its tools' routes
// carry: the client's agent and address, for the logs. Never
// Authorization: the routes act with the scope the request was
// identified with (parent). Idempotency-Key is the tool's to set.
var toolHeaders = []string{"User-Agent", "X-Forwarded-For", "X-Real-Ip"}

// Handler serves MCP over Streamable HTTP. It is stateless: each POST
// carries its own tool call with the caller's key, so any instance can
// answer it and no session outlives the request. A request from a
// browser page of another origin is refused (403), and so is a JSON-RPC
// batch (400), before the SDK sees either.
//
// It is mounted where the key was identified and the rate limit charged
// (the authenticated /v1 group): the tools' routes act with that scope,
// the key resolved once per /v1/mcp request, and are not charged again.
func (s *Server) Handler() http.Handler {
	h := problems(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.server }, &sdk.StreamableHTTPOptions{
		Stateless: true,
		Logger:    s.deps.Logger,
		// The SDK refuses loopback connections whose Host is not
		// loopback, guarding keyless local servers against DNS
		// rebinding. This endpoint needs a project key, and behind a
		// reverse proxy on the same host every request arrives so.
		DisableLocalhostProtection: true,
	}))
	// Agents are not browsers: a page of another origin never drives
	// MCP, whatever its credentials. A client sending neither Origin
	// nor Sec-Fetch-Site (every non-browser one) passes.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, r, httpapi.NewError(http.StatusForbidden, httpapi.CodeForbidden,
			"cross-origin requests from a browser are refused: MCP clients call /v1/mcp from outside a browser"))
	}))
	return cop.Handler(noBatches(withParent(h)))
}

type parentKey struct{}

// withParent keeps the /v1/mcp request on its context as the parent of
// the routes its tool calls run. The SDK hands a tool handler a context
// that carries the values of the request whose POST connected its
// session (stateless: the POST that carries the call), but not the
// request: its address and headers are kept here, its scope (the key
// identified in front of the route) with them.
func withParent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := inproc.Of(r)
		p.Scope, p.Charged = tenant.FromContext(r.Context()), true
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), parentKey{}, p)))
	})
}

// errNoParent is a tool call that did not come through Handler with an
// identified key: nothing would know what project it acts on.
var errNoParent = errors.New("mcp: the tool call carries no identified key: MCP is served at /v1/mcp only")

// noBatches refuses a JSON-RPC batch (a body that is a JSON array) with
// 400. MCP 2025-06-18 removed batching, and the SDK refuses it only when
// the request names that protocol version or a later one; without the
// header a batch of thousands of tool calls would ride on one request of
// the rate limit, which counts requests.
func noBatches(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := bufio.NewReader(r.Body)
		if first, err := firstByte(body); err == nil && first == '[' {
			httpapi.WriteError(w, r, httpapi.BadRequest("JSON-RPC batches are not supported: send one message per request"))
			return
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{body, r.Body}
		next.ServeHTTP(w, r)
	})
}

// firstByte reads b up to its first byte that is not JSON whitespace,
// and returns that byte, left unread. The whitespace before it is
// dropped: it means nothing in JSON.
func firstByte(b *bufio.Reader) (byte, error) {
	for {
		c, err := b.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, b.UnreadByte()
	}
}

func (s *Server) handler(t *tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		parent, ok := ctx.Value(parentKey{}).(inproc.Parent)
		if !ok || parent.Scope == nil {
			return nil, errNoParent
		}
		a, refused := t.arguments(req.Params.Arguments)
		if refused != "" {
			return toolError(refused), nil
		}
		parent.Label = req.Params.Name // the access log names the tool of each route it runs
		c := &call{s: s, t: t, parent: parent}
		status, body, err := c.run(ctx, a)
		if err != nil {
			return nil, err
		}
		if status < 200 || status > 299 {
			return problemResult(status, body), nil
		}
		if t.job {
			if token := req.Params.GetProgressToken(); token != nil {
				status, body, err = c.follow(ctx, req.Session, token, body)
				if err != nil {
					return nil, err
				}
				if status < 200 || status > 299 {
					return problemResult(status, body), nil
				}
			}
		}
		return result(body)
	}
}

// call is one tool call: its tool and the /v1/mcp request that carried
// it.
type call struct {
	s      *Server
	t      *tool
	parent inproc.Parent
}

// run serves the tool's route (or, for an upsert, the update route and
// then, if it found nothing, the create route).
func (c *call) run(ctx context.Context, a args) (int, []byte, error) {
	t := c.t
	var body []byte
	if a.body != nil {
		for k, v := range t.set {
			a.body[k] = v
		}
		body, _ = json.Marshal(a.body)
	}
	if t.update != nil {
		if ref, ok := a.params[t.updateParam]; ok {
			path, err := expand(t.update.path, []string{t.updateParam}, a.params)
			if err != nil {
				return c.invalid(err.Error())
			}
			status, res, err := c.serve(ctx, t.update.method, path, nil, body, a.params)
			if err != nil || status != http.StatusNotFound || t.createAs == "" {
				return status, res, err
			}
			// Nothing to update: create it under that name.
			if a.body == nil {
				a.body = map[string]any{}
			}
			if _, set := a.body[t.createAs]; !set {
				a.body[t.createAs] = scalar(ref) // the path's text
			}
			body, _ = json.Marshal(a.body)
		}
	}
	path, err := expand(t.path, t.pathParams, a.params)
	if err != nil {
		return c.invalid(err.Error())
	}
	q := url.Values{}
	for _, name := range t.queryParams {
		if v, ok := a.params[name]; ok {
			q.Set(name, scalar(v))
		}
	}
	return c.serve(ctx, t.method, path, q, body, a.params)
}

// invalid is the 422 of arguments that cannot make a request.
func (c *call) invalid(msg string) (int, []byte, error) {
	b, _ := json.Marshal(map[string]any{"status": 422, "code": "validation_failed", "title": "Invalid arguments", "detail": msg})
	return 422, b, nil
}

// expand fills path's parameters from params.
func expand(path string, names []string, params map[string]any) (string, error) {
	for _, name := range names {
		v, ok := params[name]
		if !ok {
			return "", fmt.Errorf("%s is required", name)
		}
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(scalar(v)), 1)
	}
	return path, nil
}

// scalar is a parameter as it is written in a URL.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = scalar(e)
		}
		return strings.Join(parts, ",")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// serve runs one request through the API in the process, as a request
// of its own (its idempotency step, its request id) with the scope of
// the /v1/mcp request, and its cancellation (ctx, the tool call's).
func (c *call) serve(ctx context.Context, method, path string, query url.Values, body []byte, params map[string]any) (int, []byte, error) {
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req := inproc.Request{Method: method, Target: target, Header: http.Header{"Accept": {"application/json"}}}
	if len(body) > 0 {
		req.Body = bytes.NewReader(body)
		req.Header.Set("Content-Type", "application/json")
	}
	if c.t.idempotencyKey && method != http.MethodGet {
		key := c.parent.Header.Get("Idempotency-Key")
		if k, ok := params["idempotency_key"].(string); ok {
			key = k
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
	}
	p := c.parent
	p.Ctx = ctx
	res, err := c.s.api.Do(p, req)
	if err != nil {
		return 0, nil, err
	}
	return res.Status, res.Body.Bytes(), nil
}

// follow reads the job of answer until it ends, reporting its progress
// to the client; it returns the last read.
func (c *call) follow(ctx context.Context, session *sdk.ServerSession, token any, answer []byte) (int, []byte, error) {
	var job struct {
		ID, Status, Message string
		Progress            float64
	}
	if err := json.Unmarshal(answer, &job); err != nil || job.ID == "" {
		return 0, nil, errors.New("mcp: the answer is not a job")
	}
	path := "/v1/jobs/" + url.PathEscape(job.ID)
	last := -1.0
	status, body := http.StatusOK, answer
	ticker := time.NewTicker(c.s.deps.Poll)
	defer ticker.Stop()
	for {
		if job.Progress != last && session != nil {
			last = job.Progress
			_ = session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: job.Progress, Total: 100, Message: job.Message})
		}
		switch job.Status {
		case "completed", "failed", "cancelled":
			return status, body, nil
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-ticker.C:
		}
		var err error
		status, body, err = c.serve(ctx, http.MethodGet, path, nil, nil, nil)
		if err != nil || status != http.StatusOK {
			return status, body, err
		}
		if err := json.Unmarshal(body, &job); err != nil {
			return 0, nil, fmt.Errorf("mcp: reading job %s: %w", job.ID, err)
		}
	}
}

// result is a 2xx answer as the tool's structured content.
func result(body []byte) (*sdk.CallToolResult, error) {
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("mcp: the route's answer is not a JSON object: %w", err)
	}
	return &sdk.CallToolResult{StructuredContent: v, Content: []sdk.Content{&sdk.TextContent{Text: string(body)}}}, nil
}

// problemResult is a route's problem+json as a tool error: the text
// says the status, the code and the detail (the scope a key lacks, the
// field that is invalid) and carries the problem.
func problemResult(status int, body []byte) *sdk.CallToolResult {
	var p struct {
		Code, Title, Detail string
	}
	_ = json.Unmarshal(body, &p)
	msg := fmt.Sprintf("HTTP %d %s", status, p.Code)
	if p.Detail != "" {
		msg += ": " + p.Detail
	} else if p.Title != "" {
		msg += ": " + p.Title
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}, &sdk.TextContent{Text: string(body)}}}
}

func toolError(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// OpenAPI describes POST /v1/mcp and the GET that answers 405.
func OpenAPI(d *openapi.Doc) {
	d.Tag("mcp", "The project's Model Context Protocol server: the API's routes as tools an AI agent calls with the key, and the documentation as resources.")
	d.Add("GET", "/v1/mcp", openapi.Op{ID: "mcpStream", Summary: "Model Context Protocol: no GET stream", Tag: "mcp",
		Desc: "The server is stateless and offers no stream opened by GET: 405 with `Allow: POST` and code `bad_request`, " +
			"as the Streamable HTTP transport asks; MCP clients then carry on with POST alone.",
		Errs: []int{405}})
	msg := openapi.JSON(d.Schema("MCPMessage", openapi.AnyObject("A JSON-RPC 2.0 message of the Model Context Protocol.")))
	d.Add("POST", "/v1/mcp", openapi.Op{ID: "mcp", Summary: "Model Context Protocol (Streamable HTTP)", Tag: "mcp",
		Desc: "The MCP server of the project (docs/mcp.md): tools that run the API's routes with this key, within its scopes, " +
			"and the documentation as resources. Stateless Streamable HTTP: send `Accept: application/json, text/event-stream`; " +
			"a call's answer and its progress notifications come as Server-Sent Events. A tool call counts as one request " +
			"against the rate limit whatever routes it runs; each route charges its credits. One message per request: " +
			"a JSON-RPC batch (an array) is 400. A browser's request from a page of another origin is 403.",
		Body: msg,
		Errs: []int{400},
		OK: []openapi.Resp{
			{Status: 200, Desc: "The answer: JSON-RPC messages as Server-Sent Events.", Content: openapi.M{"text/event-stream": openapi.Str()}},
			{Status: 202, Desc: "A notification or a response was accepted."},
		}})
}
