package central

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/rs/cors"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/tenant"
)

// The CORS answers of the public surface (docs/decisions.md, "CORS of the
// public surface"). A site's pages call /v1/public/* from the visitor's
// browser; the rest of /v1 takes secret keys, which never belong in a
// page, so it answers browsers nothing. rs/cors writes every header.
//
// The answer is decided in two steps, because the project is known only
// after the per-IP limiter and central.PublicProject, and their errors
// must be readable by the page too:
//
//   - PublicCORS, on the root router before the limiter, answers every
//     actual request of the surface for any origin ("*"): a 429, a 400
//     naming no project or a 404 of an unknown project is readable.
//   - Once the project is resolved, a project with allowed_origins
//     narrows that answer (narrowCORS): the origin is echoed when listed,
//     and the header removed when not, so the browser refuses the answer.
//   - A preflight (OPTIONS with Access-Control-Request-Method) is
//     answered by PublicPreflight after the limiter, for any origin unless
//     the request names its project (?project_id=, or a media URL's
//     path): a preflight carries no X-Service-Project-Key value, and it
//     grants nothing by itself, as the actual answer's
//     Access-Control-Allow-Origin is what the browser enforces.
//
// No credentials are ever allowed: the surface takes none. Vary names
// Origin once: VaryPublic writes it on every answer of the surface, and
// what rs/cors adds again is trimmed.

// publicCORS holds the two configurations of the surface: any origin, and
// the origins of the project on the request's context.
type publicCORS struct {
	anyOrigin, listed *cors.Cors
}

func newPublicCORS() publicCORS {
	opts := func() cors.Options {
		return cors.Options{
			AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost},
			AllowedHeaders: openapi.PublicRequestHeaders,
			ExposedHeaders: openapi.PublicExposedHeaders, // the document lists what is configured here
			MaxAge:         600,                          // browsers cap it lower (Chromium: 2 h)
			// A preflight's 204 is written by answerPreflight, once Vary
			// is right.
			OptionsPassthrough: true,
		}
	}
	anyOrigin := opts()
	anyOrigin.AllowedOrigins = []string{"*"}
	listed := opts()
	listed.AllowOriginVaryRequestFunc = func(r *http.Request, origin string) (bool, []string) {
		s := tenant.FromContext(r.Context())
		return s != nil && slices.Contains(s.Project.AllowedOrigins, origin), nil
	}
	return publicCORS{anyOrigin: cors.New(anyOrigin), listed: cors.New(listed)}
}

// isPreflight reports whether r is a CORS preflight.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}

// restricts reports whether the project answers only the origins it lists.
func restricts(s *tenant.Scope) bool { return s != nil && len(s.Project.AllowedOrigins) > 0 }

// PublicCORS answers the actual requests of the public surface for any
// origin; other paths pass untouched. It goes on the root router before
// the rate limiter, so that every answer of the surface, a 429 included,
// is readable by a page. Preflights go on to PublicPreflight.
func (c *Central) PublicCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsPublic(r.URL.Path) && !isPreflight(r) {
			h := w.Header()
			vary := len(h["Vary"])
			c.cors.anyOrigin.HandlerFunc(w, r)
			h["Vary"] = h["Vary"][:vary] // VaryPublic named Origin already
		}
		next.ServeHTTP(w, r)
	})
}

// PublicPreflight answers the preflights of the public surface with 204.
// It goes on the /v1/public router after the limiter (a preflight is
// counted and carries the limit headers like any answer) and before
// PublicProject, which would refuse a request naming no project.
func (c *Central) PublicPreflight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isPreflight(r) {
			next.ServeHTTP(w, r)
			return
		}
		r = withRequestHeadersAsBrowsersSend(r)
		// A preflight names its project only in the URL; an unknown one
		// gets the open answer, and its actual request a readable 404.
		if pid := PublicProjectID(r); id.Valid("prj_", pid) {
			if s, err := c.ScopeFor(r.Context(), pid); err == nil && restricts(s) {
				answerPreflight(c.cors.listed, w, r.WithContext(tenant.WithScope(r.Context(), s)))
				return
			}
		}
		answerPreflight(c.cors.anyOrigin, w, r)
	})
}

