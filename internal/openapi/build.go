package openapi

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// M is a JSON object of the document.
type M = map[string]any

// Build returns the document. Every route of the router is added here (the
// route-coverage test compares both ways); openapi.json is its output.
func Build() M {
	d := &doc{paths: M{}, responses: M{}}
	d.system()
	d.central()
	d.project()
	d.jobs()
	d.content()
	d.forms()
	d.webhooks()
	d.blog()
	d.commerce()
	d.booking()
	d.social()
	return M{
		"openapi": "3.1.0",
		"info": M{
			"title":   "Plinth API",
			"version": Version,
			"summary": "Multi-tenant REST backend for AI-built websites.",
			"description": "Every /v1 request is authenticated with a project API key (`Authorization: Bearer pln_live_…`), " +
				"except /v1/health, /v1/openapi.json and the public read surface /v1/public/* (project from the " +
				"X-Service-Project-Key header or ?project_id=). The dashboard endpoints under /central/api use a JWT from " +
				"POST /central/api/login. Errors are application/problem+json. Every /v1 response carries X-Request-Id and " +
				"the rate-limit headers; mutating requests accept Idempotency-Key.",
		},
		"servers": []any{M{"url": "/", "description": "the Plinth host; /v1 is the API, /central/api the dashboard"}},
		"tags": []any{
			M{"name": "system"}, M{"name": "dashboard"}, M{"name": "project"}, M{"name": "jobs"},
			M{"name": "content"}, M{"name": "blog"}, M{"name": "commerce"}, M{"name": "booking"}, M{"name": "social"},
			M{"name": "forms"}, M{"name": "webhooks"}, M{"name": "public"},
		},
		"security": []any{M{"apiKey": []any{}}},
		"paths":    d.paths,
		"components": M{
			"securitySchemes": M{
				"apiKey": M{"type": "http", "scheme": "bearer", "bearerFormat": "pln_live_… / pln_test_… API key",
					"description": "A project API key: `Authorization: Bearer pln_live_<32 base62>`."},
				"dashboardJWT": M{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "The token of POST /central/api/login (HS256, 12 h)."},
			},
			"schemas":   schemas(),
			"responses": d.responses,
			"headers":   commonHeaders,
		},
	}
}

// auth is how an operation authenticates.
type auth int

const (
	authKey    auth = iota // a project API key
	authNone               // no credentials
	authJWT                // the dashboard token
	authPublic             // no credentials; the project from header or query
)

// op is one operation of the document.
type op struct {
	id, summary, tag string
	desc             string
	auth             auth
	scope            string // the scope a key needs, for the description
	query            []M
	headers          []M
	params           M // schemas of path parameters by name (default: string)
	body             M // request body content by media type
	bodyOptional     bool
	ok               []resp
	errs             []int // problem+json statuses beyond the automatic ones
	idempotent       bool  // accepts Idempotency-Key
	noRateLimit      bool
	uncharged        bool // the limiter shows the caller's bucket without charging it: never 429
}

// resp is one non-problem response.
type resp struct {
	status  int
	desc    string
	content M // media type -> schema
	headers M
}

