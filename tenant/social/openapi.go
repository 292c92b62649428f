package social

import "github.com/plinth-dev/plinth/internal/openapi"

// OpenAPI describes the routes of the pillar: accounts connected through
// OAuth (social:connect), posts (social:read, social:write) and their
// publishing (social:publish), and the keyless end of an OAuth flow.
func OpenAPI(d *openapi.Doc) {
	platform := d.Schema("SocialPlatform", openapi.M{"type": "string", "enum": []any{"facebook", "instagram", "twitter", "tiktok", "linkedin", "youtube"}})
	postStatus := d.Schema("SocialPostStatus", openapi.M{"type": "string",
		"enum": []any{"draft", "scheduled", "publishing", "published", "partially_published", "failed"}})
	d.Schema("SocialAccount", openapi.Obj(openapi.M{
		"id": openapi.Prefixed("acc_"), "platform": platform, "name": openapi.Str(), "external_id": openapi.Str(),
		"status":       openapi.M{"type": "string", "enum": []any{"connected", "expired", "revoked"}},
		"connected_at": openapi.Timestamp(),
	}, "id", "platform", "name", "external_id", "status", "connected_at"))
	post := d.Schema("SocialPost", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer"}, "title": openapi.Str(), "content": openapi.Str(),
		"platforms": openapi.Arr(platform), "account_ids": openapi.Arr(openapi.Prefixed("acc_")), "media": openapi.Arr(openapi.Str()),
		"status":       postStatus,
		"scheduled_at": openapi.Nullable(openapi.Timestamp()), "published_at": openapi.Nullable(openapi.Timestamp()),
		"results": openapi.Arr(d.Schema("SocialPostResult", openapi.Obj(openapi.M{
			"platform":    platform,
			"account_id":  openapi.M{"type": []any{"string", "null"}, "pattern": "^acc_[0-9A-Za-z]{24}$", "description": "The account published as; null when the platform had no account."},
			"status":      openapi.M{"type": "string", "enum": []any{"published", "failed"}},
			"external_id": openapi.Nullable(openapi.Str()), "url": openapi.Nullable(openapi.Str()), "error": openapi.Nullable(openapi.Str()),
		}, "platform", "account_id", "status", "external_id", "url", "error"))),
		"created_at": openapi.Timestamp(), "updated_at": openapi.Timestamp(),
	}, "id", "title", "content", "platforms", "account_ids", "media", "status", "scheduled_at", "published_at", "results", "created_at", "updated_at"))
	postID := openapi.M{"id": openapi.M{"type": "integer", "format": "int64", "minimum": 1}}
	platformParam := openapi.M{"platform": platform}
	noStore := openapi.M{"Cache-Control": openapi.M{"required": true, "schema": openapi.M{"type": "string", "enum": []any{"no-store"}}}}

	// Accounts and OAuth.
	d.Add("GET", "/v1/social-accounts", openapi.Op{ID: "listSocialAccounts", Summary: "Connected social accounts, newest first", Tag: "social", Scope: "social:connect",
		Desc:  "The accounts of every platform, whatever their status; tokens are never shown. No credits.",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The accounts.", Content: openapi.JSON(d.List("SocialAccount"))}}})
	d.Add("DELETE", "/v1/social-accounts/{id}", openapi.Op{ID: "deleteSocialAccount", Summary: "Disconnect an account", Tag: "social", Scope: "social:connect",
		Desc:   "The account and its stored tokens are deleted.",
		Params: openapi.M{"id": openapi.Prefixed("acc_")}, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Disconnected."}}})
	d.Add("POST", "/v1/social-accounts/connect/{platform}", openapi.Op{ID: "connectSocialAccount", Summary: "Start connecting an account (OAuth)", Tag: "social", Scope: "social:connect",
		Desc: "Send the user to `oauth_url`. The platform then calls GET /v1/social-accounts/callback/{platform}, which redirects the browser to " +
			"`redirect_uri` (default: GET /v1/social-accounts/connected) with `?status=connected&account_id=acc_…` or `?status=error&error=…`. " +
			"The state is signed, expires after 10 minutes and is good for one callback. An unknown platform, or one with no OAuth app " +
			"configured on the server, is 422 naming `platform`. No credits.",
		Params: platformParam, Idempotent: true, BodyOptional: true,
		Body: openapi.JSON(d.Schema("ConnectSocialAccountRequest", openapi.Obj(openapi.M{
			"redirect_uri": openapi.M{"type": "string", "maxLength": 2048, "format": "uri",
				"description": "An absolute http(s) URL with no fragment and no user information; its query is kept."}}))),
		Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The authorization URL and its state.", Content: openapi.JSON(d.Schema("SocialAccountConnect", openapi.Obj(openapi.M{
			"oauth_url": openapi.M{"type": "string", "format": "uri"},
			"state":     openapi.M{"type": "string", "minLength": 1},
		}, "oauth_url", "state")))}}})
	d.Add("GET", "/v1/social-accounts/callback/{platform}", openapi.Op{ID: "socialOAuthCallback", Summary: "OAuth callback (the platform redirects here)", Tag: "social",
		Auth: openapi.None,
		Desc: "Needs no key: the signed, expiring, single-use `state` authenticates it. It trades the code for tokens (stored sealed), " +
			"looks up the account and answers 302 to the flow's redirect_uri with `status=connected&account_id=acc_…`, or with " +
			"`status=error&error=<code>` (state_expired, state_used, platform_not_configured, missing_code, token_exchange_failed, " +
			"account_lookup_failed, server_error, or the platform's own error code when the user declined). Reconnecting an account keeps its id. " +
			"A state this server did not sign, or signed for another platform, is 400: nothing in it is trusted, not even where to redirect.",
		Params: platformParam,
		Query: []openapi.M{
			{"name": "state", "in": "query", "required": true, "description": "The state of the connect call, as the platform returns it.", "schema": openapi.Str()},
			{"name": "code", "in": "query", "description": "The authorization code (absent when the user declined).", "schema": openapi.Str()},
			{"name": "error", "in": "query", "description": "The platform's error code, when the user declined or the platform refused.", "schema": openapi.Str()},
			{"name": "error_description", "in": "query", "schema": openapi.Str()},
		},
		Errs: []int{400},
		OK: []openapi.Resp{{Status: 302, Desc: "Back to the flow's redirect_uri, with the outcome in its query.",
			Content: openapi.M{"text/html": openapi.Str()},
			Headers: openapi.With(noStore, openapi.M{"Location": openapi.M{"required": true, "description": "The redirect_uri with status and account_id or error added.",
				"schema": openapi.M{"type": "string", "format": "uri"}}})}}})
	d.Add("GET", "/v1/social-accounts/connected", openapi.Op{ID: "socialConnectedPage", Summary: "The default end page of a connection", Tag: "social",
		Auth: openapi.None,
		Desc: "Where the callback sends the browser when the connect call gave no redirect_uri: a small HTML page saying whether the account " +
			"was connected (status=connected, with its id) or not.",
		Query: []openapi.M{
			{"name": "status", "in": "query", "description": "connected, or error.", "schema": openapi.Str()},
			{"name": "account_id", "in": "query", "schema": openapi.Str()},
			{"name": "error", "in": "query", "schema": openapi.Str()},
		},
		OK: []openapi.Resp{{Status: 200, Desc: "The page.", Content: openapi.M{"text/html": openapi.Str()}, Headers: noStore}}})

	// Posts.
	d.Add("GET", "/v1/social-posts", openapi.Op{ID: "listSocialPosts", Summary: "Social posts, newest first", Tag: "social", Scope: "social:read",
		Query: append(openapi.PageParams(), openapi.M{"name": "status", "in": "query", "schema": postStatus}),
		Errs:  []int{422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The posts.", Content: openapi.JSON(d.List("SocialPost"))}}})
	// The two bodies of a create are told apart by their required fields
	// (title; type ai and topic) and refuse each other's fields, so exactly
	// one matches. No discriminator: type may be omitted on a manual post.
	manual := d.Schema("CreateSocialPostManual", openapi.With(openapi.Obj(postFields(platform, openapi.M{
		"type":    openapi.M{"type": "string", "enum": []any{"manual"}, "description": "The default."},
		"title":   openapi.M{"type": "string", "minLength": 1, "maxLength": 300},
		"content": openapi.M{"type": "string", "maxLength": 10000},
	}), "title"), openapi.M{"description": "A post written by the caller, created at once."}))
	ai := d.Schema("CreateSocialPostAI", openapi.With(openapi.Obj(postFields(platform, openapi.M{
		"type":           openapi.M{"type": "string", "enum": []any{"ai"}},
		"topic":          openapi.M{"type": "string", "minLength": 1, "maxLength": 1000},
		"tone":           openapi.M{"type": "string", "maxLength": 100},
		"language":       openapi.M{"type": "string", "minLength": 1, "maxLength": 16, "description": "Default: the project's default language."},
		"images":         openapi.M{"type": "integer", "minimum": 0, "maximum": 4, "description": "Images to generate (+3 credits each); with media at most 10 items."},
		"videos":         openapi.M{"type": "integer", "minimum": 0, "description": "Videos to generate (+40 credits each)."},
		"premium_videos": openapi.M{"type": "integer", "minimum": 0, "description": "Premium videos to generate (+300 credits each)."},
	}), "type", "topic"), openapi.M{"description": "A post generated by AI (job social_post.generate)."}))
	d.Add("POST", "/v1/social-posts", openapi.Op{ID: "createSocialPost", Summary: "Create a post, by hand or by AI (job social_post.generate)", Tag: "social", Scope: "social:write",
		Desc: "A manual post (`type` omitted or manual; `title` required) is created at once: 201, status draft, or scheduled with " +
			"`scheduled_at`; no credits. `type: \"ai\"` (`topic` required) starts social_post.generate: 202 with the pending Job, " +
			"5 credits plus 3 per image (40 per video, 300 per premium video; videos are refused with 422 while the AI provider makes none); " +
			"its result is {social_post_id, title, platforms}. The targets are the `platforms` named plus those of the `account_ids` named; " +
			"at least one is needed. A platform with no account named goes to every account of that platform when published.",
		Idempotent: true,
		Body:       openapi.JSON(d.Schema("CreateSocialPostRequest", openapi.M{"oneOf": []any{manual, ai}})),
		Errs:       []int{402, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The manual post.", Content: openapi.JSON(post)},
			{Status: 202, Desc: "The pending social_post.generate job (type ai).", Content: openapi.JSON(openapi.Ref("Job"))}}})
	d.Add("GET", "/v1/social-posts/{id}", openapi.Op{ID: "getSocialPost", Summary: "A social post", Tag: "social", Scope: "social:read",
		Desc:   "Its status and, once published, the outcome per account in `results`.",
		Params: postID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The post.", Content: openapi.JSON(post)}}})
	d.Add("PATCH", "/v1/social-posts/{id}", openapi.Op{ID: "updateSocialPost", Summary: "Update a post", Tag: "social", Scope: "social:write",
		Desc: "Absent fields are unchanged. `scheduled_at` schedules the post (status scheduled); null unschedules it (back to draft). " +
			"A post being published or published is 409 conflict.",
		Params: postID, Idempotent: true,
		Body: openapi.JSON(d.Schema("UpdateSocialPostRequest", openapi.Obj(postFields(platform, openapi.M{
			"title":        openapi.M{"type": "string", "minLength": 1, "maxLength": 300},
			"content":      openapi.M{"type": "string", "maxLength": 10000},
			"scheduled_at": openapi.M{"type": []any{"string", "null"}, "format": "date-time", "description": "RFC 3339, in the future; null unschedules."},
		})))),
		Errs: []int{404, 409, 422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The post.", Content: openapi.JSON(post)}}})
	d.Add("DELETE", "/v1/social-posts/{id}", openapi.Op{ID: "deleteSocialPost", Summary: "Delete a post", Tag: "social", Scope: "social:write",
		Params: postID, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
	d.Add("POST", "/v1/social-posts/{id}/publish", openapi.Op{ID: "publishSocialPost", Summary: "Publish a post now", Tag: "social", Scope: "social:publish",
		Desc: "202 with the post, status publishing; the outcome is on the post when its status leaves publishing (published, " +
			"partially_published or failed, with `results`), and fires social_post.published (at least one platform succeeded) or " +
			"social_post.failed (all failed). Publishing a failed or partially published post again retries only the targets not yet " +
			"published. A post being published or already published is 409 conflict. No body, no credits.",
		Params: postID, Idempotent: true, Errs: []int{404, 409},
		OK: []openapi.Resp{{Status: 202, Desc: "The post, publishing.", Content: openapi.JSON(post)}}})
}

// postFields adds to fields the targets, media and schedule every post
// body takes.
func postFields(platform, fields openapi.M) openapi.M {
	return openapi.With(openapi.M{
		"platforms":   openapi.M{"type": "array", "maxItems": 6, "uniqueItems": true, "items": platform},
		"account_ids": openapi.M{"type": "array", "maxItems": 50, "uniqueItems": true, "items": openapi.Prefixed("acc_"), "description": "Accounts of this project."},
		"media": openapi.M{"type": "array", "maxItems": 10, "items": openapi.M{"type": "string", "maxLength": 2048, "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]",
			"description": "An absolute http(s) URL."}},
		"scheduled_at": openapi.M{"type": "string", "format": "date-time", "description": "RFC 3339, in the future: the post is scheduled."},
	}, fields)
}
