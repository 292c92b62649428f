package openapi

// social documents the routes of tenant/social: accounts connected through
// OAuth (social:connect), posts (social:read, social:write) and their
// publishing (social:publish), and the keyless end of an OAuth flow.
func (d *doc) social() {
	postID := M{"id": M{"type": "integer", "format": "int64", "minimum": 1}}
	platform := M{"platform": socialPlatform()}

	// Accounts and OAuth.
	d.add("GET", "/v1/social-accounts", op{id: "listSocialAccounts", summary: "Connected social accounts, newest first", tag: "social", scope: "social:connect",
		desc:  "The accounts of every platform, whatever their status; tokens are never shown. No credits.",
		query: pageParams(), errs: []int{422},
		ok: []resp{{status: 200, desc: "The accounts.", content: jsonOf(list(ref("SocialAccount")))}}})
	d.add("DELETE", "/v1/social-accounts/{id}", op{id: "deleteSocialAccount", summary: "Disconnect an account", tag: "social", scope: "social:connect",
		desc:   "The account and its stored tokens are deleted.",
		params: M{"id": prefixed("acc_")}, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Disconnected."}}})
	d.add("POST", "/v1/social-accounts/connect/{platform}", op{id: "connectSocialAccount", summary: "Start connecting an account (OAuth)", tag: "social", scope: "social:connect",
		desc: "Send the user to `oauth_url`. The platform then calls GET /v1/social-accounts/callback/{platform}, which redirects the browser to " +
			"`redirect_uri` (default: GET /v1/social-accounts/connected) with `?status=connected&account_id=acc_…` or `?status=error&error=…`. " +
			"The state is signed, expires after 10 minutes and is good for one callback. An unknown platform, or one with no OAuth app " +
			"configured on the server, is 422 naming `platform`. No credits.",
		params: platform, idempotent: true, bodyOptional: true,
		body: jsonOf(obj(M{"redirect_uri": M{"type": "string", "maxLength": 2048, "format": "uri",
			"description": "An absolute http(s) URL with no fragment and no user information; its query is kept."}})),
		errs: []int{422},
		ok: []resp{{status: 200, desc: "The authorization URL and its state.", content: jsonOf(obj(M{
			"oauth_url": M{"type": "string", "format": "uri"},
			"state":     M{"type": "string", "minLength": 1},
		}, "oauth_url", "state"))}}})
	d.add("GET", "/v1/social-accounts/callback/{platform}", op{id: "socialOAuthCallback", summary: "OAuth callback (the platform redirects here)", tag: "social",
		auth: authNone,
		desc: "Needs no key: the signed, expiring, single-use `state` authenticates it. It trades the code for tokens (stored sealed), " +
			"looks up the account and answers 302 to the flow's redirect_uri with `status=connected&account_id=acc_…`, or with " +
			"`status=error&error=<code>` (state_expired, state_used, platform_not_configured, missing_code, token_exchange_failed, " +
			"account_lookup_failed, server_error, or the platform's own error code when the user declined). Reconnecting an account keeps its id. " +
			"A state this server did not sign, or signed for another platform, is 400: nothing in it is trusted, not even where to redirect.",
		params: platform,
		query: []M{
			{"name": "state", "in": "query", "required": true, "description": "The state of the connect call, as the platform returns it.", "schema": str()},
			{"name": "code", "in": "query", "description": "The authorization code (absent when the user declined).", "schema": str()},
			{"name": "error", "in": "query", "description": "The platform's error code, when the user declined or the platform refused.", "schema": str()},
			{"name": "error_description", "in": "query", "schema": str()},
		},
		errs: []int{400},
		ok: []resp{{status: 302, desc: "Back to the flow's redirect_uri, with the outcome in its query.",
			content: M{"text/html": M{"type": "string"}},
			headers: M{"Location": M{"required": true, "description": "The redirect_uri with status and account_id or error added.", "schema": M{"type": "string", "format": "uri"}},
				"Cache-Control": M{"required": true, "schema": M{"type": "string", "enum": []any{"no-store"}}}}}}})
	d.add("GET", "/v1/social-accounts/connected", op{id: "socialConnectedPage", summary: "The default end page of a connection", tag: "social",
		auth: authNone,
		desc: "Where the callback sends the browser when the connect call gave no redirect_uri: a small HTML page saying whether the account " +
			"was connected (status=connected, with its id) or not.",
		query: []M{
			{"name": "status", "in": "query", "description": "connected, or error.", "schema": str()},
			{"name": "account_id", "in": "query", "schema": str()},
			{"name": "error", "in": "query", "schema": str()},
		},
		ok: []resp{{status: 200, desc: "The page.", content: M{"text/html": M{"type": "string"}},
			headers: M{"Cache-Control": M{"required": true, "schema": M{"type": "string", "enum": []any{"no-store"}}}}}}})

	// Posts.
	d.add("GET", "/v1/social-posts", op{id: "listSocialPosts", summary: "Social posts, newest first", tag: "social", scope: "social:read",
		query: append(pageParams(), M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": socialPostStatuses()}}),
		errs:  []int{422},
		ok:    []resp{{status: 200, desc: "The posts.", content: jsonOf(list(ref("SocialPost")))}}})
	d.add("POST", "/v1/social-posts", op{id: "createSocialPost", summary: "Create a post, by hand or by AI (job social_post.generate)", tag: "social", scope: "social:write",
		desc: "A manual post (`type` omitted or manual; `title` required) is created at once: 201, status draft, or scheduled with " +
			"`scheduled_at`; no credits. `type: \"ai\"` (`topic` required) starts social_post.generate: 202 with the pending Job, " +
			"5 credits plus 3 per image (40 per video, 300 per premium video; videos are refused with 422 while the AI provider makes none); " +
			"its result is {social_post_id, title, platforms}. The targets are the `platforms` named plus those of the `account_ids` named; " +
			"at least one is needed. A platform with no account named goes to every account of that platform when published.",
		idempotent: true,
		body: jsonOf(M{"oneOf": []any{
			obj(socialPostFields(M{
				"type":    M{"type": "string", "enum": []any{"manual"}},
				"title":   M{"type": "string", "minLength": 1, "maxLength": 300},
				"content": M{"type": "string", "maxLength": 10000},
			}), "title"),
			obj(socialPostFields(M{
				"type":           M{"type": "string", "enum": []any{"ai"}},
				"topic":          M{"type": "string", "minLength": 1, "maxLength": 1000},
				"tone":           M{"type": "string", "maxLength": 100},
				"language":       M{"type": "string", "minLength": 1, "maxLength": 16, "description": "Default: the project's default language."},
				"images":         M{"type": "integer", "minimum": 0, "maximum": 4, "description": "Images to generate (+3 credits each); with media at most 10 items."},
				"videos":         M{"type": "integer", "minimum": 0, "description": "Videos to generate (+40 credits each)."},
				"premium_videos": M{"type": "integer", "minimum": 0, "description": "Premium videos to generate (+300 credits each)."},
			}), "type", "topic"),
		}}),
		errs: []int{402, 422},
		ok: []resp{{status: 201, desc: "The manual post.", content: jsonOf(ref("SocialPost"))},
			{status: 202, desc: "The pending social_post.generate job (type ai).", content: jsonOf(ref("Job"))}}})
	d.add("GET", "/v1/social-posts/{id}", op{id: "getSocialPost", summary: "A social post", tag: "social", scope: "social:read",
		desc:   "Its status and, once published, the outcome per account in `results`.",
		params: postID, errs: []int{404},
		ok: []resp{{status: 200, desc: "The post.", content: jsonOf(ref("SocialPost"))}}})
	d.add("PATCH", "/v1/social-posts/{id}", op{id: "updateSocialPost", summary: "Update a post", tag: "social", scope: "social:write",
		desc: "Absent fields are unchanged. `scheduled_at` schedules the post (status scheduled); null unschedules it (back to draft). " +
			"A post being published or published is 409 conflict.",
		params: postID, idempotent: true,
		body: jsonOf(obj(socialPostFields(M{
			"title":        M{"type": "string", "minLength": 1, "maxLength": 300},
			"content":      M{"type": "string", "maxLength": 10000},
			"scheduled_at": M{"type": []any{"string", "null"}, "format": "date-time", "description": "RFC 3339, in the future; null unschedules."},
		}))),
		errs: []int{404, 409, 422},
		ok:   []resp{{status: 200, desc: "The post.", content: jsonOf(ref("SocialPost"))}}})
	d.add("DELETE", "/v1/social-posts/{id}", op{id: "deleteSocialPost", summary: "Delete a post", tag: "social", scope: "social:write",
		params: postID, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})
	d.add("POST", "/v1/social-posts/{id}/publish", op{id: "publishSocialPost", summary: "Publish a post now", tag: "social", scope: "social:publish",
		desc: "202 with the post, status publishing; the outcome is on the post when its status leaves publishing (published, " +
			"partially_published or failed, with `results`), and fires social_post.published (at least one platform succeeded) or " +
			"social_post.failed (all failed). Publishing a failed or partially published post again retries only the targets not yet " +
			"published. A post being published or already published is 409 conflict. No body, no credits.",
		params: postID, idempotent: true, errs: []int{404, 409},
		ok: []resp{{status: 202, desc: "The post, publishing.", content: jsonOf(ref("SocialPost"))}}})
}

func socialPlatforms() []any {
	return []any{"facebook", "instagram", "twitter", "tiktok", "linkedin", "youtube"}
}

func socialPlatform() M { return M{"type": "string", "enum": socialPlatforms()} }

func socialPostStatuses() []any {
	return []any{"draft", "scheduled", "publishing", "published", "partially_published", "failed"}
}

// socialPostFields adds the targets, media and schedule every post body
// takes to fields.
func socialPostFields(fields M) M {
	out := M{
		"platforms":   M{"type": "array", "maxItems": 6, "uniqueItems": true, "items": socialPlatform()},
		"account_ids": M{"type": "array", "maxItems": 50, "uniqueItems": true, "items": prefixed("acc_"), "description": "Accounts of this project."},
		"media": M{"type": "array", "maxItems": 10, "items": M{"type": "string", "maxLength": 2048, "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]",
			"description": "An absolute http(s) URL."}},
		"scheduled_at": M{"type": "string", "format": "date-time", "description": "RFC 3339, in the future: the post is scheduled."},
	}
	for k, v := range fields {
		out[k] = v
	}
	return out
}

// socialSchemas are the component schemas of tenant/social.
func socialSchemas() M {
	return M{
		"SocialAccount": obj(M{
			"id": prefixed("acc_"), "platform": socialPlatform(), "name": str(), "external_id": str(),
			"status":       M{"type": "string", "enum": []any{"connected", "expired", "revoked"}},
			"connected_at": ts(),
		}, "id", "platform", "name", "external_id", "status", "connected_at"),
		"SocialPost": obj(M{
			"id": M{"type": "integer"}, "title": str(), "content": str(),
			"platforms": arr(socialPlatform()), "account_ids": arr(prefixed("acc_")), "media": arr(str()),
			"status":       M{"type": "string", "enum": socialPostStatuses()},
			"scheduled_at": nullable(ts()), "published_at": nullable(ts()),
			"results":    arr(ref("SocialPostResult")),
			"created_at": ts(), "updated_at": ts(),
		}, "id", "title", "content", "platforms", "account_ids", "media", "status", "scheduled_at", "published_at", "results", "created_at", "updated_at"),
		"SocialPostResult": obj(M{
			"platform":    socialPlatform(),
			"account_id":  M{"type": []any{"string", "null"}, "pattern": "^acc_[0-9A-Za-z]{24}$", "description": "The account published as; null when the platform had no account."},
			"status":      M{"type": "string", "enum": []any{"published", "failed"}},
			"external_id": nullable(str()), "url": nullable(str()), "error": nullable(str()),
		}, "platform", "account_id", "status", "external_id", "url", "error"),
	}
}
