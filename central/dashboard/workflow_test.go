package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// workflow is a signed-in client of the workspace Studio and its project
// Bakery, whose page Home has a draft saved twice: "Draft one", then
// "Draft two" (versions 1 and 2).
type workflow struct {
	env        *apitest.Env
	c          *http.Client
	csrf, base string // base: the project's pages
	p          *apitest.Project
	page       string // Home's id
}

func workflowSetup(t *testing.T) *workflow {
	t.Helper()
	env := apitest.New(t)
	tn, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password")
	if err != nil {
		t.Fatal(err)
	}
	p := env.CreateProject(centralParams(tn.ID, "Bakery"))
	home := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home"}).Expect(t, 201).JSON(t)
	for _, title := range []string{"Draft one", "Draft two"} {
		env.Do("PATCH", "/v1/pages/home?draft=true", p.Key, map[string]any{"title": title}).Expect(t, 200)
	}
	c := client(t)
	_, csrf := formSignIn(t, env, c, "dev@studio.test", "studio-password")
	return &workflow{env: env, c: c, csrf: csrf, base: env.URL + "/dashboard/projects/" + p.ID, p: p, page: fmt.Sprint(home["id"])}
}

// title is the title of the page id as the API reads it, live or (draft)
// its draft view, and whether it has a draft.
func (w *workflow) title(t *testing.T, id string, draft bool) (string, bool) {
	t.Helper()
	got := w.env.Do("GET", "/v1/pages/"+id+fmt.Sprintf("?draft=%t", draft), w.p.Key, nil).Expect(t, 200).JSON(t)
	return got["title"].(string), got["has_draft"] == true
}

// rowOf is the table row of the element with data-<attr>="value".
func rowOf(t *testing.T, page, attr, value string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<tr data-` + attr + `="` + regexp.QuoteMeta(value) + `">.*?</tr>`).FindString(page)
	if m == "" {
		t.Fatalf("no row data-%s=%q in %s", attr, value, page)
	}
	return m
}

// The content tab lists the pages and posts, each with its status; those
// with a draft say they have unpublished changes, and lead to their
// versions.
func TestContentTab(t *testing.T) {
	t.Parallel()
	w := workflowSetup(t)
	about := w.env.Do("POST", "/v1/pages", w.p.Key, map[string]any{"title": "About", "status": "published"}).Expect(t, 201).JSON(t)
	w.env.Do("POST", "/v1/blog-posts", w.p.Key, map[string]any{"title": "Sourdough", "content": "<p>Flour.</p>"}).Expect(t, 201)

	res, page := get(t, w.c, w.base+"/content")
	if res.StatusCode != 200 || !strings.Contains(page, `href="/dashboard/projects/`+w.p.ID+`/content" aria-current="page">Content</a>`) {
		t.Fatalf("content tab: %d %s", res.StatusCode, page)
	}
	home := rowOf(t, page, "id", w.page)
	if !strings.Contains(home, ">Home</a>") || !strings.Contains(home, `<span class="badge changes">unpublished changes</span>`) ||
		!strings.Contains(home, `<span class="badge draft">draft</span>`) || !strings.Contains(home, `href="/dashboard/projects/`+w.p.ID+`/versions/page/`+w.page+`"`) {
		t.Fatalf("Home's row: %s", home)
	}
	if row := rowOf(t, page, "id", fmt.Sprint(about["id"])); strings.Contains(row, "unpublished changes") || !strings.Contains(row, `<span class="badge published">published</span>`) {
		t.Fatalf("About's row: %s", row)
	}
	if !strings.Contains(page, "Sourdough") || !regexp.MustCompile(`/versions/blog_post/\d+"`).MatchString(page) {
		t.Fatalf("the posts: %s", page)
	}
}

