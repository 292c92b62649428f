package httpapi

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// NewRouter returns a chi router whose unknown routes answer 404 not_found
// and whose known routes with a wrong method answer 400 bad_request with
// an Allow header, both as problem+json.
func NewRouter() *chi.Mux {
	r := chi.NewRouter()
	r.NotFound(H(func(w http.ResponseWriter, req *http.Request) error {
		return NotFound("no route matches " + req.URL.Path)
	}))
	r.MethodNotAllowed(H(func(w http.ResponseWriter, req *http.Request) error {
		var allowed []string
		for _, m := range methods {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		e := BadRequest("method " + req.Method + " is not allowed here")
		if len(allowed) > 0 {
			e = e.WithHeader("Allow", strings.Join(allowed, ", "))
		}
		return e
	}))
	return r
}
