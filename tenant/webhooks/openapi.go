package webhooks

import (
	"fmt"

	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/tenant/outbox"
)

// OpenAPI describes the routes of the pillar: the endpoints that receive
// a project's events and their deliveries.
func OpenAPI(d *openapi.Doc) {
	d.Tag("webhooks", "Endpoints that receive the project's events, signed with their secret, and the record of each delivery, which can be sent again.")
	mode := d.Schema("WebhookEndpointMode", openapi.M{"type": "string", "enum": []any{outbox.ModeHTTP, outbox.ModeListen},
		"description": "`http`: events are POSTed to `url`. `listen`: no URL; events go to the endpoint's stream " +
			"(`GET /v1/webhook-endpoints/{id}/listen`, which `plinth listen` holds and forwards to a local receiver), only while a stream holds it."})
	endpointFields := openapi.M{
		"id": openapi.Str(), "url": openapi.Nullable(openapi.M{"type": "string", "description": "The receiver's URL; null for a listen endpoint."}),
		"mode": mode, "events": openapi.Arr(openapi.Str()), "is_active": openapi.M{"type": "boolean"},
		"created_at": openapi.Timestamp(), "last_delivery_status": openapi.Str(),
	}
	required := []string{"id", "url", "mode", "events", "is_active", "created_at", "last_delivery_status"}
	endpoint := d.Schema("WebhookEndpoint", openapi.Obj(endpointFields, required...))
	secret := openapi.M{"type": "string", "minLength": 1}
	d.Schema("WebhookEndpointWithSecret", openapi.Obj(openapi.With(endpointFields, openapi.M{"signing_secret": secret}), append(required, "signing_secret")...))
	// A secret is shown once: a replay of the create or the rotation
	// (Idempotency-Key) answers without it. Nothing else in the answer
	// tells the two apart (no property a discriminator could name), so it
	// is one object whose signing_secret is optional rather than a union a
	// client could not decode to the right member.
	issued := openapi.JSON(d.Schema("WebhookEndpointIssued", openapi.Obj(openapi.With(endpointFields, openapi.M{"signing_secret": openapi.With(secret,
		openapi.M{"description": "The signing secret, in the first answer only: a replay of the Idempotency-Key answers without it."})}), required...)))
	status := d.Schema("WebhookDeliveryStatus", openapi.M{"type": "string", "enum": []any{"pending", "succeeded", "failed"}})
	delivery := openapi.JSON(d.Schema("WebhookDelivery", openapi.Obj(openapi.M{
		"id": openapi.Prefixed("whd_"), "event_id": openapi.Prefixed("evt_"), "event_type": openapi.Str(),
		"status": status, "attempts": openapi.M{"type": "integer", "minimum": 0},
		"last_status_code": openapi.M{"type": []any{"integer", "null"}}, "last_error": openapi.Nullable(openapi.M{"type": "string", "pattern": outbox.ReasonPattern,
			"description": "Why the latest attempt failed, null until one does: `http_status <code>` (a non-2xx answer, redirects " +
				"included), `timeout`, `dns_failure`, `connection_refused`, `connection_reset`, `tls_error`, `address_not_allowed` " +
				"(the SSRF guard refused the address), `invalid_url` or `other`; or, when nothing was sent, `insufficient_credits`, " +
				"`endpoint_disabled` or `signing_secret_unusable`. Never the transport's own message: the server logs that."}),
		"next_attempt_at": openapi.Nullable(openapi.Timestamp()), "created_at": openapi.Timestamp(),
	}, "id", "event_id", "event_type", "status", "attempts", "last_status_code", "last_error", "next_attempt_at", "created_at")))
	bodyFields := openapi.M{
		"url":       openapi.M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "https:// (http:// and loopback with PLINTH_DEV=1)"},
		"events":    openapi.M{"type": "array", "minItems": 1, "items": openapi.Str(), "description": "Topics of the contract, e.g. content.changed."},
		"is_active": openapi.M{"type": "boolean"},
	}
	d.Add("GET", "/v1/webhook-endpoints", openapi.Op{ID: "listWebhookEndpoints", Summary: "Webhook endpoints, newest first", Tag: "webhooks", Scope: "webhooks:read",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The endpoints (no secrets).", Content: openapi.JSON(d.List("WebhookEndpoint"))}}})
	createFields := openapi.With(bodyFields, openapi.M{
		"url":  openapi.With(bodyFields["url"].(openapi.M), openapi.M{"description": "Required of mode http: https:// (http:// and loopback with PLINTH_DEV=1). Absent for mode listen."}),
		"mode": openapi.With(mode, openapi.M{"description": "Default http."}),
	})
	d.Add("POST", "/v1/webhook-endpoints", openapi.Op{ID: "createWebhookEndpoint", Summary: "Create an endpoint", Tag: "webhooks", Scope: "webhooks:write",
		Idempotent: true, Body: openapi.JSON(d.Schema("CreateWebhookEndpointRequest", openapi.Obj(createFields, "events"))), Errs: []int{422},
		OK: []openapi.Resp{{Status: 201, Desc: "The endpoint with its signing secret, shown once (a replay answers without it).", Content: issued}}})
	d.Add("GET", "/v1/webhook-endpoints/{id}", openapi.Op{ID: "getWebhookEndpoint", Summary: "An endpoint", Tag: "webhooks", Scope: "webhooks:read",
		Errs: []int{404},
		OK:   []openapi.Resp{{Status: 200, Desc: "The endpoint.", Content: openapi.JSON(endpoint)}}})
	d.Add("PATCH", "/v1/webhook-endpoints/{id}", openapi.Op{ID: "updateWebhookEndpoint", Summary: "Update an endpoint", Tag: "webhooks", Scope: "webhooks:write",
		Idempotent: true, Body: openapi.JSON(d.Schema("UpdateWebhookEndpointRequest", openapi.Obj(bodyFields))), Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The endpoint.", Content: openapi.JSON(endpoint)}}})
	d.Add("DELETE", "/v1/webhook-endpoints/{id}", openapi.Op{ID: "deleteWebhookEndpoint", Summary: "Delete an endpoint", Tag: "webhooks", Scope: "webhooks:write",
		Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
	d.Add("POST", "/v1/webhook-endpoints/{id}/rotate-secret", openapi.Op{ID: "rotateWebhookSecret", Summary: "Rotate the signing secret", Tag: "webhooks", Scope: "webhooks:write",
		Desc:       "The new secret is returned once; the old one also signs for 24 h (two v1= entries in X-Service-Signature).",
		Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The endpoint with its new secret (a replay answers without it).", Content: issued}}})
	d.Add("GET", "/v1/webhook-endpoints/{id}/deliveries", openapi.Op{ID: "listWebhookDeliveries", Summary: "Deliveries of an endpoint, newest first", Tag: "webhooks", Scope: "webhooks:read",
		Query: append(openapi.PageParams(), openapi.M{"name": "status", "in": "query", "schema": status}),
		Errs:  []int{404, 422},
		OK:    []openapi.Resp{{Status: 200, Desc: "The deliveries.", Content: openapi.JSON(d.List("WebhookDelivery"))}}})
	d.Add("POST", "/v1/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver", openapi.Op{ID: "redeliverWebhook", Summary: "Deliver an event again", Tag: "webhooks", Scope: "webhooks:write",
		Desc:       "A new delivery (new whd_ id) of the same frozen envelope: same evt_ id, same data.",
		Idempotent: true, Errs: []int{402, 404, 409, 422},
		OK: []openapi.Resp{{Status: 202, Desc: "The new delivery.", Content: delivery}}})
	d.Add("GET", "/v1/webhook-endpoints/{id}/listen", openapi.Op{ID: "listenWebhookEndpoint", Summary: "Server-Sent Events of a listen endpoint", Tag: "webhooks",
		Scope: "webhooks:write",
		Desc: fmt.Sprintf("The stream `plinth listen` holds. While it is open the listen endpoint receives events: the stream holds it %v at a time, "+
			"renewed every %v, and ends the hold when its client goes. ", ListenLease, ListenRenew) +
			"Each delivery to it is an event `delivery` " +
			"{id, topic, headers, body}: the headers (X-Service-Event, X-Service-Delivery, X-Service-Signature signed as the event is sent, " +
			"Content-Type, User-Agent) and the exact body a delivery to an http endpoint carries; its SSE id is its number in the endpoint's " +
			"sequence (resume after one with Last-Event-ID). An event `error` {code, message} ends the stream (not_found: the endpoint was deleted). " +
			"Comments keep it alive. 409 conflict for an endpoint of mode http; " +
			fmt.Sprintf("a project holds at most %d listener streams open per instance: one more is 429 rate_limited with Retry-After.", MaxListenStreamsPerProject),
		Headers: []openapi.M{{"name": "Last-Event-ID", "in": "header", "schema": openapi.Str()}},
		Errs:    []int{404, 409},
		OK: []openapi.Resp{{Status: 200, Desc: "The event stream.", Content: openapi.M{"text/event-stream": openapi.Str()},
			Headers: openapi.M{"Cache-Control": openapi.M{"schema": openapi.Str()}}}}})
}