// The versions view lists an item's versions, newest first, shows one
// with its content, restores it into the draft (nothing live changes)
// and publishes the draft.
func TestVersionsRestoreAndPublish(t *testing.T) {
	t.Parallel()
	w := workflowSetup(t)
	view := w.base + "/versions/page/" + w.page
	res, page := get(t, w.c, view)
	if res.StatusCode != 200 || !strings.Contains(page, `<span class="badge changes">unpublished changes</span>`) || !strings.Contains(page, `id="publish-draft"`) {
		t.Fatalf("versions view: %d %s", res.StatusCode, page)
	}
	if rows := regexp.MustCompile(`<tr data-n="(\d+)">`).FindAllStringSubmatch(page, -1); len(rows) != 2 || rows[0][1] != "2" || rows[1][1] != "1" {
		t.Fatalf("versions %v in %s", rows, page)
	}
	if row := rowOf(t, page, "n", "1"); !strings.Contains(row, `<span class="badge save">save</span>`) || !strings.Contains(row, "<code>key_") {
		t.Fatalf("version 1: %s", row)
	}

	// One version's content, as the API has it.
	res, page = get(t, w.c, view+"?n=1")
	if res.StatusCode != 200 || !strings.Contains(page, `id="shown-version"`) || !strings.Contains(page, `&#34;title&#34;: &#34;Draft one&#34;`) {
		t.Fatalf("version 1 shown: %d %s", res.StatusCode, page)
	}
	if res, _ := get(t, w.c, view+"?n=7"); res.StatusCode != 404 {
		t.Fatalf("a version that does not exist: %d", res.StatusCode)
	}

	// Restore version 1: the draft is "Draft one" again; live is Home.
	res, _ = post(t, w.c, w.base+"/versions/restore", url.Values{"csrf": {w.csrf}, "type": {"page"}, "ref": {w.page}, "n": {"1"}})
	if loc := res.Header.Get("Location"); res.StatusCode != 303 || loc != "/dashboard/projects/"+w.p.ID+"/versions/page/"+w.page+"?restored=1" {
		t.Fatalf("restore: %d to %q", res.StatusCode, loc)
	}
	if draft, _ := w.title(t, w.page, true); draft != "Draft one" {
		t.Fatalf("the draft after the restore: %q", draft)
	}
	if live, has := w.title(t, w.page, false); live != "Home" || !has {
		t.Fatalf("live after the restore: %q, has_draft %v", live, has)
	}
	_, page = get(t, w.c, view+"?restored=1")
	if !strings.Contains(page, `id="restored"`) || !strings.Contains(rowOf(t, page, "n", "3"), `<span class="badge restore">restore</span>`) ||
		!strings.Contains(rowOf(t, page, "n", "3"), `<td class="actor" data-label="By">you</td>`) {
		t.Fatalf("after the restore: %s", page)
	}

	// Publish: the draft goes live and the page has no draft left.
	res, _ = post(t, w.c, w.base+"/versions/publish", url.Values{"csrf": {w.csrf}, "type": {"page"}, "ref": {w.page}})
	if loc := res.Header.Get("Location"); res.StatusCode != 303 || !strings.HasSuffix(loc, "/versions/page/"+w.page+"?published") {
		t.Fatalf("publish: %d to %q", res.StatusCode, loc)
	}
	if live, has := w.title(t, w.page, false); live != "Draft one" || has {
		t.Fatalf("live after publishing: %q, has_draft %v", live, has)
	}
	_, page = get(t, w.c, view+"?published")
	if !strings.Contains(page, `id="published"`) || strings.Contains(page, `id="publish-draft"`) ||
		!strings.Contains(rowOf(t, page, "n", "4"), `<span class="badge publish">publish</span>`) {
		t.Fatalf("after publishing: %s", page)
	}

	// Without the form's token nothing is restored.
	res, _ = post(t, w.c, w.base+"/versions/restore", url.Values{"type": {"page"}, "ref": {w.page}, "n": {"2"}})
	if draft, _ := w.title(t, w.page, true); res.StatusCode != 403 || draft != "Draft one" {
		t.Fatalf("restore without CSRF: %d, draft %q", res.StatusCode, draft)
	}
}

