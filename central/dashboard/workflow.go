package dashboard

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/tenant/drafts"
)

// The content workflow's pages (docs/api/content-workflow.md): the
// project's pages and blog posts with their unpublished changes, an
// item's versions (one restored into the draft, the draft published),
// and the releases (published now, or cancelled). Their API routes are
// the dashboard API's mirrors of the /v1 routes (central/mirror.go).

// itemTypes are the types of item with drafts and versions, by the name
// the API gives them (a release's items, the MCP tools), which the pages'
// paths use too (/versions/{type}/{ref}). api is where a type's items are
// under the project in the dashboard API: an item is api/{ref}, but the
// brand, the project's one, is api itself.
var itemTypes = map[string]struct{ label, api string }{
	drafts.Page:       {"Page", "/pages"},
	drafts.Post:       {"Blog post", "/blog-posts"},
	drafts.Component:  {"Component", "/components"},
	drafts.ContentKey: {"Content key", "/content"},
	drafts.Gallery:    {"Gallery", "/galleries"},
	drafts.Brand:      {"Brand", "/brand"},
}

// itemPaths are the dashboard API's path of the item typ ref of the
// project pid, and the path of its versions page. An unknown type, or a
// reference the type does not take (or lacks), is the page's 404.
func itemPaths(pid, typ, ref string) (api, view string, err error) {
	t, ok := itemTypes[typ]
	if !ok || (typ == drafts.Brand) != (ref == "") {
		return "", "", errNotFound
	}
	api = "/central/api/projects/" + url.PathEscape(pid) + t.api
	view = Prefix + "/projects/" + url.PathEscape(pid) + "/versions/" + typ
	if ref != "" {
		api += "/" + url.PathEscape(ref)
		view += "/" + url.PathEscape(ref)
	}
	return api, view, nil
}

// itemHead is what the versions page shows of the item itself. Each type
// names itself in one of the fields (a page's title, a component's name,
// a content key's key); a gallery comes wrapped in data.
type itemHead struct {
	Title    string    `json:"title"`
	Name     string    `json:"name"`
	Key      string    `json:"key"`
	Status   string    `json:"status"`
	HasDraft bool      `json:"has_draft"`
	Data     *itemHead `json:"data"`
}

// shownVersion is a version with its data as the page shows it.
type shownVersion struct {
	version
	JSON string
}

// content lists the project's pages and blog posts, each with its status
// and whether it has unpublished changes, leading to its versions. Each
// list pages on by a parameter of its own (?pages=, ?posts=).
func (d *Dashboard) content(w http.ResponseWriter, r *http.Request) error {
	s, p, base, err := d.projectOf(r)
	if err != nil {
		return err
	}
	var pages list[contentPage]
	if err := d.call(r, "GET", base+"/pages"+cursorQuery(r, "pages"), nil, &pages); err != nil {
		return pageOf(err)
	}
	var posts list[blogPost]
	if err := d.call(r, "GET", base+"/blog-posts"+cursorQuery(r, "posts"), nil, &posts); err != nil {
		return pageOf(err)
	}
	d.render(w, r, 200, "content", page(s, p, "content", "Content", map[string]any{"Pages": pages, "Posts": posts}))
	return nil
}

// findItem opens the versions of the item the content page's form names
// by its type and reference (the types it does not list).
func (d *Dashboard) findItem(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	_, view, err := itemPaths(chi.URLParam(r, "id"), q.Get("type"), strings.TrimSpace(q.Get("ref")))
	if err != nil {
		return err
	}
	http.Redirect(w, r, view, http.StatusSeeOther)
	return nil
}

func (d *Dashboard) versions(w http.ResponseWriter, r *http.Request) error {
	return d.versionsPage(w, r, 200, chi.URLParam(r, "type"), chi.URLParam(r, "ref"), map[string]any{})
}

// versionsPage shows an item with its versions, newest first, each with a
// restore button; the version of ?n= with its data; and, while the item
// has a draft, the button that publishes it.
func (d *Dashboard) versionsPage(w http.ResponseWriter, r *http.Request, status int, typ, ref string, data map[string]any) error {
	api, view, err := itemPaths(chi.URLParam(r, "id"), typ, ref)
	if err != nil {
		return err
	}
	s, p, _, err := d.projectOf(r)
	if err != nil {
		return err
	}
	var it itemHead
	if err := d.call(r, "GET", api, nil, &it); err != nil {
		return pageOf(err)
	}
	if it.Data != nil {
		it = *it.Data
	}
	var vs list[version]
	if err := d.call(r, "GET", api+"/versions"+cursorQuery(r, "cursor"), nil, &vs); err != nil {
		return pageOf(err)
	}
	q := r.URL.Query()
	if n := q.Get("n"); n != "" {
		shown, err := d.version(r, api, n)
		if err != nil {
			return err
		}
		data["Shown"] = shown
	}
	label := itemTypes[typ].label
	name := cmp.Or(it.Title, it.Name, it.Key, ref)
	data["Type"], data["Ref"], data["Label"], data["Name"], data["Item"] = typ, ref, label, name, it
	data["Versions"], data["View"], data["Restored"], data["Published"] = vs, view, q.Get("restored"), q.Has("published")
	// The key id of the user's own writes (central.dashboardKeyID).
	data["Me"] = "dashboard:user:" + strconv.FormatInt(s.User.ID, 10)
	d.render(w, r, status, "versions", page(s, p, "content", cmp.Or(name, label)+" · Versions", data))
	return nil
}

