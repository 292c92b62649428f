package sites_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/tenant/sites"
)

const bakeryBrief = "A small family bakery in Lyon, open since 1982. We want locals to order for the weekend and visit the shop."

// breadWords are words a bakery's site uses that the brief above does not.
var breadWords = []string{"bread", "sourdough", "pastries", "croissants", "oven", "flour", "loaves"}

var hex = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// site is what a test reads back of a generated site.
type site struct {
	result map[string]any
	pages  map[string]map[string]any // by slug, through GET /v1/pages
	keys   []string                  // every key the pages and components name
}

// sectionKeys lists the content keys a page's sections name.
func sectionKeys(page map[string]any) []string {
	var out []string
	for _, x := range page["sections"].([]any) {
		s := x.(map[string]any)
		for _, f := range []string{"heading_key", "body_key"} {
			if k := str(s, f); k != "" {
				out = append(out, k)
			}
		}
		items, _ := s["items"].([]any)
		for _, it := range items {
			out = append(out, str(it.(map[string]any), "title_key"), str(it.(map[string]any), "text_key"))
		}
	}
	return out
}

// checkSite asserts a completed website.generate job and reads its site
// back through the content pillar's own endpoints and the public surface.
func checkSite(t *testing.T, env *apitest.Env, p *apitest.Project, job map[string]any, langs []string) site {
	t.Helper()
	require.Equal(t, "completed", job["status"], "job: %v", job)
	res := job["result"].(map[string]any)
	require.ElementsMatch(t, []string{"pages", "content_keys", "components"}, keysOf(res))
	require.Equal(t, float64(4), res["components"])
	st := site{result: res, pages: map[string]map[string]any{}}

	var slugs []string
	for _, x := range res["pages"].([]any) {
		ref := x.(map[string]any)
		require.ElementsMatch(t, []string{"id", "slug"}, keysOf(ref))
		pg := env.Do("GET", "/v1/pages/"+idOf(ref["id"]), p.Key, nil).Expect(t, 200).JSON(t)
		require.Equal(t, ref["slug"], pg["slug"])
		slugs = append(slugs, str(pg, "slug"))
		st.pages[str(pg, "slug")] = pg
	}
	require.Subset(t, slugs, []string{"home", "about", "contact"})
	require.True(t, slices.Contains(slugs, "services") || slices.Contains(slugs, "products"), "pages: %v", slugs)
	require.Equal(t, "/", st.pages["home"]["path"])

	for slug, pg := range st.pages {
		require.Equal(t, "published", pg["status"], slug)
		require.NotEmpty(t, pg["title"], slug)
		seo := pg["seo"].(map[string]any)
		require.NotEmpty(t, seo["meta_title"], slug)
		require.NotEmpty(t, seo["meta_description"], slug)
		var trLangs []string
		for _, x := range pg["translations"].([]any) {
			tr := x.(map[string]any)
			trLangs = append(trLangs, str(tr, "lang"))
			require.NotEmpty(t, tr["title"], "%s in %s", slug, tr["lang"])
		}
		require.ElementsMatch(t, langs, trLangs, slug)
		keys := sectionKeys(pg)
		require.NotEmpty(t, keys, "the sections of %s name content keys", slug)
		st.keys = append(st.keys, keys...)
		// The public surface serves the page.
		pub := public(env, p, "/v1/public/pages/"+slug).Expect(t, 200).JSON(t)
		require.Equal(t, pg["sections"], pub["sections"])
	}
	sections := st.pages["home"]["sections"].([]any)
	require.Equal(t, "hero", sections[0].(map[string]any)["component"], "the home page opens with the hero")

	// Components, through their own endpoint.
	for _, c := range []string{"header", "footer", "hero", "cta"} {
		comp := env.Do("GET", "/v1/components/"+c, p.Key, nil).Expect(t, 200).JSON(t)
		props := comp["props"].(map[string]any)
		require.NotEmpty(t, props, c)
		for k, v := range props {
			if strings.HasSuffix(k, "_key") {
				st.keys = append(st.keys, v.(string))
			}
		}
	}
	header := env.Do("GET", "/v1/components/header", p.Key, nil).Expect(t, 200).JSON(t)
	require.Len(t, header["props"].(map[string]any)["nav"], len(st.pages), "the header links every page")

	// Every key the site names has a value in every language, readable by
	// key and publicly.
	slices.Sort(st.keys)
	st.keys = slices.Compact(st.keys)
	for _, k := range st.keys {
		en := env.Do("GET", "/v1/content/"+k, p.Key, nil).Expect(t, 200).JSON(t)
		require.NotEmpty(t, en["value"], k)
		all := en["all_locales"].(map[string]any)
		require.Len(t, all, 1+len(langs), "%s: %v", k, all)
	}
	k := st.keys[0]
	pub := public(env, p, "/v1/public/content/"+k+"?lang="+langs[0]).Expect(t, 200).JSON(t)
	require.Equal(t, langs[0], pub["lang"])
	require.LessOrEqual(t, len(st.keys), int(res["content_keys"].(float64)))

	// The brand.
	b := env.Do("GET", "/v1/brand", p.Key, nil).Expect(t, 200).JSON(t)
	require.NotEmpty(t, b["name"])
	require.NotEmpty(t, b["tagline"])
	for name, c := range b["colors"].(map[string]any) {
		require.Regexp(t, hex, c, name)
	}
	require.NotEmpty(t, b["fonts"])
	return st
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// values reads the default-language values of keys, by key.
func values(t *testing.T, env *apitest.Env, p *apitest.Project, keys []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for start := 0; start < len(keys); start += 200 {
		chunk := keys[start:min(start+200, len(keys))]
		b := env.Do("GET", "/v1/content/bulk?keys="+strings.Join(chunk, ","), p.Key, nil).Expect(t, 200).JSON(t)
		for k, v := range b["data"].(map[string]any) {
			out[k] = v.(string)
		}
	}
	return out
}

// TestWebsiteOffline: one brief in, a working site out with the offline
// provider, its steps streamed in order, charged once.
func TestWebsiteOffline(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build") // target languages fr and de
	env.Do("POST", "/v1/webhook-endpoints", p.Key, map[string]any{"url": "https://127.0.0.1:9/hook", "events": []string{"content.changed"}}).Expect(t, 201)

	j := env.Do("POST", "/v1/websites/generate", p.Key, map[string]any{"brief": bakeryBrief}).Expect(t, 202).JSON(t)
	require.Equal(t, "website.generate", j["type"])
	var names []string
	for _, s := range j["steps"].([]any) {
		names = append(names, str(s.(map[string]any), "name"))
	}
	require.Equal(t, sites.WebsiteSteps, names)
	id := str(j, "id")
	charged := map[string]int64{"website": 20000, "translate_language": 1400}
	require.Equal(t, charged, ledger(t, p, id), "200 credits and 7 per target language, at submit")

	done := env.JobSteps(t, p.Key, id, sites.WebsiteSteps)
	job := env.Do("GET", "/v1/jobs/"+id, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, job["result"], done["result"])
	st := checkSite(t, env, p, job, []string{"fr", "de"})

	// The offline provider's translations are marked, per language.
	k := st.keys[0]
	en := env.Do("GET", "/v1/content/"+k, p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "[fr] "+str(en, "value"), en["all_locales"].(map[string]any)["fr"])

	// Charged once: the job's charge and nothing else (no per-page or
	// per-value charge on top of the site's price); the webhook deliveries
	// of content.changed are the endpoint's own.
	require.Equal(t, charged, ledger(t, p, id))
	// (One statement: deliveries go on being charged while the test reads.)
	require.Equal(t, int64(21400), query[int64](t, p,
		`SELECT COALESCE(sum(amount), 0)::bigint FROM credit_ledger WHERE pool = 'live' AND op NOT IN ('topup', 'webhook_delivery')`))

	// content.changed fired once per value written.
	n := query[int64](t, p, `SELECT count(*) FROM content_values`)
	require.Equal(t, n, query[int64](t, p, `SELECT count(*) FROM webhook_events WHERE type = 'content.changed'`))
	require.Equal(t, int64(3*int(st.result["content_keys"].(float64))), n, "every key in en, fr and de")

	// A bakery's site talks about bread.
	var home []string
	for _, v := range values(t, env, p, sectionKeys(st.pages["home"])) {
		home = append(home, v)
	}
	text := strings.ToLower(strings.Join(home, " "))
	require.True(t, slices.ContainsFunc(breadWords, func(w string) bool { return strings.Contains(text, w) }),
		"the home page of a bakery mentions bread: %s", text)
}

// flaky is the offline provider failing once, the first time it is asked
// for the components, as a worker that dies mid-job does: the attempt
// ends with an ordinary error and River runs the job again.
type flaky struct {
	ai.Offline
	failed atomic.Bool
}

func (f *flaky) JSON(ctx context.Context, req ai.JSONRequest, out any) error {
	if req.Name == "components" && f.failed.CompareAndSwap(false, true) {
		return errors.New("the worker went away")
	}
	return f.Offline.JSON(ctx, req, out)
}

// A job that fails after its plan, brand and pages steps runs again and
// writes the site once; River running the completed job once more (a
// worker that died after the commit) writes nothing.
func TestWebsiteRetry(t *testing.T) {
	t.Parallel()
	f := &flaky{}
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithAI(f))
	p := env.NewProject("build")
	j := env.Do("POST", "/v1/websites/generate", p.Key, map[string]any{"brief": bakeryBrief, "target_languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	id := str(j, "id")
	job := env.WaitJob(t, p.Key, id)
	require.True(t, f.failed.Load(), "the first attempt failed")
	st := checkSite(t, env, p, job, []string{"fr"})
	rj := env.RiverJobs(t, "plinth.job", map[string]any{"job_id": id})
	require.Len(t, rj, 1)
	require.Equal(t, 1, rj[0].Errors, "one failed attempt, then success")

	count := func() [4]int64 {
		return [4]int64{
			query[int64](t, p, `SELECT count(*) FROM pages`),
			query[int64](t, p, `SELECT count(*) FROM components`),
			query[int64](t, p, `SELECT count(*) FROM content_values`),
			query[int64](t, p, `SELECT count(*) FROM site_generated`),
		}
	}
	pages := int64(len(st.pages))
	keys := int64(st.result["content_keys"].(float64))
	want := [4]int64{pages, 4, 2 * keys, 1 + 4 + pages + 2*keys}
	require.Equal(t, want, count(), "pages, components, values, marks: each once")
	require.Equal(t, map[string]int64{"website": 20000, "translate_language": 700}, ledger(t, p, id))

	// River delivers the completed job again: it is final, nothing runs.
	_, err := env.Server.River.JobRetry(context.Background(), rj[0].ID)
	require.NoError(t, err)
	env.WaitRiverJobs(t, "plinth.job", map[string]any{"job_id": id})
	require.Equal(t, want, count())
	require.Equal(t, int64(20700), spent(t, p), "charged once")
	require.Equal(t, job["result"], env.WaitJob(t, p.Key, id)["result"])
}

// A second run keeps what the owner changed and updates what it made and
// nobody touched.
func TestWebsiteRerunKeepsOwnerEdits(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	run := func(brief string) site {
		j := env.Do("POST", "/v1/websites/generate", p.Key, map[string]any{"brief": brief, "target_languages": []string{"fr"}}).Expect(t, 202).JSON(t)
		return checkSite(t, env, p, env.WaitJob(t, p.Key, str(j, "id")), []string{"fr"})
	}
	first := run(bakeryBrief)

	// The owner edits a page, a value (in English only) and the brand, and
	// makes a page of their own.
	env.Do("PATCH", "/v1/pages/about", p.Key, map[string]any{"title": "Our story"}).Expect(t, 200)
	edited := sectionKeys(first.pages["home"])[0]
	env.Do("PUT", "/v1/content/"+edited, p.Key, map[string]any{"value": "Baked by hand every morning"}).Expect(t, 200)
	env.Do("PATCH", "/v1/brand", p.Key, map[string]any{"voice": "Warm, like our kitchen"}).Expect(t, 200)
	brand := env.Do("GET", "/v1/brand", p.Key, nil).Expect(t, 200).JSON(t)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Opening hours", "slug": "hours"}).Expect(t, 201)
	untouched := sectionKeys(first.pages["contact"])[0]
	before := values(t, env, p, []string{untouched})[untouched]
	frBefore := env.Do("GET", "/v1/content/"+edited+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)["value"]

	forgetAICharges(t, p)
	second := run(bakeryBrief + " We now also serve coffee and brunch in our new café.")

	about := env.Do("GET", "/v1/pages/about", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Our story", about["title"], "the owner's page is kept")
	require.Equal(t, first.pages["about"]["sections"], about["sections"], "kept whole")
	require.Equal(t, "Baked by hand every morning", values(t, env, p, []string{edited})[edited], "the owner's value is kept")
	require.Equal(t, brand, env.Do("GET", "/v1/brand", p.Key, nil).Expect(t, 200).JSON(t), "the owner's brand is kept")
	require.Equal(t, "Opening hours", env.Do("GET", "/v1/pages/hours", p.Key, nil).Expect(t, 200).JSON(t)["title"])

	// What the owner did not touch follows the new brief.
	require.NotEqual(t, first.pages["contact"]["seo"], second.pages["contact"]["seo"], "an untouched page is updated")
	require.NotEqual(t, before, values(t, env, p, []string{untouched})[untouched], "an untouched value is updated")
	frAfter := env.Do("GET", "/v1/content/"+edited+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)["value"]
	require.Equal(t, frBefore, frAfter, "a key the owner edited in English is theirs in French too")
	require.Equal(t, first.pages["home"]["id"], second.pages["home"]["id"], "pages are updated in place, by slug")
	slugs := map[string]bool{"hours": true}
	for s := range first.pages {
		slugs[s] = true
	}
	for s := range second.pages {
		slugs[s] = true
	}
	require.Equal(t, int64(len(slugs)), query[int64](t, p, `SELECT count(*) FROM pages`), "no page twice")
}

// A key that may write content but not the blog may generate a site; one
// that may only write the blog may not.
func TestWebsiteScopesAndValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	blogOnly := p.NewKey(false, "blog:*", "jobs:read")
	env.Do("POST", "/v1/websites/generate", blogOnly, map[string]any{"brief": "x"}).Problem(t, 403, "forbidden")
	env.Do("POST", "/v1/websites/generate", p.Key, map[string]any{}).Problem(t, 400, "bad_request")
	for _, body := range []map[string]any{
		{"brief": " "},
		{"brief": strings.Repeat("b", 5001)},
		{"brief": "b", "target_languages": []string{"en"}},
		{"brief": "b", "target_languages": []string{"fr", "fr"}},
		{"brief": "b", "pages": []string{""}},
	} {
		env.Do("POST", "/v1/websites/generate", p.Key, body).Problem(t, 422, "validation_failed")
	}
	require.Equal(t, int64(0), spent(t, p), "a refused request costs nothing")
	poor := env.NewProject("free") // 100 credits
	e := env.Do("POST", "/v1/websites/generate", poor.Key, map[string]any{"brief": "b", "target_languages": []string{}}).Problem(t, 402, "insufficient_credits")
	require.Equal(t, float64(200), e["cost"])
}