// A draft that can no longer go live (its slug taken since) is refused
// on the versions page, which says why; so is a change of a suspended
// project. Nothing changes.
func TestVersionsPublishRefused(t *testing.T) {
	t.Parallel()
	w := workflowSetup(t)
	w.env.Do("PATCH", "/v1/pages/home?draft=true", w.p.Key, map[string]any{"slug": "about"}).Expect(t, 200)
	w.env.Do("POST", "/v1/pages", w.p.Key, map[string]any{"title": "About", "slug": "about"}).Expect(t, 201)
	form := url.Values{"csrf": {w.csrf}, "type": {"page"}, "ref": {w.page}}
	res, page := post(t, w.c, w.base+"/versions/publish", form)
	if res.StatusCode != 409 || !strings.Contains(page, `<p role="alert" class="error">`) || !strings.Contains(page, "slug") || !strings.Contains(page, `id="versions"`) {
		t.Fatalf("a draft whose slug is taken: %d %s", res.StatusCode, page)
	}
	if live, has := w.title(t, w.page, false); live != "Home" || !has {
		t.Fatalf("live after the refusal: %q, has_draft %v", live, has)
	}

	if _, err := w.env.Server.Central.SuspendProject(context.Background(), w.p.ID, "unpaid"); err != nil {
		t.Fatal(err)
	}
	res, page = post(t, w.c, w.base+"/versions/restore", url.Values{"csrf": {w.csrf}, "type": {"page"}, "ref": {w.page}, "n": {"1"}})
	if res.StatusCode != 403 || !strings.Contains(page, "This project is suspended by the platform operator: you can look at it, but not change it.") {
		t.Fatalf("a restore in a suspended project: %d %s", res.StatusCode, page)
	}
	// The suspended project is read, not changed: no restore version.
	res, page = get(t, w.c, w.base+"/versions/page/"+w.page)
	if res.StatusCode != 200 || !strings.Contains(page, `<tr data-n="3">`) || strings.Contains(page, `<tr data-n="4">`) {
		t.Fatalf("versions after the refusal: %d %s", res.StatusCode, page)
	}
}

// The releases tab lists the releases with their items and state;
// "Publish now" publishes one, and a release that cannot publish says
// why, on the page and in its row, and publishes nothing.
func TestReleasesTab(t *testing.T) {
	t.Parallel()
	w := workflowSetup(t)
	items := []map[string]any{{"type": "page", "id": "home"}}
	rel := fmt.Sprint(w.env.Do("POST", "/v1/releases", w.p.Key, map[string]any{"name": "Spring launch", "items": items}).Expect(t, 201).JSON(t)["id"])
	res, page := get(t, w.c, w.base+"/releases")
	row := rowOf(t, page, "id", rel)
	if res.StatusCode != 200 || !strings.Contains(row, "Spring launch") || !strings.Contains(row, `<span class="badge pending">pending</span>`) ||
		!strings.Contains(row, `<summary class="items">1 item</summary>`) || !strings.Contains(row, "Publish now") {
		t.Fatalf("releases tab: %d %s", res.StatusCode, page)
	}

	res, _ = post(t, w.c, w.base+"/releases/"+rel+"/publish", url.Values{"csrf": {w.csrf}})
	if loc := res.Header.Get("Location"); res.StatusCode != 303 || loc != "/dashboard/projects/"+w.p.ID+"/releases?published="+rel {
		t.Fatalf("publish now: %d to %q", res.StatusCode, loc)
	}
	if live, has := w.title(t, w.page, false); live != "Draft two" || has {
		t.Fatalf("live after the release: %q, has_draft %v", live, has)
	}
	_, page = get(t, w.c, w.base+"/releases?published="+rel)
	if row := rowOf(t, page, "id", rel); !strings.Contains(page, `id="release-published"`) || !strings.Contains(row, `<span class="badge published">published</span>`) ||
		strings.Contains(row, "Publish now") {
		t.Fatalf("after publishing: %s", page)
	}

	// A release whose page is deleted since cannot publish: 409, why.
	gone := fmt.Sprint(w.env.Do("POST", "/v1/pages", w.p.Key, map[string]any{"title": "Gone"}).Expect(t, 201).JSON(t)["id"])
	w.env.Do("PATCH", "/v1/pages/"+w.page+"?draft=true", w.p.Key, map[string]any{"title": "Draft three"}).Expect(t, 200)
	bad := fmt.Sprint(w.env.Do("POST", "/v1/releases", w.p.Key, map[string]any{"name": "Broken",
		"items": []map[string]any{{"type": "page", "id": w.page}, {"type": "page", "id": gone}}}).Expect(t, 201).JSON(t)["id"])
	w.env.Do("DELETE", "/v1/pages/"+gone, w.p.Key, nil).Expect(t, 204)
	res, page = post(t, w.c, w.base+"/releases/"+bad+"/publish", url.Values{"csrf": {w.csrf}})
	why := "items[1] (page " + gone + ") cannot be published"
	if res.StatusCode != 409 || !strings.Contains(page, `id="release-problem"`) || !strings.Contains(page, why) {
		t.Fatalf("a release that cannot publish: %d %s", res.StatusCode, page)
	}
	if row := rowOf(t, page, "id", bad); !strings.Contains(row, `<span class="error-text release-error">`+why) || !strings.Contains(row, "Publish now") {
		t.Fatalf("its row: %s", row)
	}
	if live, _ := w.title(t, w.page, false); live != "Draft two" {
		t.Fatalf("the failed release published %q", live)
	}

	// Cancel: the release no longer publishes.
	res, _ = post(t, w.c, w.base+"/releases/"+bad+"/cancel", url.Values{"csrf": {w.csrf}})
	if res.StatusCode != 303 {
		t.Fatalf("cancel: %d", res.StatusCode)
	}
	if got := w.env.Do("GET", "/v1/releases/"+bad, w.p.Key, nil).Expect(t, 200).JSON(t); got["status"] != "cancelled" {
		t.Fatalf("the cancelled release: %v", got)
	}
}

