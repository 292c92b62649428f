package openapi

// booking documents the routes of tenant/booking: services, settings,
// availability and bookings, with a key (booking:read for GET,
// booking:write otherwise, booking:admin for the settings) and on the
// public surface. No booking route costs credits.
func (d *doc) booking() {
	serviceID := M{"id": bookingIntID()}
	bookingID := M{"id": bookingIntID()}
	cache := M{"Cache-Control": M{"required": true, "schema": M{"type": "string", "enum": []any{"public, max-age=60"}}},
		"ETag": M{"required": true, "description": "A strong tag of the body; send it as If-None-Match to get 304.", "schema": str()}}
	notModified := resp{status: 304, desc: "Not modified: If-None-Match names the current ETag (no body).", headers: cache}
	ifNoneMatch := M{"name": "If-None-Match", "in": "header", "description": "An ETag of an earlier answer; 304 when it is still current.", "schema": str()}

	// Services.
	d.add("GET", "/v1/booking/services", op{id: "listBookingServices", summary: "Bookable services, newest first", tag: "booking", scope: "booking:read",
		desc:  "Every service that is not deleted, active or not. No credits.",
		query: pageParams(), errs: []int{422},
		ok: []resp{{status: 200, desc: "The services.", content: jsonOf(list(ref("BookingService")))}}})
	d.add("POST", "/v1/booking/services", op{id: "createBookingService", summary: "Create a service", tag: "booking", scope: "booking:write",
		desc:       "Only `name` is required; the rest defaults to 60 minutes, no buffer, price 0, currency usd, active. No credits.",
		idempotent: true, body: jsonOf(obj(bookingServiceInput(), "name")), errs: []int{422},
		ok: []resp{{status: 201, desc: "The service.", content: jsonOf(ref("BookingService"))}}})
	d.add("GET", "/v1/booking/services/{id}", op{id: "getBookingService", summary: "A service", tag: "booking", scope: "booking:read",
		params: serviceID, errs: []int{404},
		ok: []resp{{status: 200, desc: "The service.", content: jsonOf(ref("BookingService"))}}})
	d.add("PATCH", "/v1/booking/services/{id}", op{id: "updateBookingService", summary: "Update a service", tag: "booking", scope: "booking:write",
		desc:   "Absent fields are unchanged. Existing bookings keep their times.",
		params: serviceID, idempotent: true, body: jsonOf(obj(bookingServiceInput())), errs: []int{404, 422},
		ok: []resp{{status: 200, desc: "The service.", content: jsonOf(ref("BookingService"))}}})
	d.add("DELETE", "/v1/booking/services/{id}", op{id: "deleteBookingService", summary: "Delete a service", tag: "booking", scope: "booking:write",
		desc:   "The service disappears from lists, reads and availability; its bookings stay (they keep its service_id).",
		params: serviceID, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})

	// Settings.
	d.add("GET", "/v1/booking/settings", op{id: "getBookingSettings", summary: "The booking settings", tag: "booking", scope: "booking:admin",
		desc: "Until the first PATCH: the project's timezone, Monday to Friday 09:00-17:00, auto_confirm true, 60 minutes' notice, 90 days ahead.",
		ok:   []resp{{status: 200, desc: "The settings.", content: jsonOf(ref("BookingSettings"))}}})
	d.add("PATCH", "/v1/booking/settings", op{id: "updateBookingSettings", summary: "Update the booking settings", tag: "booking", scope: "booking:admin",
		desc: "Absent fields are unchanged. `weekly_hours` merges per day: a day present replaces that day's intervals ([] or null closes it), " +
			"a day absent keeps them. Intervals of a day are [\"HH:MM\",\"HH:MM\"] pairs (00:00 to 24:00, start before end, not overlapping, " +
			"at most 12). `timezone` null follows the project's timezone again. Existing bookings are not moved.",
		idempotent: true, body: jsonOf(obj(M{
			"timezone":           M{"type": []any{"string", "null"}, "minLength": 1, "description": "An IANA time zone name such as Europe/Berlin; null follows the project's."},
			"weekly_hours":       obj(bookingWeek(true)),
			"auto_confirm":       M{"type": "boolean"},
			"min_notice_minutes": M{"type": "integer", "minimum": 0, "maximum": 525600},
			"max_days_ahead":     M{"type": "integer", "minimum": 0, "maximum": 730},
		})),
		errs: []int{422},
		ok:   []resp{{status: 200, desc: "The settings.", content: jsonOf(ref("BookingSettings"))}}})

	// Availability.
	availability := []M{
		{"name": "service_id", "in": "query", "required": true, "description": "The service (422 when missing).", "schema": bookingIntID()},
		{"name": "from", "in": "query", "schema": bookingWhen(), "description": "Start of the range: an RFC 3339 instant, or a date YYYY-MM-DD " +
			"(its start in the booking timezone). Default: now."},
		{"name": "to", "in": "query", "schema": bookingWhen(), "description": "End of the range: an RFC 3339 instant, or a date YYYY-MM-DD " +
			"(its end in the booking timezone, so from=to=D is the day D). Default: 7 days after from; at most 93 days after from."},
	}
	slots := jsonOf(obj(M{"data": arr(ref("BookingSlot"))}, "data"))
	d.add("GET", "/v1/booking/availability", op{id: "getBookingAvailability", summary: "Free slots of a service", tag: "booking", scope: "booking:read",
		desc: "The start times a booking of the service may take, in order: within the weekly hours, after the minimum notice, within " +
			"max_days_ahead, not overlapping a pending, confirmed or completed booking (with the service's buffer). An inactive service has no slots. No credits.",
		query: availability, errs: []int{404, 422},
		ok: []resp{{status: 200, desc: "The free slots.", content: slots}}})
	d.add("GET", "/v1/public/booking/availability", op{id: "getPublicBookingAvailability", summary: "Free slots of an active service (public)", tag: "public",
		auth: authPublic, desc: "As GET /v1/booking/availability, for an active service only (an inactive or deleted one is 404). Only the slots, never who booked.",
		query: availability, headers: []M{ifNoneMatch}, errs: []int{404, 422},
		ok: []resp{{status: 200, desc: "The free slots.", content: slots, headers: cache}, notModified}})
	d.add("GET", "/v1/public/booking/services", op{id: "listPublicBookingServices", summary: "Active services (public)", tag: "public",
		auth: authPublic, desc: "The project's active services, newest first.",
		query: pageParams(), headers: []M{ifNoneMatch}, errs: []int{422},
		ok: []resp{{status: 200, desc: "The services.", content: jsonOf(list(ref("BookingService"))), headers: cache}, notModified}})

	// Bookings.
	createDesc := "Books a free slot of an active service (see the availability). The booking is `confirmed` when the settings " +
		"auto-confirm (firing booking.confirmed) and `pending` otherwise. A slot taken meanwhile is 409 slot_unavailable: refresh the " +
		"availability, do not retry. An unknown or inactive service_id, or a start_at that is not a slot, is 422. No credits."
	bookingBody := jsonOf(obj(M{
		"service_id": bookingIntID(),
		"start_at":   M{"type": "string", "format": "date-time", "description": "RFC 3339; a start time of the availability."},
		"customer": obj(M{
			"name":  M{"type": "string", "minLength": 1, "maxLength": 200},
			"email": M{"type": "string", "format": "email", "maxLength": 254},
			"phone": M{"type": []any{"string", "null"}, "pattern": `^\s*(\+?[0-9 ().\-/]{3,40})?\s*$`,
				"description": "Digits, spaces and + ( ) . - / (3 to 40 characters once trimmed); empty or null is no phone."},
		}, "name", "email"),
		"notes": M{"type": []any{"string", "null"}, "maxLength": 2000},
	}, "service_id", "start_at", "customer"))
	d.add("POST", "/v1/bookings", op{id: "createBooking", summary: "Book a slot", tag: "booking", scope: "booking:write",
		desc: createDesc, idempotent: true, body: bookingBody, errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The booking.", content: jsonOf(ref("Booking"))}}})
	d.add("POST", "/v1/public/bookings", op{id: "createPublicBooking", summary: "Book a slot (public)", tag: "public",
		auth: authPublic, desc: createDesc + " The answer shows the visitor's own booking only.",
		idempotent: true, body: bookingBody, errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The booking.", content: jsonOf(ref("Booking"))}}})
	d.add("GET", "/v1/bookings", op{id: "listBookings", summary: "Bookings, newest first", tag: "booking", scope: "booking:read",
		query: append(pageParams(),
			M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": bookingStatuses()}},
			M{"name": "service_id", "in": "query", "schema": bookingIntID()},
			M{"name": "from", "in": "query", "schema": bookingWhen(), "description": "Bookings starting at or after: an RFC 3339 instant or a date YYYY-MM-DD (its start in the booking timezone)."},
			M{"name": "to", "in": "query", "schema": bookingWhen(), "description": "Bookings starting before: an RFC 3339 instant or a date YYYY-MM-DD (its end in the booking timezone)."}),
		errs: []int{422},
		ok:   []resp{{status: 200, desc: "The bookings.", content: jsonOf(list(ref("Booking")))}}})
	d.add("GET", "/v1/bookings/{id}", op{id: "getBooking", summary: "A booking", tag: "booking", scope: "booking:read",
		params: bookingID, errs: []int{404},
		ok: []resp{{status: 200, desc: "The booking.", content: jsonOf(ref("Booking"))}}})
	for _, t := range []struct{ action, id, summary, desc string }{
		{"confirm", "confirmBooking", "Confirm a pending booking", "pending → confirmed; fires booking.confirmed."},
		{"cancel", "cancelBooking", "Cancel a booking", "pending or confirmed → cancelled, freeing the slot; fires booking.cancelled."},
		{"complete", "completeBooking", "Mark a booking complete", "confirmed → completed, after the appointment; fires booking.completed."},
	} {
		d.add("POST", "/v1/bookings/{id}/"+t.action, op{id: t.id, summary: t.summary, tag: "booking", scope: "booking:write",
			desc:   t.desc + " From any other status: 409 conflict naming the current one. No body, no credits.",
			params: bookingID, idempotent: true, errs: []int{404, 409},
			ok: []resp{{status: 200, desc: "The booking.", content: jsonOf(ref("Booking"))}}})
	}
}

// bookingIntID is an integer id of the booking pillar (path or query).
func bookingIntID() M { return M{"type": "integer", "format": "int64", "minimum": 1} }

// bookingWhen is a from/to bound: an RFC 3339 instant or a date.
func bookingWhen() M {
	return M{"type": "string", "minLength": 1, "examples": []any{"2030-01-07", "2030-01-07T09:00:00Z"}}
}

func bookingStatuses() []any { return []any{"pending", "confirmed", "cancelled", "completed"} }

// bookingServiceInput are the fields of POST and PATCH /booking/services.
func bookingServiceInput() M {
	return M{
		"name":             M{"type": "string", "minLength": 1, "maxLength": 200},
		"description":      M{"type": "string", "maxLength": 5000},
		"duration_minutes": M{"type": "integer", "minimum": 1, "maximum": 1440},
		"buffer_minutes":   M{"type": "integer", "minimum": 0, "maximum": 1440, "description": "Time kept free after each booking."},
		"price":            M{"type": "integer", "minimum": 0, "maximum": 100000000000, "description": "In the currency's minor unit (cents)."},
		"currency":         M{"type": "string", "pattern": "^[a-zA-Z]{3}$", "description": "ISO 4217; stored lowercase."},
		"is_active":        M{"type": "boolean"},
	}
}

// bookingWeek is weekly_hours: each day a list of ["HH:MM","HH:MM"]
// intervals (patch: a day may be null, which closes it).
func bookingWeek(patch bool) M {
	day := M{"type": "array", "maxItems": 12, "items": M{
		"type": "array", "minItems": 2, "maxItems": 2,
		"items": M{"type": "string", "pattern": "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"},
	}}
	if patch {
		day["type"] = []any{"array", "null"}
	}
	w := M{}
	for _, d := range []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} {
		w[d] = day
	}
	return w
}

// bookingSchemas are the component schemas of tenant/booking.
func bookingSchemas() M {
	week := obj(bookingWeek(false), "mon", "tue", "wed", "thu", "fri", "sat", "sun")
	week["description"] = "Opening intervals per day, Monday first; an empty list is a closed day."
	return M{
		"BookingService": obj(M{
			"id": M{"type": "integer"}, "name": str(), "description": str(),
			"duration_minutes": M{"type": "integer", "minimum": 1}, "buffer_minutes": M{"type": "integer", "minimum": 0},
			"price":    M{"type": "integer", "minimum": 0, "description": "In the currency's minor unit (cents)."},
			"currency": M{"type": "string", "pattern": "^[a-z]{3}$"}, "is_active": M{"type": "boolean"},
		}, "id", "name", "description", "duration_minutes", "buffer_minutes", "price", "currency", "is_active"),
		"BookingSettings": obj(M{
			"timezone":           M{"type": "string", "description": "The IANA zone in effect: the settings' own, else the project's."},
			"weekly_hours":       week,
			"auto_confirm":       M{"type": "boolean"},
			"min_notice_minutes": M{"type": "integer", "minimum": 0},
			"max_days_ahead":     M{"type": "integer", "minimum": 0},
		}, "timezone", "weekly_hours", "auto_confirm", "min_notice_minutes", "max_days_ahead"),
		"BookingSlot": obj(M{"start_at": ts(), "end_at": ts()}, "start_at", "end_at"),
		"Booking": obj(M{
			"id": M{"type": "integer"}, "service_id": M{"type": "integer"}, "start_at": ts(), "end_at": ts(),
			"status":     M{"type": "string", "enum": bookingStatuses()},
			"customer":   obj(M{"name": str(), "email": str(), "phone": nullable(str())}, "name", "email", "phone"),
			"notes":      nullable(str()),
			"created_at": ts(), "updated_at": ts(),
		}, "id", "service_id", "start_at", "end_at", "status", "customer", "notes", "created_at", "updated_at"),
	}
}
