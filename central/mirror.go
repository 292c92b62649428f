package central

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/central/inproc"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// A mirror is a dashboard route, under /central/api/projects/{id}, served
// by the /v1 route it mirrors: the pillar's own handler, reached through
// the server's /v1 router, so the dashboard runs no SQL of a pillar and
// answers exactly what the API answers (docs/decisions.md section 4).
type mirror struct {
	method string
	// path is under /central/api/projects/{id}; v1 is the /v1 path it is
	// served by. Both name their path parameters alike.
	path, v1 string
	// scope is the scope the request acts with: what the /v1 route
	// requires, so the request reaches that route and nothing else. A
	// route that requires several names them apart by spaces, as OAuth
	// writes a scope.
	scope string
}

// dashboardMirrors are the /v1 routes the dashboard's pages use, and no
// more: a workspace user manages its projects through these.
var dashboardMirrors = slices.Concat([]mirror{
	{"GET", "/webhook-endpoints", "/v1/webhook-endpoints", "webhooks:read"},
	{"POST", "/webhook-endpoints", "/v1/webhook-endpoints", "webhooks:write"},
	{"GET", "/webhook-endpoints/{endpoint_id}", "/v1/webhook-endpoints/{endpoint_id}", "webhooks:read"},
	{"PATCH", "/webhook-endpoints/{endpoint_id}", "/v1/webhook-endpoints/{endpoint_id}", "webhooks:write"},
	{"POST", "/webhook-endpoints/{endpoint_id}/rotate-secret", "/v1/webhook-endpoints/{endpoint_id}/rotate-secret", "webhooks:write"},
	{"GET", "/webhook-endpoints/{endpoint_id}/deliveries", "/v1/webhook-endpoints/{endpoint_id}/deliveries", "webhooks:read"},
	{"POST", "/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/redeliver",
		"/v1/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/redeliver", "webhooks:write"},
	{"GET", "/jobs", "/v1/jobs", "jobs:read"},
	{"GET", "/form-submissions", "/v1/form-submissions", "forms:read"},
	{"GET", "/pages", "/v1/pages", "content:read"},
	{"GET", "/blog-posts", "/v1/blog-posts", "blog:read"},
	{"GET", "/releases", "/v1/releases", "content:read"},
	// A release publishes each of its items as the item's own publish
	// does, which requires its pillar's write scope: the route requires
	// those of every pillar with drafts.
	{"POST", "/releases/{release_id}/publish", "/v1/releases/{release_id}/publish", "content:write galleries:write brand:write blog:write"},
	{"POST", "/releases/{release_id}/cancel", "/v1/releases/{release_id}/cancel", "content:write"},
}, workflowMirrors())

// workflowItem is a type of item with drafts and versions (tenant/drafts)
// as the dashboard reaches it: the item (its has_draft), its versions,
// one version, a version restored into the draft, the draft published.
type workflowItem struct {
	// path is the item's, under /v1 and under the project alike.
	path string
	// pillar is its routes' scopes' (pillar:read, pillar:write).
	pillar string
	// For the document (openapi.go): the operation ids' noun, the item
	// in summaries, its resource's schema and the statuses its publish
	// adds to 404 and 422.
	name, noun, schema string
	publishErrs        []int
}

// workflowItems are the types of item with drafts.
var workflowItems = []workflowItem{
	{"/pages/{id_or_slug}", "content", "Page", "page", "Page", []int{402, 409}},
	{"/blog-posts/{ref}", "blog", "BlogPost", "blog post", "BlogPost", []int{409}},
	{"/components/{slug}", "content", "Component", "component", "Component", []int{409}},
	{"/content/{key}", "content", "ContentKey", "content key", "ContentKey", []int{402}},
	{"/galleries/{slug}", "galleries", "Gallery", "gallery", "GalleryEnvelope", nil},
	{"/brand", "brand", "Brand", "brand", "Brand", nil},
}

// workflowMirrors are the mirrors of each workflowItem's routes.
func workflowMirrors() []mirror {
	var out []mirror
	for _, it := range workflowItems {
		p, v1, read, write := it.path, "/v1"+it.path, it.pillar+":read", it.pillar+":write"
		out = append(out,
			mirror{"GET", p, v1, read},
			mirror{"GET", p + "/versions", v1 + "/versions", read},
			mirror{"GET", p + "/versions/{n}", v1 + "/versions/{n}", read},
			mirror{"POST", p + "/versions/{n}/restore", v1 + "/versions/{n}/restore", write},
			mirror{"POST", p + "/publish", v1 + "/publish", write})
	}
	return out
}

var mirrorParam = regexp.MustCompile(`\{[a-z_]+\}`)

// mirrorRoutes mounts dashboardMirrors on r (behind DashboardAuth), each
// served by api, the server's router of /v1.
func (c *Central) mirrorRoutes(r chi.Router, api http.Handler) {
	v1 := &inproc.Caller{Handler: api, Headers: mirrorHeaders}
	for _, m := range dashboardMirrors {
		r.Method(m.method, "/projects/{id}"+m.path, httpapi.H(func(w http.ResponseWriter, r *http.Request) error {
			return c.serveMirror(w, r, v1, m)
		}))
	}
}

// mirrorHeaders are the headers of a dashboard request its /v1 request
// carries: what the route reads (body type, CSV or JSON) and the client's
// address for the logs. Never Authorization, which is the dashboard token
// and no API key, nor Idempotency-Key.
var mirrorHeaders = []string{"Content-Type", "Accept", "User-Agent", "X-Forwarded-For", "X-Real-Ip"}

// serveMirror runs the /v1 route of m for the path's project, once the
// project is found in the session's workspace: as a request of a key of
// that project holding m's scope only, live (not test). It goes through
// the /v1 router whole, so the project's rate limit counts it (the
// dashboard request was not charged to it) and a route that charges
// credits charges them, as for any key.
//
// The project's status applies as it does to keys: a read of a project
// being deleted is 404, a change of a project that is not active 403.
func (c *Central) serveMirror(w http.ResponseWriter, r *http.Request, v1 *inproc.Caller, m mirror) error {
	project := c.writableProject
	if m.method == http.MethodGet {
		project = c.readableProject
	}
	p, err := project(r)
	if err != nil {
		return err
	}
	s, err := mustSession(r)
	if err != nil {
		return err
	}
	live, err := c.ScopeFor(r.Context(), p.ID)
	if err != nil {
		return err
	}
	sc, err := live.WithKey(&tenant.Key{ID: dashboardKeyID(s.User.ID), Scopes: strings.Fields(m.scope)})
	if err != nil {
		return err
	}
	path := mirrorParam.ReplaceAllStringFunc(m.v1, func(p string) string {
		return url.PathEscape(chi.URLParam(r, p[1:len(p)-1]))
	})
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	parent := inproc.Of(r)
	parent.Scope = sc
	return v1.Serve(w, parent, inproc.Request{Method: m.method, Target: path, Body: r.Body, ContentLength: r.ContentLength})
}

// dashboardKeyID is the key id a dashboard user's mirrored requests carry
// (access log, idempotency records): no API key has it.
func dashboardKeyID(userID int64) string { return "dashboard:user:" + strconv.FormatInt(userID, 10) }
