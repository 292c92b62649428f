package sites_test

import (
	"encoding/xml"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// sitemap is the sitemap as a crawler reads it.
type sitemap struct {
	XMLName xml.Name `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 urlset"`
	URLs    []struct {
		Loc     string `xml:"loc"`
		LastMod string `xml:"lastmod"`
		Links   []struct {
			Rel      string `xml:"rel,attr"`
			HrefLang string `xml:"hreflang,attr"`
			Href     string `xml:"href,attr"`
		} `xml:"http://www.w3.org/1999/xhtml link"`
	} `xml:"url"`
}

// alternates maps each URL of the sitemap to its alternates
// ("hreflang=href", sorted).
func (s sitemap) alternates() map[string][]string {
	out := map[string][]string{}
	for _, u := range s.URLs {
		alts := []string{}
		for _, l := range u.Links {
			if l.Rel != "alternate" {
				panic("rel " + l.Rel)
			}
			alts = append(alts, l.HrefLang+"="+l.Href)
		}
		sort.Strings(alts)
		out[u.Loc] = alts
	}
	return out
}

func get(env *apitest.Env, p *apitest.Project, header ...string) *apitest.Resp {
	h := map[string]string{"X-Service-Project-Key": p.ID}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return env.Send(apitest.Request{Method: "GET", Path: "/v1/public/sitemap.xml", Header: h})
}

func parse(t *testing.T, r *apitest.Resp) sitemap {
	t.Helper()
	require.Equal(t, "application/xml", r.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(string(r.Body), xml.Header), "%s", r.Body)
	var s sitemap
	require.NoError(t, xml.Unmarshal(r.Body, &s), "%s", r.Body)
	return s
}

// TestSitemap: the sitemap lists the published pages (not drafts, not
// noindex) and the published posts under site_url, each language at its
// own URL naming the others as hreflang alternates; it is cached like
// every public read, needs a site_url (409), and shows one project only.
func TestSitemap(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p, other := env.NewProject("build"), env.NewProject("build") // default language en

	get(env, p).Problem(t, 409, "conflict")
	m := get(env, p).JSON(t)
	require.Contains(t, m["detail"], "site_url")

	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"site_url": "https://bakery.example/"}).Expect(t, 200)
	env.Do("PATCH", "/v1/projects/me", other.Key, map[string]any{"site_url": "https://other.example"}).Expect(t, 200)

	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Home", "slug": "home", "path": "/", "status": "published"}).Expect(t, 201)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "About", "status": "published",
		"translations": []any{map[string]any{"lang": "fr", "title": "À propos"}, map[string]any{"lang": "de", "title": "Über uns"}}}).Expect(t, 201)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Draft", "translations": []any{map[string]any{"lang": "fr", "title": "Brouillon"}}}).Expect(t, 201)
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Thanks", "status": "published", "seo": map[string]any{"noindex": true}}).Expect(t, 201)
	post := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "manual", "title": "Sourdough", "status": "published"}).Expect(t, 201).JSON(t)
	env.Do("PUT", fmt.Sprintf("/v1/blog-posts/%v/translations/fr", post["id"]), p.Key, map[string]any{"title": "Levain"}).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "manual", "title": "Unpublished"}).Expect(t, 201)
	env.Do("POST", "/v1/pages", other.Key, map[string]any{"title": "Elsewhere", "status": "published"}).Expect(t, 201)

	r := get(env, p).Expect(t, 200)
	require.Equal(t, "public, max-age=60", r.Header.Get("Cache-Control"))
	etag := r.Header.Get("ETag")
	require.NotEmpty(t, etag)
	s := parse(t, r)
	const base = "https://bakery.example"
	about := []string{"de=" + base + "/de/about", "en=" + base + "/about", "fr=" + base + "/fr/about", "x-default=" + base + "/about"}
	blog := []string{"en=" + base + "/blog/sourdough", "fr=" + base + "/fr/blog/sourdough", "x-default=" + base + "/blog/sourdough"}
	require.Equal(t, map[string][]string{
		base + "/":                  about[:0], // in one language: no alternates
		base + "/about":             about,
		base + "/de/about":          about,
		base + "/fr/about":          about,
		base + "/blog/sourdough":    blog,
		base + "/fr/blog/sourdough": blog,
	}, s.alternates())
	for _, u := range s.URLs {
		require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, u.LastMod)
	}

	// Revalidation, and a change that changes the tag.
	nm := get(env, p, "If-None-Match", etag)
	require.Equal(t, 304, nm.Status)
	require.Empty(t, nm.Body)
	env.Do("PATCH", "/v1/pages/draft", p.Key, map[string]any{"status": "published"}).Expect(t, 200)
	s = parse(t, get(env, p, "If-None-Match", etag).Expect(t, 200))
	require.Contains(t, s.alternates(), base+"/fr/draft")

	// The other project's sitemap is its own.
	o := parse(t, get(env, other).Expect(t, 200)).alternates()
	require.Equal(t, map[string][]string{"https://other.example/elsewhere": {}}, o)

	// Clearing site_url takes the sitemap away again.
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"site_url": ""}).Expect(t, 200)
	get(env, p).Problem(t, 409, "conflict")
}

// TestSitemapEscapesPaths: a page path may hold & and ' (sub-delimiters
// of RFC 3986); the sitemap escapes them, so a crawler's XML parser reads
// each address back whole, in <loc> and in the alternates' href.
func TestSitemapEscapesPaths(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build") // default language en
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"site_url": "https://bakery.example"}).Expect(t, 200)
	const path = "/bread&butter/o'clock"
	env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "Bread", "path": path, "status": "published",
		"translations": []any{map[string]any{"lang": "fr", "title": "Pain"}}}).Expect(t, 201)

	r := get(env, p).Expect(t, 200)
	require.NotContains(t, string(r.Body), "&butter", "a bare & in the XML")
	const base = "https://bakery.example"
	alts := []string{"en=" + base + path, "fr=" + base + "/fr" + path, "x-default=" + base + path}
	require.Equal(t, map[string][]string{base + path: alts, base + "/fr" + path: alts}, parse(t, r).alternates())
}
