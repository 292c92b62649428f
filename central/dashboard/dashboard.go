// Package dashboard is the web dashboard served at /dashboard: the pages
// where workspace users sign in, see their projects and manage their keys,
// webhooks, jobs and form submissions, and follow their content's drafts,
// versions and releases.
//
// The pages hold no data access of their own: every read and write is a
// request to the central API (/central/api, the same handlers the JSON
// clients call) sent through the server's router in process, with the
// signed-in user's dashboard token. What the API refuses (another
// workspace's project, a wrong password) the pages refuse alike.
package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/central/inproc"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/ratelimit"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

const (
	// sessionCookie holds the central dashboard token (a JWT).
	sessionCookie = "plinth_dashboard"
	// csrfCookie holds the double-submit token every form carries back.
	csrfCookie = "plinth_csrf"
	// Prefix is where the dashboard is mounted.
	Prefix = "/dashboard"
)

// Dashboard serves the dashboard's pages.
type Dashboard struct {
	// api reaches /central/api in the process.
	api    *inproc.Caller
	pages  map[string]*template.Template
	logger *slog.Logger
	// trusted are the proxies whose X-Forwarded-Proto makes the cookies
	// Secure (PLINTH_TRUSTED_PROXIES).
	trusted []netip.Prefix
}

// New builds the dashboard over api, the server's whole handler: the
// pages reach /central/api through it. trusted are the proxies whose
// X-Forwarded-Proto is believed.
func New(api http.Handler, logger *slog.Logger, trusted []netip.Prefix) (*Dashboard, error) {
	d := &Dashboard{api: &inproc.Caller{Handler: api, Headers: pageHeaders}, pages: map[string]*template.Template{}, logger: logger, trusted: trusted}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{"when": when, "has": has, "ptr": ptr, "yes": yes}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("dashboard template %s: %w", n, err)
		}
		d.pages[n[len("templates/"):len(n)-len(".html")]] = t
	}
	return d, nil
}

// Routes mounts the pages on r (the router at Prefix).
func (d *Dashboard) Routes(r chi.Router) {
	r.Use(secureHeaders, d.csrf, onePage)
	static, _ := fs.Sub(staticFS, "static")
	r.Get("/static/*", http.StripPrefix(Prefix+"/static/", staticHandler(http.FileServerFS(static))).ServeHTTP)
	r.Get("/", d.h(d.projects))
	r.Get("/login", d.h(d.loginPage))
	r.Post("/login", d.h(d.login))
	r.Post("/logout", d.h(d.logout))
	r.Post("/projects", d.h(d.createProject))
	r.Get("/projects/{id}", d.h(d.project))
	r.Post("/projects/{id}/keys", d.h(d.createKey))
	r.Post("/projects/{id}/keys/{key_id}/revoke", d.h(d.revokeKey))
	r.Get("/projects/{id}/content", d.h(d.content))
	r.Get("/projects/{id}/versions", d.h(d.findItem))
	r.Post("/projects/{id}/versions/restore", d.h(d.restoreVersion))
	r.Post("/projects/{id}/versions/publish", d.h(d.publishDraft))
	r.Get("/projects/{id}/versions/{type}", d.h(d.versions)) // the brand
	r.Get("/projects/{id}/versions/{type}/{ref}", d.h(d.versions))
	r.Get("/projects/{id}/releases", d.h(d.releases))
	r.Post("/projects/{id}/releases/{rid}/publish", d.h(d.publishRelease))
	r.Post("/projects/{id}/releases/{rid}/cancel", d.h(d.cancelRelease))
	r.Get("/projects/{id}/webhooks", d.h(d.webhooks))
	r.Post("/projects/{id}/webhooks", d.h(d.createWebhook))
	r.Get("/projects/{id}/webhooks/{eid}", d.h(d.deliveries))
	r.Post("/projects/{id}/webhooks/{eid}/active", d.h(d.setWebhookActive))
	r.Post("/projects/{id}/webhooks/{eid}/rotate", d.h(d.rotateWebhook))
	r.Post("/projects/{id}/webhooks/{eid}/deliveries/{did}/redeliver", d.h(d.redeliver))
	r.Get("/projects/{id}/jobs", d.h(d.jobs))
	r.Get("/projects/{id}/submissions", d.h(d.submissions))
	r.Get("/projects/{id}/submissions.csv", d.h(d.submissionsCSV))
	r.NotFound(d.h(func(w http.ResponseWriter, r *http.Request) error { return errNotFound }))
}

