package forms

import "net/http"

// publicPaths are the full paths of the submit endpoints PublicRoutes mounts
// under /v1/public.
var publicPaths = map[string]bool{
	"/v1/public/forms/newsletter": true,
	"/v1/public/forms/contact":    true,
}

// CORS lets a browser on any site post the public forms. It goes on the
// /v1/public router before central.PublicProject: a preflight (OPTIONS)
// carries no X-Service-Project-Key and must be answered before the project
// is resolved and before the router would refuse the method. It answers the
// preflight with 204 and adds Access-Control-Allow-Origin to every other
// response of the form endpoints, errors included, so a page can read a 422
// or a 429. The origin is "*": the endpoints take no credentials. Requests
// to other paths pass through untouched.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !publicPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			h.Set("Allow", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Service-Project-Key, Idempotency-Key, X-Request-Id")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Idempotent-Replayed")
		next.ServeHTTP(w, r)
	})
}