// preflightVary is what a preflight's answer varies on besides
// PublicVary.
const preflightVary = "Access-Control-Request-Method, Access-Control-Request-Headers"

// answerPreflight answers the preflight r with cc and 204. rs/cors adds
// Origin to Vary again; the answer names it once, as VaryPublic did.
func answerPreflight(cc *cors.Cors, w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	vary := len(h["Vary"])
	cc.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h["Vary"] = append(slices.Clip(h["Vary"][:vary]), preflightVary) // Clip: never write into rs/cors's own slice
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(w, r)
}

// withRequestHeadersAsBrowsersSend returns r with its
// Access-Control-Request-Headers as the Fetch standard has browsers
// write it: one list of lower-case names, sorted, each once. rs/cors
// accepts only that form, so a preflight naming If-None-Match (or the
// names in another order) would otherwise get no answer a client can
// use. The names allowed are the same.
func withRequestHeadersAsBrowsersSend(r *http.Request) *http.Request {
	values := r.Header.Values("Access-Control-Request-Headers")
	if len(values) == 0 {
		return r
	}
	var names []string
	for _, v := range values {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	r = r.Clone(r.Context())
	r.Header.Set("Access-Control-Request-Headers", strings.Join(slices.Compact(names), ","))
	return r
}

// narrowCORS replaces the open answer PublicCORS gave r with the answer of
// s's project when the project lists its origins. r carries s.
func (c *Central) narrowCORS(w http.ResponseWriter, r *http.Request, s *tenant.Scope) {
	if !restricts(s) {
		return
	}
	h := w.Header()
	h.Del("Access-Control-Allow-Origin")
	h.Del("Access-Control-Expose-Headers")
	vary := len(h["Vary"])
	c.cors.listed.HandlerFunc(w, r)
	h["Vary"] = h["Vary"][:vary] // the open answer already varies on Origin
}

// MaxAllowedOrigins bounds a project's allowed_origins.
const MaxAllowedOrigins = 50

// originMsg is the 422 message of a bad allowed_origins entry.
const originMsg = "must be origins such as https://bakery.example: http or https, a lower-case host and an optional port, " +
	"with no path, query, fragment or wildcard"

// ValidOrigin reports whether o is an origin as a browser sends it in
// Origin: scheme, lower-case host and optional port (not the scheme's
// default one, which browsers leave out), nothing else. Only such a
// string can ever equal a request's Origin.
func ValidOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.User != nil {
		return false
	}
	if strings.ContainsAny(u.Host, "*%") || u.Host != strings.ToLower(u.Host) {
		return false
	}
	if p := u.Port(); p == "0" || (p == "80" && u.Scheme == "http") || (p == "443" && u.Scheme == "https") || strings.HasPrefix(p, "0") {
		return false
	}
	return o == u.Scheme+"://"+u.Host // no path, query or fragment, no trailing slash
}

// checkOrigins validates a project's allowed_origins.
func checkOrigins(v *httpapi.Validator, origins []string) {
	v.Check(len(origins) <= MaxAllowedOrigins, "allowed_origins", "must have at most 50 entries")
	for _, o := range origins {
		if !ValidOrigin(o) {
			v.Check(false, "allowed_origins", originMsg)
			return
		}
	}
}

// checkSiteURL validates a project's site_url: an absolute http(s) URL
// (a path is allowed, for a site under one), or "" to clear it.
func checkSiteURL(v *httpapi.Validator, s string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	ok := err == nil && len(s) <= 2048 && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" && u.User == nil &&
		u.RawQuery == "" && u.Fragment == "" && !strings.HasSuffix(s, "#") && !strings.HasSuffix(s, "?") && httpapi.ValidText(s)
	v.Check(ok, "site_url", "must be an absolute http or https URL of at most 2048 characters, with no query or fragment")
}