// version reads version n of the item at api, its data indented.
func (d *Dashboard) version(r *http.Request, api, n string) (*shownVersion, error) {
	var v version
	if err := d.call(r, "GET", api+"/versions/"+url.PathEscape(n), nil, &v); err != nil {
		return nil, pageOf(err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, v.Data, "", "  "); err != nil {
		return nil, err
	}
	return &shownVersion{version: v, JSON: b.String()}, nil
}

// restoreVersion makes version n of the form's item its draft, then shows
// the item's versions, the restore the newest. Nothing live changes.
func (d *Dashboard) restoreVersion(w http.ResponseWriter, r *http.Request) error {
	n := r.PostFormValue("n")
	return d.itemAction(w, r, "/versions/"+url.PathEscape(n)+"/restore", "?restored="+url.QueryEscape(n))
}

// publishDraft makes the form's item's draft live, whole.
func (d *Dashboard) publishDraft(w http.ResponseWriter, r *http.Request) error {
	return d.itemAction(w, r, "/publish", "?published")
}

// itemAction posts to the route action of the item the form names (type,
// ref) and goes back to its versions page with query, which says what
// was done; a refusal (a draft that can no longer go live, credits
// short, a suspended project) is shown on that page.
func (d *Dashboard) itemAction(w http.ResponseWriter, r *http.Request, action, query string) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	typ, ref := r.PostFormValue("type"), r.PostFormValue("ref")
	api, view, err := itemPaths(chi.URLParam(r, "id"), typ, ref)
	if err != nil {
		return err
	}
	err = d.call(r, "POST", api+action, nil, nil)
	if pr, ok := formProblem(err); ok {
		return d.versionsPage(w, r, pr.Status, typ, ref, map[string]any{"Problem": pr})
	}
	if err != nil {
		return pageOf(err)
	}
	http.Redirect(w, r, view+query, http.StatusSeeOther)
	return nil
}

func (d *Dashboard) releases(w http.ResponseWriter, r *http.Request) error {
	return d.releasesPage(w, r, 200, map[string]any{})
}

// releasesPage lists the project's releases, newest first, with why one
// could not publish, and the buttons of those still pending or scheduled.
func (d *Dashboard) releasesPage(w http.ResponseWriter, r *http.Request, status int, data map[string]any) error {
	s, p, base, err := d.projectOf(r)
	if err != nil {
		return err
	}
	var rels list[release]
	if err := d.call(r, "GET", base+"/releases"+cursorQuery(r, "cursor"), nil, &rels); err != nil {
		return pageOf(err)
	}
	q := r.URL.Query()
	data["Releases"], data["Published"], data["Cancelled"] = rels, q.Get("published"), q.Get("cancelled")
	d.render(w, r, status, "releases", page(s, p, "releases", "Releases", data))
	return nil
}

// publishRelease publishes a release now: all of its items or, when one
// cannot be, none (the page then says why, as the release does).
func (d *Dashboard) publishRelease(w http.ResponseWriter, r *http.Request) error {
	return d.releaseAction(w, r, "publish", "published")
}

func (d *Dashboard) cancelRelease(w http.ResponseWriter, r *http.Request) error {
	return d.releaseAction(w, r, "cancel", "cancelled")
}

// releaseAction posts to the route action of the path's release and goes
// back to the releases with ?<done>=<id>, which says it was done; a
// refusal is shown on that page.
func (d *Dashboard) releaseAction(w http.ResponseWriter, r *http.Request, action, done string) error {
	if _, err := d.signedIn(r); err != nil {
		return err
	}
	pid, rid := chi.URLParam(r, "id"), chi.URLParam(r, "rid")
	err := d.call(r, "POST", "/central/api/projects/"+url.PathEscape(pid)+"/releases/"+url.PathEscape(rid)+"/"+action, nil, nil)
	if pr, ok := formProblem(err); ok {
		return d.releasesPage(w, r, pr.Status, map[string]any{"Problem": pr})
	}
	if err != nil {
		return pageOf(err)
	}
	http.Redirect(w, r, Prefix+"/projects/"+url.PathEscape(pid)+"/releases?"+done+"="+url.QueryEscape(rid), http.StatusSeeOther)
	return nil
}
