package blog

import (
	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// The bounds below are those of request.go and generate.go.

// languageSchema is a language code as central.ValidLanguage accepts it.
func languageSchema() openapi.M {
	return openapi.M{"type": "string", "pattern": `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`, "description": "A language code such as en or pt-BR."}
}

// slugSchema is a slug of a post, category or tag: the slug pattern, and
// never all digits (a numeric path segment or filter is an id).
func slugSchema() openapi.M {
	return openapi.M{"type": "string", "pattern": `^[a-z0-9][a-z0-9-]{0,254}$`, "not": openapi.M{"pattern": `^[0-9]+$`}}
}

// textSchema is a plain-text field of at most max characters (markup is
// stripped before the length is checked).
func textSchema(max int) openapi.M { return openapi.M{"type": "string", "maxLength": max} }

// titleSchema is a title or name: not blank, at most max characters.
func titleSchema(max int) openapi.M {
	return openapi.M{"type": "string", "minLength": 1, "maxLength": max, "pattern": `\S`}
}

// textFieldsSchema are the properties of a post's texts in one language
// in a request (textFields); content describes the content field.
func textFieldsSchema(content string) openapi.M {
	return openapi.M{
		"title":            titleSchema(300),
		"content":          openapi.M{"type": "string", "description": content},
		"excerpt":          textSchema(2000),
		"meta_title":       textSchema(300),
		"meta_description": textSchema(1000),
	}
}

// imageURLSchema is a featured image: an http or https URL.
func imageURLSchema() openapi.M {
	return openapi.M{"type": "string", "format": "uri", "maxLength": 2048, "pattern": `^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]`,
		"description": "An http or https URL."}
}

// scheduledAtSchema is a schedule time of a request: RFC 3339, in the future.
func scheduledAtSchema() openapi.M {
	return openapi.M{"type": "string", "format": "date-time", "description": "RFC 3339, in the future."}
}

// tagIDsSchema lists tags by id (a repeated id counts once).
func tagIDsSchema() openapi.M {
	return openapi.M{"type": "array", "maxItems": 50, "items": openapi.M{"type": "integer", "minimum": 1},
		"description": "Ids of existing tags (else 422); replaces the post's tags. A repeated id counts once."}
}

// OpenAPI describes the routes of the pillar and its schemas.
func OpenAPI(d *openapi.Doc) {
	const tag = "blog"
	status := d.Schema("BlogPostStatus", openapi.M{"type": "string", "enum": []any{"draft", "published", "scheduled", "archived"}})
	term := func(name, what string) openapi.M {
		return d.Schema(name, openapi.With(openapi.Obj(openapi.M{"id": openapi.M{"type": "integer", "minimum": 1}, "name": openapi.Str(), "slug": slugSchema()},
			"id", "name", "slug"), openapi.M{"description": what}))
	}
	category, blogTag := term("BlogCategory", "A blog category."), term("BlogTag", "A blog tag.")
	texts := openapi.M{"title": openapi.Str(), "excerpt": openapi.Str(), "content": openapi.M{"type": "string", "description": "HTML"},
		"meta_title": openapi.Str(), "meta_description": openapi.Str()}
	translation := d.Schema("BlogPostTranslation", openapi.Obj(openapi.With(texts, openapi.M{"lang": languageSchema()}),
		"lang", "title", "excerpt", "content", "meta_title", "meta_description"))
	postSchema := d.Schema("BlogPost", openapi.Obj(openapi.With(texts, openapi.M{
		"id": openapi.M{"type": "integer", "minimum": 1}, "slug": slugSchema(),
		"status":         status,
		"featured_image": openapi.M{"type": []any{"string", "null"}, "description": "A URL, or null."},
		"published_at":   openapi.Nullable(openapi.Timestamp()), "scheduled_at": openapi.Nullable(openapi.Timestamp()),
		"lang": openapi.With(languageSchema(), openapi.M{"description": "The language of the flat texts: the first of ?lang's fallback chain " +
			"(lang, the project's fallback_languages, its default language, then language_code) the post has a text in; language_code without ?lang."}),
		"language_code": openapi.With(languageSchema(), openapi.M{"description": "The post's own language."}),
		"category":      openapi.M{"oneOf": []any{category, openapi.M{"type": "null"}}},
		"tags":          openapi.M{"type": "array", "items": blogTag, "description": "By name."},
		"translations":  openapi.M{"type": "array", "minItems": 1, "items": translation, "description": "Every locale, the post's own first."},
		"created_at":    openapi.Timestamp(), "updated_at": openapi.Timestamp(),
		"has_draft": drafts.HasDraft(),
		"fallback":  tenant.FallbackSchema("text (title, excerpt, content, meta_title, meta_description)"),
	}), "id", "slug", "status", "featured_image", "published_at", "scheduled_at", "lang", "language_code",
		"title", "excerpt", "content", "meta_title", "meta_description", "category", "tags", "translations", "created_at", "updated_at"))
	post := openapi.JSON(postSchema)

	refParam := openapi.M{"ref": openapi.M{"type": "string", "minLength": 1, "description": "The post's numeric id or its slug."}}
	termID := openapi.M{"id": openapi.M{"type": "string", "pattern": "^[0-9]+$", "description": "The numeric id (anything else is 404)."}}
	lang := openapi.M{"name": "lang", "in": "query", "schema": languageSchema(),
		"description": "Fills the flat title, excerpt, content, meta_title and meta_description (and lang) from this translation; " +
			"a text the post lacks in it comes from the next language of its fallback chain (the project's fallback_languages, its default language, " +
			"then the post's own language) that has it, and `fallback` says which. translations always lists every locale."}
	filters := []openapi.M{
		{"name": "category", "in": "query", "schema": openapi.Str(), "description": "A category's numeric id or slug."},
		{"name": "tag", "in": "query", "schema": openapi.Str(), "description": "A tag's numeric id or slug."},
		{"name": "ids", "in": "query", "description": "Comma-separated post ids, at most 100.",
			"schema": openapi.M{"type": "string", "pattern": `^\s*\+?[0-9]+\s*(,\s*\+?[0-9]+\s*)*$`}},
		lang,
	}
	public := openapi.M{"Cache-Control": openapi.M{"required": true, "schema": openapi.M{"type": "string", "enum": []any{"public, max-age=60"}}},
		"ETag": openapi.M{"required": true, "description": "A strong tag of the body.", "schema": openapi.Str()}}
	ifNoneMatch := openapi.M{"name": "If-None-Match", "in": "header", "schema": openapi.Str(), "description": "An ETag of a previous answer: 304 while it is current."}

	d.Add("GET", "/v1/blog-posts", openapi.Op{ID: "listBlogPosts", Summary: "Blog posts, newest first", Tag: tag, Scope: "blog:read",
		Desc:  "Every status, newest created first; the filters combine. No credits.",
		Query: append(append(openapi.PageParams(), openapi.M{"name": "status", "in": "query", "schema": status}), filters...),
		Errs:  []int{422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The posts.", Content: openapi.JSON(d.List("BlogPost"))}}})

	// The two bodies of a create are told apart by their required fields
	// (title; type ai and topic) and refuse each other's fields, so exactly
	// one matches. No discriminator: type may be omitted on a manual post.
	manual := d.Schema("CreateBlogPostManual", openapi.With(openapi.Obj(openapi.With(textFieldsSchema("HTML; sanitised (no script, style, iframe, form or on* attributes)."), openapi.M{
		"type":           openapi.M{"type": "string", "enum": []any{"manual"}, "description": "The default."},
		"language_code":  openapi.With(languageSchema(), openapi.M{"description": "The post's own language; default the project's default_language."}),
		"slug":           openapi.With(slugSchema(), openapi.M{"description": "Default: derived from the title (-2, -3, … on collision). A taken slug is 409."}),
		"category_id":    openapi.M{"type": "integer", "minimum": 1, "description": "An existing category (else 422)."},
		"tag_ids":        tagIDsSchema(),
		"featured_image": imageURLSchema(),
		"status": openapi.M{"type": "string", "enum": []any{"draft", "published", "scheduled"},
			"description": "Default draft, or scheduled with scheduled_at."},
		"scheduled_at": openapi.With(scheduledAtSchema(), openapi.M{"description": "RFC 3339, in the future; only with status scheduled (or none)."}),
	}), "title"), openapi.M{"title": "A post written by the caller"}))
	ai := d.Schema("CreateBlogPostAI", openapi.With(openapi.Obj(openapi.M{
		"type":             openapi.M{"type": "string", "enum": []any{"ai"}},
		"topic":            titleSchema(500),
		"language_code":    openapi.With(languageSchema(), openapi.M{"description": "The post's language; default the project's default_language."}),
		"target_languages": openapi.M{"type": "array", "maxItems": 20, "items": languageSchema(), "description": "Also translated into these (each once, not language_code): 7 credits each."},
		"keywords":         openapi.M{"type": "array", "maxItems": 20, "items": openapi.M{"type": "string", "minLength": 1, "maxLength": 100, "pattern": `\S`}},
		"tone":             openapi.M{"type": "string", "maxLength": 100},
	}, "type", "topic"), openapi.M{"title": "A post generated by AI (job blog_post.generate)"}))
	d.Add("POST", "/v1/blog-posts", openapi.Op{ID: "createBlogPost", Summary: "Create a post, or generate one (job blog_post.generate)", Tag: tag,
		Scope: "blog:write", Idempotent: true,
		Desc: "`type` manual (the default) creates the post at once: 201, no credits; created with status published it emits " +
			"blog_post.published. `type` ai starts the job blog_post.generate (steps research, write, image, translate, seo): " +
			"202 with the pending Job, 60 credits plus 7 per target language, charged at submit and refunded if the job fails. " +
			"The job creates a draft post with a generated featured image, emits blog_post.translated once per target language, " +
			"and its result is {post_id, slug, title}. A field of the other type is 400.",
		Body: openapi.JSON(d.Schema("CreateBlogPostRequest", openapi.M{"oneOf": []any{manual, ai}})),
		Errs: []int{402, 409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The post (type manual).", Content: post},
			{Status: 202, Desc: "The pending generation job (type ai).", Content: openapi.JSON(openapi.Ref("Job"))}}})

	d.Add("GET", "/v1/blog-posts/{ref}", openapi.Op{ID: "getBlogPost", Summary: "A post by id or slug", Tag: tag, Scope: "blog:read",
		Desc:   "No credits. With `draft=true`, the draft view: the post's draft where it has one (its id, status and times are the live post's).",
		Params: refParam, Query: []openapi.M{lang, drafts.ReadQuery()}, Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The post.", Content: post}}})

	d.Add("PATCH", "/v1/blog-posts/{ref}", openapi.Op{ID: "updateBlogPost", Summary: "Update a post", Tag: tag, Scope: "blog:write",
		Desc: "Absent fields stay. The texts are those of the post's own language (others: PUT .../translations/{lang}); " +
			"null removes the category or the featured image. A status change follows the rules of the actions: " +
			"published emits blog_post.published (unless it already was), scheduled needs scheduled_at. No credits. " +
			"With `draft=true` (or `autosave=true`) the fields are written to the post's draft instead and the public surface keeps " +
			"serving the live post until POST …/publish; a draft write takes no `status` nor `scheduled_at` (422), and a slug another " +
			"post has is a 409 at publish.",
		Params: refParam, Idempotent: true, Query: drafts.Query(),
		Body: openapi.JSON(d.Schema("UpdateBlogPostRequest", openapi.Obj(openapi.With(openapi.With(textFieldsSchema("HTML; sanitised."), drafts.BodyFields()), openapi.M{
			"slug":           openapi.With(slugSchema(), openapi.M{"description": "A taken slug is 409."}),
			"category_id":    openapi.M{"type": []any{"integer", "null"}, "minimum": 1, "description": "An existing category (else 422); null removes it."},
			"tag_ids":        tagIDsSchema(),
			"featured_image": openapi.With(openapi.Nullable(imageURLSchema()), openapi.M{"description": "An http or https URL; null removes it."}),
			"status":         status,
			"scheduled_at":   openapi.With(scheduledAtSchema(), openapi.M{"description": "RFC 3339, in the future; only with status scheduled."}),
		})))),
		Errs: []int{404, 409, 422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The post, in its own language (the draft view after a draft write).", Content: post}}})

	d.Add("DELETE", "/v1/blog-posts/{ref}", openapi.Op{ID: "deleteBlogPost", Summary: "Delete a post", Tag: tag, Scope: "blog:write",
		Desc: "Its translations go with it; its category and tags stay.", Params: refParam, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})

	// publishBlogPost and the versions operations.
	drafts.OpenAPI(d, drafts.Ops{Path: "/v1/blog-posts/{ref}", Params: refParam, Name: "BlogPost", Noun: "post", Tag: tag, Scope: "blog",
		View: postSchema, Errs: []int{409},
		Desc: "No credits. The post's draft, when it has one, goes live; then status published and published_at are set, scheduled_at " +
			"cleared, and blog_post.published emitted if the post was not published. `languages` names which to publish: the post's own " +
			"language (language_code) is its title, content, excerpt, SEO fields, slug, category, tags and featured image, any other its " +
			"translation. The draft is dropped once nothing in it differs from what is live. A published post without a draft changes " +
			"nothing and emits nothing. A draft whose slug another post has is a 409 and nothing changes. The body is optional. " +
			"A scheduled post's publish at its time does not apply its draft."})
	d.Add("POST", "/v1/blog-posts/{ref}/unpublish", openapi.Op{ID: "unpublishBlogPost", Summary: "Unpublish a post", Tag: tag, Scope: "blog:write",
		Desc:   "Sets status draft (published_at and scheduled_at cleared), as PATCH status draft: off the public surface; its content and its draft stay. No body.",
		Params: refParam, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The post.", Content: post}}})

	d.Add("POST", "/v1/blog-posts/{ref}/schedule", openapi.Op{ID: "scheduleBlogPost", Summary: "Schedule a post", Tag: tag, Scope: "blog:write",
		Desc: "Sets status scheduled with scheduled_at (published_at cleared); the scheduler publishes the post when the time " +
			"has come and emits blog_post.published.",
		Params: refParam, Idempotent: true,
		Body: openapi.JSON(d.Schema("ScheduleBlogPostRequest", openapi.Obj(openapi.M{"scheduled_at": scheduledAtSchema()}, "scheduled_at"))),
		Errs: []int{404, 422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The post.", Content: post}}})

	d.Add("POST", "/v1/blog-posts/{ref}/archive", openapi.Op{ID: "archiveBlogPost", Summary: "Archive a post", Tag: tag, Scope: "blog:write",
		Desc: "Sets status archived (scheduled_at cleared; published_at kept). No body.", Params: refParam, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The post.", Content: post}}})

	d.Add("PUT", "/v1/blog-posts/{ref}/translations/{lang}", openapi.Op{ID: "putBlogPostTranslation", Summary: "Write a post's text in one language", Tag: tag,
		Scope: "blog:write", Idempotent: true,
		Desc: "Replaces the whole text of the language (the post's own included): an absent field becomes empty. No credits. " +
			"With `draft=true` (or `autosave=true`) the text is written to the post's draft instead.",
		Params: openapi.M{"ref": refParam["ref"], "lang": openapi.With(languageSchema(), openapi.M{"description": "A language code such as en or pt-BR (else 422)."})},
		Query:  drafts.Query(),
		Body:   openapi.JSON(d.Schema("PutBlogPostTranslationRequest", openapi.Obj(openapi.With(textFieldsSchema("HTML; sanitised."), drafts.BodyFields()), "title"))),
		Errs:   []int{404, 422},
		OK:     []openapi.Resp{{Status: 200, Desc: "The post, its flat texts in lang.", Content: post}}})

	d.Add("POST", "/v1/blog-posts/{ref}/translate", openapi.Op{ID: "translateBlogPost", Summary: "Translate a post (job translation.batch)", Tag: tag,
		Scope: "blog:write", Idempotent: true,
		Desc: "Translates the post's texts in its own language into `languages`: 7 credits per language, charged at submit and " +
			"refunded if the job fails. 202 with the pending Job (one step per language); at completion every translation is " +
			"written and blog_post.translated is emitted once per language. The result is {keys_translated, locales, post_id}.",
		Params: refParam,
		Body: openapi.JSON(d.Schema("TranslateBlogPostRequest", openapi.Obj(openapi.M{"languages": openapi.M{"type": "array", "minItems": 1, "maxItems": 20,
			"items": languageSchema(), "description": "Each once, not the post's own language."}}, "languages"))),
		Errs: []int{402, 404, 422},
		OK:   []openapi.Resp{{Status: 202, Desc: "The pending job.", Content: openapi.JSON(openapi.Ref("Job"))}}})

	termFields := openapi.M{
		"name": titleSchema(255),
		"slug": openapi.With(slugSchema(), openapi.M{"description": "Default: derived from the name (-2, -3, … on collision). A taken slug is 409."}),
	}
	createTerm := openapi.JSON(d.Schema("CreateBlogTermRequest", openapi.Obj(termFields, "name")))
	d.Add("GET", "/v1/categories", openapi.Op{ID: "listBlogCategories", Summary: "Blog categories, newest first", Tag: tag, Scope: "blog:read",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The categories.", Content: openapi.JSON(d.List("BlogCategory"))}}})
	d.Add("POST", "/v1/categories", openapi.Op{ID: "createBlogCategory", Summary: "Create a blog category", Tag: tag, Scope: "blog:write",
		Idempotent: true, Body: createTerm, Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The category.", Content: openapi.JSON(category)}}})
	d.Add("PATCH", "/v1/categories/{id}", openapi.Op{ID: "updateBlogCategory", Summary: "Rename a blog category", Tag: tag, Scope: "blog:write",
		Desc: "The slug changes only when given.", Params: termID, Idempotent: true,
		Body: openapi.JSON(d.Schema("UpdateBlogCategoryRequest", openapi.Obj(termFields))), Errs: []int{404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The category.", Content: openapi.JSON(category)}}})
	d.Add("DELETE", "/v1/categories/{id}", openapi.Op{ID: "deleteBlogCategory", Summary: "Delete a blog category", Tag: tag, Scope: "blog:write",
		Desc: "Its posts are left without a category.", Params: termID, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})

	d.Add("GET", "/v1/tags", openapi.Op{ID: "listBlogTags", Summary: "Every blog tag, newest first", Tag: tag, Scope: "blog:read",
		Desc: "Not paginated: {data} holds every tag.",
		OK:   []openapi.Resp{{Status: 200, Desc: "The tags.", Content: openapi.JSON(openapi.Obj(openapi.M{"data": openapi.Arr(blogTag)}, "data"))}}})
	d.Add("POST", "/v1/tags", openapi.Op{ID: "createBlogTag", Summary: "Create a blog tag", Tag: tag, Scope: "blog:write",
		Idempotent: true, Body: createTerm, Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The tag.", Content: openapi.JSON(blogTag)}}})
	d.Add("DELETE", "/v1/tags/{id}", openapi.Op{ID: "deleteBlogTag", Summary: "Delete a blog tag", Tag: tag, Scope: "blog:write",
		Desc: "It is taken off its posts.", Params: termID, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})

	d.Add("GET", "/v1/public/blog-posts", openapi.Op{ID: "listPublicBlogPosts", Summary: "Published blog posts, newest publication first", Tag: tag,
		Auth: openapi.Public,
		Desc: "No key, no credits. Published posts only (status is not a filter here), with the other filters of GET /v1/blog-posts. " +
			"Cache-Control public, max-age=60 and an ETag; a matching If-None-Match gives 304.",
		Query: append(openapi.PageParams(), filters...), Headers: []openapi.M{ifNoneMatch},
		Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The posts.", Content: openapi.JSON(d.List("BlogPost")), Headers: public},
			{Status: 304, Desc: "Not modified.", Headers: public}}})
	d.Add("GET", "/v1/public/blog-posts/{slug}", openapi.Op{ID: "getPublicBlogPost", Summary: "A published blog post by slug", Tag: tag,
		Auth: openapi.Public,
		Desc: "No key, no credits. A post that is not published (or a numeric segment) is 404. " +
			"Cache-Control public, max-age=60 and an ETag; a matching If-None-Match gives 304.",
		Params: openapi.M{"slug": openapi.Str()}, Query: []openapi.M{lang}, Headers: []openapi.M{ifNoneMatch},
		Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The post.", Content: post, Headers: public},
			{Status: 304, Desc: "Not modified.", Headers: public}}})
}
