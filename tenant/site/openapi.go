package site

import "github.com/plinth-dev/plinth/internal/openapi"

// OpenAPI describes the sitemap.
func OpenAPI(d *openapi.Doc) {
	cache := openapi.M{
		"Cache-Control": openapi.M{"required": true, "description": "public, max-age=60", "schema": openapi.Str()},
		"ETag":          openapi.M{"required": true, "description": "A strong tag of the body.", "schema": openapi.Str()},
	}
	d.Add("GET", "/v1/public/sitemap.xml", openapi.Op{ID: "getSitemap", Summary: "The site's sitemap (public)", Tag: "public", Auth: openapi.Public,
		Desc: "A sitemaps.org 0.9 document of the published pages (except those with seo.noindex) and the published blog posts, " +
			"under the project's `site_url`: a page at {site_url}{path}, a post at {site_url}/blog/{slug}, each in the project's default " +
			"language at that URL and in every other language it is translated into under /{lang} ({site_url}/fr/about). Every URL of an " +
			"item in several languages names them all as xhtml:link rel=alternate hreflang alternates, with x-default on the default " +
			"language. At most 50,000 URLs. 409 `conflict` while the project has no `site_url` (set it with PATCH /v1/projects/me).",
		Headers: []openapi.M{{"name": "If-None-Match", "in": "header", "description": "An ETag of an earlier answer; 304 when it is still current.", "schema": openapi.Str()}},
		Errs:    []int{409},
		OK: []openapi.Resp{{Status: 200, Desc: "The sitemap.", Content: openapi.M{"application/xml": openapi.Str()}, Headers: cache},
			{Status: 304, Desc: "Not modified: If-None-Match names the current ETag.", Headers: cache}}})
}