// A type the pages do not know, an item that does not exist, a reference
// where the type takes none (or none where it takes one), and another
// workspace's project are the 404 page; a form posted to another
// workspace's project changes nothing.
func TestWorkflowNotFound(t *testing.T) {
	t.Parallel()
	w := workflowSetup(t)
	foreign := w.env.NewProject("build") // the env's own workspace, not Studio
	w.env.Do("POST", "/v1/pages", foreign.Key, map[string]any{"title": "Theirs", "slug": "theirs"}).Expect(t, 201)
	w.env.Do("PATCH", "/v1/pages/theirs?draft=true", foreign.Key, map[string]any{"title": "Theirs v2"}).Expect(t, 200)
	other := w.env.URL + "/dashboard/projects/" + foreign.ID
	for _, path := range []string{
		w.base + "/versions/widget/" + w.page,
		w.base + "/versions/page/404404",
		w.base + "/versions/page",
		w.base + "/versions/brand/home",
		w.base + "/versions?type=widget&ref=home",
		other + "/content",
		other + "/releases",
		other + "/versions/page/theirs",
		other + "/versions/brand",
	} {
		if res, page := get(t, w.c, path); res.StatusCode != 404 || !strings.Contains(page, "There is no such page in this workspace.") {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, page)
		}
	}
	// The form of another type opens its item's versions.
	if res, _ := get(t, w.c, w.base+"/versions?type=content_key&ref=home.title"); res.StatusCode != 303 ||
		res.Header.Get("Location") != "/dashboard/projects/"+w.p.ID+"/versions/content_key/home.title" {
		t.Fatalf("find a content key: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{other + "/versions/restore", url.Values{"type": {"page"}, "ref": {"theirs"}, "n": {"1"}}},
		{other + "/versions/publish", url.Values{"type": {"page"}, "ref": {"theirs"}}},
		{w.base + "/versions/publish", url.Values{"type": {"widget"}, "ref": {w.page}}},
	} {
		f.form.Set("csrf", w.csrf)
		if res, _ := post(t, w.c, f.path, f.form); res.StatusCode != 404 {
			t.Fatalf("POST %s %v: %d", f.path, f.form, res.StatusCode)
		}
	}
	if got := w.env.Do("GET", "/v1/pages/theirs", foreign.Key, nil).Expect(t, 200).JSON(t); got["title"] != "Theirs" || got["has_draft"] != true {
		t.Fatalf("the other workspace's page: %v", got)
	}
}