// Home sends a browser to the dashboard, which asks it to sign in when
// it has no session.
func Home(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, Prefix+"/", http.StatusFound)
}

// secureHeaders keeps the pages out of frames and every script out but
// the dashboard's own files.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// onePage makes the requests a page sends to the dashboard API one
// request to its rate limits (ratelimit.Bundle): a list of 25 projects
// reads the API 51 times, and costs the user one request like any page.
func onePage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(ratelimit.Bundle(r.Context())))
	})
}

func staticHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

type csrfKey struct{}

// csrf gives every browser a random token in a cookie and refuses a POST
// whose form does not carry the same token back: another site can make
// the browser send the cookie but cannot read it to put it in the form.
func (d *Dashboard) csrf(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := ""
		if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 {
			tok = c.Value
		}
		if r.Method == http.MethodPost {
			form := r.PostFormValue("csrf")
			if tok == "" || subtle.ConstantTimeCompare([]byte(form), []byte(tok)) != 1 {
				d.fail(w, r, &pageError{status: 403, msg: "This form has expired or did not come from the dashboard. Reload the page and try again."})
				return
			}
		}
		if tok == "" {
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			tok = base64.RawURLEncoding.EncodeToString(b)
			http.SetCookie(w, d.cookie(r, csrfCookie, tok, 0))
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), csrfKey{}, tok)))
	})
}

// cookie is one of the dashboard's cookies: HttpOnly, SameSite=Strict,
// Secure when the page came over HTTPS, directly or through a trusted
// proxy (httpapi.OverHTTPS: a client's own X-Forwarded-Proto does not
// count). maxAge < 0 deletes it; 0 makes it last the browser session.
func (d *Dashboard) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: httpapi.OverHTTPS(r, d.trusted)}
}

// pageError is a failure shown as a page with its status.
type pageError struct {
	status int
	msg    string
	// retryAfter is the Retry-After of a 429 page, in seconds.
	retryAfter int
}

func (e *pageError) Error() string { return e.msg }

var errNotFound = &pageError{status: 404, msg: "There is no such page in this workspace."}

// errSignedOut sends the browser to the sign-in page.
var errSignedOut = errors.New("dashboard: not signed in")

// h adapts a handler that returns an error: not signed in redirects to the
// sign-in page; a pageError is its page; anything else is a 500 page with
// the cause logged, not shown.
func (d *Dashboard) h(fn func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			d.fail(w, r, err)
		}
	}
}

func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errSignedOut) {
		http.SetCookie(w, d.cookie(r, sessionCookie, "", -1))
		http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
		return
	}
	var pe *pageError
	if !errors.As(pageOf(err), &pe) {
		d.logger.ErrorContext(r.Context(), "dashboard page", "path", r.URL.Path, "err", err)
		pe = &pageError{status: 500, msg: "Something went wrong on our side. Try again in a moment."}
	}
	if pe.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(pe.retryAfter))
	}
	data := map[string]any{"Title": http.StatusText(pe.status), "Message": pe.msg}
	// A signed-in user keeps the header (workspace, sign out) on an error page.
	if pe.status != 500 {
		if s, err := d.signedIn(r); err == nil {
			data["Session"] = s
		}
	}
	d.render(w, r, pe.status, "error", data)
}

// render writes a page; data gets the CSRF token and, when signed in, the
// session's names.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, page string, data map[string]any) {
	t, ok := d.pages[page]
	if !ok {
		panic("dashboard: no page " + page)
	}
	data["CSRF"], _ = r.Context().Value(csrfKey{}).(string)
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		d.logger.ErrorContext(r.Context(), "dashboard template", "page", page, "err", err)
		http.Error(w, "internal error", 500)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
