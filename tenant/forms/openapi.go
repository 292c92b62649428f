package forms

import (
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/openapi"
)

// OpenAPI describes the routes of the pillar: the public newsletter and
// contact forms (no key) and the submissions behind a key.
func OpenAPI(d *openapi.Doc) {
	d.Tag("forms", "Newsletter subscriptions and contact-form messages: submitted from the site with no key, listed and deleted with one.")
	kind := d.Schema("FormType", openapi.M{"type": "string", "enum": []any{TypeNewsletter, TypeContact}})
	// Unions of single types rather than a type list: generators (oapi-codegen)
	// cannot map a list of types to one Go type.
	scalar := d.Schema("FormFieldScalar", openapi.M{"oneOf": []any{openapi.M{"type": "string", "maxLength": MaxFieldValue},
		openapi.M{"type": "number", "format": "double"}, openapi.M{"type": "boolean"}, openapi.M{"type": "null"}}})
	value := d.Schema("FormFieldValue", openapi.M{"oneOf": []any{scalar, openapi.M{"type": "array", "maxItems": MaxFieldValues, "items": scalar}},
		"description": "A string, number, boolean or null, or an array of those."})
	submission := openapi.JSON(d.Schema("FormSubmission", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer"}, "type": kind, "email": openapi.Str(),
		"name": openapi.Nullable(openapi.Str()), "subject": openapi.Nullable(openapi.Str()), "message": openapi.Nullable(openapi.Str()),
		"fields": openapi.Nullable(openapi.MapOf(value)), "source": openapi.Nullable(openapi.Str()), "spam": openapi.M{"type": "boolean"},
		"created_at": openapi.Timestamp(),
	}, "id", "type", "email", "name", "subject", "message", "fields", "source", "spam", "created_at")))
	subscription := openapi.JSON(d.Schema("NewsletterSubscription", openapi.With(openapi.Obj(openapi.M{
		"type": openapi.M{"type": "string", "enum": []any{TypeNewsletter}}, "email": openapi.Str(),
		"name": openapi.Nullable(openapi.Str()), "source": openapi.Nullable(openapi.Str()),
	}, "type", "email", "name", "source"), openapi.M{"description": "The subscription as the request sent it (email, name and source trimmed). " +
		"It carries nothing of the stored row, so a first subscription, a repeated one and a spam one answer alike."})))
	d.Add("POST", "/v1/public/forms/newsletter", openapi.Op{ID: "subscribeNewsletter", Summary: "Subscribe to the newsletter", Tag: "forms", Auth: openapi.Public,
		Desc: "No key, no credits. Subscribing twice keeps one row: a repeated subscription fills in a name or source the row lacks, " +
			"and answers exactly as a first one, so the answer never tells whether an address was subscribed. " +
			"A non-empty hidden `website` field marks spam (still 201, the same answer).",
		Idempotent: true,
		Body: openapi.JSON(d.Schema("SubscribeNewsletterRequest", openapi.Obj(openapi.M{
			"email": openapi.M{"type": "string", "minLength": 1, "maxLength": httpapi.MaxEmail}, "name": openapi.M{"type": "string", "maxLength": MaxName},
			"source": openapi.M{"type": "string", "maxLength": MaxSource}, "website": openapi.Str(),
		}, "email"))),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The subscription, acknowledged.", Content: subscription}}})
	d.Add("POST", "/v1/public/forms/contact", openapi.Op{ID: "submitContact", Summary: "Submit the contact form", Tag: "forms", Auth: openapi.Public,
		Desc:       "No key, no credits. A non-empty hidden `website` field marks spam (still 201).",
		Idempotent: true,
		Body: openapi.JSON(d.Schema("SubmitContactRequest", openapi.Obj(openapi.M{
			"name": openapi.M{"type": "string", "minLength": 1, "maxLength": MaxName}, "email": openapi.M{"type": "string", "minLength": 1, "maxLength": httpapi.MaxEmail},
			"message": openapi.M{"type": "string", "minLength": 1, "maxLength": MaxMessage}, "subject": openapi.M{"type": "string", "maxLength": MaxSubject},
			"source": openapi.M{"type": "string", "maxLength": MaxSource}, "website": openapi.Str(),
			"fields": openapi.With(openapi.MapOf(value), openapi.M{"maxProperties": MaxFields,
				"propertyNames": openapi.M{"minLength": 1, "maxLength": MaxFieldKey}, "description": "Further fields of the form by name."}),
		}, "name", "email", "message"))),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The submission.", Content: submission}}})
	d.Add("GET", "/v1/form-submissions", openapi.Op{ID: "listFormSubmissions", Summary: "Form submissions, newest first", Tag: "forms", Scope: "forms:read",
		Desc:  "With `Accept: text/csv` the newsletter subscribers are exported as CSV (type omitted or newsletter).",
		Query: append(openapi.PageParams(), openapi.M{"name": "type", "in": "query", "schema": kind}),
		Errs:  []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The submissions (JSON), or the subscribers (CSV).", Content: openapi.M{
			"application/json": d.List("FormSubmission"),
			"text/csv":         openapi.Str(),
		}}}})
	d.Add("DELETE", "/v1/form-submissions/{id}", openapi.Op{ID: "deleteFormSubmission", Summary: "Delete a submission", Tag: "forms", Scope: "forms:write",
		Params: openapi.M{"id": openapi.M{"type": "string", "pattern": "^[0-9]+$"}}, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})
}
