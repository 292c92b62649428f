package forms

import "net/http"

// publicPaths are the full paths of the submit endpoints PublicRoutes mounts
// under /v1/public.
var publicPaths = map[string]bool{
	"/v1/public/forms/newsletter": true,
	"/v1/public/forms/contact":    true,
}

// CORS lets a page on any site read the responses of the public form
// endpoints: it adds Access-Control-Allow-Origin to every response of those
// paths, errors included. It goes on the root router, before the rate
// limiter and central.PublicProject, so that a 429 or a 404 is readable too.
// The origin is "*": the endpoints take no credentials. Other paths pass
// through untouched. Preflights are answered by Preflight.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if publicPaths[r.URL.Path] {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", "*")
			h.Set("Access-Control-Expose-Headers", "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Idempotent-Replayed")
		}
		next.ServeHTTP(w, r)
	})
}

// Preflight answers a browser's CORS preflight (OPTIONS) of the public form
// endpoints with 204. It goes on the /v1/public router before
// central.PublicProject: a preflight carries no X-Service-Project-Key, and
// the router would refuse the method with 400. It runs after the rate
// limiter, so a preflight is counted and carries the limit headers like
// any other response.
func Preflight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodOptions || !publicPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Allow", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, X-Service-Project-Key, Idempotency-Key, X-Request-Id")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
	})
}
