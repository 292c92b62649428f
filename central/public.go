package central

import (
	"errors"
	"net/http"
	"strings"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/tenant"
)

// PublicPath is the root of the public read surface: no key, the project
// named by the request.
const PublicPath = "/v1/public"

// IsPublic reports whether path is on the public surface.
func IsPublic(path string) bool {
	return path == PublicPath || strings.HasPrefix(path, PublicPath+"/")
}

// MediaPath is the prefix of public media URLs, which name their project
// in the path: browsers load them (<img src>) without headers.
const MediaPath = "/v1/public/media/"

// PublicVary is the Vary of every answer on the public surface. A public
// answer depends on X-Service-Project-Key, which names the project and
// takes precedence over ?project_id=, so a shared cache keyed on the URL
// alone would serve one project's content to another's visitors; the
// contract adds Origin, on which the surface's CORS answers may depend.
const PublicVary = "X-Service-Project-Key, Origin"

// VaryPublic adds PublicVary to every response on the public surface, errors
// included (a 404 is cacheable by default: one project's "no such page"
// must not answer another's). It goes on the root router before the rate
// limiter and PublicCORS, so that no answer of the surface leaves
// without it.
func VaryPublic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsPublic(r.URL.Path) {
			w.Header().Add("Vary", PublicVary)
		}
		next.ServeHTTP(w, r)
	})
}

// PublicProjectID returns the project a public request names: the header
// X-Service-Project-Key, else the query parameter project_id; a media URL
// names it in its path (/v1/public/media/{project}/{key}).
func PublicProjectID(r *http.Request) string {
	if rest, ok := strings.CutPrefix(r.URL.Path, MediaPath); ok {
		pid, _, _ := strings.Cut(rest, "/")
		return pid
	}
	if v := r.Header.Get("X-Service-Project-Key"); v != "" {
		return v
	}
	return r.URL.Query().Get("project_id")
}

// PublicProject resolves the project of a keyless public request and puts
// its scope (with no key) on the context. No project named: 400; an
// unknown project: 404. A project that lists its allowed origins narrows
// the CORS answer here (see PublicCORS).
func (c *Central) PublicProject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pid := PublicProjectID(r)
		if pid == "" {
			httpapi.WriteError(w, r, httpapi.BadRequest("name the project with the X-Service-Project-Key header or the project_id query parameter"))
			return
		}
		if !id.Valid("prj_", pid) {
			httpapi.WriteError(w, r, httpapi.NotFound("no such project"))
			return
		}
		s, err := c.ScopeFor(r.Context(), pid)
		if err == nil && s.Project.Status != StatusActive {
			err = httpapi.ErrNotFound // a suspended or deleting project's site is gone
		}
		if errors.Is(err, httpapi.ErrNotFound) {
			httpapi.WriteError(w, r, httpapi.NotFound("no such project"))
			return
		}
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		r = r.WithContext(tenant.WithScope(r.Context(), s))
		c.narrowCORS(w, r, s)
		next.ServeHTTP(w, r)
	})
}
