package content_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// The content workflow of components, galleries and the brand
// (workflow_test.go has the pages'): drafts over live, publish, versions.

// liveOnly asserts that the public read of path answers want of field,
// as live, with the ETag etag, and a 304 to If-None-Match: etag.
func liveOnly(t *testing.T, env *apitest.Env, p *apitest.Project, path, etag string, field func(map[string]any) any, want any) {
	t.Helper()
	res := public(env, p, path).Expect(t, 200)
	got := res.JSON(t)
	if !reflect.DeepEqual(field(got), want) || res.Header.Get("ETag") != etag {
		t.Fatalf("public %s during draft edits: %v (ETag %s, was %s)", path, field(got), res.Header.Get("ETag"), etag)
	}
	if _, ok := got["has_draft"]; ok {
		t.Fatalf("public %s says has_draft", path)
	}
	if nm := public(env, p, path, "If-None-Match", etag); nm.Status != 304 {
		t.Fatalf("public %s revalidation during draft edits: %d %s", path, nm.Status, nm.Body)
	}
}

// subscribePublished subscribes an endpoint of p to content.published,
// so that its events are recorded (no workers run: nothing is delivered).
func subscribePublished(t *testing.T, env *apitest.Env, p *apitest.Project) {
	t.Helper()
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{
		"url": "https://127.0.0.1:9/hook", "events": []string{"content.published"},
	}).Expect(t, 201)
}

// published reads the data of the newest content.published event.
func published(t *testing.T, p *apitest.Project) map[string]any {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal([]byte(lastEvent(t, p, "content.published")), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// versionKinds lists the kinds of an item's versions, newest first.
func versionKinds(t *testing.T, env *apitest.Env, key, path string) []string {
	t.Helper()
	var kinds []string
	for _, v := range env.Do("GET", path+"/versions", key, nil).Expect(t, 200).JSON(t)["data"].([]any) {
		kinds = append(kinds, v.(map[string]any)["kind"].(string))
	}
	return kinds
}

// TestComponentDraftsOverLive: draft writes of a component leave the
// public surface on the live component (ETag and 304 included); the
// draft view and has_draft show them; publishing makes them live.
func TestComponentDraftsOverLive(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribePublished(t, env, p)
	c := env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Hero", "slug": "hero",
		"props": map[string]any{"heading": "Live"}}).Expect(t, 201).JSON(t)
	if c["has_draft"] != false {
		t.Fatalf("a new component has no draft: %v", c["has_draft"])
	}
	etag := public(env, p, "/v1/public/components/hero").Expect(t, 200).Header.Get("ETag")
	heading := func(m map[string]any) any { return m["props"].(map[string]any)["heading"] }
	for i := range 5 {
		path := "/v1/components/hero?draft=true"
		body := map[string]any{"name": "Hero (new)", "props": map[string]any{"heading": fmt.Sprint("Draft ", i)}}
		if i%2 == 1 { // the body field says the same
			path, body["draft"] = "/v1/components/hero", true
		}
		d := env.Do("PATCH", path, p.Key, body).Expect(t, 200).JSON(t)
		if heading(d) != fmt.Sprint("Draft ", i) || d["has_draft"] != true || d["id"] != c["id"] {
			t.Fatalf("draft write %d answered %v", i, d)
		}
		liveOnly(t, env, p, "/v1/public/components/hero", etag, heading, "Live")
	}
	live := env.Do("GET", "/v1/components/hero", p.Key, nil).Expect(t, 200).JSON(t)
	if heading(live) != "Live" || live["name"] != "Hero" || live["has_draft"] != true {
		t.Fatalf("the live component: %v", live)
	}
	if list := env.Do("GET", "/v1/components", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any); list[0].(map[string]any)["has_draft"] != true {
		t.Fatalf("the list: %v", list)
	}
	if d := env.Do("GET", "/v1/components/hero?draft=true", p.Key, nil).Expect(t, 200).JSON(t); heading(d) != "Draft 4" || d["name"] != "Hero (new)" {
		t.Fatalf("the draft view: %v", d)
	}

	pub := env.Do("POST", "/v1/components/hero/publish", p.Key, nil).Expect(t, 200).JSON(t)
	if heading(pub) != "Draft 4" || pub["name"] != "Hero (new)" || pub["has_draft"] != false {
		t.Fatalf("published: %v", pub)
	}
	if got := public(env, p, "/v1/public/components/hero").Expect(t, 200).JSON(t); heading(got) != "Draft 4" {
		t.Fatalf("the public component after the publish: %v", got)
	}
	if public(env, p, "/v1/public/components/hero", "If-None-Match", etag).Status != 200 {
		t.Fatal("the old ETag still matches after the publish")
	}
	if ev := published(t, p); ev["type"] != "component" || ev["id"] != fmt.Sprint(c["id"]) || ev["languages"] != nil {
		t.Fatalf("content.published: %v", ev)
	}
	if kinds := versionKinds(t, env, p.Key, "/v1/components/hero"); len(kinds) != 6 || kinds[0] != "publish" {
		t.Fatalf("versions: %v", kinds)
	}
	if spent(t, p) != 0 {
		t.Fatalf("component drafts and publishes are free: spent %d", spent(t, p))
	}
}

