package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// A user finds a page with unpublished changes on the content tab, opens
// its versions, looks at an earlier one, restores it into the draft and
// publishes the draft.
func TestBrowserVersionsRestore(t *testing.T) {
	ctx := browser(t) // first: without a browser there is nothing to start
	env := apitest.New(t)
	tn, _, err := env.Server.Central.CreateTenant(context.Background(), "Studio", "studio.test", "dev@studio.test", "studio-password")
	if err != nil {
		t.Fatal(err)
	}
	p := env.CreateProject(centralParams(tn.ID, "Bakery"))
	id := fmt.Sprint(env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home"}).Expect(t, 201).JSON(t)["id"])
	for _, title := range []string{"Fresh bread", "Stale bread"} {
		env.Do("PATCH", "/v1/pages/home?draft=true", p.Key, map[string]any{"title": title}).Expect(t, 200)
	}
	tc := tab(t, ctx)
	if st := signIn(t, tc, env.URL, "dev@studio.test", "", "studio-password"); st != 200 {
		t.Fatalf("sign in: %d", st)
	}
	navigate(t, tc, env.URL+"/dashboard/projects/"+p.ID)
	submit(t, tc, `nav.tabs a[href$="/content"]`)
	row := `#pages tr[data-id="` + id + `"]`
	if got := text(t, tc, row+" .status"); !strings.Contains(got, "unpublished changes") {
		t.Fatalf("Home's status: %q", got)
	}
	screenshot(t, tc, "content")

	submit(t, tc, row+` a[aria-label="Versions of Home"]`)
	if got := text(t, tc, "#versions tbody tr:first-child .kind"); got != "save" {
		t.Fatalf("the newest version's kind: %q", got)
	}
	submit(t, tc, `a[aria-label="Show version 1"]`)
	if got := text(t, tc, "#shown-version pre"); !strings.Contains(got, `"title": "Fresh bread"`) {
		t.Fatalf("version 1: %q", got)
	}
	screenshot(t, tc, "versions")

	if st := submit(t, tc, `#versions button[aria-label="Restore version 1 into the draft"]`); st != 200 {
		t.Fatalf("restore: %d", st)
	}
	if got := text(t, tc, "#restored"); !strings.Contains(got, "Version 1 is the draft now") {
		t.Fatalf("after the restore: %q", got)
	}
	if got := text(t, tc, "#versions tbody tr:first-child .kind"); got != "restore" {
		t.Fatalf("the newest version after the restore: %q", got)
	}
	if d := env.Do("GET", "/v1/pages/"+id+"?draft=true", p.Key, nil).Expect(t, 200).JSON(t); d["title"] != "Fresh bread" {
		t.Fatalf("the draft: %v", d["title"])
	}

	if st := submit(t, tc, "#publish-draft"); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	if got := text(t, tc, "#published"); got != "The draft is live." {
		t.Fatalf("after publishing: %q", got)
	}
	if live := env.Do("GET", "/v1/pages/"+id, p.Key, nil).Expect(t, 200).JSON(t); live["title"] != "Fresh bread" || live["has_draft"] != false {
		t.Fatalf("live: %v", live)
	}
}
