package openapi

// Schemas of the content pillar's inputs, shared by its operations (the
// patterns are those tenant/content, internal/slug and central enforce).
const (
	contentKeyPattern  = `^[a-z0-9][a-z0-9._-]{0,199}$`
	contentSlugPattern = `^[a-z0-9][a-z0-9-]{0,254}$`
	contentLangPattern = `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`
	contentPathPattern = `^/([A-Za-z0-9._~!$&'()*+,;=:@%-]+(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*/?)?$`
)

func contentKey() M { return M{"type": "string", "pattern": contentKeyPattern} }

func contentSlug() M { return M{"type": "string", "pattern": contentSlugPattern} }

func contentLang() M { return M{"type": "string", "pattern": contentLangPattern} }

// contentName is a name or title: not blank, at most 255 characters.
func contentName() M {
	return M{"type": "string", "minLength": 1, "maxLength": 255, "pattern": `\S`}
}

func contentText(max int) M { return M{"type": "string", "maxLength": max} }

// contentURL is an absolute http(s) URL or a path on the site ("/media/x.jpg").
func contentURL(min int) M {
	return M{"type": "string", "minLength": min, "maxLength": 2048, "description": "An absolute http(s) URL or a path starting with /."}
}

// contentLangQuery is the lang query parameter; what its absence means
// differs per route.
func contentLangQuery(desc string) M {
	return M{"name": "lang", "in": "query", "description": desc, "schema": contentLang()}
}

// contentPublic are the answers of a public read: 200 with the caching
// headers, or 304 when If-None-Match names the current ETag.
func contentPublic(desc string, s M) []resp {
	cache := M{
		"Cache-Control": M{"required": true, "description": "public, max-age=60", "schema": str()},
		"ETag":          M{"required": true, "description": "A strong tag of the body.", "schema": str()},
	}
	return []resp{{status: 200, desc: desc, content: jsonOf(s), headers: cache},
		{status: 304, desc: "Not modified: If-None-Match names the current ETag.", headers: cache}}
}

var contentIfNoneMatch = M{"name": "If-None-Match", "in": "header", "description": "An ETag of an earlier answer; 304 when it is still current.", "schema": str()}

// contentFile is the file part of an image upload.
func contentFile() M {
	return M{"type": "string", "contentMediaType": "application/octet-stream",
		"description": "A PNG, JPEG, GIF or WebP image (sniffed from the bytes; SVG is refused), at most 10 MiB and 16384 pixels a side."}
}

// content documents the routes of tenant/content.
func (d *doc) content() {
	d.contentKeys()
	d.contentComponents()
	d.contentPages()
	d.contentGalleries()
	d.contentImages()
	d.contentBrand()
	d.contentPublic()
}

