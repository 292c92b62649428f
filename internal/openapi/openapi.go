// Package openapi assembles the OpenAPI 3.1 description of the API. Each
// part of the API declares its own operations and named schemas next to
// its handlers, as a func(*Doc) (central.OpenAPI, blog.OpenAPI, …); Build
// puts them together with what every operation shares: authentication,
// the problem+json errors, the headers of every response, pagination. The
// package knows no pillar: central assembles the served document.
package openapi

import (
	"regexp"
	"strconv"
	"strings"
)

// Version is the API version the document describes (info.version).
const Version = "1.0.1"

// M is a JSON object of the document.
type M = map[string]any

// Auth is how an operation authenticates.
type Auth int

const (
	Key    Auth = iota // a project API key (the zero value)
	None               // no credentials
	JWT                // the dashboard token of POST /central/api/login
	Public             // no credentials; the project from X-Service-Project-Key or ?project_id=
	Admin              // an admin token (pln_admin_…) of the admin API, /admin/api
)

// Op is what a part says about one operation; Add derives the rest: the
// path parameters, the security, the headers of every response, and the
// problem+json answers the operation's kind can give.
type Op struct {
	ID, Summary, Tag string
	Desc             string
	Auth             Auth
	Scope            string // the scope a key needs, appended to the description
	Query            []M    // query parameters
	Headers          []M    // header parameters
	Params           M      // schemas of path parameters by name (default: a string)
	Body             M      // request body by media type: a $ref of Doc.Schema each
	BodyOptional     bool
	OK               []Resp
	Errs             []int // problem+json statuses beyond those Add adds
	Idempotent       bool  // accepts Idempotency-Key
	Uncharged        bool  // the limiter shows the caller's bucket without charging it: never 429
	// IPLimited marks a keyless /central/ route with a per-IP limit of
	// its own (the login endpoints): like /v1, it carries the rate-limit
	// headers and may answer 429. The dashboard API's routes (JWT) are
	// limited per client IP and per user, so they are too.
	IPLimited bool
}

// Resp is one answer of an operation other than a problem.
type Resp struct {
	Status  int
	Desc    string
	Content M // schema by media type
	Headers M
}

// Doc collects the operations and the named schemas of the parts.
type Doc struct {
	paths, responses, schemas M
	tags                      []any
	tagText                   map[string]string // Tag's descriptions by name
}

// Build returns the document of the parts' operations and schemas. A
// route or a schema name may be added once across all parts.
func Build(parts ...func(*Doc)) M {
	d := &Doc{paths: M{}, responses: M{}, schemas: M{"Problem": problemSchema()}, tagText: map[string]string{}}
	for _, part := range parts {
		part(d)
	}
	for _, t := range d.tags {
		if s := d.tagText[t.(M)["name"].(string)]; s != "" {
			t.(M)["description"] = s
		}
	}
	return M{
		"openapi": "3.1.0",
		"info": M{
			"title":   "Plinth API",
			"version": Version,
			"summary": "Multi-tenant REST backend for AI-built websites.",
			// The license of the published descriptions of the API: this
			// document and the TypeScript SDK generated from it
			// (sdk/typescript/package.json).
			"license": M{"name": "MIT", "identifier": "MIT"},
			"contact": M{"name": "Plinth", "url": "https://github.com/plinth-dev/plinth"},
			"description": "Every /v1 request is authenticated with a project API key (`Authorization: Bearer pln_live_…`), " +
				"except /v1/health, /v1/openapi.json and the public read surface /v1/public/* (project from the " +
				"X-Service-Project-Key header or ?project_id=). The dashboard endpoints under /central/api use a JWT from " +
				"POST /central/api/login; the admin API under /admin/api an admin token. Errors are application/problem+json. Every /v1 response carries X-Request-Id and " +
				"the rate-limit headers; every /v1/public/* response carries Vary: X-Service-Project-Key, Origin; " +
				"mutating requests accept Idempotency-Key.",
		},
		"servers":  []any{M{"url": "/", "description": "the Plinth host; /v1 is the API, /central/api the dashboard"}},
		"tags":     d.tags,
		"security": []any{M{"apiKey": []any{}}},
		"paths":    d.paths,
		"components": M{
			"securitySchemes": M{
				"apiKey": M{"type": "http", "scheme": "bearer", "bearerFormat": "pln_live_… / pln_test_… API key",
					"description": "A project API key: `Authorization: Bearer pln_live_<32 base62>`."},
				"dashboardJWT": M{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "The token of POST /central/api/login (HS256, 12 h), until POST /central/api/logout or a change of the user's password ends its session."},
				"adminToken": M{"type": "http", "scheme": "bearer", "bearerFormat": "pln_admin_… admin token",
					"description": "A platform admin token of the admin API (/admin/api): `Authorization: Bearer pln_admin_<32 base62>`, " +
						"minted by `plinth admin-token create`, with scopes such as tenants:read or projects:*."},
			},
			"schemas":   d.schemas,
			"responses": d.responses,
			"headers":   commonHeaders(),
		},
	}
}