// TestComponentPublishOneLanguage: publishing some languages of a
// component's draft leaves the others as they are live; the draft stays
// until nothing in it differs.
func TestComponentPublishOneLanguage(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribePublished(t, env, p)
	obj := func(h string) map[string]any { return map[string]any{"h": h} }
	env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Menu", "slug": "menu", "props": obj("Menu"),
		"translations": map[string]any{"fr": obj("Carte"), "de": obj("Speisekarte")}}).Expect(t, 201)
	// The draft renames, changes fr and drops de.
	env.Do("PATCH", "/v1/components/menu?draft=true", p.Key, map[string]any{"name": "Our menu", "slug": "our-menu", "props": obj("Our menu"),
		"translations": map[string]any{"fr": obj("Notre carte")}}).Expect(t, 200)
	tr := func(m map[string]any) map[string]any { return m["translations"].(map[string]any) }

	pub := env.Do("POST", "/v1/components/menu/publish", p.Key, map[string]any{"languages": []string{"fr"}}).Expect(t, 200).JSON(t)
	if pub["name"] != "Menu" || pub["slug"] != "menu" || !reflect.DeepEqual(pub["props"], obj("Menu")) || pub["has_draft"] != true ||
		!reflect.DeepEqual(tr(pub), map[string]any{"fr": obj("Notre carte"), "de": obj("Speisekarte")}) {
		t.Fatalf("after publishing fr: %v", pub)
	}
	if ev := published(t, p); fmt.Sprint(ev["languages"]) != "[fr]" {
		t.Fatalf("content.published: %v", ev)
	}
	got := public(env, p, "/v1/public/components/menu").Expect(t, 200).JSON(t)
	if !reflect.DeepEqual(tr(got), tr(pub)) || got["name"] != "Menu" {
		t.Fatalf("public after publishing fr: %v", got)
	}
	pub = env.Do("POST", "/v1/components/menu/publish", p.Key, map[string]any{"languages": []string{"de"}}).Expect(t, 200).JSON(t)
	if !reflect.DeepEqual(tr(pub), map[string]any{"fr": obj("Notre carte")}) || pub["slug"] != "menu" || pub["has_draft"] != true {
		t.Fatalf("after publishing de (dropped in the draft): %v", pub)
	}
	// The default language: name, slug and props; nothing is left.
	pub = env.Do("POST", "/v1/components/menu/publish", p.Key, map[string]any{"languages": []string{"en"}}).Expect(t, 200).JSON(t)
	if pub["name"] != "Our menu" || pub["slug"] != "our-menu" || !reflect.DeepEqual(pub["props"], obj("Our menu")) || pub["has_draft"] != false {
		t.Fatalf("after publishing en: %v", pub)
	}
	public(env, p, "/v1/public/components/menu").Expect(t, 404)
	public(env, p, "/v1/public/components/our-menu").Expect(t, 200)
	vs := env.Do("GET", "/v1/components/our-menu/versions", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)
	var langs []string
	for _, v := range vs {
		langs = append(langs, fmt.Sprint(v.(map[string]any)["languages"]))
	}
	if !reflect.DeepEqual(langs, []string{"[en]", "[de]", "[fr]", "[en de fr]"}) {
		t.Fatalf("the versions' languages, newest first: %v", langs)
	}
}

