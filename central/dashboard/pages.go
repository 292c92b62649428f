package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// authFailedText is what the contract's auth.failed message says to a person.
const authFailedText = "The email or password is not correct."

// signedIn is the session of the request's token, or errSignedOut.
func (d *Dashboard) signedIn(r *http.Request) (*session, error) {
	if c, err := r.Cookie(sessionCookie); err != nil || c.Value == "" {
		return nil, errSignedOut
	}
	s := &session{}
	if err := d.call(r, "GET", "/central/api/me", nil, s); err != nil {
		return nil, err
	}
	return s, nil
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) error {
	d.render(w, r, 200, "login", map[string]any{"Title": "Sign in", "Step": "email"})
	return nil
}

// login is both steps of the sign-in form: with an email only it asks
// tenants-for-email whether to show a workspace chooser and asks for the
// password; with the password it logs in.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) error {
	email := strings.TrimSpace(r.PostFormValue("email"))
	password := r.PostFormValue("password")
	data := map[string]any{"Title": "Sign in", "Step": "password", "Email": email, "TenantID": int64(0)}
	if email == "" {
		data["Step"], data["Error"] = "email", "Enter your email."
		d.render(w, r, 422, "login", data)
		return nil
	}
	var found struct {
		Tenants []tenant `json:"tenants"`
	}
	if err := d.call(r, "GET", "/central/api/tenants-for-email?email="+url.QueryEscape(email), nil, &found); err != nil {
		return d.loginProblem(w, r, data, err)
	}
	if len(found.Tenants) > 1 {
		data["Tenants"] = found.Tenants
	}
	var tenantID *int64
	if s := r.PostFormValue("tenant_id"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return &pageError{status: 400, msg: "That workspace is not one of this email's."}
		}
		tenantID = &n
		data["TenantID"] = n
	}
	if password == "" {
		if r.PostFormValue("step") == "password" {
			data["Error"] = "Enter your password."
			d.render(w, r, 422, "login", data)
			return nil
		}
		d.render(w, r, 200, "login", data)
		return nil
	}
	var res struct {
		Token string `json:"token"`
	}
	if err := d.call(r, "POST", "/central/api/login", map[string]any{"email": email, "password": password, "tenant_id": tenantID}, &res); err != nil {
		return d.loginProblem(w, r, data, err)
	}
	http.SetCookie(w, d.cookie(r, sessionCookie, res.Token, 0))
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	return nil
}

// loginProblem shows a refused login on the form: wrong credentials as
// the contract's auth.failed, a lockout with when to retry.
func (d *Dashboard) loginProblem(w http.ResponseWriter, r *http.Request, data map[string]any, err error) error {
	var p *problem
	if !errors.As(err, &p) {
		return err
	}
	switch {
	case p.Message == "auth.failed":
		data["Error"], data["ErrorCode"] = authFailedText, p.Message
	case p.Status == 429:
		at := time.Now().Add(time.Duration(p.RetryAfter) * time.Second).UTC()
		data["Error"] = fmt.Sprintf("Too many attempts. Try again in %s (after %s UTC).", wait(p.RetryAfter), at.Format("15:04"))
	case p.Status == 422 || p.Status == 400:
		data["Error"] = p.Detail
	default:
		return err
	}
	d.render(w, r, p.Status, "login", data)
	return nil
}

// wait says a number of seconds the way a person reads it.
func wait(s int) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%d seconds", s)
	case s < 120:
		return "a minute"
	default:
		return fmt.Sprintf("%d minutes", (s+59)/60)
	}
}

// logout ends the session on the server (its token is refused from now
// on, wherever it was copied) and drops the cookie. A session that had
// already ended is signed out all the same.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) error {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		if err := d.call(r, "POST", "/central/api/logout", nil, nil); err != nil && !errors.Is(err, errSignedOut) {
			return err
		}
	}
	http.SetCookie(w, d.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
	return nil
}

func (d *Dashboard) projects(w http.ResponseWriter, r *http.Request) error {
	s, err := d.signedIn(r)
	if err != nil {
		return err
	}
	return d.projectsPage(w, r, s, 200, map[string]any{})
}

