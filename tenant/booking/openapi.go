package booking

import "github.com/plinth-dev/plinth/internal/openapi"

// OpenAPI describes the routes of the pillar: services, settings,
// availability and bookings, with a key (booking:read for GET,
// booking:write otherwise, booking:admin for the settings) and on the
// public surface. No booking route costs credits.
func OpenAPI(d *openapi.Doc) {
	d.Tag("booking", "Bookable services, the weekly hours and settings of the calendar, and bookings with their confirmation and cancellation.")
	openAPISchemas(d)
	service, settings, booking := openapi.Ref("BookingService"), openapi.Ref("BookingSettings"), openapi.Ref("Booking")
	serviceID := openapi.M{"id": intIDSchema()}
	bookingID := openapi.M{"id": intIDSchema()}
	cache := openapi.M{"Cache-Control": openapi.M{"required": true, "schema": openapi.M{"type": "string", "enum": []any{"public, max-age=60"}}},
		"ETag": openapi.M{"required": true, "description": "A strong tag of the body; send it as If-None-Match to get 304.", "schema": openapi.Str()}}
	notModified := openapi.Resp{Status: 304, Desc: "Not modified: If-None-Match names the current ETag (no body).", Headers: cache}
	ifNoneMatch := openapi.M{"name": "If-None-Match", "in": "header", "description": "An ETag of an earlier answer; 304 when it is still current.", "schema": openapi.Str()}

	// Services.
	d.Add("GET", "/v1/booking/services", openapi.Op{ID: "listBookingServices", Summary: "Bookable services, newest first", Tag: "booking", Scope: "booking:read",
		Desc:  "Every service that is not deleted, active or not. No credits.",
		Query: openapi.PageParams(), Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The services.", Content: openapi.JSON(d.List("BookingService"))}}})
	d.Add("POST", "/v1/booking/services", openapi.Op{ID: "createBookingService", Summary: "Create a service", Tag: "booking", Scope: "booking:write",
		Desc:       "Only `name` is required; the rest defaults to 60 minutes, no buffer, price 0, currency usd, active. No credits.",
		Idempotent: true, Body: openapi.JSON(d.Schema("CreateBookingServiceRequest", openapi.Obj(serviceFields(), "name"))), Errs: []int{422},
		OK: []openapi.Resp{{Status: 201, Desc: "The service.", Content: openapi.JSON(service)}}})
	d.Add("GET", "/v1/booking/services/{id}", openapi.Op{ID: "getBookingService", Summary: "A service", Tag: "booking", Scope: "booking:read",
		Params: serviceID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The service.", Content: openapi.JSON(service)}}})
	d.Add("PATCH", "/v1/booking/services/{id}", openapi.Op{ID: "updateBookingService", Summary: "Update a service", Tag: "booking", Scope: "booking:write",
		Desc:   "Absent fields are unchanged. Existing bookings keep their times.",
		Params: serviceID, Idempotent: true, Body: openapi.JSON(d.Schema("UpdateBookingServiceRequest", openapi.Obj(serviceFields()))), Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The service.", Content: openapi.JSON(service)}}})
	d.Add("DELETE", "/v1/booking/services/{id}", openapi.Op{ID: "deleteBookingService", Summary: "Delete a service", Tag: "booking", Scope: "booking:write",
		Desc:   "The service disappears from lists, reads and availability; its bookings stay (they keep its service_id).",
		Params: serviceID, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})

	// Settings.
	d.Add("GET", "/v1/booking/settings", openapi.Op{ID: "getBookingSettings", Summary: "The booking settings", Tag: "booking", Scope: "booking:admin",
		Desc: "Until the first PATCH: the project's timezone, Monday to Friday 09:00-17:00, auto_confirm true, 60 minutes' notice, 90 days ahead.",
		OK:   []openapi.Resp{{Status: 200, Desc: "The settings.", Content: openapi.JSON(settings)}}})
	d.Add("PATCH", "/v1/booking/settings", openapi.Op{ID: "updateBookingSettings", Summary: "Update the booking settings", Tag: "booking", Scope: "booking:admin",
		Desc: "Absent fields are unchanged. `weekly_hours` merges per day: a day present replaces that day's intervals ([] or null closes it), " +
			"a day absent keeps them. Intervals of a day are [\"HH:MM\",\"HH:MM\"] pairs (00:00 to 24:00, start before end, not overlapping, " +
			"at most 12). `timezone` null follows the project's timezone again. Existing bookings are not moved.",
		Idempotent: true, Body: openapi.JSON(d.Schema("UpdateBookingSettingsRequest", openapi.Obj(openapi.M{
			"timezone": openapi.M{"type": []any{"string", "null"}, "minLength": 1, "description": "An IANA time zone name such as Europe/Berlin; null follows the project's."},
			"weekly_hours": d.Schema("BookingWeekPatch", openapi.With(openapi.Obj(weekFields(true)),
				openapi.M{"description": "The days to change: a day's intervals replace that day's ([] or null closes it)."})),
			"auto_confirm":       openapi.M{"type": "boolean"},
			"min_notice_minutes": openapi.M{"type": "integer", "minimum": 0, "maximum": 525600},
			"max_days_ahead":     openapi.M{"type": "integer", "minimum": 0, "maximum": 730},
		}))),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The settings.", Content: openapi.JSON(settings)}}})

	// Availability.
	availability := []openapi.M{
		{"name": "service_id", "in": "query", "required": true, "description": "The service (422 when missing).", "schema": intIDSchema()},
		{"name": "from", "in": "query", "schema": whenSchema(), "description": "Start of the range: an RFC 3339 instant, or a date YYYY-MM-DD " +
			"(its start in the booking timezone). Default: now."},
		{"name": "to", "in": "query", "schema": whenSchema(), "description": "End of the range: an RFC 3339 instant, or a date YYYY-MM-DD " +
			"(its end in the booking timezone, so from=to=D is the day D). Default: 7 days after from; at most 93 days after from."},
	}
	slots := openapi.JSON(d.Schema("BookingSlots", openapi.Obj(openapi.M{"data": openapi.Arr(openapi.Ref("BookingSlot"))}, "data")))
	d.Add("GET", "/v1/booking/availability", openapi.Op{ID: "getBookingAvailability", Summary: "Free slots of a service", Tag: "booking", Scope: "booking:read",
		Desc: "The start times a booking of the service may take, in order: within the weekly hours, after the minimum notice, within " +
			"max_days_ahead, not overlapping a pending, confirmed or completed booking (with the service's buffer). An inactive service has no slots. No credits.",
		Query: availability, Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The free slots.", Content: slots}}})
	d.Add("GET", "/v1/public/booking/availability", openapi.Op{ID: "getPublicBookingAvailability", Summary: "Free slots of an active service (public)", Tag: "public",
		Auth: openapi.Public, Desc: "As GET /v1/booking/availability, for an active service only (an inactive or deleted one is 404). Only the slots, never who booked.",
		Query: availability, Headers: []openapi.M{ifNoneMatch}, Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The free slots.", Content: slots, Headers: cache}, notModified}})
	d.Add("GET", "/v1/public/booking/services", openapi.Op{ID: "listPublicBookingServices", Summary: "Active services (public)", Tag: "public",
		Auth: openapi.Public, Desc: "The project's active services, newest first.",
		Query: openapi.PageParams(), Headers: []openapi.M{ifNoneMatch}, Errs: []int{422},
		OK: []openapi.Resp{{Status: 200, Desc: "The services.", Content: openapi.JSON(d.List("BookingService")), Headers: cache}, notModified}})

	// Bookings.
	createDesc := "Books a free slot of an active service (see the availability). The booking is `confirmed` when the settings " +
		"auto-confirm (firing booking.confirmed) and `pending` otherwise. A slot taken meanwhile is 409 slot_unavailable: refresh the " +
		"availability, do not retry. An unknown or inactive service_id, or a start_at that is not a slot, is 422. No credits."
	bookingBody := openapi.JSON(d.Schema("CreateBookingRequest", openapi.Obj(openapi.M{
		"service_id": intIDSchema(),
		"start_at":   openapi.M{"type": "string", "format": "date-time", "description": "RFC 3339; a start time of the availability."},
		"customer": d.Schema("BookingCustomerInput", openapi.Obj(openapi.M{
			"name":  openapi.M{"type": "string", "minLength": 1, "maxLength": 200},
			"email": openapi.M{"type": "string", "format": "email", "maxLength": 254},
			"phone": openapi.M{"type": []any{"string", "null"}, "pattern": `^\s*(\+?[0-9 ().\-/]{3,40})?\s*$`,
				"description": "Digits, spaces and + ( ) . - / (3 to 40 characters once trimmed); empty or null is no phone."},
		}, "name", "email")),
		"notes": openapi.M{"type": []any{"string", "null"}, "maxLength": 2000},
	}, "service_id", "start_at", "customer")))
	d.Add("POST", "/v1/bookings", openapi.Op{ID: "createBooking", Summary: "Book a slot", Tag: "booking", Scope: "booking:write",
		Desc: createDesc, Idempotent: true, Body: bookingBody, Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The booking.", Content: openapi.JSON(booking)}}})
	d.Add("POST", "/v1/public/bookings", openapi.Op{ID: "createPublicBooking", Summary: "Book a slot (public)", Tag: "public",
		Auth: openapi.Public, Desc: createDesc + " The answer shows the visitor's own booking only.",
		Idempotent: true, Body: bookingBody, Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The booking.", Content: openapi.JSON(booking)}}})
	d.Add("GET", "/v1/bookings", openapi.Op{ID: "listBookings", Summary: "Bookings, newest first", Tag: "booking", Scope: "booking:read",
		Query: append(openapi.PageParams(),
			openapi.M{"name": "status", "in": "query", "schema": openapi.Ref("BookingStatus")},
			openapi.M{"name": "service_id", "in": "query", "schema": intIDSchema()},
			openapi.M{"name": "from", "in": "query", "schema": whenSchema(), "description": "Bookings starting at or after: an RFC 3339 instant or a date YYYY-MM-DD (its start in the booking timezone)."},
			openapi.M{"name": "to", "in": "query", "schema": whenSchema(), "description": "Bookings starting before: an RFC 3339 instant or a date YYYY-MM-DD (its end in the booking timezone)."}),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The bookings.", Content: openapi.JSON(d.List("Booking"))}}})
	d.Add("GET", "/v1/bookings/{id}", openapi.Op{ID: "getBooking", Summary: "A booking", Tag: "booking", Scope: "booking:read",
		Params: bookingID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The booking.", Content: openapi.JSON(booking)}}})
	for _, t := range []struct{ action, id, summary, desc string }{
		{"confirm", "confirmBooking", "Confirm a pending booking", "pending → confirmed; fires booking.confirmed."},
		{"cancel", "cancelBooking", "Cancel a booking", "pending or confirmed → cancelled, freeing the slot; fires booking.cancelled."},
		{"complete", "completeBooking", "Mark a booking complete", "confirmed → completed, after the appointment; fires booking.completed."},
	} {
		d.Add("POST", "/v1/bookings/{id}/"+t.action, openapi.Op{ID: t.id, Summary: t.summary, Tag: "booking", Scope: "booking:write",
			Desc:   t.desc + " From any other Status: 409 conflict naming the current one. No body, no credits.",
			Params: bookingID, Idempotent: true, Errs: []int{404, 409},
			OK: []openapi.Resp{{Status: 200, Desc: "The booking.", Content: openapi.JSON(booking)}}})
	}
}

// bookingIntID is an integer id of the booking pillar (path or query).
func intIDSchema() openapi.M { return openapi.M{"type": "integer", "format": "int64", "minimum": 1} }

// bookingWhen is a from/to bound: an RFC 3339 instant or a date.
func whenSchema() openapi.M {
	return openapi.M{"type": "string", "minLength": 1, "examples": []any{"2030-01-07", "2030-01-07T09:00:00Z"}}
}

// bookingServiceInput are the fields of POST and PATCH /booking/services.
func serviceFields() openapi.M {
	return openapi.M{
		"name":             openapi.M{"type": "string", "minLength": 1, "maxLength": 200},
		"description":      openapi.M{"type": "string", "maxLength": 5000},
		"duration_minutes": openapi.M{"type": "integer", "minimum": 1, "maximum": 1440},
		"buffer_minutes":   openapi.M{"type": "integer", "minimum": 0, "maximum": 1440, "description": "Time kept free after each booking."},
		"price":            openapi.M{"type": "integer", "minimum": 0, "maximum": 100000000000, "description": "In the currency's minor unit (cents)."},
		"currency":         openapi.M{"type": "string", "pattern": "^[a-zA-Z]{3}$", "description": "ISO 4217; stored lowercase."},
		"is_active":        openapi.M{"type": "boolean"},
	}
}

// bookingWeek is weekly_hours: each day a list of ["HH:MM","HH:MM"]
// intervals (patch: a day may be null, which closes it).
func weekFields(patch bool) openapi.M {
	day := openapi.M{"type": "array", "maxItems": 12, "items": openapi.M{
		"type": "array", "minItems": 2, "maxItems": 2,
		"items": openapi.M{"type": "string", "pattern": "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"},
	}}
	if patch {
		day["type"] = []any{"array", "null"}
	}
	w := openapi.M{}
	for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
		w[d] = day
	}
	return w
}

// openAPISchemas registers the schemas of the pillar's answers.
func openAPISchemas(d *openapi.Doc) {
	d.Schema("BookingStatus", openapi.M{"type": "string", "enum": []any{"pending", "confirmed", "cancelled", "completed"}})
	week := d.Schema("BookingWeek", openapi.With(openapi.Obj(weekFields(false), "mon", "tue", "wed", "thu", "fri", "sat", "sun"),
		openapi.M{"description": "Opening intervals per day, Monday first; an empty list is a closed day."}))
	d.Schema("BookingService", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer"}, "name": openapi.Str(), "description": openapi.Str(),
		"duration_minutes": openapi.M{"type": "integer", "minimum": 1}, "buffer_minutes": openapi.M{"type": "integer", "minimum": 0},
		"price":    openapi.M{"type": "integer", "minimum": 0, "description": "In the currency's minor unit (cents)."},
		"currency": openapi.M{"type": "string", "pattern": "^[a-z]{3}$"}, "is_active": openapi.M{"type": "boolean"},
	}, "id", "name", "description", "duration_minutes", "buffer_minutes", "price", "currency", "is_active"))
	d.Schema("BookingSettings", openapi.Obj(openapi.M{
		"timezone":           openapi.M{"type": "string", "description": "The IANA zone in effect: the settings' own, else the project's."},
		"weekly_hours":       week,
		"auto_confirm":       openapi.M{"type": "boolean"},
		"min_notice_minutes": openapi.M{"type": "integer", "minimum": 0},
		"max_days_ahead":     openapi.M{"type": "integer", "minimum": 0},
	}, "timezone", "weekly_hours", "auto_confirm", "min_notice_minutes", "max_days_ahead"))
	d.Schema("BookingSlot", openapi.Obj(openapi.M{"start_at": openapi.Timestamp(), "end_at": openapi.Timestamp()}, "start_at", "end_at"))
	d.Schema("Booking", openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer"}, "service_id": openapi.M{"type": "integer"}, "start_at": openapi.Timestamp(), "end_at": openapi.Timestamp(),
		"status": openapi.Ref("BookingStatus"),
		"customer": d.Schema("BookingCustomer", openapi.Obj(openapi.M{"name": openapi.Str(), "email": openapi.Str(), "phone": openapi.Nullable(openapi.Str())},
			"name", "email", "phone")),
		"notes":      openapi.Nullable(openapi.Str()),
		"created_at": openapi.Timestamp(), "updated_at": openapi.Timestamp(),
	}, "id", "service_id", "start_at", "end_at", "status", "customer", "notes", "created_at", "updated_at"))
}