// TestComponentVersionsRestore: restoring a version brings back its exact
// content into the draft (live unchanged) and publishing it makes it
// live; autosaves keep one autosave version.
func TestComponentVersionsRestore(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribePublished(t, env, p)
	env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Card", "slug": "card"}).Expect(t, 201)
	first := map[string]any{"name": "Card v1", "props": map[string]any{"title": "One", "n": 1.5, "list": []any{"a", nil, true}, "nested": map[string]any{"x": map[string]any{}}},
		"translations": map[string]any{"fr": map[string]any{"title": "Un"}}}
	env.Do("PATCH", "/v1/components/card?draft=true", p.Key, first).Expect(t, 200)
	v2 := env.Do("POST", "/v1/components/card/publish", p.Key, nil).Expect(t, 200).JSON(t)
	env.Do("PATCH", "/v1/components/card?draft=true", p.Key, map[string]any{"name": "Card v2", "props": map[string]any{}, "translations": map[string]any{}}).Expect(t, 200)
	env.Do("POST", "/v1/components/card/publish", p.Key, nil).Expect(t, 200)

	// Versions: 1 save, 2 publish, 3 save, 4 publish.
	if v := env.Do("GET", "/v1/components/card/versions/2", p.Key, nil).Expect(t, 200).JSON(t); v["kind"] != "publish" || v["data"].(map[string]any)["name"] != "Card v1" {
		t.Fatalf("version 2: %v", v)
	}
	restored := env.Do("POST", "/v1/components/card/versions/2/restore", p.Key, nil).Expect(t, 200).JSON(t)
	if restored["has_draft"] != true || restored["name"] != "Card v1" || restored["id"] != v2["id"] {
		t.Fatalf("the restored draft view: %v", restored)
	}
	if live := env.Do("GET", "/v1/components/card", p.Key, nil).Expect(t, 200).JSON(t); live["name"] != "Card v2" {
		t.Fatalf("a restore changed what is live: %v", live)
	}
	again := env.Do("POST", "/v1/components/card/publish", p.Key, nil).Expect(t, 200).JSON(t)
	for _, f := range []string{"name", "slug", "props", "translations"} {
		if !reflect.DeepEqual(again[f], v2[f]) {
			t.Errorf("%s after restoring version 2: %v, was %v", f, again[f], v2[f])
		}
	}

	for i := range 10 {
		env.Do("PATCH", "/v1/components/card?autosave=true", p.Key, map[string]any{"name": fmt.Sprint("Typing ", i)}).Expect(t, 200)
	}
	if kinds := versionKinds(t, env, p.Key, "/v1/components/card"); !reflect.DeepEqual(kinds, []string{"autosave", "publish", "restore", "publish", "save", "publish", "save"}) {
		t.Fatalf("versions after 10 autosaves: %v", kinds)
	}
	if v := env.Do("GET", "/v1/components/card/versions/7", p.Key, nil).Expect(t, 200).JSON(t); v["data"].(map[string]any)["name"] != "Typing 9" {
		t.Fatalf("the autosave version holds %v", v["data"])
	}
	env.Do("GET", "/v1/components/card/versions/99", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("POST", "/v1/components/card/versions/99/restore", p.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/components/nope/versions", p.Key, nil).Problem(t, 404, "not_found")
}

// TestGalleryWorkflow: a gallery's drafts over live, publish, restore,
// autosave, a live rename keeping the draft and versions, and a delete
// forgetting them.
func TestGalleryWorkflow(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribePublished(t, env, p)
	item := func(u string) map[string]any { return map[string]any{"url": "https://cdn.example.com/" + u + ".jpg"} }
	g := env.Do("POST", "/v1/galleries", p.Key, map[string]any{"name": "Summer", "slug": "summer", "items": []any{item("a")}}).Expect(t, 201).JSON(t)
	if g["data"].(map[string]any)["has_draft"] != false {
		t.Fatalf("a new gallery has no draft: %v", g)
	}
	etag := public(env, p, "/v1/public/galleries/summer").Expect(t, 200).Header.Get("ETag")
	items := func(m map[string]any) any { return m["data"].(map[string]any)["items"] }
	live := []any{item("a")}
	for i := range 3 {
		d := env.Do("PATCH", "/v1/galleries/summer?draft=true", p.Key, map[string]any{"name": "Summer 2026", "items": []any{item("b"), item(fmt.Sprint(i))}}).Expect(t, 200).JSON(t)
		if dd := d["data"].(map[string]any); dd["has_draft"] != true || dd["items_count"] != 2.0 || dd["name"] != "Summer 2026" {
			t.Fatalf("draft write %d answered %v", i, d)
		}
		liveOnly(t, env, p, "/v1/public/galleries/summer", etag, items, live)
	}
	if got := env.Do("GET", "/v1/galleries/summer", p.Key, nil).Expect(t, 200).JSON(t)["data"].(map[string]any); got["has_draft"] != true || got["name"] != "Summer" {
		t.Fatalf("the live gallery: %v", got)
	}
	if list := env.Do("GET", "/v1/galleries", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any); list[0].(map[string]any)["has_draft"] != true {
		t.Fatalf("the list: %v", list)
	}
	drafted := []any{item("b"), item("2")}
	if got := env.Do("GET", "/v1/galleries/summer?draft=true", p.Key, nil).Expect(t, 200).JSON(t); !reflect.DeepEqual(items(got), drafted) {
		t.Fatalf("the draft view: %v", got)
	}
	pub := env.Do("POST", "/v1/galleries/summer/publish", p.Key, nil).Expect(t, 200).JSON(t)
	if !reflect.DeepEqual(items(pub), drafted) || pub["data"].(map[string]any)["has_draft"] != false {
		t.Fatalf("published: %v", pub)
	}
	if got := public(env, p, "/v1/public/galleries/summer").Expect(t, 200).JSON(t); !reflect.DeepEqual(items(got), drafted) {
		t.Fatalf("the public gallery after the publish: %v", got)
	}
	if ev := published(t, p); ev["type"] != "gallery" || ev["id"] != "summer" || ev["languages"] != nil {
		t.Fatalf("content.published: %v", ev)
	}

	// Versions: 1-3 saves, 4 publish. A second publish, then version 4
	// restored and published again.
	env.Do("PATCH", "/v1/galleries/summer", p.Key, map[string]any{"draft": true, "items": []any{}}).Expect(t, 200)
	env.Do("POST", "/v1/galleries/summer/publish", p.Key, nil).Expect(t, 200)
	restored := env.Do("POST", "/v1/galleries/summer/versions/4/restore", p.Key, nil).Expect(t, 200).JSON(t)
	if !reflect.DeepEqual(items(restored), drafted) || restored["data"].(map[string]any)["slug"] != "summer" {
		t.Fatalf("the restored draft view: %v", restored)
	}
	if got := public(env, p, "/v1/public/galleries/summer").Expect(t, 200).JSON(t); !reflect.DeepEqual(items(got), []any{}) {
		t.Fatalf("a restore changed the public gallery: %v", got)
	}
	if again := env.Do("POST", "/v1/galleries/summer/publish", p.Key, nil).Expect(t, 200).JSON(t); !reflect.DeepEqual(again["data"].(map[string]any)["items"], drafted) {
		t.Fatalf("after restoring version 4: %v", again)
	}
	for i := range 5 {
		env.Do("PATCH", "/v1/galleries/summer?autosave=true", p.Key, map[string]any{"name": fmt.Sprint("Typing ", i)}).Expect(t, 200)
	}
	if kinds := versionKinds(t, env, p.Key, "/v1/galleries/summer"); len(kinds) != 9 || kinds[0] != "autosave" || kinds[1] != "publish" {
		t.Fatalf("versions after 5 autosaves: %v", kinds)
	}

	// A live rename takes the draft and versions along.
	env.Do("PATCH", "/v1/galleries/summer", p.Key, map[string]any{"slug": "summer-2026"}).Expect(t, 200)
	if got := env.Do("GET", "/v1/galleries/summer-2026?draft=true", p.Key, nil).Expect(t, 200).JSON(t)["data"].(map[string]any); got["name"] != "Typing 4" || got["has_draft"] != true {
		t.Fatalf("the draft after a rename: %v", got)
	}
	if kinds := versionKinds(t, env, p.Key, "/v1/galleries/summer-2026"); len(kinds) != 9 {
		t.Fatalf("versions after a rename: %v", kinds)
	}
	env.Do("DELETE", "/v1/galleries/summer-2026", p.Key, nil).Expect(t, 204)
	if n := query[int](t, p, `SELECT (SELECT count(*) FROM drafts) + (SELECT count(*) FROM versions)`); n != 0 {
		t.Fatalf("%d draft and version rows left after the delete", n)
	}
	if spent(t, p) != 0 {
		t.Fatalf("gallery drafts and publishes are free: spent %d", spent(t, p))
	}
}

// TestBrandWorkflow: the brand's drafts over live (the public brand
// unchanged, the logo live-only), publish, restore and autosave.
func TestBrandWorkflow(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribePublished(t, env, p)
	env.Do("PATCH", "/v1/brand", p.Key, map[string]any{"name": "Acme", "colors": map[string]any{"primary": "#111111"}}).Expect(t, 200)
	etag := public(env, p, "/v1/public/brand").Expect(t, 200).Header.Get("ETag")
	name := func(m map[string]any) any { return m["name"] }
	for i := range 3 {
		d := env.Do("PATCH", "/v1/brand?draft=true", p.Key, map[string]any{"name": fmt.Sprint("Acme ", i), "tagline": "Tools",
			"colors": map[string]any{"primary": "#222222", "accent": "#ffcc00"}}).Expect(t, 200).JSON(t)
		if d["name"] != fmt.Sprint("Acme ", i) || d["has_draft"] != true {
			t.Fatalf("draft write %d answered %v", i, d)
		}
		liveOnly(t, env, p, "/v1/public/brand", etag, name, "Acme")
	}
	// The logo is live at once, drafts or not, and the draft view shows it.
	logo := env.Send(func() apitest.Request {
		r := form("logo.png", pngOf(10, 10))
		r.Method, r.Path, r.Key = "POST", "/v1/brand/logo", p.Key
		return r
	}()).Expect(t, 200).JSON(t)
	if logo["name"] != "Acme" || logo["has_draft"] != true || logo["logo_url"] == nil {
		t.Fatalf("the logo upload answered %v", logo)
	}
	draft := env.Do("GET", "/v1/brand?draft=true", p.Key, nil).Expect(t, 200).JSON(t)
	if draft["name"] != "Acme 2" || draft["logo_url"] != logo["logo_url"] || draft["has_draft"] != true {
		t.Fatalf("the draft view: %v", draft)
	}
	if live := env.Do("GET", "/v1/brand", p.Key, nil).Expect(t, 200).JSON(t); live["name"] != "Acme" || live["has_draft"] != true {
		t.Fatalf("the live brand: %v", live)
	}
	pub := env.Do("POST", "/v1/brand/publish", p.Key, nil).Expect(t, 200).JSON(t)
	if pub["name"] != "Acme 2" || pub["tagline"] != "Tools" || len(pub["colors"].(map[string]any)) != 2 || pub["has_draft"] != false {
		t.Fatalf("published: %v", pub)
	}
	got := public(env, p, "/v1/public/brand").Expect(t, 200).JSON(t)
	if got["name"] != "Acme 2" || got["colors"].(map[string]any)["accent"] != "#ffcc00" {
		t.Fatalf("the public brand after the publish: %v", got)
	}
	if _, ok := got["has_draft"]; ok {
		t.Fatal("the public brand says has_draft")
	}
	if ev := published(t, p); ev["type"] != "brand" || ev["id"] != "" || ev["languages"] != nil {
		t.Fatalf("content.published: %v", ev)
	}

	// Versions: 1-3 saves, 4 publish; a second publish, then 4 restored.
	env.Do("PATCH", "/v1/brand", p.Key, map[string]any{"draft": true, "name": "Acme Corp", "colors": map[string]any{}}).Expect(t, 200)
	env.Do("POST", "/v1/brand/publish", p.Key, nil).Expect(t, 200)
	restored := env.Do("POST", "/v1/brand/versions/4/restore", p.Key, nil).Expect(t, 200).JSON(t)
	if restored["name"] != "Acme 2" || restored["has_draft"] != true || restored["logo_url"] != logo["logo_url"] {
		t.Fatalf("the restored draft view: %v", restored)
	}
	if live := public(env, p, "/v1/public/brand").Expect(t, 200).JSON(t); live["name"] != "Acme Corp" {
		t.Fatalf("a restore changed the public brand: %v", live)
	}
	again := env.Do("POST", "/v1/brand/publish", p.Key, nil).Expect(t, 200).JSON(t)
	for _, f := range []string{"name", "tagline", "description", "voice", "audience", "colors", "fonts"} {
		if !reflect.DeepEqual(again[f], pub[f]) {
			t.Errorf("%s after restoring version 4: %v, was %v", f, again[f], pub[f])
		}
	}
	for i := range 5 {
		env.Do("PATCH", "/v1/brand?autosave=true", p.Key, map[string]any{"voice": fmt.Sprint("warm ", i)}).Expect(t, 200)
	}
	if kinds := versionKinds(t, env, p.Key, "/v1/brand"); len(kinds) != 9 || kinds[0] != "autosave" || kinds[1] != "publish" {
		t.Fatalf("versions after 5 autosaves: %v", kinds)
	}
	if v := env.Do("GET", "/v1/brand/versions/9", p.Key, nil).Expect(t, 200).JSON(t); v["data"].(map[string]any)["voice"] != "warm 4" {
		t.Fatalf("the autosave version holds %v", v["data"])
	}
}

// TestWorkflowMoreBadInput: bad workflow requests on components,
// galleries and the brand are clear 4xx and change nothing.
func TestWorkflowMoreBadInput(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribePublished(t, env, p)
	env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Taken", "slug": "taken"}).Expect(t, 201)
	c := env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Hero", "slug": "hero"}).Expect(t, 201).JSON(t)
	env.Do("PATCH", "/v1/components/hero?draft=true", p.Key, map[string]any{"slug": "taken", "name": "New hero"}).Expect(t, 200)
	env.Do("POST", "/v1/components/hero/publish", p.Key, nil).Problem(t, 409, "conflict")
	if live := env.Do("GET", "/v1/components/hero", p.Key, nil).Expect(t, 200).JSON(t); live["name"] != "Hero" || live["has_draft"] != true || live["updated_at"] != c["updated_at"] {
		t.Fatalf("a refused publish changed the component: %v", live)
	}
	if kinds := versionKinds(t, env, p.Key, "/v1/components/hero"); len(kinds) != 1 {
		t.Fatalf("a refused publish recorded a version: %v", kinds)
	}
	if n := events(t, p, "content.published"); n != 0 {
		t.Fatalf("a refused publish emitted %d content.published", n)
	}
	env.Do("POST", "/v1/galleries", p.Key, map[string]any{"name": "G", "slug": "g"}).Expect(t, 201)
	env.Do("PATCH", "/v1/galleries/g?draft=true", p.Key, map[string]any{"name": "G draft"}).Expect(t, 200)
	env.Do("PATCH", "/v1/brand?draft=true", p.Key, map[string]any{"name": "Draft brand"}).Expect(t, 200)

	for _, tc := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", "/v1/galleries/g/publish", map[string]any{"languages": []string{"fr"}}, 422},
		{"POST", "/v1/brand/publish", map[string]any{"languages": []string{"en"}}, 422},
		{"POST", "/v1/components/hero/publish", map[string]any{"languages": []string{"fr", "fr"}}, 422},
		{"POST", "/v1/components/hero/publish", map[string]any{"langs": []string{"fr"}}, 400},
		{"POST", "/v1/galleries/g/publish", map[string]any{"langs": []string{"fr"}}, 400},
		{"POST", "/v1/brand/publish", map[string]any{"all": true}, 400},
		{"PATCH", "/v1/components/hero?draft=true", map[string]any{"title": "x"}, 400},
		{"PATCH", "/v1/galleries/g?draft=true", map[string]any{"title": "x"}, 400},
		{"PATCH", "/v1/brand?draft=true", map[string]any{"logo": "x"}, 400},
		{"PATCH", "/v1/components/hero?draft=true", map[string]any{"props": []any{}}, 422},
		{"PATCH", "/v1/galleries/g?draft=true", map[string]any{"slug": "g2"}, 422},
		{"PATCH", "/v1/galleries/g?draft=true", map[string]any{"items": []any{map[string]any{"url": "javascript:x"}}}, 422},
		{"PATCH", "/v1/brand?draft=maybe", map[string]any{"name": "x"}, 422},
		{"PATCH", "/v1/brand?draft=false", map[string]any{"draft": true, "name": "x"}, 422},
		{"POST", "/v1/components?draft=true", map[string]any{"name": "x"}, 422},
		{"POST", "/v1/galleries", map[string]any{"name": "x", "draft": true}, 422},
		{"GET", "/v1/components/hero?draft=yes", nil, 422},
		{"POST", "/v1/components/hero/versions/5/restore", nil, 404},
		{"POST", "/v1/galleries/g/versions/5/restore", nil, 404},
		{"POST", "/v1/brand/versions/5/restore", nil, 404},
		{"GET", "/v1/brand/versions/0", nil, 404},
		{"POST", "/v1/galleries/nope/publish", nil, 404},
		{"POST", "/v1/components/nope/publish", nil, 404},
	} {
		if res := env.Do(tc.method, tc.path, p.Key, tc.body); res.Status != tc.status {
			t.Errorf("%s %s %v: %d %s, want %d", tc.method, tc.path, tc.body, res.Status, res.Body, tc.status)
		}
	}
	for _, tc := range []struct{ scope, path string }{
		{"content:read", "/v1/components/hero"}, {"galleries:read", "/v1/galleries/g"}, {"brand:read", "/v1/brand"},
	} {
		ro := p.NewKey(false, tc.scope)
		env.Do("POST", tc.path+"/publish", ro, nil).Problem(t, 403, "forbidden")
		env.Do("POST", tc.path+"/versions/1/restore", ro, nil).Problem(t, 403, "forbidden")
		env.Do("PATCH", tc.path+"?draft=true", ro, map[string]any{"name": "x"}).Problem(t, 403, "forbidden")
		env.Do("GET", tc.path+"/versions", ro, nil).Expect(t, 200)
		env.Do("GET", tc.path+"?draft=true", ro, nil).Expect(t, 200)
	}
	// Nothing above changed a draft or made one live.
	if d := env.Do("GET", "/v1/components/hero?draft=true", p.Key, nil).Expect(t, 200).JSON(t); d["name"] != "New hero" || d["slug"] != "taken" {
		t.Fatalf("the component's draft: %v", d)
	}
	if d := env.Do("GET", "/v1/galleries/g?draft=true", p.Key, nil).Expect(t, 200).JSON(t)["data"].(map[string]any); d["name"] != "G draft" || d["slug"] != "g" {
		t.Fatalf("the gallery's draft: %v", d)
	}
	if d := env.Do("GET", "/v1/brand", p.Key, nil).Expect(t, 200).JSON(t); d["name"] != "" || d["has_draft"] != true {
		t.Fatalf("the live brand: %v", d)
	}
	if n := events(t, p, "content.published"); n != 0 {
		t.Fatalf("refused publishes emitted %d content.published", n)
	}
	// Deleting the component drops its draft and versions.
	env.Do("DELETE", "/v1/components/hero", p.Key, nil).Expect(t, 204)
	if n := query[int](t, p, `SELECT (SELECT count(*) FROM drafts WHERE type = 'component') + (SELECT count(*) FROM versions WHERE type = 'component')`); n != 0 {
		t.Fatalf("%d draft and version rows left after the delete", n)
	}
}