// Schema registers s as the component schema name and returns its $ref.
// The parts share one namespace: a name registered twice panics.
func (d *Doc) Schema(name string, s M) M {
	if _, dup := d.schemas[name]; dup {
		panic("openapi: schema " + name + " defined twice")
	}
	d.schemas[name] = s
	return Ref(name)
}

// Tag describes the tag name, which operations name in Op.Tag. A tag is
// described once, by the part that owns it, however many parts use it.
func (d *Doc) Tag(name, desc string) {
	if _, dup := d.tagText[name]; dup {
		panic("openapi: tag " + name + " described twice")
	}
	d.tagText[name] = desc
}

// Has reports whether the schema name is defined (parts that share a
// schema define it once).
func (d *Doc) Has(name string) bool {
	_, ok := d.schemas[name]
	return ok
}

// List returns the $ref of a page of the named schema's items
// ({data, has_more, next_cursor}), registered as <item>List on first use.
func (d *Doc) List(item string) M {
	name := item + "List"
	if _, ok := d.schemas[name]; !ok {
		d.schemas[name] = Obj(M{"data": Arr(Ref(item)), "has_more": M{"type": "boolean"}, "next_cursor": Nullable(Str())},
			"data", "has_more", "next_cursor")
	}
	return Ref(name)
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// Add describes method on path. A route added twice panics.
func (d *Doc) Add(method, path string, o Op) {
	item, _ := d.paths[path].(M)
	if item == nil {
		item = M{}
		d.paths[path] = item
	}
	method = strings.ToLower(method)
	if item[method] != nil {
		panic("openapi: " + strings.ToUpper(method) + " " + path + " added twice")
	}
	d.tag(o.Tag)
	// The API's limiter skips /central/, whose routes have limits of
	// their own: the login endpoints per IP, the dashboard API per IP and
	// per user (its mirrors of /v1 routes the project's limit as well).
	central := strings.HasPrefix(path, "/central/")
	rateLimited := !central || o.IPLimited || o.Auth == JWT
	out := M{"operationId": o.ID, "summary": o.Summary, "tags": []any{o.Tag}}
	desc := o.Desc
	if o.Scope != "" {
		desc = strings.TrimSpace(desc + "\n\nScope: `" + o.Scope + "`.")
	}
	if desc != "" {
		out["description"] = desc
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		s, ok := o.Params[m[1]]
		if !ok {
			s = Str()
		}
		params = append(params, M{"name": m[1], "in": "path", "required": true, "schema": s})
	}
	for _, q := range o.Query {
		params = append(params, q)
	}
	for _, h := range o.Headers {
		params = append(params, h)
	}
	if o.Auth == Public {
		params = append(params,
			M{"name": "X-Service-Project-Key", "in": "header", "description": "The project id (prj_…); or use ?project_id=.", "schema": Str()},
			M{"name": "project_id", "in": "query", "description": "The project id (prj_…), when X-Service-Project-Key is not sent.", "schema": Str()})
	}
	if o.Idempotent {
		params = append(params, M{"name": "Idempotency-Key", "in": "header",
			"description": "Runs the request at most once per project, API key and Idempotency-Key for 24 h; a replay returns the stored response with Idempotent-Replayed: true.",
			"schema":      M{"type": "string", "minLength": 1, "maxLength": 255}})
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	switch o.Auth {
	case None, Public:
		out["security"] = []any{}
	case JWT:
		out["security"] = []any{M{"dashboardJWT": []any{}}}
	case Admin:
		out["security"] = []any{M{"adminToken": []any{}}}
	}
	// Any request may carry a query that is not UTF-8 text without NUL
	// (400, httpapi.ValidURL); a path parameter that is not such text
	// names nothing (404).
	errs := map[int]bool{400: true, 500: true, 503: true}
	if pathParam.MatchString(path) {
		errs[404] = true
	}
	if rateLimited && !o.Uncharged {
		errs[429] = true
	}
	if o.Body != nil {
		out["requestBody"] = M{"required": !o.BodyOptional, "content": content(o.Body)}
		errs[400], errs[413] = true, true
	}
	switch o.Auth {
	case Key, Admin:
		errs[401], errs[403] = true, true
	case JWT:
		errs[401] = true
	case Public:
		errs[400], errs[404] = true, true // no project named; unknown project
	}
	if o.Idempotent {
		errs[400], errs[409] = true, true
	}
	for _, s := range o.Errs {
		errs[s] = true
	}
	public := strings.HasPrefix(path, PublicPrefix)
	responses := M{}
	for _, r := range o.OK {
		h := headers(rateLimited, r.Status, r.Headers)
		if public {
			h["Vary"] = headerRef("Vary")
			h["Access-Control-Allow-Origin"] = headerRef("Access-Control-Allow-Origin")
			h["Access-Control-Expose-Headers"] = headerRef("Access-Control-Expose-Headers")
		}
		x := M{"description": r.Desc, "headers": h}
		if r.Content != nil {
			x["content"] = content(r.Content)
		}
		responses[strconv.Itoa(r.Status)] = x
	}
	for s := range errs {
		responses[strconv.Itoa(s)] = M{"$ref": "#/components/responses/" + d.problem(rateLimited, s)}
	}
	out["responses"] = responses
	item[method] = out
	if public && item["options"] == nil {
		item["options"] = d.preflight(path, o, params)
	}
}

// PublicPrefix is the prefix of the public surface's paths, every one of
// which answers CORS preflights.
const PublicPrefix = "/v1/public/"

// preflight is the CORS preflight (OPTIONS) of a public path, described
// with the path's first operation o and its parameters.
func (d *Doc) preflight(path string, o Op, params []any) M {
	var ps []any
	for _, p := range params {
		if in := p.(M)["in"]; in == "path" || (in == "query" && p.(M)["name"] == "project_id") {
			ps = append(ps, p)
		}
	}
	ps = append(ps,
		M{"name": "Origin", "in": "header", "description": "The page's origin.", "schema": Str()},
		M{"name": "Access-Control-Request-Method", "in": "header", "required": true, "schema": Str()},
		M{"name": "Access-Control-Request-Headers", "in": "header", "schema": Str()})
	h := headers(true, 204, M{
		"Vary":                         M{"description": "Origin and the preflight's request headers.", "required": true, "schema": Str()},
		"Access-Control-Allow-Origin":  M{"description": "The origin (`*` for any), when it and the method and headers asked for are allowed; absent otherwise.", "schema": Str()},
		"Access-Control-Allow-Methods": M{"description": "The method asked for, when allowed (GET, HEAD or POST).", "schema": Str()},
		"Access-Control-Allow-Headers": M{"description": "The headers asked for, when allowed: " + strings.Join(PublicRequestHeaders, ", ") + ".", "schema": Str()},
		"Access-Control-Max-Age":       M{"description": "Seconds a browser may keep the answer.", "schema": Str()},
	})
	delete(h, "Idempotent-Replayed")
	responses := M{"204": M{"description": "The CORS answer: for any origin, unless ?project_id= names a project that lists its allowed_origins, " +
		"whose answer allows only those. A preflight grants nothing by itself: the actual answer's Access-Control-Allow-Origin is what the browser enforces.",
		"headers": h}}
	// An OPTIONS that is not a preflight (no Access-Control-Request-Method)
	// goes on like any request: 404 for a project or path that names
	// nothing, else 400 (a method the route does not serve).
	for _, s := range []int{400, 404, 429, 500} {
		responses[strconv.Itoa(s)] = M{"$ref": "#/components/responses/" + d.problem(true, s)}
	}
	desc := "The CORS preflight a browser sends before calling " + path + " from a page of another origin. It needs no credentials " +
		"and is counted by the per-IP limit like the call itself; it allows GET, HEAD and POST with the headers " +
		strings.Join(PublicRequestHeaders, ", ") + "."
	return M{"operationId": "preflight" + strings.ToUpper(o.ID[:1]) + o.ID[1:], "summary": "CORS preflight", "tags": []any{o.Tag},
		"description": desc, "security": []any{}, "parameters": ps, "responses": responses}
}

// PublicRequestHeaders are the request headers a page may send to the
// public surface (central's CORS configuration uses this list).
var PublicRequestHeaders = []string{"X-Service-Project-Key", "Content-Type", "If-None-Match", "Idempotency-Key", "X-Request-Id", "X-Preview-Token"}

// PublicExposedHeaders are the response headers of the public surface a
// page may read (central's CORS configuration uses this list).
var PublicExposedHeaders = []string{"ETag", "X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"Retry-After", "Idempotent-Replayed"}

// content is a content map: a media type object per media type.
func content(schemas M) M {
	out := M{}
	for mt, s := range schemas {
		out[mt] = M{"schema": s}
	}
	return out
}

// tag lists name in the document's tags, in the order of first use.
func (d *Doc) tag(name string) {
	for _, t := range d.tags {
		if t.(M)["name"] == name {
			return
		}
	}
	d.tags = append(d.tags, M{"name": name})
}

// problem registers the problem+json response of status (of /v1 when
// rateLimited, else of /central) and returns its component name.
func (d *Doc) problem(rateLimited bool, status int) string {
	name := "Problem" + strconv.Itoa(status)
	if !rateLimited {
		name = "CentralProblem" + strconv.Itoa(status)
	}
	if d.responses[name] != nil {
		return name
	}
	h := M{}
	if status == 401 {
		h["WWW-Authenticate"] = M{"description": `Bearer realm="plinth"`, "schema": Str()}
	}
	if status == 429 || status == 503 || status == 409 {
		h["Retry-After"] = M{"description": "Seconds to wait before retrying (always on 429).", "required": status == 429, "schema": M{"type": "integer", "minimum": 0}}
	}
	if status == 400 || status == 405 {
		h["Allow"] = M{"description": "On a known route called with a method it does not serve: the methods it does.", "schema": Str()}
	}
	d.responses[name] = M{
		"description": problemText[status],
		"headers":     headers(rateLimited, status, h),
		"content":     M{"application/problem+json": M{"schema": Ref("Problem")}},
	}
	return name
}

// headers are the headers of every response, plus extra.
func headers(rateLimited bool, status int, extra M) M {
	h := M{"X-Request-Id": headerRef("X-Request-Id")}
	if rateLimited {
		for _, n := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			h[n] = headerRef(n)
		}
	}
	if status < 300 || status == 304 {
		h["Idempotent-Replayed"] = headerRef("Idempotent-Replayed")
	}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

func headerRef(name string) M { return M{"$ref": "#/components/headers/" + name} }

// commonHeaders are the headers every response may carry.
func commonHeaders() M {
	return M{
		"X-Request-Id": M{"description": "The request's id (the caller's, when it sent a safe one of up to 128 characters); equals instance in errors.",
			"required": true, "schema": M{"type": "string", "minLength": 1, "maxLength": 128}},
		"X-RateLimit-Limit":     M{"description": "Requests per minute of the caller's bucket.", "required": true, "schema": M{"type": "integer", "minimum": 0}},
		"X-RateLimit-Remaining": M{"description": "Requests left in the bucket.", "required": true, "schema": M{"type": "integer", "minimum": 0}},
		"X-RateLimit-Reset":     M{"description": "Unix seconds when the bucket is full again.", "required": true, "schema": M{"type": "integer", "minimum": 0}},
		"Idempotent-Replayed":   M{"description": "true on a replay of an Idempotency-Key.", "schema": M{"type": "string", "enum": []any{"true"}}},
		"Vary": M{"description": "On every answer of /v1/public/*, errors included: `X-Service-Project-Key, Origin`, so that a shared cache keeps " +
			"one project's answer from another's visitors.", "required": true, "schema": Str()},
		"Access-Control-Allow-Origin": M{"description": "On /v1/public/* answers to a request with Origin: `*`, or the origin itself when the project " +
			"lists its allowed_origins and this is one of them; absent for an origin the project does not list (the browser then refuses the answer).",
			"schema": Str()},
		"Access-Control-Expose-Headers": M{"description": "With Access-Control-Allow-Origin: the headers a page may read, " +
			strings.Join(PublicExposedHeaders, ", ") + ".", "schema": Str()},
	}
}

var problemText = map[int]string{
	400: "`bad_request`: invalid JSON, wrong content type, a missing required or unknown field, a bad Idempotency-Key header, or a known route called with another method (with Allow).",
	401: "`unauthorized`: missing, malformed, unknown or revoked credentials.",
	402: "`insufficient_credits`: the credits left do not cover the cost (cost and balance in the body).",
	403: "`forbidden`: the key lacks the scope the detail names (on the dashboard API: the project's status, project_status, refuses the change); `project_limit_reached`: the workspace has as many projects as the operator allows.",
	404: "`not_found`: no such resource (or project, on the public surface).",
	405: "`bad_request`: the method is not served here (with Allow): GET /v1/mcp, which the MCP transport asks to answer 405.",
	409: "`conflict` (e.g. a request with this Idempotency-Key still running, Retry-After: 1) or `idempotency_conflict` (the key was used with another request).",
	413: "`bad_request`: the body is larger than allowed (1 MiB of JSON).",
	422: "`validation_failed`: a present field has a bad value; `errors` maps fields to messages.",
	429: "`rate_limited`: the rate limit or the AI cost ceiling is exceeded; honour Retry-After.",
	500: "`internal_error`: an unexpected failure (logged; no detail).",
	502: "`upstream_unavailable`: an upstream service (the payment processor, the AI provider) failed or refused; often transient.",
	503: "`service_unavailable`: a transient database condition or timeout; honour Retry-After.",
}

// problemSchema is the body of every error.
func problemSchema() M {
	return M{
		"type":        "object",
		"description": "RFC 9457 problem details. Clients branch on code.",
		"required":    []any{"type", "title", "status", "code", "instance"},
		"properties": M{
			"type":     M{"type": "string", "format": "uri", "description": "{error_base}/{code}"},
			"title":    M{"type": "string", "minLength": 1},
			"status":   M{"type": "integer", "minimum": 400, "maximum": 599},
			"code":     M{"type": "string", "enum": []any{"bad_request", "unauthorized", "insufficient_credits", "forbidden", "not_found", "conflict", "slot_unavailable", "idempotency_conflict", "connect_not_ready", "key_limit_reached", "project_limit_reached", "validation_failed", "rate_limited", "internal_error", "upstream_unavailable", "service_unavailable"}},
			"detail":   Str(),
			"instance": M{"type": "string", "description": "Equals the X-Request-Id header."},
			"errors":   M{"type": "object", "additionalProperties": Arr(Str()), "description": "validation_failed: messages by field."},
			"cost":     M{"type": "integer", "description": "insufficient_credits: credits the request needs."},
			"balance":  M{"type": "integer", "description": "insufficient_credits: credits left."},
			"message":  M{"type": "string", "description": "Login failure: auth.failed."},
			"project_status": M{"type": "string", "enum": []any{"suspended", "deleting"},
				"description": "forbidden, on the dashboard API: the project's status, which refuses the change."},
			"limit": M{"type": "integer", "description": "project_limit_reached: the most projects the workspace may have."},
		},
		"additionalProperties": false,
	}
}