func (d *Dashboard) projectsPage(w http.ResponseWriter, r *http.Request, s *session, status int, data map[string]any) error {
	// Each row costs two more API calls (usage, keys): pages stay short.
	path := "/central/api/projects?limit=25"
	if c := r.URL.Query().Get("cursor"); c != "" {
		path += "&cursor=" + url.QueryEscape(c)
	}
	var ps list[project]
	if err := d.call(r, "GET", path, nil, &ps); err != nil {
		return err
	}
	rows := make([]projectRow, 0, len(ps.Data))
	for _, p := range ps.Data {
		row := projectRow{project: p}
		if p.Status == "deleting" {
			rows = append(rows, row) // shown as such; nothing of it is left to read
			continue
		}
		u, err := d.usage(r, p.ID)
		if err != nil {
			return err
		}
		row.CreditsUsed, row.PlanCredits = u.CreditsUsed, u.PlanCredits
		var keys list[apiKey]
		if err := d.call(r, "GET", "/central/api/projects/"+url.PathEscape(p.ID)+"/api-keys", nil, &keys); err != nil {
			return err
		}
		for _, k := range keys.Data {
			if k.LastUsedAt != nil && (row.LastActivity == nil || k.LastUsedAt.After(*row.LastActivity)) {
				row.LastActivity = k.LastUsedAt
			}
		}
		rows = append(rows, row)
	}
	data["Title"], data["Session"], data["Projects"], data["Rows"] = "Projects", s, ps, rows
	d.render(w, r, status, "projects", data)
	return nil
}

func (d *Dashboard) createProject(w http.ResponseWriter, r *http.Request) error {
	s, err := d.signedIn(r)
	if err != nil {
		return err
	}
	body := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name"))}
	if v := strings.TrimSpace(r.PostFormValue("default_language")); v != "" {
		body["default_language"] = v
	}
	if v := strings.TrimSpace(r.PostFormValue("timezone")); v != "" {
		body["timezone"] = v
	}
	if v := fields(r.PostFormValue("target_languages")); len(v) > 0 {
		body["target_languages"] = v
	}
	if v := r.PostFormValue("plan"); v != "" {
		body["plan"] = v
	}
	var p project
	if err := d.call(r, "POST", "/central/api/projects", body, &p); err != nil {
		var pr *problem
		// 403: a plan the operator does not let dashboard users choose.
		if errors.As(err, &pr) && (pr.Status == 422 || pr.Status == 409 || pr.Status == 400 || pr.Status == 403) {
			return d.projectsPage(w, r, s, pr.Status, map[string]any{"Problem": pr, "Form": r.PostForm})
		}
		return err
	}
	http.Redirect(w, r, Prefix+"/projects/"+p.ID, http.StatusSeeOther)
	return nil
}

// projectRow is a project in the list with its activity: credits used
// this period and the last use of any of its keys.
type projectRow struct {
	project
	CreditsUsed, PlanCredits int64
	LastActivity             *time.Time
}

// fields splits a list typed with commas or spaces.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// scopeChoices are the scopes the key form offers, the dashboard's
// defaults first (checked), the rest of each pillar's after.
var scopeChoices = []string{
	"content:read", "content:write", "blog:read", "blog:write", "social:read", "social:write",
	"social:publish", "social:connect", "brand:read", "brand:write", "images:read", "images:write",
	"galleries:read", "galleries:write", "forms:read", "forms:write", "booking:read", "booking:write", "booking:admin",
	"commerce:read", "commerce:write", "commerce:admin", "webhooks:read", "webhooks:write", "jobs:read",
	"project:read", "project:write", "project:admin",
}

// defaultScopes are checked in a new key's form: the API's default set
// for dashboard keys.
var defaultScopes = scopeChoices[:6]

func (d *Dashboard) project(w http.ResponseWriter, r *http.Request) error {
	return d.projectPage(w, r, 200, map[string]any{})
}