func (d *doc) contentKeys() {
	keyParam := M{"key": contentKey()}
	bulkQuery := []M{
		{"name": "keys", "in": "query", "schema": str(),
			"description": "Comma-separated keys (1 to 500; blanks skipped, duplicates once); every key when absent."},
		contentLangQuery("The language to read; the project's default language when absent."),
	}
	d.add("GET", "/v1/content/bulk", op{id: "getContentBulk", summary: "Many content values in one language", tag: "content", scope: "content:read",
		desc:  "Each key's value in `lang`, else in the project's default language. `missing` lists the keys asked for that have neither. No credits.",
		query: bulkQuery, errs: []int{422},
		ok: []resp{{status: 200, desc: "The values by key.", content: jsonOf(ref("ContentBulk"))}}})
	d.add("PUT", "/v1/content", op{id: "putContentBatch", summary: "Set many content values", tag: "content", scope: "content:write",
		desc: "All or nothing: 1 credit per item (content_update), checked against the whole batch first (402 states its cost). " +
			"Emits `content.changed` once per changed value (a first value included; writing the same value again is no change).",
		idempotent: true,
		body: jsonOf(obj(M{"updates": M{"type": "array", "minItems": 1, "maxItems": 500, "items": obj(M{
			"key": contentKey(), "value": contentText(65536),
			"lang": M{"type": "string", "pattern": contentLangPattern, "description": "The project's default language when absent."},
		}, "key", "value"), "description": "A key and language may appear once."}}, "updates")),
		errs: []int{402, 422},
		ok:   []resp{{status: 200, desc: "Each item's key as stored, in the item's language, in request order.", content: jsonOf(ref("ContentBatch"))}}})
	d.add("GET", "/v1/content/{key}", op{id: "getContentKey", summary: "A content key", tag: "content", scope: "content:read",
		desc:   "The value in `lang`, falling back to the project's default language (`lang` of the answer tells which), with every language's value. No credits.",
		params: keyParam, query: []M{contentLangQuery("The language to read; the project's default language when absent.")},
		errs: []int{404, 422},
		ok:   []resp{{status: 200, desc: "The key.", content: jsonOf(ref("ContentKey"))}}})
	d.add("PUT", "/v1/content/{key}", op{id: "putContentKey", summary: "Set a content value", tag: "content", scope: "content:write",
		desc: "Creates or replaces the key's value in `lang` (the project's default language when absent): 1 credit (content_update). " +
			"Emits `content.changed` {key, lang, value, previous_value} when the value changes (a first value included).",
		params: keyParam, idempotent: true,
		body: jsonOf(obj(M{"value": contentText(65536), "lang": contentLang()}, "value")),
		errs: []int{402, 422},
		ok:   []resp{{status: 200, desc: "The key, served in the language written.", content: jsonOf(ref("ContentKey"))}}})
	d.add("DELETE", "/v1/content/{key}", op{id: "deleteContentKey", summary: "Delete a content key", tag: "content", scope: "content:write",
		desc:   "Deletes the key's value in `lang`, or in every language when `lang` is absent. 404 when nothing was deleted.",
		params: keyParam, idempotent: true,
		query: []M{contentLangQuery("Delete only this language's value.")},
		errs:  []int{404, 422},
		ok:    []resp{{status: 204, desc: "Deleted."}}})
	d.add("POST", "/v1/content/translate", op{id: "translateContent", summary: "Translate content keys (job translation.batch)", tag: "content",
		scope: "content:write", idempotent: true,
		desc: "Translates the default-language value of every key (or of `keys`) into `languages`: 7 credits per language. 202 with the pending Job; " +
			"its result is {keys_translated, locales}.",
		body: jsonOf(obj(M{
			"languages": M{"type": "array", "minItems": 1, "maxItems": 50, "uniqueItems": true, "items": contentLang(),
				"description": "Target languages, not the project's default language."},
			"keys": M{"type": "array", "minItems": 1, "maxItems": 5000, "items": contentKey()},
		}, "languages")),
		errs: []int{402, 422, 429},
		ok:   []resp{{status: 202, desc: "The pending job.", content: jsonOf(ref("Job"))}}})
}

