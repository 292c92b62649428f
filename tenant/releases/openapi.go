package releases

import (
	"fmt"
	"time"

	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// OpenAPI describes the releases.
func OpenAPI(d *openapi.Doc) {
	types := []any{drafts.Page, drafts.Component, drafts.ContentKey, drafts.Gallery, drafts.Brand, drafts.Post}
	item := d.Schema("ReleaseItem", openapi.Obj(openapi.M{
		"type":      openapi.M{"type": "string", "enum": types},
		"id":        openapi.M{"type": "string", "description": "The item's reference: a page's, component's or post's numeric id, a gallery's slug, a content key, \"\" for the brand."},
		"languages": openapi.Nullable(openapi.Arr(openapi.Str())),
	}, "type", "id", "languages"))
	statuses := []any{StatusPending, StatusScheduled, StatusPublished, StatusFailed, StatusCancelled}
	release := d.Schema("Release", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer"}, "name": openapi.Str(),
		"status":       openapi.M{"type": "string", "enum": statuses},
		"items":        openapi.Arr(item),
		"publish_at":   openapi.Nullable(openapi.Timestamp()),
		"published_at": openapi.Nullable(openapi.Timestamp()),
		"error":        openapi.With(openapi.Nullable(openapi.Str()), openapi.M{"description": "Why the release could not publish (its last attempt), naming the item."}),
		"created_at":   openapi.Timestamp(), "updated_at": openapi.Timestamp(),
	}, "id", "name", "status", "items", "publish_at", "published_at", "error", "created_at", "updated_at"))
	idParam := openapi.M{"id": openapi.M{"type": "integer", "minimum": 1}}
	d.Add("POST", "/v1/releases", openapi.Op{ID: "createRelease", Summary: "Create a release", Tag: "content", Scope: "content:write",
		Desc: "Items of any type with drafts, published together in one transaction by POST …/publish, or by a job at `publish_at` (status scheduled). " +
			"Each item must exist in this project (else a 422 naming it), and the key must hold the write scope of each item's pillar " +
			"(content:write, galleries:write, brand:write, blog:write). No credits; publishing charges what each item's publish does.",
		Idempotent: true,
		Body: openapi.JSON(d.Schema("CreateReleaseRequest", openapi.Obj(openapi.M{
			"name": openapi.M{"type": "string", "minLength": 1, "maxLength": MaxNameLen},
			"items": openapi.M{"type": "array", "minItems": 1, "maxItems": MaxItems, "items": openapi.Obj(openapi.M{
				"type": openapi.M{"type": "string", "enum": types},
				"id":   openapi.M{"type": "string", "description": "A page's or post's id or slug, a component's or gallery's slug, a content key; omitted for the brand."},
				"languages": openapi.M{"type": "array", "minItems": 1, "maxItems": drafts.MaxLanguages, "items": openapi.Str(),
					"description": "Publish these languages of the item only; omit to publish its whole draft."},
			}, "type")},
			"publish_at": openapi.With(openapi.Timestamp(), openapi.M{"description": "Publish at this time (in the future, within a year)."}),
		}, "name", "items"))),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The release.", Content: openapi.JSON(release)}}})
	d.Add("GET", "/v1/releases", openapi.Op{ID: "listReleases", Summary: "Releases, newest first", Tag: "content", Scope: "content:read",
		Query: append(openapi.PageParams(), openapi.M{"name": "status", "in": "query", "schema": openapi.M{"type": "string", "enum": statuses}}),
		Errs:  []int{422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The releases.", Content: openapi.JSON(d.List("Release"))}}})
	d.Add("GET", "/v1/releases/{id}", openapi.Op{ID: "getRelease", Summary: "A release", Tag: "content", Scope: "content:read",
		Params: idParam, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The release.", Content: openapi.JSON(release)}}})
	d.Add("POST", "/v1/releases/{id}/publish", openapi.Op{ID: "publishRelease", Summary: "Publish a release now", Tag: "content", Scope: "content:write",
		Desc: "Every item's draft goes live in one transaction (each as its own POST …/publish would: credits, a publish version, " +
			"`content.published` with the release's id). When an item cannot be published nothing is: the answer is that item's failure " +
			"(409 for an item since deleted), naming it, and the release keeps its status with the reason in `error`. " +
			fmt.Sprintf("Only a pending or scheduled release publishes (else 409). At most %d items.", MaxItems),
		Params: idParam, Idempotent: true, Errs: []int{402, 404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The published release.", Content: openapi.JSON(release)}}})
	d.Add("POST", "/v1/releases/{id}/cancel", openapi.Op{ID: "cancelRelease", Summary: "Cancel a release", Tag: "content", Scope: "content:write",
		Desc:   "A pending or scheduled release is cancelled (its job, if any, then does nothing); else 409.",
		Params: idParam, Idempotent: true, Errs: []int{404, 409},
		OK: []openapi.Resp{{Status: 200, Desc: "The cancelled release.", Content: openapi.JSON(release)}}})

	openAPIPreviews(d, item)
}

func openAPIPreviews(d *openapi.Doc, item openapi.M) {
	preview := d.Schema("Preview", openapi.Obj(openapi.M{
		"id":         openapi.Prefixed("pvw_"),
		"token":      openapi.M{"type": "string", "description": "Sent once, by POST: give it to the public surface as X-Preview-Token (or ?preview=)."},
		"release_id": openapi.Nullable(openapi.M{"type": "integer"}),
		"items":      openapi.Arr(item),
		"expires_at": openapi.Timestamp(),
		"revoked_at": openapi.Nullable(openapi.Timestamp()),
		"created_at": openapi.Timestamp(),
	}, "id", "release_id", "items", "expires_at", "revoked_at", "created_at"))
	d.Add("POST", "/v1/previews", openapi.Op{ID: "createPreview", Summary: "Create a preview link", Tag: "content", Scope: "content:write",
		Desc: "A token that makes the public surface serve the drafts of a release's items (`release_id`), or of `items`, to the requests " +
			"that carry it (X-Preview-Token, or ?preview=), with Cache-Control: private, no-store, until `expires_in` seconds have passed " +
			"(default a day, at most 7 days) or it is revoked. Other requests keep seeing what is live. The token is shown once.",
		Idempotent: true,
		Body: openapi.JSON(d.Schema("CreatePreviewRequest", openapi.Obj(openapi.M{
			"release_id": openapi.M{"type": "integer", "minimum": 1},
			"items": openapi.M{"type": "array", "minItems": 1, "maxItems": MaxItems, "items": openapi.Obj(openapi.M{
				"type": openapi.M{"type": "string"},
				"id":   openapi.M{"type": "string", "description": "As a release's items: omitted for the brand."},
			}, "type")},
			"expires_in": openapi.M{"type": "integer", "minimum": 60, "maximum": int64(MaxPreviewTTL / time.Second)},
		}))),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The preview link with its token.", Content: openapi.JSON(preview)}}})
	d.Add("GET", "/v1/previews", openapi.Op{ID: "listPreviews", Summary: "Preview links, newest first", Tag: "content", Scope: "content:read",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The preview links (without tokens).", Content: openapi.JSON(d.List("Preview"))}}})
	d.Add("DELETE", "/v1/previews/{id}", openapi.Op{ID: "revokePreview", Summary: "Revoke a preview link", Tag: "content", Scope: "content:write",
		Params: openapi.M{"id": openapi.Prefixed("pvw_")}, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Revoked: its token no longer shows drafts."}}})
}
