package content

import (
	"fmt"

	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// The schemas of the pillar's inputs take their patterns and bounds from
// the code that enforces them (KeyPattern, slug.Pattern, pathPattern, the
// limits); central.ValidLanguage's pattern is spelled out.
const langPattern = `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`

func keySchema() openapi.M { return openapi.M{"type": "string", "pattern": KeyPattern.String()} }

func slugSchema() openapi.M { return openapi.M{"type": "string", "pattern": slug.Pattern.String()} }

func langSchema() openapi.M { return openapi.M{"type": "string", "pattern": langPattern} }

// nameSchema is a name or title: not blank, at most 255 characters.
func nameSchema() openapi.M {
	return openapi.M{"type": "string", "minLength": 1, "maxLength": 255, "pattern": `\S`}
}

func textSchema(max int) openapi.M { return openapi.M{"type": "string", "maxLength": max} }

// urlSchema is an absolute http(s) URL or a path on the site ("/media/x.jpg").
func urlSchema(min int) openapi.M {
	return openapi.M{"type": "string", "minLength": min, "maxLength": 2048, "description": "An absolute http(s) URL or a path starting with /."}
}

// langQuery is the lang query parameter; what its absence means differs
// per route.
func langQuery(desc string) openapi.M {
	return openapi.M{"name": "lang", "in": "query", "description": desc, "schema": langSchema()}
}

// publicAnswers are the answers of a public read: 200 with the caching
// headers, or 304 when If-None-Match names the current ETag.
func publicAnswers(desc string, s openapi.M) []openapi.Resp {
	cache := openapi.M{
		"Cache-Control": openapi.M{"required": true, "description": "public, max-age=60; private, no-store on an answer to a preview token.", "schema": openapi.Str()},
		"ETag":          openapi.M{"description": "A strong tag of the body; absent on an answer to a preview token.", "schema": openapi.Str()},
	}
	return []openapi.Resp{{Status: 200, Desc: desc, Content: openapi.JSON(s), Headers: cache},
		{Status: 304, Desc: "Not modified: If-None-Match names the current ETag.", Headers: cache}}
}

// previewQuery and previewHeader carry a preview link's token (POST
// /v1/previews) to the public reads that serve drafts.
func previewQuery() openapi.M {
	return openapi.M{"name": "preview", "in": "query", "description": "A preview token (as X-Preview-Token).", "schema": openapi.Str()}
}

func previewHeader() openapi.M {
	return openapi.M{"name": "X-Preview-Token", "in": "header", "schema": openapi.Str(),
		"description": "A preview link's token: the drafts it covers are served (never cached); 401 when it is unknown, expired or revoked."}
}

func ifNoneMatchHeader() openapi.M {
	return openapi.M{"name": "If-None-Match", "in": "header", "description": "An ETag of an earlier answer; 304 when it is still current.", "schema": openapi.Str()}
}

// fileSchema is the file part of an image upload.
func fileSchema() openapi.M {
	return openapi.M{"type": "string", "contentMediaType": "application/octet-stream",
		"description": "A PNG, JPEG, GIF or WebP image (sniffed from the bytes; SVG is refused), at most 10 MiB and 16384 pixels a side."}
}

// OpenAPI describes the routes of the pillar and its schemas.
func OpenAPI(d *openapi.Doc) {
	d.Tag("content", "The site's content: keys, pages, components, galleries, the brand and images, their translations, drafts, versions, "+
		"previews, publishing and releases.")
	openAPIKeys(d)
	openAPIComponents(d)
	openAPIPages(d)
	openAPIGalleries(d)
	openAPIImages(d)
	openAPIBrand(d)
	openAPIPublic(d)
}

func openAPIKeys(d *openapi.Doc) {
	key := d.Schema("ContentKey", openapi.Obj(openapi.M{
		"key": keySchema(), "value": openapi.Str(),
		"lang": openapi.M{"type": "string", "description": "The language served: the one asked for, else the first of its fallback chain " +
			"(the project's fallback_languages, then its default language) with a value."},
		"all_locales": openapi.With(openapi.MapOf(openapi.Str()), openapi.M{"description": "Every language's value by language code."}),
		"updated_at":  openapi.Timestamp(),
		"has_draft":   drafts.HasDraft(),
		"fallback":    tenant.FallbackSchema("value (the key \"value\")"),
	}, "key", "value", "lang", "all_locales", "updated_at"))
	d.Schema("ContentBulk", openapi.Obj(openapi.M{
		"data":    openapi.With(openapi.MapOf(openapi.Str()), openapi.M{"description": "Values by key."}),
		"lang":    openapi.Str(),
		"missing": openapi.M{"type": "array", "items": openapi.Str(), "description": "Keys asked for that have no value in lang or any language of its fallback chain."},
		"fallback": openapi.M{"type": "object", "additionalProperties": openapi.Str(), "example": openapi.M{"hero.title": "fr"},
			"description": "Each key whose value came from another language of lang's fallback chain (fallback_languages, then the default language), " +
				"and that language; omitted when none did."},
		"has_more":    openapi.M{"type": "boolean", "description": fmt.Sprintf("A read without keys answers at most %d values, in key order: true when more follow.", BulkPage)},
		"next_cursor": openapi.With(openapi.Nullable(openapi.Str()), openapi.M{"description": "The cursor of the next page when has_more (pass it as cursor)."}),
	}, "data", "lang", "missing", "has_more", "next_cursor"))
	keyParam := openapi.M{"key": keySchema()}
	bulkQuery := []openapi.M{
		{"name": "keys", "in": "query", "schema": openapi.Str(),
			"description": fmt.Sprintf("Comma-separated keys (1 to %d; blanks skipped, duplicates once); every key, %d per page, when absent.", MaxBulkKeys, BulkPage)},
		{"name": "cursor", "in": "query", "schema": openapi.Str(), "description": "The next_cursor of the page before, for a read without keys."},
		langQuery("The language to read; the project's default language when absent."),
	}
	d.Add("GET", "/v1/content/bulk", openapi.Op{ID: "getContentBulk", Summary: "Many content values in one language", Tag: "content", Scope: "content:read",
		Desc: "Each key's value in `lang`, else in the project's default language. `missing` lists the keys asked for that have neither. " +
			fmt.Sprintf("Without `keys`, every key's value in key order, %d per page (`has_more`, `next_cursor`, then `cursor`). No credits.", BulkPage),
		Query: bulkQuery, Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The values by key.", Content: openapi.JSON(openapi.Ref("ContentBulk"))}}})
	d.Add("PUT", "/v1/content", openapi.Op{ID: "putContentBatch", Summary: "Set many content values", Tag: "content", Scope: "content:write",
		Desc: "All or nothing: 1 credit per item (content_update), checked against the whole batch first (402 states its cost). " +
			"Emits `content.changed` once per changed value (a first value included; writing the same value again is no change). " +
			"With `draft=true` (or `autosave=true`) the values go into their keys' drafts instead, free, and nothing live changes.",
		Idempotent: true,
		Body: openapi.JSON(d.Schema("PutContentBatchRequest", openapi.Obj(openapi.With(openapi.M{"updates": openapi.M{"type": "array", "minItems": 1, "maxItems": MaxBatchUpdates,
			"items": d.Schema("ContentUpdate", openapi.Obj(openapi.M{
				"key": keySchema(), "value": textSchema(MaxValueLen),
				"lang": openapi.M{"type": "string", "pattern": langPattern, "description": "The project's default language when absent."},
			}, "key", "value")), "description": "A key and language may appear once."}}, drafts.BodyFields()), "updates"))),
		Query: drafts.Query(), Errs: []int{402, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "Each item's key as stored, in the item's language, in request order.",
			Content: openapi.JSON(d.Schema("ContentBatch", openapi.Obj(openapi.M{"data": openapi.Arr(key)}, "data")))}}})
	d.Add("GET", "/v1/content/{key}", openapi.Op{ID: "getContentKey", Summary: "A content key", Tag: "content", Scope: "content:read",
		Desc:   "The value in `lang`, falling back to the project's default language (`lang` of the answer tells which), with every language's value. No credits.",
		Params: keyParam, Query: []openapi.M{langQuery("The language to read; the project's default language when absent."), drafts.ReadQuery()},
		Errs: []int{404, 422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The key.", Content: openapi.JSON(key)}}})
	d.Add("PUT", "/v1/content/{key}", openapi.Op{ID: "putContentKey", Summary: "Set a content value", Tag: "content", Scope: "content:write",
		Desc: "Creates or replaces the key's value in `lang` (the project's default language when absent): 1 credit (content_update). " +
			"Emits `content.changed` {key, lang, value, previous_value} when the value changes (a first value included). " +
			"With `draft=true` (or `autosave=true`) the value goes into the key's draft instead, free; the public surface keeps serving the live value until POST …/publish.",
		Params: keyParam, Idempotent: true, Query: drafts.Query(),
		Body: openapi.JSON(d.Schema("PutContentKeyRequest", openapi.Obj(openapi.With(openapi.M{"value": textSchema(MaxValueLen), "lang": langSchema()}, drafts.BodyFields()), "value"))),
		Errs: []int{402, 422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The key, served in the language written (the draft view after a draft write).", Content: openapi.JSON(key)}}})
	drafts.OpenAPI(d, drafts.Ops{Path: "/v1/content/{key}", Params: keyParam, Name: "ContentKey", Noun: "content key", Tag: "content", Scope: "content", View: key,
		Errs: []int{402}, Desc: "Each value of the draft that differs from what is live is written as PUT writes it: 1 credit (content_update) and `content.changed` each. " +
			"`languages` names which values to publish. A key without a draft is answered as it is."})
	d.Add("DELETE", "/v1/content/{key}", openapi.Op{ID: "deleteContentKey", Summary: "Delete a content key", Tag: "content", Scope: "content:write",
		Desc:   "Deletes the key's value in `lang`, or in every language when `lang` is absent. 404 when nothing was deleted.",
		Params: keyParam, Idempotent: true,
		Query: []openapi.M{langQuery("Delete only this language's value.")},
		Errs:  []int{404, 422},
		OK:    []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
	d.Add("POST", "/v1/content/translate", openapi.Op{ID: "translateContent", Summary: "Translate content keys (job translation.batch)", Tag: "content",
		Scope: "content:write", Idempotent: true,
		Desc: "Translates the default-language value of every key (or of `keys`) into `languages`: 7 credits per language. 202 with the pending Job; " +
			"its result is {keys_translated, locales}.",
		Body: openapi.JSON(d.Schema("TranslateContentRequest", openapi.Obj(openapi.M{
			"languages": openapi.M{"type": "array", "minItems": 1, "maxItems": 50, "uniqueItems": true, "items": langSchema(),
				"description": "Target languages, not the project's default language."},
			"keys": openapi.M{"type": "array", "minItems": 1, "maxItems": 5000, "items": keySchema()},
		}, "languages"))),
		Errs: []int{402, 422, 429},
		OK:   []openapi.Resp{{Status: 202, Desc: "The pending job.", Content: openapi.JSON(openapi.Ref("Job"))}}})
}

func openAPIComponents(d *openapi.Doc) {
	component := d.Schema("Component", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer"}, "slug": slugSchema(), "name": openapi.Str(),
		"props":        openapi.AnyObject("The props: any JSON object."),
		"translations": openapi.With(openapi.MapOf(openapi.AnyObject("Overrides of the props.")), openapi.M{"description": "Prop overrides by language code."}),
		"created_at":   openapi.Timestamp(), "updated_at": openapi.Timestamp(),
		"has_draft": drafts.HasDraft(),
		"fallback":  tenant.FallbackSchema("props (keys such as \"props.heading\")"),
	}, "id", "slug", "name", "props", "translations", "created_at", "updated_at"))
	componentLang := langQuery("Makes props those of this language: each top-level prop from the first language of its fallback chain " +
		"(fallback_languages, then the default language: the component's own props) whose translation has it; fallback says which came from " +
		"another language. Absent: the props as stored.")
	fields := openapi.M{
		"name": nameSchema(), "slug": slugSchema(),
		"props": openapi.AnyObject("Any JSON object; replaces the stored props whole."),
		"translations": openapi.M{"type": "object", "propertyNames": langSchema(), "additionalProperties": openapi.AnyObject("Overrides of the props."),
			"description": "Per-language prop overrides by language code; replaces the stored map whole."},
	}
	slugParam := openapi.M{"slug": slugSchema()}
	d.Add("GET", "/v1/components", openapi.Op{ID: "listComponents", Summary: "Components, newest first", Tag: "content", Scope: "content:read",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The components.", Content: openapi.JSON(d.List("Component"))}}})
	d.Add("POST", "/v1/components", openapi.Op{ID: "createComponent", Summary: "Create a component", Tag: "content", Scope: "content:write",
		Desc:       "The slug is derived from the name when omitted (-2, -3, … on collision); an explicit slug that is taken is a 409. No credits.",
		Idempotent: true, Body: openapi.JSON(d.Schema("CreateComponentRequest", openapi.Obj(fields, "name"))), Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The component.", Content: openapi.JSON(component)}}})
	d.Add("GET", "/v1/components/{slug}", openapi.Op{ID: "getComponent", Summary: "A component", Tag: "content", Scope: "content:read",
		Params: slugParam, Query: []openapi.M{drafts.ReadQuery(), componentLang}, Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The component.", Content: openapi.JSON(component)}}})
	d.Add("PATCH", "/v1/components/{slug}", openapi.Op{ID: "updateComponent", Summary: "Update a component", Tag: "content", Scope: "content:write",
		Desc: "Fields sent replace the stored ones; a new slug that is taken is a 409. No credits. " +
			"With `draft=true` (or `autosave=true`) the fields are written to the component's draft instead (a taken slug is refused at publish), " +
			"and the public surface keeps serving the live component until POST …/publish.",
		Params: slugParam, Query: drafts.Query(), Idempotent: true,
		Body: openapi.JSON(d.Schema("UpdateComponentRequest", openapi.Obj(openapi.With(fields, drafts.BodyFields())))), Errs: []int{404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The component (the draft view after a draft write).", Content: openapi.JSON(component)}}})
	drafts.OpenAPI(d, drafts.Ops{Path: "/v1/components/{slug}", Params: slugParam, Name: "Component", Noun: "component", Tag: "content", Scope: "content",
		View: component, Errs: []int{409}, Desc: "No credits. The component's draft goes live. " +
			"`languages` names which to publish: the project's default language is the name, slug and props, any other its entry of `translations`. " +
			"A draft whose slug another component has is a 409 and nothing changes. Components have no status, so there is no unpublish."})
	d.Add("DELETE", "/v1/components/{slug}", openapi.Op{ID: "deleteComponent", Summary: "Delete a component", Tag: "content", Scope: "content:write",
		Params: slugParam, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
}

func openAPIPages(d *openapi.Doc) {
	seo := d.Schema("PageSEO", openapi.Obj(openapi.M{
		"meta_title": openapi.Str(), "meta_description": openapi.Str(),
		"og_image": openapi.Nullable(openapi.Str()), "canonical_url": openapi.Nullable(openapi.Str()), "noindex": openapi.M{"type": "boolean"},
	}, "meta_title", "meta_description", "og_image", "canonical_url", "noindex"))
	page := d.Schema("Page", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer"}, "slug": slugSchema(), "path": openapi.Str(), "title": openapi.Str(),
		"status":   openapi.M{"type": "string", "enum": []any{PageDraft, PagePublished}},
		"sections": openapi.Arr(openapi.AnyObject("A section: any JSON object.")),
		"seo":      seo,
		"translations": openapi.Arr(d.Schema("PageTranslation", openapi.Obj(openapi.M{"lang": openapi.Str(), "title": openapi.Str(), "seo": seo},
			"lang", "title", "seo"))),
		"created_at": openapi.Timestamp(), "updated_at": openapi.Timestamp(), "published_at": openapi.Nullable(openapi.Timestamp()),
		"has_draft": drafts.HasDraft(),
		"fallback":  tenant.FallbackSchema("flat field (title, seo.meta_title, seo.meta_description, seo.og_image, seo.canonical_url)"),
	}, "id", "slug", "path", "title", "status", "sections", "seo", "translations", "created_at", "updated_at", "published_at"))
	pageRef := openapi.M{"id_or_slug": openapi.M{"type": "string", "pattern": slug.Pattern.String(),
		"description": "The page's numeric id, or its slug (a number is tried as an id first)."}}
	seoIn := d.Schema("PageSEOInput", openapi.With(openapi.Obj(openapi.M{
		"meta_title": textSchema(maxMetaTitle), "meta_description": textSchema(maxMetaDesc),
		"og_image": urlSchema(0), "canonical_url": urlSchema(0), "noindex": openapi.M{"type": "boolean"},
	}), openapi.M{"description": "Fields sent replace the stored ones, the others are kept; an empty og_image or canonical_url clears it."}))
	fields := openapi.M{
		"title": nameSchema(), "slug": slugSchema(),
		"path": openapi.M{"type": "string", "maxLength": maxPathLen, "pattern": pathPattern.String(),
			"description": "The site path, e.g. / or /about/team; /{slug} when omitted on create."},
		"status": openapi.M{"type": "string", "enum": []any{PageDraft, PagePublished}},
		"sections": openapi.M{"type": "array", "maxItems": maxSections, "items": openapi.AnyObject("A section: any JSON object."),
			"description": "Replaces the stored sections whole."},
		"seo": seoIn,
		"translations": openapi.M{"type": "array", "maxItems": maxTranslations, "description": "One per language (each at most once); replaces the stored list whole.",
			"items": d.Schema("PageTranslationInput", openapi.Obj(openapi.M{"lang": langSchema(), "title": textSchema(255), "seo": seoIn}, "lang"))},
	}
	update := openapi.With(fields, drafts.BodyFields())
	d.Add("GET", "/v1/pages", openapi.Op{ID: "listPages", Summary: "Pages, newest first", Tag: "content", Scope: "content:read",
		Query: append(openapi.PageParams(), openapi.M{"name": "status", "in": "query", "schema": openapi.M{"type": "string", "enum": []any{PageDraft, PagePublished}}}),
		Errs:  []int{422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The pages.", Content: openapi.JSON(d.List("Page"))}}})
	d.Add("POST", "/v1/pages", openapi.Op{ID: "createPage", Summary: "Create a page", Tag: "content", Scope: "content:write",
		Desc: "1 credit (page_update). A draft unless `status` says published (published_at is then set). The slug is derived from the title when omitted " +
			"(-2, -3, … on collision); a slug or path another page has is a 409.",
		Idempotent: true, Body: openapi.JSON(d.Schema("CreatePageRequest", openapi.Obj(fields, "title"))), Errs: []int{402, 409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The page.", Content: openapi.JSON(page)}}})
	d.Add("GET", "/v1/pages/{id_or_slug}", openapi.Op{ID: "getPage", Summary: "A page", Tag: "content", Scope: "content:read",
		Desc:   "With `lang`, that translation's title and SEO fields (those it has) fill the flat ones; `translations` always lists every language.",
		Params: pageRef, Query: []openapi.M{langQuery("The translation to read the title and SEO in."), drafts.ReadQuery()},
		Errs: []int{404, 422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The page.", Content: openapi.JSON(page)}}})
	d.Add("PATCH", "/v1/pages/{id_or_slug}", openapi.Op{ID: "updatePage", Summary: "Update a page", Tag: "content", Scope: "content:write",
		Desc: "1 credit (page_update). Fields sent replace the stored ones (seo field by field). Publishing sets published_at once; back to draft clears it. " +
			"A slug or path another page has is a 409. With `draft=true` (or `autosave=true`) the fields are written to the page's draft instead, free, " +
			"and the public surface keeps serving the live page until POST …/publish; a draft write takes no `status`.",
		Params: pageRef, Query: drafts.Query(), Idempotent: true, Body: openapi.JSON(d.Schema("UpdatePageRequest", openapi.Obj(update))), Errs: []int{402, 404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The page (the draft view after a draft write).", Content: openapi.JSON(page)}}})
	drafts.OpenAPI(d, drafts.Ops{Path: "/v1/pages/{id_or_slug}", Params: pageRef, Name: "Page", Noun: "page", Tag: "content", Scope: "content", View: page,
		Errs: []int{402, 409}, Desc: "1 credit (page_update). The page's draft goes live and the page is published; without a draft, the page is published as it is. " +
			"`languages` names which to publish: the project's default language is the slug, path, title, sections and SEO, any other its translation. " +
			"A draft whose slug or path another page has is a 409 and nothing changes."})
	d.Add("POST", "/v1/pages/{id_or_slug}/unpublish", openapi.Op{ID: "unpublishPage", Summary: "Unpublish a page", Tag: "content", Scope: "content:write",
		Desc:   "Takes the page off the public surface (status draft); its content and its draft stay.",
		Params: pageRef, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The page.", Content: openapi.JSON(page)}}})
	d.Add("DELETE", "/v1/pages/{id_or_slug}", openapi.Op{ID: "deletePage", Summary: "Delete a page", Tag: "content", Scope: "content:write",
		Params: pageRef, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
}

func openAPIGalleries(d *openapi.Doc) {
	gallery := d.Schema("Gallery", openapi.Obj(openapi.M{
		"slug": slugSchema(), "name": openapi.Str(),
		"items": openapi.M{"type": "array", "maxItems": 200,
			"items": d.Schema("GalleryItem", openapi.Obj(openapi.M{"url": openapi.Str(), "alt": openapi.Str()}, "url"))},
		"items_count": openapi.M{"type": "integer", "minimum": 0, "maximum": 200},
		"created_at":  openapi.Timestamp(), "updated_at": openapi.Timestamp(),
		"has_draft": drafts.HasDraft(),
	}, "slug", "name", "items", "items_count", "created_at", "updated_at"))
	wrapped := openapi.JSON(d.Schema("GalleryEnvelope", openapi.Obj(openapi.M{"data": gallery}, "data")))
	fields := openapi.M{
		"name": nameSchema(), "slug": slugSchema(),
		"items": openapi.M{"type": "array", "maxItems": 200, "description": "Ordered; replaces the stored items whole.",
			"items": d.Schema("GalleryItemInput", openapi.Obj(openapi.M{"url": urlSchema(1), "alt": textSchema(1000)}, "url"))},
	}
	slugParam := openapi.M{"slug": slugSchema()}
	d.Add("GET", "/v1/galleries", openapi.Op{ID: "listGalleries", Summary: "Galleries, newest first", Tag: "content", Scope: "galleries:read",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The galleries.", Content: openapi.JSON(d.List("Gallery"))}}})
	d.Add("POST", "/v1/galleries", openapi.Op{ID: "createGallery", Summary: "Create a gallery", Tag: "content", Scope: "galleries:write",
		Desc:       "The slug is derived from the name when omitted (-2, -3, … on collision); an explicit slug that is taken is a 409. Items may start empty. No credits.",
		Idempotent: true, Body: openapi.JSON(d.Schema("CreateGalleryRequest", openapi.Obj(fields, "name"))), Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The gallery, wrapped.", Content: wrapped}}})
	d.Add("GET", "/v1/galleries/{slug}", openapi.Op{ID: "getGallery", Summary: "A gallery", Tag: "content", Scope: "galleries:read",
		Params: slugParam, Query: []openapi.M{drafts.ReadQuery()}, Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The gallery, wrapped.", Content: wrapped}}})
	d.Add("PATCH", "/v1/galleries/{slug}", openapi.Op{ID: "updateGallery", Summary: "Update a gallery", Tag: "content", Scope: "galleries:write",
		Desc: "Fields sent replace the stored ones; `items` is the complete new list (full replace). A new slug that is taken is a 409. No credits. " +
			"With `draft=true` (or `autosave=true`) the name and items are written to the gallery's draft instead, and the public surface keeps " +
			"serving the live gallery until POST …/publish; the slug is the gallery's address and a draft write takes none (a new slug keeps the draft and versions).",
		Params: slugParam, Query: drafts.Query(), Idempotent: true,
		Body: openapi.JSON(d.Schema("UpdateGalleryRequest", openapi.Obj(openapi.With(fields, drafts.BodyFields())))), Errs: []int{404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The gallery, wrapped (the draft view after a draft write).", Content: wrapped}}})
	drafts.OpenAPI(d, drafts.Ops{Path: "/v1/galleries/{slug}", Params: slugParam, Name: "Gallery", Noun: "gallery", Tag: "content", Scope: "galleries",
		View: openapi.Ref("GalleryEnvelope"), Desc: "No credits. The gallery's draft (its name and items) goes live, whole: galleries have no languages, " +
			"so a body naming `languages` is a 422. Galleries have no status, so there is no unpublish. Answers wrapped, as every gallery route."})
	d.Add("DELETE", "/v1/galleries/{slug}", openapi.Op{ID: "deleteGallery", Summary: "Delete a gallery", Tag: "content", Scope: "galleries:write",
		Params: slugParam, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
}

func openAPIImages(d *openapi.Doc) {
	image := d.Schema("Image", openapi.Obj(openapi.M{
		"key": keySchema(),
		"url": openapi.M{"type": "string", "description": "Where /v1/public/media serves it (under PLINTH_MEDIA_URL when the server sets one)."},
		"alt": openapi.Str(), "width": openapi.M{"type": []any{"integer", "null"}}, "height": openapi.M{"type": []any{"integer", "null"}},
		"content_type": openapi.Nullable(openapi.Str()), "size_bytes": openapi.M{"type": []any{"integer", "null"}},
		"source":     openapi.M{"type": "string", "enum": []any{"upload", "url", "ai"}},
		"created_at": openapi.Timestamp(),
	}, "key", "url", "alt", "width", "height", "content_type", "size_bytes", "source", "created_at"))
	keyParam := openapi.M{"key": keySchema()}
	// A side the server defaults when it is absent. Its default sits in a
	// named schema, not on the properties: openapi-typescript types a
	// property that carries a default itself as always present (true of
	// an answer, not of a request), which would make the SDK demand width
	// and height that a body may leave out.
	side := d.Schema("ImageSide", openapi.M{"type": "integer", "minimum": minImageSide, "maximum": maxImageSide, "default": defaultImageSide,
		"description": fmt.Sprintf("Pixels of a generated image's side, from %d to %d; %d when absent.", minImageSide, maxImageSide, defaultImageSide)})
	d.Add("GET", "/v1/images", openapi.Op{ID: "listImages", Summary: "Images, newest first", Tag: "content", Scope: "images:read",
		Query: append(openapi.PageParams(), openapi.M{"name": "source", "in": "query", "schema": openapi.M{"type": "string", "enum": []any{"upload", "url", "ai"}}}),
		Errs:  []int{422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The images.", Content: openapi.JSON(d.List("Image"))}}})
	d.Add("POST", "/v1/images", openapi.Op{ID: "createImage", Summary: "Upload an image, or generate one (job image.generate)", Tag: "content",
		Scope: "images:write", Idempotent: true,
		Desc: "A multipart/form-data body registers an upload: 1 credit (image_register), 201 with the Image; its key is `key`, or one derived " +
			"from the file name (-2, -3, … on collision); an explicit key that is taken is a 409 (PUT /images/{key} replaces by URL). " +
			"A JSON body starts image.generate: 10 credits, 202 with the pending Job; its result is {url, key, width, height} and " +
			"`image.generated` (the Image) is emitted when it completes.",
		Body: openapi.M{
			"application/json": d.Schema("GenerateImageRequest", openapi.Obj(openapi.M{
				"prompt": openapi.M{"type": "string", "minLength": 1, "maxLength": maxPromptLen, "pattern": `\S`},
				"width":  side, "height": side,
			}, "prompt")),
			"multipart/form-data": d.Schema("UploadImageRequest", openapi.Obj(openapi.M{
				"file": fileSchema(),
				"key":  keySchema(),
				"alt":  textSchema(1000),
			}, "file")),
		},
		Errs: []int{402, 409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The uploaded image (multipart).", Content: openapi.JSON(image)},
			{Status: 202, Desc: "The pending image.generate job (JSON).", Content: openapi.JSON(openapi.Ref("Job"))}}})
	d.Add("GET", "/v1/images/{key}", openapi.Op{ID: "getImage", Summary: "An image", Tag: "content", Scope: "images:read",
		Params: keyParam, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The image.", Content: openapi.JSON(image)}}})
	d.Add("PUT", "/v1/images/{key}", openapi.Op{ID: "swapImage", Summary: "Register or replace an image by URL", Tag: "content", Scope: "images:write",
		Desc: "The image at `url` is fetched (https; no private, loopback or reserved address; no redirects), checked to be a PNG, JPEG, GIF or WebP " +
			"of at most 10 MiB, and stored; the key (created when new) serves it from then on. 1 credit (image_register). " +
			"A URL that cannot be fetched or is no image is a 422 on url. `alt` is kept when omitted.",
		Params: keyParam, Idempotent: true,
		Body: openapi.JSON(d.Schema("SwapImageRequest", openapi.Obj(openapi.M{"url": openapi.M{"type": "string", "maxLength": 2048}, "alt": textSchema(1000)}, "url"))),
		Errs: []int{402, 422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The image.", Content: openapi.JSON(image)}}})
	d.Add("DELETE", "/v1/images/{key}", openapi.Op{ID: "deleteImage", Summary: "Delete an image", Tag: "content", Scope: "images:write",
		Desc:   "Its media URL answers 404 from then on.",
		Params: keyParam, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
	media := openapi.M{}
	for _, t := range []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/octet-stream"} {
		media[t] = openapi.M{"type": "string", "contentMediaType": t}
	}
	cache := openapi.M{"Cache-Control": openapi.M{"required": true, "schema": openapi.Str()}, "ETag": openapi.M{"required": true, "schema": openapi.Str()},
		"Content-Security-Policy": openapi.M{"required": true, "schema": openapi.M{"type": "string", "const": MediaCSP}},
		"X-Content-Type-Options":  openapi.M{"required": true, "schema": openapi.M{"type": "string", "const": "nosniff"}}}
	d.Add("GET", "/v1/public/media/{project}/{key}", openapi.Op{ID: "getMedia", Summary: "A stored image", Tag: "public", Auth: openapi.None,
		Desc: "Uploaded and generated images, and the brand logo (key _logo), of the project named in the path; conditional and range requests are honoured. " +
			"The Content-Type is the image type the stored bytes show (PNG, JPEG, GIF or WebP), else application/octet-stream: never a type a row states; " +
			"every answer is sandboxed (`Content-Security-Policy: sandbox; default-src 'none'`, `X-Content-Type-Options: nosniff`). " +
			"Serve this path from a separate, cookieless origin (PLINTH_MEDIA_URL): docs/operations.md.",
		Params: openapi.M{"project": openapi.M{"type": "string", "pattern": "^prj_"}},
		Errs:   []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The image.", Content: media, Headers: cache},
			{Status: 206, Desc: "A range of the image.", Content: media, Headers: cache},
			{Status: 304, Desc: "Not modified.", Headers: cache},
			{Status: 416, Desc: "The range is not satisfiable.", Content: openapi.M{"text/plain": openapi.Str()}}}})
}

func openAPIBrand(d *openapi.Doc) {
	brand := openapi.JSON(d.Schema("Brand", openapi.Obj(openapi.M{
		"name": openapi.Str(), "tagline": openapi.Str(), "description": openapi.Str(), "voice": openapi.Str(), "audience": openapi.Str(),
		"colors": openapi.MapOf(openapi.Str()), "fonts": openapi.MapOf(openapi.Str()),
		"logo_url": openapi.Nullable(openapi.Str()), "updated_at": openapi.Timestamp(),
		"has_draft": drafts.HasDraft(),
	}, "name", "tagline", "description", "voice", "audience", "colors", "fonts", "logo_url", "updated_at")))
	mapOf := func(what string) openapi.M {
		return openapi.With(openapi.MapOf(textSchema(255)), openapi.M{"maxProperties": 50, "propertyNames": openapi.M{"minLength": 1, "maxLength": 64},
			"description": what + " by name; replaces the stored map whole."})
	}
	d.Add("GET", "/v1/brand", openapi.Op{ID: "getBrand", Summary: "The brand context", Tag: "content", Scope: "brand:read",
		Query: []openapi.M{drafts.ReadQuery()}, Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The brand context (empty strings and maps until set).", Content: brand}}})
	d.Add("PATCH", "/v1/brand", openapi.Op{ID: "updateBrand", Summary: "Update the brand context", Tag: "content", Scope: "brand:write",
		Desc: "Fields sent replace the stored ones. No credits. With `draft=true` (or `autosave=true`) the fields are written to the brand's draft " +
			"instead, and the public surface keeps serving the live brand until POST /v1/brand/publish. The logo has no draft (POST /v1/brand/logo).",
		Query: drafts.Query(), Idempotent: true,
		Body: openapi.JSON(d.Schema("UpdateBrandRequest", openapi.Obj(openapi.With(openapi.M{
			"name": textSchema(255), "tagline": textSchema(255),
			"description": textSchema(5000), "voice": textSchema(5000), "audience": textSchema(5000),
			"colors": mapOf("Colours"), "fonts": mapOf("Fonts"),
		}, drafts.BodyFields())))),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The brand context (the draft view after a draft write).", Content: brand}}})
	drafts.OpenAPI(d, drafts.Ops{Path: "/v1/brand", Name: "Brand", Noun: "brand", Tag: "content", Scope: "brand", View: openapi.Ref("Brand"),
		Desc: "No credits. The brand's draft (name, tagline, description, voice, audience, colours, fonts) goes live, whole: the brand has no " +
			"languages, so a body naming `languages` is a 422. There is no unpublish."})
	d.Add("POST", "/v1/brand/logo", openapi.Op{ID: "uploadBrandLogo", Summary: "Upload the brand logo", Tag: "content", Scope: "brand:write",
		Desc: "A multipart/form-data body with one part `file` becomes the logo, served at `logo_url` (/v1/public/media/{project}/_logo). " +
			"1 credit (image_register). The logo has no draft: an upload changes what is live at once, drafts or not.",
		Idempotent: true,
		Body:       openapi.M{"multipart/form-data": d.Schema("UploadBrandLogoRequest", openapi.Obj(openapi.M{"file": fileSchema()}, "file"))},
		Errs:       []int{402, 422},
		OK:         []openapi.Resp{{Status: 200, Desc: "The brand context with its new logo_url.", Content: brand}}})
}

func openAPIPublic(d *openapi.Doc) {
	lang := langQuery("The language to read; the project's default language when absent.")
	d.Add("GET", "/v1/public/content/bulk", openapi.Op{ID: "getPublicContentBulk", Summary: "Many content values (public)", Tag: "public", Auth: openapi.Public,
		Desc: "As GET /v1/content/bulk, without a key, for the keys listed: `keys` is required (400 without it) and lists at most " +
			fmt.Sprintf("%d keys (422 beyond).", MaxPublicBulkKeys),
		Query: []openapi.M{{"name": "keys", "in": "query", "required": true, "schema": openapi.Str(),
			"description": fmt.Sprintf("Comma-separated keys (1 to %d; blanks skipped, duplicates once).", MaxPublicBulkKeys)}, lang, previewQuery()},
		Headers: []openapi.M{ifNoneMatchHeader(), previewHeader()}, Errs: []int{401, 422},
		OK: publicAnswers("The values by key.", openapi.Ref("ContentBulk"))})
	d.Add("GET", "/v1/public/content/{key}", openapi.Op{ID: "getPublicContentKey", Summary: "A content key (public)", Tag: "public", Auth: openapi.Public,
		Desc:   "As GET /v1/content/{key}, without a key.",
		Params: openapi.M{"key": keySchema()}, Query: []openapi.M{lang, previewQuery()}, Headers: []openapi.M{ifNoneMatchHeader(), previewHeader()}, Errs: []int{401, 422},
		OK: publicAnswers("The key.", openapi.Ref("ContentKey"))})
	d.Add("GET", "/v1/public/pages/{slug}", openapi.Op{ID: "getPublicPage", Summary: "A published page (public)", Tag: "public", Auth: openapi.Public,
		Desc: "Drafts are 404. With `lang`, the flat title and SEO fields are that language's, each from the first language of its fallback chain " +
			"(the project's fallback_languages, then the default language: the page's own fields) that has it; `fallback` says which came from where. " +
			"With a preview token that covers the page, " +
			"its draft view (published or not).",
		Params: openapi.M{"slug": slugSchema()}, Query: []openapi.M{langQuery("The translation to read the title and SEO in."), previewQuery()},
		Headers: []openapi.M{ifNoneMatchHeader(), previewHeader()}, Errs: []int{401, 422},
		OK: publicAnswers("The page.", openapi.Ref("Page"))})
	d.Schema("PageLink", openapi.Obj(openapi.M{
		"slug": openapi.Str(), "path": openapi.Str(), "title": openapi.Str(), "updated_at": openapi.Timestamp(),
		"fallback": tenant.FallbackSchema("title"),
	}, "slug", "path", "title", "updated_at"))
	d.Add("GET", "/v1/public/pages", openapi.Op{ID: "listPublicPages", Summary: "Published pages (public)", Tag: "public", Auth: openapi.Public,
		Desc: "The published pages, newest first, with what a site's router and navigation need (no sections). " +
			"With `lang`, titles are in that language, else the first of its fallback chain that has one (`fallback` says which).",
		Query:   append(openapi.PageParams(), langQuery("The translation to read the titles in.")),
		Headers: []openapi.M{ifNoneMatchHeader()}, Errs: []int{422},
		OK: publicAnswers("The pages.", d.List("PageLink"))})
	d.Add("GET", "/v1/public/components/{slug}", openapi.Op{ID: "getPublicComponent", Summary: "A component (public)", Tag: "public", Auth: openapi.Public,
		Desc:   "As GET /v1/components/{slug}, without a key. With a preview token that covers the component, its draft view.",
		Params: openapi.M{"slug": slugSchema()}, Headers: []openapi.M{ifNoneMatchHeader(), previewHeader()}, Errs: []int{401, 422},
		Query: []openapi.M{langQuery("As GET /v1/components/{slug}: the props in this language, following its fallback chain."), previewQuery()},
		OK:    publicAnswers("The component.", openapi.Ref("Component"))})
	d.Add("GET", "/v1/public/brand", openapi.Op{ID: "getPublicBrand", Summary: "The brand (public)", Tag: "public", Auth: openapi.Public,
		Desc: "What a site shows of the brand context: name, tagline, description, colours, fonts and logo. " +
			"The voice and audience are briefs for writing and stay behind a key (GET /v1/brand). " +
			"With a preview token that covers the brand, its draft view.",
		Query: []openapi.M{previewQuery()}, Headers: []openapi.M{ifNoneMatchHeader(), previewHeader()}, Errs: []int{401},
		OK: publicAnswers("The brand.", d.Schema("PublicBrand", openapi.Obj(openapi.M{
			"name": openapi.Str(), "tagline": openapi.Str(), "description": openapi.Str(),
			"colors": openapi.MapOf(openapi.Str()), "fonts": openapi.MapOf(openapi.Str()),
			"logo_url": openapi.Nullable(openapi.Str()), "updated_at": openapi.Timestamp(),
		}, "name", "tagline", "description", "colors", "fonts", "logo_url", "updated_at")))})
	d.Add("GET", "/v1/public/galleries/{slug}", openapi.Op{ID: "getPublicGallery", Summary: "A gallery (public)", Tag: "public", Auth: openapi.Public,
		Desc:   "As GET /v1/galleries/{slug}, without a key. With a preview token that covers the gallery, its draft view.",
		Params: openapi.M{"slug": slugSchema()}, Query: []openapi.M{previewQuery()}, Headers: []openapi.M{ifNoneMatchHeader(), previewHeader()},
		Errs: []int{401},
		OK:   publicAnswers("The gallery, wrapped.", openapi.Ref("GalleryEnvelope"))})
}