// projectPage shows a project with its keys; another workspace's project
// is the API's 404, so the page's.
func (d *Dashboard) projectPage(w http.ResponseWriter, r *http.Request, status int, data map[string]any) error {
	s, err := d.signedIn(r)
	if err != nil {
		return err
	}
	base := "/central/api/projects/" + url.PathEscape(chi.URLParam(r, "id"))
	var p project
	if err := d.call(r, "GET", base, nil, &p); err != nil {
		return pageOf(err)
	}
	data["Title"], data["Session"], data["Project"], data["Tab"] = p.Name, s, p, "overview"
	if p.Status == "deleting" {
		// Its keys are revoked and its usage gone with its data: the
		// page shows what it was and that it is going.
		d.render(w, r, status, "project", data)
		return nil
	}
	var keys list[apiKey]
	if err := d.call(r, "GET", base+"/api-keys", nil, &keys); err != nil {
		return pageOf(err)
	}
	u, err := d.usage(r, p.ID)
	if err != nil {
		return pageOf(err)
	}
	data["Usage"], data["Chart"] = u, newUsageChart(u)
	if _, ok := data["Checked"]; !ok {
		data["Checked"] = defaultScopes
	}
	data["Keys"], data["Scopes"] = keys.Data, scopeChoices
	d.render(w, r, status, "project", data)
	return nil
}

// pageOf turns the API's 404 into the page's; a rate limit (the user's,
// the address's, or the project's, which the mirrored routes count in
// like the API's) into a page saying when to retry; and a change the
// project's status refuses into a page saying so.
func pageOf(err error) error {
	var p *problem
	if !errors.As(err, &p) {
		return err
	}
	switch {
	case p.Status == 404:
		return errNotFound
	case p.Status == 429:
		retry := max(p.RetryAfter, 1)
		return &pageError{status: 429, msg: fmt.Sprintf("Too many requests. Try again in %s.", wait(retry)), retryAfter: retry}
	case p.Status == 403 && p.ProjectStatus != "":
		return &pageError{status: 403, msg: statusText(p.ProjectStatus)}
	}
	return err
}

// statusText says what a project's status lets a user do.
func statusText(status string) string {
	switch status {
	case "suspended":
		return "This project is suspended by the platform operator: you can look at it, but not change it."
	case "deleting":
		return "This project is being deleted: its data is no longer available."
	}
	return "This project is " + status + ": it cannot be changed."
}

// createKey mints a key and shows its secret on this answer only: the
// API never gives it again, and the page is not stored (no-store).
func (d *Dashboard) createKey(w http.ResponseWriter, r *http.Request) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	scopes := r.PostForm["scopes"]
	body := map[string]any{"name": strings.TrimSpace(r.PostFormValue("name")), "scopes": scopes}
	var k apiKey
	err := d.call(r, "POST", "/central/api/projects/"+url.PathEscape(chi.URLParam(r, "id"))+"/api-keys", body, &k)
	if pr, ok := formProblem(err); ok {
		return d.projectPage(w, r, pr.Status, map[string]any{"Problem": pr, "Checked": scopes, "KeyName": body["name"]})
	}
	if err != nil {
		return pageOf(err)
	}
	return d.projectPage(w, r, 201, map[string]any{"NewKey": k})
}

// revokeKey asks first (a page with the key's name and one button), then
// revokes.
func (d *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	pid, kid := chi.URLParam(r, "id"), chi.URLParam(r, "key_id")
	if r.PostFormValue("confirm") != "yes" {
		return d.projectPage(w, r, 200, map[string]any{"Revoke": kid})
	}
	if err := d.call(r, "DELETE", "/central/api/projects/"+url.PathEscape(pid)+"/api-keys/"+url.PathEscape(kid), nil, nil); err != nil {
		return pageOf(err)
	}
	http.Redirect(w, r, Prefix+"/projects/"+url.PathEscape(pid)+"?revoked="+url.QueryEscape(kid), http.StatusSeeOther)
	return nil
}

// when formats an optional time for a table cell.
func when(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// ptr is t for when, which takes the optional times of the API.
func ptr(t time.Time) *time.Time { return &t }

// yes reports whether an optional flag of the API (has_draft) is set
// and true.
func yes(b *bool) bool { return b != nil && *b }

// has reports whether list holds s.
func has(list []string, s string) bool { return slices.Contains(list, s) }
