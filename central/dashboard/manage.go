package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/tenant/outbox"
)

// The project's webhooks, jobs and form submissions. Their API routes are
// the dashboard API's mirrors of the /v1 routes (central/mirror.go): the
// pillars' own handlers, for a project of the session's workspace.

// projectOf is the session and the path's project, with the path of the
// project in the dashboard API; another workspace's project is the
// page's 404.
func (d *Dashboard) projectOf(r *http.Request) (*session, project, string, error) {
	s, err := d.signedIn(r)
	if err != nil {
		return nil, project{}, "", err
	}
	base := "/central/api/projects/" + url.PathEscape(chi.URLParam(r, "id"))
	var p project
	if err := d.call(r, "GET", base, nil, &p); err != nil {
		return nil, project{}, "", pageOf(err)
	}
	return s, p, base, nil
}

// page is the data every project page shows: the header, its tab.
func page(s *session, p project, tab, title string, data map[string]any) map[string]any {
	data["Session"], data["Project"], data["Tab"], data["Title"] = s, p, tab, p.Name+" · "+title
	return data
}

// cursorQuery passes the page's ?<param>= on to a list of the API as its
// ?cursor= (a page of two lists pages each by a parameter of its own).
func cursorQuery(r *http.Request, param string) string {
	if c := r.URL.Query().Get(param); c != "" {
		return "?cursor=" + url.QueryEscape(c)
	}
	return ""
}

// formProblem reports whether err is a refusal of what the user typed,
// or of a change the project's status does not allow, to be shown on the
// form rather than as an error page.
func formProblem(err error) (*problem, bool) {
	var pr *problem
	if errors.As(err, &pr) && (pr.Status == 400 || pr.Status == 409 || pr.Status == 422 || pr.Status == 402 ||
		pr.Status == 403 && pr.ProjectStatus != "") {
		if pr.ProjectStatus != "" {
			pr.Detail = statusText(pr.ProjectStatus)
		}
		return pr, true
	}
	return nil, false
}

func (d *Dashboard) webhooks(w http.ResponseWriter, r *http.Request) error {
	return d.webhooksPage(w, r, 200, map[string]any{})
}

// webhooksPage lists the endpoints with their actions and the form of a
// new one; data may carry a new signing secret, shown this once.
func (d *Dashboard) webhooksPage(w http.ResponseWriter, r *http.Request, status int, data map[string]any) error {
	s, p, base, err := d.projectOf(r)
	if err != nil {
		return err
	}
	var eps list[webhookEndpoint]
	if err := d.call(r, "GET", base+"/webhook-endpoints"+cursorQuery(r, "cursor"), nil, &eps); err != nil {
		return pageOf(err)
	}
	if _, ok := data["Checked"]; !ok {
		data["Checked"] = []string{}
	}
	data["Endpoints"], data["Topics"] = eps, outbox.Topics
	d.render(w, r, status, "webhooks", page(s, p, "webhooks", "Webhooks", data))
	return nil
}

func (d *Dashboard) createWebhook(w http.ResponseWriter, r *http.Request) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	events := r.PostForm["events"]
	body := map[string]any{"url": strings.TrimSpace(r.PostFormValue("url")), "events": events}
	var e webhookEndpoint
	err := d.call(r, "POST", "/central/api/projects/"+url.PathEscape(chi.URLParam(r, "id"))+"/webhook-endpoints", body, &e)
	if pr, ok := formProblem(err); ok {
		return d.webhooksPage(w, r, pr.Status, map[string]any{"Problem": pr, "Checked": events, "URL": body["url"]})
	}
	if err != nil {
		return pageOf(err)
	}
	return d.webhooksPage(w, r, 201, map[string]any{"NewSecret": e})
}

// setWebhookActive enables or disables an endpoint (active=true|false).
func (d *Dashboard) setWebhookActive(w http.ResponseWriter, r *http.Request) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	pid, eid := chi.URLParam(r, "id"), chi.URLParam(r, "eid")
	body := map[string]any{"is_active": r.PostFormValue("active") == "true"}
	if err := d.call(r, "PATCH", "/central/api/projects/"+url.PathEscape(pid)+"/webhook-endpoints/"+url.PathEscape(eid), body, nil); err != nil {
		return pageOf(err)
	}
	http.Redirect(w, r, Prefix+"/projects/"+url.PathEscape(pid)+"/webhooks", http.StatusSeeOther)
	return nil
}

