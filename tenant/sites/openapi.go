package sites

import (
	"fmt"

	"github.com/plinth-dev/plinth/internal/openapi"
)

// OpenAPI describes the routes of the pillar and its schemas. The bounds
// are those of plans.go and website.go.
func OpenAPI(d *openapi.Doc) {
	d.Tag("content-plans", "Content plans: a list of blog posts on a topic proposed by AI (job content_plan.generate), each written on demand.")
	d.Tag("websites", "A whole website written by AI from a brief (job website.generate): pages, components, brand and content keys.")
	sitemapOpenAPI(d)
	lang := openapi.M{"type": "string", "pattern": `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`, "description": "A language code such as en or pt-BR."}
	text := func(max int) openapi.M {
		return openapi.M{"type": "string", "minLength": 1, "maxLength": max, "pattern": `\S`}
	}
	optional := func(max int) openapi.M { return openapi.M{"type": "string", "maxLength": max} }
	keywords := openapi.M{"type": "array", "maxItems": maxKeywords, "items": text(maxKeyword)}
	job := openapi.JSON(openapi.Ref("Job"))

	item := d.Schema("ContentPlanItem", openapi.Obj(openapi.M{
		"title": openapi.Str(), "slug": openapi.M{"type": "string", "pattern": `^[a-z0-9][a-z0-9-]*$`}, "summary": openapi.Str(),
		"keywords": openapi.Arr(openapi.Str()),
	}, "title", "slug", "summary", "keywords"))
	plan := d.Schema("ContentPlan", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer", "minimum": 1}, "topic": openapi.Str(), "language_code": lang,
		"items": openapi.Arr(item), "job_id": openapi.Prefixed("job_"), "created_at": openapi.Timestamp(),
	}, "id", "topic", "language_code", "items", "job_id", "created_at"))
	planID := openapi.M{"id": openapi.M{"type": "string", "pattern": "^[0-9]+$", "description": "The plan's numeric id (anything else is 404)."}}

	d.Add("POST", "/v1/content-plans", openapi.Op{ID: "createContentPlan", Summary: "Plan blog posts (job content_plan.generate)", Tag: "content-plans",
		Scope: "blog:write", Idempotent: true,
		Desc: "Starts the job content_plan.generate: 202 with the pending Job, 20 credits, charged at submit and refunded if the job fails. " +
			"Its result is {items: [{title, slug, summary, keywords}]}, count items; the plan is stored when the job completes " +
			"(GET /content-plans, ?job_id= finds it). language_code defaults to the project's default_language.",
		Body: openapi.JSON(d.Schema("CreateContentPlanRequest", openapi.Obj(openapi.M{
			"topic": text(maxTopic), "count": openapi.M{"type": "integer", "minimum": 1, "maximum": MaxPlanItems},
			"language_code": lang, "keywords": keywords,
		}, "topic", "count"))),
		Errs: []int{402, 422},
		OK:   []openapi.Resp{{Status: 202, Desc: "The pending job.", Content: job}}})
	d.Add("GET", "/v1/content-plans", openapi.Op{ID: "listContentPlans", Summary: "Content plans, newest first", Tag: "content-plans", Scope: "blog:read",
		Desc:  "No credits.",
		Query: append(openapi.PageParams(), openapi.M{"name": "job_id", "in": "query", "schema": openapi.Str(), "description": "Only the plan of this job."}),
		Errs:  []int{422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The plans.", Content: openapi.JSON(d.List("ContentPlan"))}}})
	d.Add("GET", "/v1/content-plans/{id}", openapi.Op{ID: "getContentPlan", Summary: "A content plan", Tag: "content-plans", Scope: "blog:read",
		Desc: "No credits.", Params: planID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The plan.", Content: openapi.JSON(plan)}}})
	d.Add("POST", "/v1/content-plans/{id}/items/{n}/generate", openapi.Op{ID: "generateContentPlanItem",
		Summary: "Write one planned post (job blog_post.generate)", Tag: "content-plans", Scope: "blog:write", Idempotent: true,
		Desc: "Item n (counted from 0) becomes a blog_post.generate job on its title, summary and keywords, in the plan's language: " +
			"202 with the pending Job, charged as POST /blog-posts type ai is (60 credits plus 7 per target language). " +
			"An n the plan does not have is 404. The body is optional.",
		Params: openapi.With(planID, openapi.M{"n": openapi.M{"type": "string", "pattern": "^[0-9]+$", "description": "The item's index, from 0."}}),
		Body: openapi.JSON(d.Schema("GenerateContentPlanItemRequest", openapi.Obj(openapi.M{
			"target_languages": openapi.M{"type": "array", "maxItems": maxLanguages, "items": lang, "description": "Also translated into these: 7 credits each."},
			"tone":             optional(maxTone),
		}))),
		BodyOptional: true,
		Errs:         []int{402, 422},
		OK:           []openapi.Resp{{Status: 202, Desc: "The pending blog_post.generate job.", Content: job}}})

	d.Add("POST", "/v1/websites/generate", openapi.Op{ID: "generateWebsite", Summary: "Write a website from a brief (job website.generate)", Tag: "websites",
		Scope: "content:write", Idempotent: true,
		Desc: "Starts the job website.generate (steps plan, brand, pages, components, content, translate): 202 with the pending Job, " +
			"200 credits plus 7 per target language, charged at submit and refunded if the job fails. Without target_languages the " +
			"site is also made in the project's target languages. The job writes the brand context, the components header, footer, " +
			"hero and cta, published pages (home, about, services or products, contact, the pages the brief implies and those asked " +
			"for) whose sections name content keys, and those keys in every language; content.changed fires for each value written. " +
			"Its result is {pages: [{id, slug}], content_keys, components}. A later run writes only items it generated that the " +
			"owner has not changed since, and items that do not exist; everything else is kept.",
		Body: openapi.JSON(d.Schema("GenerateWebsiteRequest", openapi.Obj(openapi.M{
			"brief": text(maxBrief),
			"pages": openapi.M{"type": "array", "maxItems": maxPages, "items": text(maxPageTitle),
				"description": fmt.Sprintf("Titles of pages to add beyond the standard ones (at most %d).", maxPages)},
			"language_code":    openapi.With(lang, openapi.M{"description": "The site's language; default the project's default_language."}),
			"target_languages": openapi.M{"type": "array", "maxItems": maxLanguages, "items": lang, "description": "Default: the project's target_languages. 7 credits each."},
			"industry":         optional(maxIndustry),
			"tone":             optional(maxTone),
		}, "brief"))),
		Errs: []int{402, 422},
		OK:   []openapi.Resp{{Status: 202, Desc: "The pending job.", Content: job}}})
}

// sitemapOpenAPI describes the sitemap.
func sitemapOpenAPI(d *openapi.Doc) {
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
