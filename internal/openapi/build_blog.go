package openapi

// The bounds below are those of tenant/blog (request.go, generate.go).

// blogLanguage is a language code as central.ValidLanguage accepts it.
func blogLanguage() M {
	return M{"type": "string", "pattern": `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`, "description": "A language code such as en or pt-BR."}
}

// blogSlug is a slug of a post, category or tag: the slug pattern, and
// never all digits (a numeric path segment or filter is an id).
func blogSlug() M {
	return M{"type": "string", "pattern": `^[a-z0-9][a-z0-9-]{0,254}$`, "not": M{"pattern": `^[0-9]+$`}}
}

// blogText is a plain-text field of at most max characters (markup is
// stripped before the length is checked).
func blogText(max int) M { return M{"type": "string", "maxLength": max} }

// blogTitle is a title or name: not blank, at most max characters.
func blogTitle(max int) M {
	return M{"type": "string", "minLength": 1, "maxLength": max, "pattern": `\S`}
}

// blogImageURL is a featured image: an http or https URL.
func blogImageURL() M {
	return M{"type": "string", "format": "uri", "maxLength": 2048, "pattern": `^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]`,
		"description": "An http or https URL."}
}

// blogScheduledAt is a schedule time of a request: RFC 3339, in the future.
func blogScheduledAt() M {
	return M{"type": "string", "format": "date-time", "description": "RFC 3339, in the future."}
}

// blogTagIDs lists tags by id (a repeated id counts once).
func blogTagIDs() M {
	return M{"type": "array", "maxItems": 50, "items": M{"type": "integer", "minimum": 1},
		"description": "Ids of existing tags (else 422); replaces the post's tags. A repeated id counts once."}
}