func (d *doc) contentComponents() {
	slugParam := M{"slug": contentSlug()}
	body := func(required ...string) M {
		return jsonOf(obj(M{
			"name": contentName(), "slug": contentSlug(),
			"props":        M{"type": "object", "description": "Any JSON object; replaces the stored props whole."},
			"translations": M{"type": "object", "propertyNames": contentLang(), "additionalProperties": M{"type": "object"}, "description": "Per-language prop overrides by language code; replaces the stored map whole."},
		}, required...))
	}
	d.add("GET", "/v1/components", op{id: "listComponents", summary: "Components, newest first", tag: "content", scope: "content:read",
		query: pageParams(), errs: []int{422},
		ok: []resp{{status: 200, desc: "The components.", content: jsonOf(list(ref("Component")))}}})
	d.add("POST", "/v1/components", op{id: "createComponent", summary: "Create a component", tag: "content", scope: "content:write",
		desc:       "The slug is derived from the name when omitted (-2, -3, … on collision); an explicit slug that is taken is a 409. No credits.",
		idempotent: true, body: body("name"), errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The component.", content: jsonOf(ref("Component"))}}})
	d.add("GET", "/v1/components/{slug}", op{id: "getComponent", summary: "A component", tag: "content", scope: "content:read",
		params: slugParam, errs: []int{404},
		ok: []resp{{status: 200, desc: "The component.", content: jsonOf(ref("Component"))}}})
	d.add("PATCH", "/v1/components/{slug}", op{id: "updateComponent", summary: "Update a component", tag: "content", scope: "content:write",
		desc:   "Fields sent replace the stored ones; a new slug that is taken is a 409. No credits.",
		params: slugParam, idempotent: true, body: body(), errs: []int{404, 409, 422},
		ok: []resp{{status: 200, desc: "The component.", content: jsonOf(ref("Component"))}}})
	d.add("DELETE", "/v1/components/{slug}", op{id: "deleteComponent", summary: "Delete a component", tag: "content", scope: "content:write",
		params: slugParam, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})
}

func (d *doc) contentPages() {
	pageRef := M{"id_or_slug": M{"type": "string", "pattern": contentSlugPattern,
		"description": "The page's numeric id, or its slug (a number is tried as an id first)."}}
	seoIn := obj(M{
		"meta_title": contentText(255), "meta_description": contentText(1000),
		"og_image": contentURL(0), "canonical_url": contentURL(0), "noindex": M{"type": "boolean"},
	})
	seoIn["description"] = "Fields sent replace the stored ones, the others are kept; an empty og_image or canonical_url clears it."
	body := func(required ...string) M {
		return jsonOf(obj(M{
			"title": contentName(), "slug": contentSlug(),
			"path":     M{"type": "string", "maxLength": 255, "pattern": contentPathPattern, "description": "The site path, e.g. / or /about/team; /{slug} when omitted on create."},
			"status":   M{"type": "string", "enum": []any{"draft", "published"}},
			"sections": M{"type": "array", "maxItems": 200, "items": M{"type": "object"}, "description": "Replaces the stored sections whole."},
			"seo":      seoIn,
			"translations": M{"type": "array", "maxItems": 100, "description": "One per language (each at most once); replaces the stored list whole.",
				"items": obj(M{"lang": contentLang(), "title": contentText(255), "seo": seoIn}, "lang")},
		}, required...))
	}
	d.add("GET", "/v1/pages", op{id: "listPages", summary: "Pages, newest first", tag: "content", scope: "content:read",
		query: append(pageParams(), M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": []any{"draft", "published"}}}),
		errs:  []int{422},
		ok:    []resp{{status: 200, desc: "The pages.", content: jsonOf(list(ref("Page")))}}})
	d.add("POST", "/v1/pages", op{id: "createPage", summary: "Create a page", tag: "content", scope: "content:write",
		desc: "1 credit (page_update). A draft unless `status` says published (published_at is then set). The slug is derived from the title when omitted " +
			"(-2, -3, … on collision); a slug or path another page has is a 409.",
		idempotent: true, body: body("title"), errs: []int{402, 409, 422},
		ok: []resp{{status: 201, desc: "The page.", content: jsonOf(ref("Page"))}}})
	d.add("GET", "/v1/pages/{id_or_slug}", op{id: "getPage", summary: "A page", tag: "content", scope: "content:read",
		desc:   "With `lang`, that translation's title and SEO fields (those it has) fill the flat ones; `translations` always lists every language.",
		params: pageRef, query: []M{contentLangQuery("The translation to read the title and SEO in.")},
		errs: []int{404, 422},
		ok:   []resp{{status: 200, desc: "The page.", content: jsonOf(ref("Page"))}}})
	d.add("PATCH", "/v1/pages/{id_or_slug}", op{id: "updatePage", summary: "Update a page", tag: "content", scope: "content:write",
		desc: "1 credit (page_update). Fields sent replace the stored ones (seo field by field). Publishing sets published_at once; back to draft clears it. " +
			"A slug or path another page has is a 409.",
		params: pageRef, idempotent: true, body: body(), errs: []int{402, 404, 409, 422},
		ok: []resp{{status: 200, desc: "The page.", content: jsonOf(ref("Page"))}}})
	d.add("DELETE", "/v1/pages/{id_or_slug}", op{id: "deletePage", summary: "Delete a page", tag: "content", scope: "content:write",
		params: pageRef, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})
}

func (d *doc) contentGalleries() {
	slugParam := M{"slug": contentSlug()}
	body := func(required ...string) M {
		return jsonOf(obj(M{
			"name": contentName(), "slug": contentSlug(),
			"items": M{"type": "array", "maxItems": 200, "description": "Ordered; replaces the stored items whole.",
				"items": obj(M{"url": contentURL(1), "alt": contentText(1000)}, "url")},
		}, required...))
	}
	d.add("GET", "/v1/galleries", op{id: "listGalleries", summary: "Galleries, newest first", tag: "content", scope: "galleries:read",
		query: pageParams(), errs: []int{422},
		ok: []resp{{status: 200, desc: "The galleries.", content: jsonOf(list(ref("Gallery")))}}})
	d.add("POST", "/v1/galleries", op{id: "createGallery", summary: "Create a gallery", tag: "content", scope: "galleries:write",
		desc:       "The slug is derived from the name when omitted (-2, -3, … on collision); an explicit slug that is taken is a 409. Items may start empty. No credits.",
		idempotent: true, body: body("name"), errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The gallery, wrapped.", content: jsonOf(ref("GalleryEnvelope"))}}})
	d.add("GET", "/v1/galleries/{slug}", op{id: "getGallery", summary: "A gallery", tag: "content", scope: "galleries:read",
		params: slugParam, errs: []int{404},
		ok: []resp{{status: 200, desc: "The gallery, wrapped.", content: jsonOf(ref("GalleryEnvelope"))}}})
	d.add("PATCH", "/v1/galleries/{slug}", op{id: "updateGallery", summary: "Update a gallery", tag: "content", scope: "galleries:write",
		desc:   "Fields sent replace the stored ones; `items` is the complete new list (full replace). A new slug that is taken is a 409. No credits.",
		params: slugParam, idempotent: true, body: body(), errs: []int{404, 409, 422},
		ok: []resp{{status: 200, desc: "The gallery, wrapped.", content: jsonOf(ref("GalleryEnvelope"))}}})
	d.add("DELETE", "/v1/galleries/{slug}", op{id: "deleteGallery", summary: "Delete a gallery", tag: "content", scope: "galleries:write",
		params: slugParam, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})
}

func (d *doc) contentImages() {
	keyParam := M{"key": contentKey()}
	d.add("GET", "/v1/images", op{id: "listImages", summary: "Images, newest first", tag: "content", scope: "images:read",
		query: append(pageParams(), M{"name": "source", "in": "query", "schema": M{"type": "string", "enum": []any{"upload", "url", "ai"}}}),
		errs:  []int{422},
		ok:    []resp{{status: 200, desc: "The images.", content: jsonOf(list(ref("Image")))}}})
	d.add("POST", "/v1/images", op{id: "createImage", summary: "Upload an image, or generate one (job image.generate)", tag: "content",
		scope: "images:write", idempotent: true,
		desc: "A multipart/form-data body registers an upload: 1 credit (image_register), 201 with the Image; its key is `key`, or one derived " +
			"from the file name (-2, -3, … on collision); an explicit key that is taken is a 409 (PUT /images/{key} replaces by URL). " +
			"A JSON body starts image.generate: 10 credits, 202 with the pending Job; its result is {url, key, width, height} and " +
			"`image.generated` (the Image) is emitted when it completes.",
		body: M{
			"application/json": obj(M{
				"prompt": M{"type": "string", "minLength": 1, "maxLength": 4000, "pattern": `\S`},
				"width":  M{"type": "integer", "minimum": 64, "maximum": 2048, "default": 1024},
				"height": M{"type": "integer", "minimum": 64, "maximum": 2048, "default": 1024},
			}, "prompt"),
			"multipart/form-data": obj(M{
				"file": contentFile(),
				"key":  contentKey(),
				"alt":  contentText(1000),
			}, "file"),
		},
		errs: []int{402, 409, 422},
		ok: []resp{{status: 201, desc: "The uploaded image (multipart).", content: jsonOf(ref("Image"))},
			{status: 202, desc: "The pending image.generate job (JSON).", content: jsonOf(ref("Job"))}}})
	d.add("GET", "/v1/images/{key}", op{id: "getImage", summary: "An image", tag: "content", scope: "images:read",
		params: keyParam, errs: []int{404},
		ok: []resp{{status: 200, desc: "The image.", content: jsonOf(ref("Image"))}}})
	d.add("PUT", "/v1/images/{key}", op{id: "swapImage", summary: "Register or replace an image by URL", tag: "content", scope: "images:write",
		desc: "The image at `url` is fetched (https; no private, loopback or reserved address; no redirects), checked to be a PNG, JPEG, GIF or WebP " +
			"of at most 10 MiB, and stored; the key (created when new) serves it from then on. 1 credit (image_register). " +
			"A URL that cannot be fetched or is no image is a 422 on url. `alt` is kept when omitted.",
		params: keyParam, idempotent: true,
		body: jsonOf(obj(M{"url": M{"type": "string", "maxLength": 2048}, "alt": contentText(1000)}, "url")),
		errs: []int{402, 422},
		ok:   []resp{{status: 200, desc: "The image.", content: jsonOf(ref("Image"))}}})
	d.add("DELETE", "/v1/images/{key}", op{id: "deleteImage", summary: "Delete an image", tag: "content", scope: "images:write",
		desc:   "Its media URL answers 404 from then on.",
		params: keyParam, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})
	media := M{}
	for _, t := range []string{"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/svg+xml", "application/octet-stream"} {
		media[t] = M{"type": "string", "contentMediaType": t}
	}
	cache := M{"Cache-Control": M{"required": true, "schema": str()}, "ETag": M{"required": true, "schema": str()}}
	d.add("GET", "/v1/public/media/{project}/{key}", op{id: "getMedia", summary: "A stored image", tag: "public", auth: authNone,
		desc:   "Uploaded and generated images, and the brand logo (key _logo), of the project named in the path; conditional and range requests are honoured.",
		params: M{"project": M{"type": "string", "pattern": "^prj_"}},
		errs:   []int{404},
		ok: []resp{{status: 200, desc: "The image.", content: media, headers: cache},
			{status: 206, desc: "A range of the image.", content: media, headers: cache},
			{status: 304, desc: "Not modified.", headers: cache},
			{status: 416, desc: "The range is not satisfiable.", content: M{"text/plain": M{"type": "string"}}}}})
}

func (d *doc) contentBrand() {
	mapOf := func(what string) M {
		return M{"type": "object", "maxProperties": 50, "propertyNames": M{"minLength": 1, "maxLength": 64},
			"additionalProperties": contentText(255), "description": what + " by name; replaces the stored map whole."}
	}
	d.add("GET", "/v1/brand", op{id: "getBrand", summary: "The brand context", tag: "content", scope: "brand:read",
		ok: []resp{{status: 200, desc: "The brand context (empty strings and maps until set).", content: jsonOf(ref("Brand"))}}})
	d.add("PATCH", "/v1/brand", op{id: "updateBrand", summary: "Update the brand context", tag: "content", scope: "brand:write",
		desc: "Fields sent replace the stored ones. No credits.", idempotent: true,
		body: jsonOf(obj(M{
			"name": contentText(255), "tagline": contentText(255),
			"description": contentText(5000), "voice": contentText(5000), "audience": contentText(5000),
			"colors": mapOf("Colours"), "fonts": mapOf("Fonts"),
		})),
		errs: []int{422},
		ok:   []resp{{status: 200, desc: "The brand context.", content: jsonOf(ref("Brand"))}}})
	d.add("POST", "/v1/brand/logo", op{id: "uploadBrandLogo", summary: "Upload the brand logo", tag: "content", scope: "brand:write",
		desc: "A multipart/form-data body with one part `file` becomes the logo, served at `logo_url` (/v1/public/media/{project}/_logo). " +
			"1 credit (image_register).",
		idempotent: true,
		body:       M{"multipart/form-data": obj(M{"file": contentFile()}, "file")},
		errs:       []int{402, 422},
		ok:         []resp{{status: 200, desc: "The brand context with its new logo_url.", content: jsonOf(ref("Brand"))}}})
}

func (d *doc) contentPublic() {
	lang := contentLangQuery("The language to read; the project's default language when absent.")
	d.add("GET", "/v1/public/content/bulk", op{id: "getPublicContentBulk", summary: "Many content values (public)", tag: "public", auth: authPublic,
		desc:    "As GET /v1/content/bulk, without a key.",
		query:   []M{{"name": "keys", "in": "query", "schema": str(), "description": "Comma-separated keys (1 to 500); every key when absent."}, lang},
		headers: []M{contentIfNoneMatch}, errs: []int{422},
		ok: contentPublic("The values by key.", ref("ContentBulk"))})
	d.add("GET", "/v1/public/content/{key}", op{id: "getPublicContentKey", summary: "A content key (public)", tag: "public", auth: authPublic,
		desc:   "As GET /v1/content/{key}, without a key.",
		params: M{"key": contentKey()}, query: []M{lang}, headers: []M{contentIfNoneMatch}, errs: []int{422},
		ok: contentPublic("The key.", ref("ContentKey"))})
	d.add("GET", "/v1/public/pages/{slug}", op{id: "getPublicPage", summary: "A published page (public)", tag: "public", auth: authPublic,
		desc:   "Drafts are 404. With `lang`, that translation's title and SEO fields fill the flat ones.",
		params: M{"slug": contentSlug()}, query: []M{contentLangQuery("The translation to read the title and SEO in.")},
		headers: []M{contentIfNoneMatch}, errs: []int{422},
		ok: contentPublic("The page.", ref("Page"))})
	d.add("GET", "/v1/public/galleries/{slug}", op{id: "getPublicGallery", summary: "A gallery (public)", tag: "public", auth: authPublic,
		params: M{"slug": contentSlug()}, headers: []M{contentIfNoneMatch},
		ok: contentPublic("The gallery, wrapped.", ref("GalleryEnvelope"))})
}

// contentSchemas are the component schemas of tenant/content.
func contentSchemas() M {
	seo := obj(M{
		"meta_title": str(), "meta_description": str(),
		"og_image": nullable(str()), "canonical_url": nullable(str()), "noindex": M{"type": "boolean"},
	}, "meta_title", "meta_description", "og_image", "canonical_url", "noindex")
	return M{
		"ContentKey": obj(M{
			"key": contentKey(), "value": str(),
			"lang":        M{"type": "string", "description": "The language served: the one asked for, or the project's default when that has no value."},
			"all_locales": M{"type": "object", "additionalProperties": str(), "description": "Every language's value by language code."},
			"updated_at":  ts(),
		}, "key", "value", "lang", "all_locales", "updated_at"),
		"ContentBulk": obj(M{
			"data":    M{"type": "object", "additionalProperties": str(), "description": "Values by key."},
			"lang":    str(),
			"missing": M{"type": "array", "items": str(), "description": "Keys asked for that have no value in lang or the default language."},
		}, "data", "lang", "missing"),
		"ContentBatch": obj(M{"data": arr(ref("ContentKey"))}, "data"),
		"Component": obj(M{
			"id": M{"type": "integer"}, "slug": contentSlug(), "name": str(),
			"props":        M{"type": "object"},
			"translations": M{"type": "object", "additionalProperties": M{"type": "object"}, "description": "Prop overrides by language code."},
			"created_at":   ts(), "updated_at": ts(),
		}, "id", "slug", "name", "props", "translations", "created_at", "updated_at"),
		"PageSEO": seo,
		"Page": obj(M{
			"id": M{"type": "integer"}, "slug": contentSlug(), "path": str(), "title": str(),
			"status":       M{"type": "string", "enum": []any{"draft", "published"}},
			"sections":     arr(M{"type": "object"}),
			"seo":          ref("PageSEO"),
			"translations": arr(obj(M{"lang": str(), "title": str(), "seo": ref("PageSEO")}, "lang", "title", "seo")),
			"created_at":   ts(), "updated_at": ts(), "published_at": nullable(ts()),
		}, "id", "slug", "path", "title", "status", "sections", "seo", "translations", "created_at", "updated_at", "published_at"),
		"Gallery": obj(M{
			"slug": contentSlug(), "name": str(),
			"items":       M{"type": "array", "maxItems": 200, "items": obj(M{"url": str(), "alt": str()}, "url")},
			"items_count": M{"type": "integer", "minimum": 0, "maximum": 200},
			"created_at":  ts(), "updated_at": ts(),
		}, "slug", "name", "items", "items_count", "created_at", "updated_at"),
		"GalleryEnvelope": obj(M{"data": ref("Gallery")}, "data"),
		"Image": obj(M{
			"key": contentKey(),
			"url": M{"type": "string", "description": "Where /v1/public/media serves it."},
			"alt": str(), "width": M{"type": []any{"integer", "null"}}, "height": M{"type": []any{"integer", "null"}},
			"content_type": nullable(str()), "size_bytes": M{"type": []any{"integer", "null"}},
			"source":     M{"type": "string", "enum": []any{"upload", "url", "ai"}},
			"created_at": ts(),
		}, "key", "url", "alt", "width", "height", "content_type", "size_bytes", "source", "created_at"),
		"Brand": obj(M{
			"name": str(), "tagline": str(), "description": str(), "voice": str(), "audience": str(),
			"colors": M{"type": "object", "additionalProperties": str()}, "fonts": M{"type": "object", "additionalProperties": str()},
			"logo_url": nullable(str()), "updated_at": ts(),
		}, "name", "tagline", "description", "voice", "audience", "colors", "fonts", "logo_url", "updated_at"),
	}
}
