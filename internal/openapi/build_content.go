package openapi

// content documents the routes of tenant/content.
func (d *doc) content() {
	d.add("POST", "/v1/content/translate", op{id: "translateContent", summary: "Translate content keys (job translation.batch)", tag: "content",
		scope: "content:write", idempotent: true,
		desc: "Translates the default-language value of every key (or of `keys`) into `languages`: 7 credits per language. 202 with the pending Job.",
		body: jsonOf(obj(M{
			"languages": M{"type": "array", "minItems": 1, "maxItems": 50, "items": str()},
			"keys":      M{"type": "array", "minItems": 1, "maxItems": 5000, "items": M{"type": "string", "pattern": `^[a-z0-9][a-z0-9._-]{0,199}$`}},
		}, "languages")),
		errs: []int{402, 422, 429},
		ok:   []resp{{status: 202, desc: "The pending job.", content: jsonOf(ref("Job"))}}})
	d.add("POST", "/v1/images", op{id: "generateImage", summary: "Generate an image (job image.generate)", tag: "content",
		scope: "images:write", idempotent: true,
		desc: "A JSON body starts image.generate: 10 credits. 202 with the pending Job; its result is {url, key, width, height}.",
		body: jsonOf(obj(M{
			"prompt": M{"type": "string", "minLength": 1, "maxLength": 4000},
			"width":  M{"type": "integer", "minimum": 64, "maximum": 2048},
			"height": M{"type": "integer", "minimum": 64, "maximum": 2048},
		}, "prompt")),
		errs: []int{402, 422},
		ok:   []resp{{status: 202, desc: "The pending job.", content: jsonOf(ref("Job"))}}})
	media := M{}
	for _, t := range []string{"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/svg+xml", "application/octet-stream"} {
		media[t] = M{"type": "string", "contentMediaType": t}
	}
	cache := M{"Cache-Control": M{"required": true, "schema": str()}, "ETag": M{"required": true, "schema": str()}}
	d.add("GET", "/v1/public/media/{project}/{key}", op{id: "getMedia", summary: "A stored image", tag: "public", auth: authNone,
		desc:   "Uploaded and generated images of the project named in the path; conditional and range requests are honoured.",
		params: M{"project": M{"type": "string", "pattern": "^prj_"}},
		errs:   []int{404},
		ok: []resp{{status: 200, desc: "The image.", content: media, headers: cache},
			{status: 206, desc: "A range of the image.", content: media, headers: cache},
			{status: 304, desc: "Not modified.", headers: cache},
			{status: 416, desc: "The range is not satisfiable.", content: M{"text/plain": M{"type": "string"}}}}})
}

// contentSchemas are the component schemas of tenant/content.
func contentSchemas() M { return M{} }