type doc struct{ paths, responses M }

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func (d *doc) add(method, path string, o op) {
	item, _ := d.paths[path].(M)
	if item == nil {
		item = M{}
		d.paths[path] = item
	}
	central := strings.HasPrefix(path, "/central/")
	o.noRateLimit = central // the limiter skips /central/
	out := M{"operationId": o.id, "summary": o.summary, "tags": []any{o.tag}}
	desc := o.desc
	if o.scope != "" {
		desc = strings.TrimSpace(desc + "\n\nScope: `" + o.scope + "`.")
	}
	if desc != "" {
		out["description"] = desc
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		s, ok := o.params[m[1]]
		if !ok {
			s = str()
		}
		params = append(params, M{"name": m[1], "in": "path", "required": true, "schema": s})
	}
	for _, q := range o.query {
		params = append(params, q)
	}
	for _, h := range o.headers {
		params = append(params, h)
	}
	if o.auth == authPublic {
		params = append(params,
			M{"name": "X-Service-Project-Key", "in": "header", "description": "The project id (prj_…); or use ?project_id=.", "schema": str()},
			M{"name": "project_id", "in": "query", "description": "The project id (prj_…), when X-Service-Project-Key is not sent.", "schema": str()})
	}
	if o.idempotent {
		params = append(params, M{"name": "Idempotency-Key", "in": "header",
			"description": "Runs the request at most once per project and key for 24 h; a replay returns the stored response with Idempotent-Replayed: true.",
			"schema":      M{"type": "string", "minLength": 1, "maxLength": 255}})
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	switch o.auth {
	case authNone, authPublic:
		out["security"] = []any{}
	case authJWT:
		out["security"] = []any{M{"dashboardJWT": []any{}}}
	}
	errs := map[int]bool{500: true, 503: true}
	if !central && !o.uncharged {
		errs[429] = true
	}
	if o.body != nil {
		content := M{}
		for mt, s := range o.body {
			content[mt] = M{"schema": s}
		}
		out["requestBody"] = M{"required": !o.bodyOptional, "content": content}
		errs[400], errs[413] = true, true
	}
	switch o.auth {
	case authKey:
		errs[401], errs[403] = true, true
	case authJWT:
		errs[401] = true
	case authPublic:
		errs[400], errs[404] = true, true // no project named; unknown project
	}
	if o.idempotent {
		errs[400], errs[409] = true, true
	}
	for _, s := range o.errs {
		errs[s] = true
	}
	responses := M{}
	for _, r := range o.ok {
		x := M{"description": r.desc, "headers": d.headers(!o.noRateLimit, r.status, r.headers)}
		if r.content != nil {
			content := M{}
			for mt, s := range r.content {
				content[mt] = M{"schema": s}
			}
			x["content"] = content
		}
		responses[strconv.Itoa(r.status)] = x
	}
	for s := range errs {
		responses[strconv.Itoa(s)] = M{"$ref": "#/components/responses/" + d.problem(!o.noRateLimit, s)}
	}
	out["responses"] = responses
	item[strings.ToLower(method)] = out
}

// problem registers the problem+json response of status (of /v1 when
// rateLimited, else of /central) and returns its component name.
func (d *doc) problem(rateLimited bool, status int) string {
	name := "Problem" + strconv.Itoa(status)
	if !rateLimited {
		name = "CentralProblem" + strconv.Itoa(status)
	}
	if d.responses[name] != nil {
		return name
	}
	h := M{}
	if status == 401 {
		h["WWW-Authenticate"] = M{"description": `Bearer realm="plinth"`, "schema": str()}
	}
	if status == 429 || status == 503 || status == 409 {
		h["Retry-After"] = M{"description": "Seconds to wait before retrying (always on 429).", "required": status == 429, "schema": M{"type": "integer", "minimum": 0}}
	}
	if status == 400 {
		h["Allow"] = M{"description": "On a known route called with a method it does not serve: the methods it does.", "schema": str()}
	}
	d.responses[name] = M{
		"description": problemText[status],
		"headers":     d.headers(rateLimited, status, h),
		"content":     M{"application/problem+json": M{"schema": ref("Problem")}},
	}
	return name
}

// headers are the headers of every response, plus extra.
func (d *doc) headers(rateLimited bool, status int, extra M) M {
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

var commonHeaders = M{
	"X-Request-Id": M{"description": "The request's id (the caller's, when it sent a safe one of up to 128 characters); equals instance in errors.",
		"required": true, "schema": M{"type": "string", "minLength": 1, "maxLength": 128}},
	"X-RateLimit-Limit":     M{"description": "Requests per minute of the caller's bucket.", "required": true, "schema": M{"type": "integer", "minimum": 0}},
	"X-RateLimit-Remaining": M{"description": "Requests left in the bucket.", "required": true, "schema": M{"type": "integer", "minimum": 0}},
	"X-RateLimit-Reset":     M{"description": "Unix seconds when the bucket is full again.", "required": true, "schema": M{"type": "integer", "minimum": 0}},
	"Idempotent-Replayed":   M{"description": "true on a replay of an Idempotency-Key.", "schema": M{"type": "string", "enum": []any{"true"}}},
}

var problemText = map[int]string{
	400: "`bad_request`: invalid JSON, wrong content type, a missing required or unknown field, a bad Idempotency-Key header, or a known route called with another method (with Allow).",
	401: "`unauthorized`: missing, malformed, unknown or revoked credentials.",
	402: "`insufficient_credits`: the credits left do not cover the cost (cost and balance in the body).",
	403: "`forbidden`: the key lacks the scope the detail names.",
	404: "`not_found`: no such resource (or project, on the public surface).",
	409: "`conflict` (e.g. a request with this Idempotency-Key still running, Retry-After: 1) or `idempotency_conflict` (the key was used with another request).",
	413: "`bad_request`: the body is larger than allowed (1 MiB of JSON).",
	422: "`validation_failed`: a present field has a bad value; `errors` maps fields to messages.",
	429: "`rate_limited`: the rate limit or the AI cost ceiling is exceeded; honour Retry-After.",
	500: "`internal_error`: an unexpected failure (logged; no detail).",
	502: "`upstream_unavailable`: an upstream service (the payment processor, the AI provider) failed or refused; often transient.",
	503: "`service_unavailable`: a transient database condition or timeout; honour Retry-After.",
}

// The operations. Keep them next to the pillar they describe.

func (d *doc) system() {
	d.add("GET", "/v1/health", op{id: "getHealth", summary: "Liveness and version", tag: "system", auth: authNone, uncharged: true,
		desc: "Shows the caller's rate-limit bucket without charging it. 503 when the database is unreachable (with Retry-After).",
		ok: []resp{{status: 200, desc: "The service is up.", content: jsonOf(ref("Health"))},
			{status: 503, desc: "The database is unreachable.", content: jsonOf(ref("Health")),
				headers: M{"Retry-After": M{"required": true, "schema": M{"type": "integer"}}}}}})
	d.add("GET", "/v1/openapi.json", op{id: "getOpenAPI", summary: "This OpenAPI 3.1 description", tag: "system", auth: authNone,
		ok: []resp{{status: 200, desc: "The document.", content: jsonOf(M{"type": "object", "required": []any{"openapi", "info", "paths"}})}}})
}

func (d *doc) central() {
	d.add("GET", "/central/api/tenants-for-email", op{id: "tenantsForEmail", summary: "Workspaces of an email", tag: "dashboard", auth: authNone,
		desc:  "Always 200, in constant minimum time, for known and unknown emails alike.",
		query: []M{{"name": "email", "in": "query", "schema": str()}},
		ok:    []resp{{status: 200, desc: "The workspaces (possibly none).", content: jsonOf(obj(M{"tenants": arr(ref("Tenant"))}, "tenants"))}}})
	d.add("POST", "/central/api/login", op{id: "login", summary: "Dashboard login", tag: "dashboard", auth: authNone,
		desc: "Wrong credentials: 422 validation_failed with message auth.failed and errors.email [auth.failed]. " +
			"Five failures per email per 15 minutes slow further attempts (429).",
		body: jsonOf(obj(M{"email": str(), "password": str(), "tenant_id": M{"type": "integer"}}, "email", "password")),
		ok:   []resp{{status: 200, desc: "A 12-hour dashboard token.", content: jsonOf(ref("LoginResult"))}},
		errs: []int{422, 429}})
	d.add("GET", "/central/api/me", op{id: "dashboardMe", summary: "The signed-in user and workspace", tag: "dashboard", auth: authJWT,
		ok: []resp{{status: 200, desc: "The session.", content: jsonOf(ref("Session"))}}})
	d.add("GET", "/central/api/projects", op{id: "dashboardListProjects", summary: "Projects of the workspace", tag: "dashboard", auth: authJWT,
		query: pageParams(), errs: []int{422},
		ok: []resp{{status: 200, desc: "Newest first.", content: jsonOf(list(ref("Project")))}}})
	d.add("POST", "/central/api/projects", op{id: "dashboardCreateProject", summary: "Create and provision a project", tag: "dashboard", auth: authJWT,
		body: jsonOf(obj(M{
			"name": M{"type": "string", "minLength": 1, "maxLength": 255}, "plan": planSchema(),
			"default_language": M{"type": "string", "minLength": 1}, "target_languages": M{"type": "array", "maxItems": 50, "items": str()},
			"timezone": M{"type": "string", "minLength": 1}, "industry": M{"type": "string", "maxLength": 100},
		}, "name")),
		ok:   []resp{{status: 201, desc: "The project.", content: jsonOf(ref("Project"))}},
		errs: []int{409, 422}})
	projectID := M{"id": M{"type": "string", "pattern": "^prj_"}}
	d.add("GET", "/central/api/projects/{id}/api-keys", op{id: "dashboardListKeys", summary: "Keys of a project", tag: "dashboard", auth: authJWT,
		params: projectID, errs: []int{404},
		ok: []resp{{status: 200, desc: "Masked keys, never secret.", content: jsonOf(list(ref("APIKey")))}}})
	d.add("POST", "/central/api/projects/{id}/api-keys", op{id: "dashboardCreateKey", summary: "Mint a key", tag: "dashboard", auth: authJWT,
		params: projectID, desc: "Scopes default to the dashboard's default set. The secret is shown once.",
		body: jsonOf(obj(M{"name": M{"type": "string", "minLength": 1, "maxLength": 100},
			"scopes": M{"type": "array", "minItems": 1, "maxItems": 64, "items": str()}, "test": M{"type": "boolean"}}, "name")),
		ok:   []resp{{status: 201, desc: "The key with its secret.", content: jsonOf(ref("APIKeyWithSecret"))}},
		errs: []int{404, 409, 422}})
	d.add("DELETE", "/central/api/projects/{id}/api-keys/{key_id}", op{id: "dashboardRevokeKey", summary: "Revoke a key", tag: "dashboard", auth: authJWT,
		params: projectID, errs: []int{404},
		ok: []resp{{status: 204, desc: "Revoked."}}})
}

func (d *doc) project() {
	d.add("GET", "/v1/projects/me", op{id: "getProject", summary: "The key's project", tag: "project", scope: "project:read",
		ok: []resp{{status: 200, desc: "The project.", content: jsonOf(ref("Project"))}}})
	d.add("PATCH", "/v1/projects/me", op{id: "updateProject", summary: "Update the project", tag: "project", scope: "project:write (plan: project:admin)",
		idempotent: true,
		body: jsonOf(obj(M{
			"name": M{"type": "string", "minLength": 1, "maxLength": 255}, "industry": M{"type": "string", "maxLength": 100},
			"default_language": str(), "target_languages": M{"type": "array", "maxItems": 50, "items": str()},
			"timezone": str(), "plan": planSchema(),
		})),
		ok:   []resp{{status: 200, desc: "The updated project.", content: jsonOf(ref("Project"))}},
		errs: []int{422}})
	d.add("GET", "/v1/projects/me/api-keys", op{id: "listKeys", summary: "Keys of the project", tag: "project", scope: "project:admin",
		ok: []resp{{status: 200, desc: "Masked keys, never secret.", content: jsonOf(list(ref("APIKey")))}}})
	d.add("POST", "/v1/projects/me/api-keys", op{id: "createKey", summary: "Mint a key", tag: "project", scope: "project:admin",
		desc:       "The new key's scopes must be a subset of the caller's (else 403); unknown scopes 422. The secret is shown once and never replayed.",
		idempotent: true,
		body: jsonOf(obj(M{"name": M{"type": "string", "minLength": 1, "maxLength": 100},
			"scopes": M{"type": "array", "minItems": 1, "maxItems": 64, "items": str()}, "test": M{"type": "boolean"}}, "name", "scopes")),
		ok: []resp{{status: 201, desc: "The key with its secret (a replay of an Idempotency-Key answers without it).",
			content: jsonOf(M{"oneOf": []any{ref("APIKeyWithSecret"), ref("APIKey")}})}},
		errs: []int{422}})
	d.add("DELETE", "/v1/api-keys/{key_id}", op{id: "revokeKey", summary: "Revoke a key", tag: "project", scope: "project:admin",
		idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Revoked."}}})
	d.add("GET", "/v1/projects/me/usage", op{id: "getUsage", summary: "Credit usage of a period", tag: "project", scope: "project:read",
		query: []M{{"name": "period", "in": "query", "schema": M{"type": "string", "enum": []any{"current", "previous"}}}},
		errs:  []int{422},
		ok:    []resp{{status: 200, desc: "The usage report.", content: jsonOf(ref("Usage"))}}})
}

func (d *doc) jobs() {
	d.add("GET", "/v1/jobs", op{id: "listJobs", summary: "Jobs, newest first", tag: "jobs", scope: "jobs:read",
		query: append(pageParams(),
			M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": jobStatuses()}},
			M{"name": "type", "in": "query", "schema": str()}),
		errs: []int{422},
		ok:   []resp{{status: 200, desc: "The jobs.", content: jsonOf(list(ref("Job")))}}})
	d.add("GET", "/v1/jobs/{id}", op{id: "getJob", summary: "A job", tag: "jobs", scope: "jobs:read", errs: []int{404},
		ok: []resp{{status: 200, desc: "The job.", content: jsonOf(ref("Job"))}}})
	d.add("POST", "/v1/jobs/{id}/cancel", op{id: "cancelJob", summary: "Cancel a pending or processing job", tag: "jobs",
		scope: "jobs:read plus the write scope of the job's pillar", idempotent: true, errs: []int{404},
		desc: "A pending job is cancelled at once (and refunded); a processing one is asked to stop. 409 conflict when it has already finished.",
		ok:   []resp{{status: 200, desc: "The job.", content: jsonOf(ref("Job"))}}})
	d.add("GET", "/v1/jobs/{id}/stream", op{id: "streamJob", summary: "Server-Sent Events of a job", tag: "jobs", scope: "jobs:read",
		desc: "Events `progress` {progress, message}, `step` {name, completed, active}, `done` (the Job) and `error` {code, message}; " +
			"each has an id (resume with Last-Event-ID). A finished job sends `done` at once. Comments keep the stream alive.",
		headers: []M{{"name": "Last-Event-ID", "in": "header", "schema": str()}},
		errs:    []int{404},
		ok: []resp{{status: 200, desc: "The event stream.", content: M{"text/event-stream": M{"type": "string"}},
			headers: M{"Cache-Control": M{"schema": str()}}}}})
}

func (d *doc) forms() {
	cors := M{"Access-Control-Allow-Origin": M{"required": true, "schema": M{"type": "string", "enum": []any{"*"}}},
		"Access-Control-Expose-Headers": M{"schema": str()}}
	d.add("POST", "/v1/public/forms/newsletter", op{id: "subscribeNewsletter", summary: "Subscribe to the newsletter", tag: "forms", auth: authPublic,
		desc:       "No key, no credits. Subscribing twice keeps one row. A non-empty hidden `website` field marks spam (still 201).",
		idempotent: true,
		body: jsonOf(obj(M{
			"email": M{"type": "string", "minLength": 1, "maxLength": 254}, "name": M{"type": "string", "maxLength": 200},
			"source": M{"type": "string", "maxLength": 200}, "website": str(),
		}, "email")),
		errs: []int{422},
		ok:   []resp{{status: 201, desc: "The submission.", content: jsonOf(ref("FormSubmission")), headers: cors}}})
	d.add("POST", "/v1/public/forms/contact", op{id: "submitContact", summary: "Submit the contact form", tag: "forms", auth: authPublic,
		desc:       "No key, no credits. A non-empty hidden `website` field marks spam (still 201).",
		idempotent: true,
		body: jsonOf(obj(M{
			"name": M{"type": "string", "minLength": 1, "maxLength": 200}, "email": M{"type": "string", "minLength": 1, "maxLength": 254},
			"message": M{"type": "string", "minLength": 1, "maxLength": 10000}, "subject": M{"type": "string", "maxLength": 200},
			"source": M{"type": "string", "maxLength": 200}, "website": str(),
			"fields": M{"type": "object", "maxProperties": 50, "propertyNames": M{"minLength": 1, "maxLength": 100}},
		}, "name", "email", "message")),
		errs: []int{422},
		ok:   []resp{{status: 201, desc: "The submission.", content: jsonOf(ref("FormSubmission")), headers: cors}}})
	for _, p := range []string{"newsletter", "contact"} {
		d.add("OPTIONS", "/v1/public/forms/"+p, op{id: "preflight" + strings.ToUpper(p[:1]) + p[1:], summary: "CORS preflight", tag: "forms", auth: authNone,
			ok: []resp{{status: 204, desc: "Allowed from any origin.", headers: M{
				"Access-Control-Allow-Origin":  M{"required": true, "schema": str()},
				"Access-Control-Allow-Methods": M{"required": true, "schema": str()},
				"Access-Control-Allow-Headers": M{"required": true, "schema": str()},
				"Access-Control-Max-Age":       M{"schema": str()},
				"Allow":                        M{"schema": str()},
			}}}})
	}
	d.add("GET", "/v1/form-submissions", op{id: "listFormSubmissions", summary: "Form submissions, newest first", tag: "forms", scope: "forms:read",
		desc:  "With `Accept: text/csv` the newsletter subscribers are exported as CSV (type omitted or newsletter).",
		query: append(pageParams(), M{"name": "type", "in": "query", "schema": M{"type": "string", "enum": []any{"newsletter", "contact"}}}),
		errs:  []int{422},
		ok: []resp{{status: 200, desc: "The submissions (JSON), or the subscribers (CSV).", content: M{
			"application/json": list(ref("FormSubmission")),
			"text/csv":         M{"type": "string"},
		}}}})
	d.add("DELETE", "/v1/form-submissions/{id}", op{id: "deleteFormSubmission", summary: "Delete a submission", tag: "forms", scope: "forms:write",
		params: M{"id": M{"type": "string", "pattern": "^[0-9]+$"}}, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})
}

func (d *doc) webhooks() {
	endpointBody := M{
		"url":       M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "https:// (http:// and loopback with PLINTH_DEV=1)"},
		"events":    M{"type": "array", "minItems": 1, "items": str(), "description": "Topics of the contract, e.g. content.changed."},
		"is_active": M{"type": "boolean"},
	}
	withSecret := M{"oneOf": []any{ref("WebhookEndpointWithSecret"), ref("WebhookEndpoint")}}
	d.add("GET", "/v1/webhook-endpoints", op{id: "listWebhookEndpoints", summary: "Webhook endpoints, newest first", tag: "webhooks", scope: "webhooks:read",
		query: pageParams(), errs: []int{422},
		ok: []resp{{status: 200, desc: "The endpoints (no secrets).", content: jsonOf(list(ref("WebhookEndpoint")))}}})
	d.add("POST", "/v1/webhook-endpoints", op{id: "createWebhookEndpoint", summary: "Create an endpoint", tag: "webhooks", scope: "webhooks:write",
		idempotent: true, body: jsonOf(obj(endpointBody, "url", "events")), errs: []int{422},
		ok: []resp{{status: 201, desc: "The endpoint with its signing secret, shown once (a replay answers without it).", content: jsonOf(withSecret)}}})
	d.add("GET", "/v1/webhook-endpoints/{id}", op{id: "getWebhookEndpoint", summary: "An endpoint", tag: "webhooks", scope: "webhooks:read",
		errs: []int{404},
		ok:   []resp{{status: 200, desc: "The endpoint.", content: jsonOf(ref("WebhookEndpoint"))}}})
	d.add("PATCH", "/v1/webhook-endpoints/{id}", op{id: "updateWebhookEndpoint", summary: "Update an endpoint", tag: "webhooks", scope: "webhooks:write",
		idempotent: true, body: jsonOf(obj(endpointBody)), errs: []int{404, 422},
		ok: []resp{{status: 200, desc: "The endpoint.", content: jsonOf(ref("WebhookEndpoint"))}}})
	d.add("DELETE", "/v1/webhook-endpoints/{id}", op{id: "deleteWebhookEndpoint", summary: "Delete an endpoint", tag: "webhooks", scope: "webhooks:write",
		idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})
	d.add("POST", "/v1/webhook-endpoints/{id}/rotate-secret", op{id: "rotateWebhookSecret", summary: "Rotate the signing secret", tag: "webhooks", scope: "webhooks:write",
		desc:       "The new secret is returned once; the old one also signs for 24 h (two v1= entries in X-Service-Signature).",
		idempotent: true, errs: []int{404},
		ok: []resp{{status: 200, desc: "The endpoint with its new secret (a replay answers without it).", content: jsonOf(withSecret)}}})
	d.add("GET", "/v1/webhook-endpoints/{id}/deliveries", op{id: "listWebhookDeliveries", summary: "Deliveries of an endpoint, newest first", tag: "webhooks", scope: "webhooks:read",
		query: append(pageParams(), M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": []any{"pending", "succeeded", "failed"}}}),
		errs:  []int{404, 422},
		ok:    []resp{{status: 200, desc: "The deliveries.", content: jsonOf(list(ref("WebhookDelivery")))}}})
	d.add("POST", "/v1/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver", op{id: "redeliverWebhook", summary: "Deliver an event again", tag: "webhooks", scope: "webhooks:write",
		desc:       "A new delivery (new whd_ id) of the same frozen envelope: same evt_ id, same data.",
		idempotent: true, errs: []int{402, 404, 409, 422},
		ok: []resp{{status: 202, desc: "The new delivery.", content: jsonOf(ref("WebhookDelivery"))}}})
}

func schemas() M {
	job := obj(M{
		"id": prefixed("job_"), "type": str(), "status": M{"type": "string", "enum": jobStatuses()},
		"progress": M{"type": "integer", "minimum": 0, "maximum": 100}, "message": str(),
		"steps":      arr(obj(M{"name": str(), "completed": M{"type": "boolean"}, "active": M{"type": "boolean"}}, "name", "completed", "active")),
		"result":     M{"description": "The job type's result, once completed."},
		"error":      obj(M{"code": str(), "message": str()}, "code", "message"),
		"created_at": ts(), "updated_at": ts(),
	}, "id", "type", "status", "progress", "message", "steps", "created_at", "updated_at")
	key := M{
		"id": prefixed("key_"), "name": str(), "prefix": M{"type": "string", "enum": []any{"pln_live_", "pln_test_"}},
		"masked": str(), "scopes": arr(str()), "last_used_at": nullable(ts()), "created_at": ts(),
	}
	keyWithSecret := M{"secret": M{"type": "string", "pattern": "^pln_(live|test)_[0-9A-Za-z]{32}$"}}
	for k, v := range key {
		keyWithSecret[k] = v
	}
	endpoint := M{
		"id": M{"type": "string"}, "url": str(), "events": arr(str()), "is_active": M{"type": "boolean"},
		"created_at": ts(), "last_delivery_status": str(),
	}
	endpointWithSecret := M{"signing_secret": M{"type": "string", "minLength": 1}}
	for k, v := range endpoint {
		endpointWithSecret[k] = v
	}
	all := M{
		"WebhookEndpoint":           obj(endpoint, "id", "url", "events", "is_active", "created_at", "last_delivery_status"),
		"WebhookEndpointWithSecret": obj(endpointWithSecret, "id", "url", "events", "is_active", "created_at", "last_delivery_status", "signing_secret"),
		"WebhookDelivery": obj(M{
			"id": prefixed("whd_"), "event_id": prefixed("evt_"), "event_type": str(),
			"status": M{"type": "string", "enum": []any{"pending", "succeeded", "failed"}}, "attempts": M{"type": "integer", "minimum": 0},
			"last_status_code": M{"type": []any{"integer", "null"}}, "last_error": nullable(str()), "next_attempt_at": nullable(ts()), "created_at": ts(),
		}, "id", "event_id", "event_type", "status", "attempts", "last_status_code", "last_error", "next_attempt_at", "created_at"),
		"Problem": M{
			"type":        "object",
			"description": "RFC 9457 problem details. Clients branch on code.",
			"required":    []any{"type", "title", "status", "code", "instance"},
			"properties": M{
				"type":     M{"type": "string", "format": "uri", "description": "{error_base}/{code}"},
				"title":    M{"type": "string", "minLength": 1},
				"status":   M{"type": "integer", "minimum": 400, "maximum": 599},
				"code":     M{"type": "string", "enum": []any{"bad_request", "unauthorized", "insufficient_credits", "forbidden", "not_found", "conflict", "slot_unavailable", "idempotency_conflict", "connect_not_ready", "key_limit_reached", "validation_failed", "rate_limited", "internal_error", "upstream_unavailable", "service_unavailable"}},
				"detail":   str(),
				"instance": M{"type": "string", "description": "Equals the X-Request-Id header."},
				"errors":   M{"type": "object", "additionalProperties": arr(str()), "description": "validation_failed: messages by field."},
				"cost":     M{"type": "integer", "description": "insufficient_credits: credits the request needs."},
				"balance":  M{"type": "integer", "description": "insufficient_credits: credits left."},
				"message":  M{"type": "string", "description": "Login failure: auth.failed."},
			},
			"additionalProperties": false,
		},
		"Health": obj(M{"status": M{"type": "string", "enum": []any{"ok", "unavailable"}}, "version": str(), "uptime_s": M{"type": "integer", "minimum": 0}},
			"status", "version", "uptime_s"),
		"Project": obj(M{
			"id": prefixed("prj_"), "name": str(), "slug": str(), "industry": str(), "default_language": str(),
			"target_languages": arr(str()), "timezone": str(), "plan": planSchema(), "created_at": ts(),
		}, "id", "name", "slug", "industry", "default_language", "target_languages", "timezone", "plan", "created_at"),
		"APIKey":           obj(key, "id", "name", "prefix", "masked", "scopes", "last_used_at", "created_at"),
		"APIKeyWithSecret": obj(keyWithSecret, "id", "name", "prefix", "masked", "secret", "scopes", "last_used_at", "created_at"),
		"Tenant":           obj(M{"id": M{"type": "integer"}, "name": str(), "domain": str()}, "id", "name", "domain"),
		"User":             obj(M{"id": M{"type": "integer"}, "name": str(), "email": str(), "created_at": ts()}, "id", "name", "email", "created_at"),
		"LoginResult":      obj(M{"token": str(), "tenant": ref("Tenant"), "user": ref("User")}, "token", "tenant", "user"),
		"Session":          obj(M{"tenant": ref("Tenant"), "user": ref("User")}, "tenant", "user"),
		"Usage": obj(M{
			"period_start": ts(), "period_end": ts(), "plan": planSchema(),
			"plan_credits": M{"type": "integer"}, "topup_credits": M{"type": "integer"}, "credits_used": M{"type": "integer"},
			"credits_remaining": M{"type": "integer"},
			"breakdown":         arr(obj(M{"op": str(), "count": M{"type": "integer"}, "credits": M{"type": "integer"}}, "op", "count", "credits")),
		}, "period_start", "period_end", "plan", "plan_credits", "topup_credits", "credits_used", "credits_remaining", "breakdown"),
		"Job": job,
		"FormSubmission": obj(M{
			"id": M{"type": "integer"}, "type": M{"type": "string", "enum": []any{"newsletter", "contact"}}, "email": str(),
			"name": nullable(str()), "subject": nullable(str()), "message": nullable(str()),
			"fields": M{"type": []any{"object", "null"}}, "source": nullable(str()), "spam": M{"type": "boolean"}, "created_at": ts(),
		}, "id", "type", "email", "name", "subject", "message", "fields", "source", "spam", "created_at"),
	}
	// Each pillar's file adds its own schemas; a name may be defined once.
	for _, pillar := range []M{contentSchemas(), blogSchemas(), commerceSchemas(), bookingSchemas(), socialSchemas()} {
		for name, s := range pillar {
			if _, dup := all[name]; dup {
				panic("openapi: schema " + name + " defined twice")
			}
			all[name] = s
		}
	}
	return all
}

// Schema helpers.

func str() M { return M{"type": "string"} }

func ts() M {
	return M{"type": "string", "format": "date-time", "pattern": `Z$`, "description": "RFC 3339, UTC"}
}

func prefixed(p string) M {
	return M{"type": "string", "pattern": "^" + p + "[0-9A-Za-z]{24}$"}
}

func arr(items M) M { return M{"type": "array", "items": items} }

func ref(name string) M { return M{"$ref": "#/components/schemas/" + name} }

// obj is a closed object: the server neither sends nor accepts other fields.
func obj(props M, required ...string) M {
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

func nullable(s M) M {
	out := M{}
	for k, v := range s {
		out[k] = v
	}
	out["type"] = []any{s["type"], "null"}
	return out
}

func list(item M) M {
	return obj(M{"data": arr(item), "has_more": M{"type": "boolean"}, "next_cursor": nullable(str())}, "data", "has_more", "next_cursor")
}

func jsonOf(s M) M { return M{"application/json": s} }

func pageParams() []M {
	return []M{
		{"name": "limit", "in": "query", "schema": M{"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
		{"name": "cursor", "in": "query", "description": "Opaque; next_cursor of the previous page.", "schema": str()},
	}
}

func planSchema() M {
	return M{"type": "string", "enum": []any{"free", "hobby", "build", "scale", "enterprise"}}
}

func jobStatuses() []any {
	return []any{"pending", "processing", "completed", "failed", "cancelled"}
}

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