// rotateWebhook replaces the signing secret and shows the new one once;
// the old one keeps signing for a day, so receivers can switch over.
func (d *Dashboard) rotateWebhook(w http.ResponseWriter, r *http.Request) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	path := "/central/api/projects/" + url.PathEscape(chi.URLParam(r, "id")) + "/webhook-endpoints/" + url.PathEscape(chi.URLParam(r, "eid")) + "/rotate-secret"
	var e webhookEndpoint
	if err := d.call(r, "POST", path, nil, &e); err != nil {
		return pageOf(err)
	}
	return d.webhooksPage(w, r, 200, map[string]any{"NewSecret": e, "Rotated": true})
}

func (d *Dashboard) deliveries(w http.ResponseWriter, r *http.Request) error {
	return d.deliveriesPage(w, r, 200, map[string]any{})
}

// deliveriesPage shows an endpoint's deliveries, newest first, each with
// its status, attempts and last error, and a redeliver button.
func (d *Dashboard) deliveriesPage(w http.ResponseWriter, r *http.Request, status int, data map[string]any) error {
	s, p, base, err := d.projectOf(r)
	if err != nil {
		return err
	}
	ep := base + "/webhook-endpoints/" + url.PathEscape(chi.URLParam(r, "eid"))
	var e webhookEndpoint
	if err := d.call(r, "GET", ep, nil, &e); err != nil {
		return pageOf(err)
	}
	var ds list[delivery]
	if err := d.call(r, "GET", ep+"/deliveries"+cursorQuery(r, "cursor"), nil, &ds); err != nil {
		return pageOf(err)
	}
	data["Endpoint"], data["Deliveries"], data["Redelivered"] = e, ds, r.URL.Query().Get("redelivered")
	d.render(w, r, status, "deliveries", page(s, p, "webhooks", "Deliveries", data))
	return nil
}

// redeliver sends a delivery's event again, as a new delivery, and goes
// back to the list, which shows it.
func (d *Dashboard) redeliver(w http.ResponseWriter, r *http.Request) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	pid, eid := chi.URLParam(r, "id"), chi.URLParam(r, "eid")
	api := "/central/api/projects/" + url.PathEscape(pid) + "/webhook-endpoints/" + url.PathEscape(eid) +
		"/deliveries/" + url.PathEscape(chi.URLParam(r, "did")) + "/redeliver"
	var nd delivery
	err := d.call(r, "POST", api, nil, &nd)
	if pr, ok := formProblem(err); ok {
		return d.deliveriesPage(w, r, pr.Status, map[string]any{"Problem": pr})
	}
	if err != nil {
		return pageOf(err)
	}
	http.Redirect(w, r, Prefix+"/projects/"+url.PathEscape(pid)+"/webhooks/"+url.PathEscape(eid)+"?redelivered="+url.QueryEscape(nd.ID), http.StatusSeeOther)
	return nil
}

// jobs lists the project's jobs, newest first, with status and progress.
func (d *Dashboard) jobs(w http.ResponseWriter, r *http.Request) error {
	s, p, base, err := d.projectOf(r)
	if err != nil {
		return err
	}
	var js list[job]
	if err := d.call(r, "GET", base+"/jobs"+cursorQuery(r, "cursor"), nil, &js); err != nil {
		return pageOf(err)
	}
	d.render(w, r, 200, "jobs", page(s, p, "jobs", "Jobs", map[string]any{"Jobs": js}))
	return nil
}

// submissions lists the project's form submissions, newest first.
func (d *Dashboard) submissions(w http.ResponseWriter, r *http.Request) error {
	s, p, base, err := d.projectOf(r)
	if err != nil {
		return err
	}
	var subs list[submission]
	if err := d.call(r, "GET", base+"/form-submissions"+cursorQuery(r, "cursor"), nil, &subs); err != nil {
		return pageOf(err)
	}
	d.render(w, r, 200, "submissions", page(s, p, "submissions", "Form submissions", map[string]any{"Submissions": subs}))
	return nil
}

// submissionsCSV passes the API's CSV export of the newsletter
// subscribers on as a download.
func (d *Dashboard) submissionsCSV(w http.ResponseWriter, r *http.Request) error {
	_, _, base, err := d.projectOf(r)
	if err != nil {
		return err
	}
	res, err := d.send(r, "GET", base+"/form-submissions", "text/csv", nil)
	if err != nil {
		return pageOf(err)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		return fmt.Errorf("dashboard: the export answered %q", ct)
	}
	h := w.Header()
	for _, k := range []string{"Content-Type", "Content-Disposition"} {
		h.Set(k, res.Header.Get(k))
	}
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(res.Body.Bytes())
	return nil
}