// blog documents the routes of tenant/blog.
func (d *doc) blog() {
	const tag = "blog"
	refParam := M{"ref": M{"type": "string", "minLength": 1, "description": "The post's numeric id or its slug."}}
	termID := M{"id": M{"type": "string", "pattern": "^[0-9]+$", "description": "The numeric id (anything else is 404)."}}
	lang := M{"name": "lang", "in": "query", "schema": blogLanguage(),
		"description": "Fills the flat title, excerpt, content, meta_title and meta_description (and lang) from this translation; " +
			"a language the post lacks falls back to the post's own language. translations always lists every locale."}
	filters := []M{
		{"name": "category", "in": "query", "schema": str(), "description": "A category's numeric id or slug."},
		{"name": "tag", "in": "query", "schema": str(), "description": "A tag's numeric id or slug."},
		{"name": "ids", "in": "query", "description": "Comma-separated post ids, at most 100.",
			"schema": M{"type": "string", "pattern": `^\s*\+?[0-9]+\s*(,\s*\+?[0-9]+\s*)*$`}},
		lang,
	}
	post := jsonOf(ref("BlogPost"))
	public := M{"Cache-Control": M{"required": true, "schema": M{"type": "string", "enum": []any{"public, max-age=60"}}},
		"ETag": M{"required": true, "description": "A strong tag of the body.", "schema": str()}}
	ifNoneMatch := M{"name": "If-None-Match", "in": "header", "schema": str(), "description": "An ETag of a previous answer: 304 while it is current."}

	d.add("GET", "/v1/blog-posts", op{id: "listBlogPosts", summary: "Blog posts, newest first", tag: tag, scope: "blog:read",
		desc: "Every status, newest created first; the filters combine. No credits.",
		query: append(append(pageParams(),
			M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": blogStatuses()}}), filters...),
		errs: []int{422},
		ok:   []resp{{status: 200, desc: "The posts.", content: jsonOf(list(ref("BlogPost")))}}})

	manual := obj(M{
		"type":             M{"type": "string", "enum": []any{"manual"}, "description": "The default."},
		"title":            blogTitle(300),
		"content":          M{"type": "string", "description": "HTML; sanitised (no script, style, iframe, form or on* attributes)."},
		"excerpt":          blogText(2000),
		"meta_title":       blogText(300),
		"meta_description": blogText(1000),
		"language_code":    blogMerge(blogLanguage(), M{"description": "The post's own language; default the project's default_language."}),
		"slug":             blogMerge(blogSlug(), M{"description": "Default: derived from the title (-2, -3, … on collision). A taken slug is 409."}),
		"category_id":      M{"type": "integer", "minimum": 1, "description": "An existing category (else 422)."},
		"tag_ids":          blogTagIDs(),
		"featured_image":   blogImageURL(),
		"status": M{"type": "string", "enum": []any{"draft", "published", "scheduled"},
			"description": "Default draft, or scheduled with scheduled_at."},
		"scheduled_at": blogMerge(blogScheduledAt(), M{"description": "RFC 3339, in the future; only with status scheduled (or none)."}),
	}, "title")
	ai := obj(M{
		"type":             M{"type": "string", "enum": []any{"ai"}},
		"topic":            blogTitle(500),
		"language_code":    blogMerge(blogLanguage(), M{"description": "The post's language; default the project's default_language."}),
		"target_languages": M{"type": "array", "maxItems": 20, "items": blogLanguage(), "description": "Also translated into these (each once, not language_code): 7 credits each."},
		"keywords":         M{"type": "array", "maxItems": 20, "items": M{"type": "string", "minLength": 1, "maxLength": 100, "pattern": `\S`}},
		"tone":             M{"type": "string", "maxLength": 100},
	}, "type", "topic")
	manual["title"] = "A post written by the caller"
	ai["title"] = "A post generated by AI (job blog_post.generate)"
	d.add("POST", "/v1/blog-posts", op{id: "createBlogPost", summary: "Create a post, or generate one (job blog_post.generate)", tag: tag,
		scope: "blog:write", idempotent: true,
		desc: "`type` manual (the default) creates the post at once: 201, no credits; created with status published it emits " +
			"blog_post.published. `type` ai starts the job blog_post.generate (steps research, write, image, translate, seo): " +
			"202 with the pending Job, 60 credits plus 7 per target language, charged at submit and refunded if the job fails. " +
			"The job creates a draft post with a generated featured image, emits blog_post.translated once per target language, " +
			"and its result is {post_id, slug, title}. A field of the other type is 400.",
		body: jsonOf(M{"oneOf": []any{manual, ai}}),
		errs: []int{402, 409, 422},
		ok: []resp{{status: 201, desc: "The post (type manual).", content: post},
			{status: 202, desc: "The pending generation job (type ai).", content: jsonOf(ref("Job"))}}})

	d.add("GET", "/v1/blog-posts/{ref}", op{id: "getBlogPost", summary: "A post by id or slug", tag: tag, scope: "blog:read",
		desc: "No credits.", params: refParam, query: []M{lang}, errs: []int{404, 422},
		ok: []resp{{status: 200, desc: "The post.", content: post}}})

	d.add("PATCH", "/v1/blog-posts/{ref}", op{id: "updateBlogPost", summary: "Update a post", tag: tag, scope: "blog:write",
		desc: "Absent fields stay. The texts are those of the post's own language (others: PUT .../translations/{lang}); " +
			"null removes the category or the featured image. A status change follows the rules of the actions: " +
			"published emits blog_post.published (unless it already was), scheduled needs scheduled_at. No credits.",
		params: refParam, idempotent: true,
		body: jsonOf(obj(M{
			"title":            blogTitle(300),
			"content":          M{"type": "string", "description": "HTML; sanitised."},
			"excerpt":          blogText(2000),
			"meta_title":       blogText(300),
			"meta_description": blogText(1000),
			"slug":             blogMerge(blogSlug(), M{"description": "A taken slug is 409."}),
			"category_id":      M{"type": []any{"integer", "null"}, "minimum": 1, "description": "An existing category (else 422); null removes it."},
			"tag_ids":          blogTagIDs(),
			"featured_image":   blogMerge(nullable(blogImageURL()), M{"description": "An http or https URL; null removes it."}),
			"status":           M{"type": "string", "enum": blogStatuses()},
			"scheduled_at":     blogMerge(blogScheduledAt(), M{"description": "RFC 3339, in the future; only with status scheduled."}),
		})),
		errs: []int{404, 409, 422},
		ok:   []resp{{status: 200, desc: "The post, in its own language.", content: post}}})

	d.add("DELETE", "/v1/blog-posts/{ref}", op{id: "deleteBlogPost", summary: "Delete a post", tag: tag, scope: "blog:write",
		desc: "Its translations go with it; its category and tags stay.", params: refParam, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})

	d.add("POST", "/v1/blog-posts/{ref}/publish", op{id: "publishBlogPost", summary: "Publish a post", tag: tag, scope: "blog:write",
		desc: "Sets status published and published_at, clears scheduled_at, and emits blog_post.published. " +
			"Publishing a published post changes nothing and emits nothing. No body.",
		params: refParam, idempotent: true, errs: []int{404},
		ok: []resp{{status: 200, desc: "The post.", content: post}}})

	d.add("POST", "/v1/blog-posts/{ref}/schedule", op{id: "scheduleBlogPost", summary: "Schedule a post", tag: tag, scope: "blog:write",
		desc: "Sets status scheduled with scheduled_at (published_at cleared); the scheduler publishes the post when the time " +
			"has come and emits blog_post.published.",
		params: refParam, idempotent: true,
		body: jsonOf(obj(M{"scheduled_at": blogScheduledAt()}, "scheduled_at")),
		errs: []int{404, 422},
		ok:   []resp{{status: 200, desc: "The post.", content: post}}})

	d.add("POST", "/v1/blog-posts/{ref}/archive", op{id: "archiveBlogPost", summary: "Archive a post", tag: tag, scope: "blog:write",
		desc: "Sets status archived (scheduled_at cleared; published_at kept). No body.", params: refParam, idempotent: true, errs: []int{404},
		ok: []resp{{status: 200, desc: "The post.", content: post}}})

	d.add("PUT", "/v1/blog-posts/{ref}/translations/{lang}", op{id: "putBlogPostTranslation", summary: "Write a post's text in one language", tag: tag,
		scope: "blog:write", idempotent: true,
		desc:   "Replaces the whole text of the language (the post's own included): an absent field becomes empty. No credits.",
		params: M{"ref": refParam["ref"], "lang": blogMerge(blogLanguage(), M{"description": "A language code such as en or pt-BR (else 422)."})},
		body: jsonOf(obj(M{
			"title":            blogTitle(300),
			"content":          M{"type": "string", "description": "HTML; sanitised."},
			"excerpt":          blogText(2000),
			"meta_title":       blogText(300),
			"meta_description": blogText(1000),
		}, "title")),
		errs: []int{404, 422},
		ok:   []resp{{status: 200, desc: "The post, its flat texts in lang.", content: post}}})

	d.add("POST", "/v1/blog-posts/{ref}/translate", op{id: "translateBlogPost", summary: "Translate a post (job translation.batch)", tag: tag,
		scope: "blog:write", idempotent: true,
		desc: "Translates the post's texts in its own language into `languages`: 7 credits per language, charged at submit and " +
			"refunded if the job fails. 202 with the pending Job (one step per language); at completion every translation is " +
			"written and blog_post.translated is emitted once per language. The result is {keys_translated, locales, post_id}.",
		params: refParam,
		body: jsonOf(obj(M{"languages": M{"type": "array", "minItems": 1, "maxItems": 20, "items": blogLanguage(),
			"description": "Each once, not the post's own language."}}, "languages")),
		errs: []int{402, 404, 422},
		ok:   []resp{{status: 202, desc: "The pending job.", content: jsonOf(ref("Job"))}}})

	termBody := func(required ...string) M {
		return jsonOf(obj(M{
			"name": blogTitle(255),
			"slug": blogMerge(blogSlug(), M{"description": "Default: derived from the name (-2, -3, … on collision). A taken slug is 409."}),
		}, required...))
	}
	d.add("GET", "/v1/categories", op{id: "listBlogCategories", summary: "Blog categories, newest first", tag: tag, scope: "blog:read",
		query: pageParams(), errs: []int{422},
		ok: []resp{{status: 200, desc: "The categories.", content: jsonOf(list(ref("BlogCategory")))}}})
	d.add("POST", "/v1/categories", op{id: "createBlogCategory", summary: "Create a blog category", tag: tag, scope: "blog:write",
		idempotent: true, body: termBody("name"), errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The category.", content: jsonOf(ref("BlogCategory"))}}})
	d.add("PATCH", "/v1/categories/{id}", op{id: "updateBlogCategory", summary: "Rename a blog category", tag: tag, scope: "blog:write",
		desc: "The slug changes only when given.", params: termID, idempotent: true, body: termBody(), errs: []int{404, 409, 422},
		ok: []resp{{status: 200, desc: "The category.", content: jsonOf(ref("BlogCategory"))}}})
	d.add("DELETE", "/v1/categories/{id}", op{id: "deleteBlogCategory", summary: "Delete a blog category", tag: tag, scope: "blog:write",
		desc: "Its posts are left without a category.", params: termID, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})

	d.add("GET", "/v1/tags", op{id: "listBlogTags", summary: "Every blog tag, newest first", tag: tag, scope: "blog:read",
		desc: "Not paginated: {data} holds every tag.",
		ok:   []resp{{status: 200, desc: "The tags.", content: jsonOf(obj(M{"data": arr(ref("BlogTag"))}, "data"))}}})
	d.add("POST", "/v1/tags", op{id: "createBlogTag", summary: "Create a blog tag", tag: tag, scope: "blog:write",
		idempotent: true, body: termBody("name"), errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The tag.", content: jsonOf(ref("BlogTag"))}}})
	d.add("DELETE", "/v1/tags/{id}", op{id: "deleteBlogTag", summary: "Delete a blog tag", tag: tag, scope: "blog:write",
		desc: "It is taken off its posts.", params: termID, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})

	d.add("GET", "/v1/public/blog-posts", op{id: "listPublicBlogPosts", summary: "Published blog posts, newest publication first", tag: tag,
		auth: authPublic,
		desc: "No key, no credits. Published posts only (status is not a filter here), with the other filters of GET /v1/blog-posts. " +
			"Cache-Control public, max-age=60 and an ETag; a matching If-None-Match gives 304.",
		query: append(pageParams(), filters...), headers: []M{ifNoneMatch},
		errs: []int{422},
		ok: []resp{{status: 200, desc: "The posts.", content: jsonOf(list(ref("BlogPost"))), headers: public},
			{status: 304, desc: "Not modified.", headers: public}}})
	d.add("GET", "/v1/public/blog-posts/{slug}", op{id: "getPublicBlogPost", summary: "A published blog post by slug", tag: tag,
		auth: authPublic,
		desc: "No key, no credits. A post that is not published (or a numeric segment) is 404. " +
			"Cache-Control public, max-age=60 and an ETag; a matching If-None-Match gives 304.",
		params: M{"slug": str()}, query: []M{lang}, headers: []M{ifNoneMatch},
		errs: []int{404, 422},
		ok: []resp{{status: 200, desc: "The post.", content: post, headers: public},
			{status: 304, desc: "Not modified.", headers: public}}})
}

func blogStatuses() []any { return []any{"draft", "published", "scheduled", "archived"} }

// blogMerge returns a copy of s with extra's keys set.
func blogMerge(s, extra M) M {
	out := M{}
	for k, v := range s {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// blogSchemas are the component schemas of tenant/blog.
func blogSchemas() M {
	term := func(what string) M {
		s := obj(M{"id": M{"type": "integer", "minimum": 1}, "name": str(), "slug": blogSlug()}, "id", "name", "slug")
		s["description"] = what
		return s
	}
	texts := M{"title": str(), "excerpt": str(), "content": M{"type": "string", "description": "HTML"}, "meta_title": str(), "meta_description": str()}
	translation := M{"lang": blogLanguage()}
	post := M{
		"id": M{"type": "integer", "minimum": 1}, "slug": blogSlug(),
		"status":         M{"type": "string", "enum": blogStatuses()},
		"featured_image": M{"type": []any{"string", "null"}, "description": "A URL, or null."},
		"published_at":   nullable(ts()), "scheduled_at": nullable(ts()),
		"lang":          blogMerge(blogLanguage(), M{"description": "The language of the flat texts: the one asked for with ?lang when the post has it, else language_code."}),
		"language_code": blogMerge(blogLanguage(), M{"description": "The post's own language."}),
		"category":      M{"oneOf": []any{ref("BlogCategory"), M{"type": "null"}}},
		"tags":          M{"type": "array", "items": ref("BlogTag"), "description": "By name."},
		"translations":  M{"type": "array", "minItems": 1, "items": ref("BlogPostTranslation"), "description": "Every locale, the post's own first."},
		"created_at":    ts(), "updated_at": ts(),
	}
	for k, v := range texts {
		post[k], translation[k] = v, v
	}
	return M{
		"BlogPost": obj(post, "id", "slug", "status", "featured_image", "published_at", "scheduled_at", "lang", "language_code",
			"title", "excerpt", "content", "meta_title", "meta_description", "category", "tags", "translations", "created_at", "updated_at"),
		"BlogPostTranslation": obj(translation, "lang", "title", "excerpt", "content", "meta_title", "meta_description"),
		"BlogCategory":        term("A blog category."),
		"BlogTag":             term("A blog tag."),
	}
}
