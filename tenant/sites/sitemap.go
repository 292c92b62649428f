package sites

// The sitemap: what a project's website needs of several pillars at once,
// built from the published pages (content) and the published blog posts
// (blog) under the project's site_url.

import (
	"context"
	"encoding/xml"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/content"
)

// MaxURLs is the most URLs one sitemap file may list (sitemaps.org).
const MaxURLs = 50_000

// BlogPath is where a site shows a blog post: {site_url}/blog/{slug}.
const BlogPath = "/blog/"

// PublicRoutes mounts the sitemap.
func (sv *Service) PublicRoutes(r chi.Router) {
	r.Get("/sitemap.xml", tenant.Handle(sv.sitemap))
}

// errNoSiteURL answers a sitemap of a project whose site has no address:
// the state of the project, not the request, is what is missing.
var errNoSiteURL = httpapi.Conflict(httpapi.CodeConflict,
	"the project has no site_url: set the public address of its site with PATCH /v1/projects/me {\"site_url\": \"https://…\"}")

// The sitemap document (sitemaps.org 0.9, with xhtml:link alternates for
// the languages of each URL, as search engines read hreflang).
type urlset struct {
	XMLName xml.Name `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 urlset"`
	XHTML   string   `xml:"xmlns:xhtml,attr"`
	URLs    []entry  `xml:"url"`
}

type entry struct {
	Loc     string `xml:"loc"`
	LastMod string `xml:"lastmod"`
	Links   []link `xml:"xhtml:link"`
}

type link struct {
	Rel      string `xml:"rel,attr"`
	HrefLang string `xml:"hreflang,attr"`
	Href     string `xml:"href,attr"`
}

// LangURL is the address of path in lang on the site at base: the default
// language at the path itself, every other under /{lang} (/fr/about).
// Sites generated for Plinth route languages this way.
func LangURL(base, def, lang, path string) string {
	if lang == def {
		return base + path
	}
	return base + "/" + lang + path
}

// alternates lists a URL in each of langs (the default language first,
// then by code): a URL of its own per language, each naming all the
// others, with x-default on the default language's when it is one of them.
func alternates(base, def string, langs []string, path string, updated time.Time) []entry {
	langs = slices.Clone(langs)
	slices.SortFunc(langs, func(a, b string) int {
		switch {
		case a == def:
			return -1
		case b == def:
			return 1
		}
		return strings.Compare(a, b)
	})
	langs = slices.Compact(langs)
	var links []link
	if len(langs) > 1 {
		for _, l := range langs {
			links = append(links, link{Rel: "alternate", HrefLang: l, Href: LangURL(base, def, l, path)})
		}
		if langs[0] == def {
			links = append(links, link{Rel: "alternate", HrefLang: "x-default", Href: LangURL(base, def, def, path)})
		}
	}
	out := make([]entry, len(langs))
	for i, l := range langs {
		out[i] = entry{Loc: LangURL(base, def, l, path), LastMod: updated.UTC().Format(time.RFC3339), Links: links}
	}
	return out
}

// Build returns the sitemap of the project of s: its published pages
// (those not marked noindex) in the default language and each of their
// translations, then its published posts in each of their languages, at
// most MaxURLs URLs.
func Build(ctx context.Context, s *tenant.Scope) ([]byte, error) {
	p := s.Project
	if p.SiteURL == "" {
		return nil, errNoSiteURL
	}
	base := strings.TrimSuffix(p.SiteURL, "/")
	def := p.DefaultLanguage
	var pages []content.SitemapPage
	var posts []blog.SitemapPost
	var b tenant.ReadBatch
	content.QueueSitemapPages(&b, MaxURLs, &pages)
	blog.QueueSitemapPosts(&b, MaxURLs, &posts)
	if err := s.ReadBatch(ctx, &b); err != nil {
		return nil, err
	}
	doc := urlset{XHTML: "http://www.w3.org/1999/xhtml"}
	for _, pg := range pages {
		doc.URLs = append(doc.URLs, alternates(base, def, append([]string{def}, pg.Langs...), pg.Path, pg.UpdatedAt)...)
	}
	for _, po := range posts {
		doc.URLs = append(doc.URLs, alternates(base, def, po.Langs, BlogPath+po.Slug, po.UpdatedAt)...)
	}
	if len(doc.URLs) > MaxURLs {
		doc.URLs = doc.URLs[:MaxURLs]
	}
	body, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(body, '\n')...), nil
}

func (sv *Service) sitemap(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	body, err := Build(r.Context(), s)
	if err != nil {
		return err
	}
	return httpapi.PublicBody(w, r, "application/xml", body)
}
