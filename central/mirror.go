package central

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"

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
	// scope is the one scope the request acts with: what the /v1 route
	// requires, so the request reaches that route and nothing else.
	scope string
}

// dashboardMirrors are the /v1 routes the dashboard's pages use, and no
// more: a workspace user manages its projects through these.
var dashboardMirrors = []mirror{
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
	sc, err := live.WithKey(&tenant.Key{ID: dashboardKeyID(s.User.ID), Scopes: []string{m.scope}})
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
