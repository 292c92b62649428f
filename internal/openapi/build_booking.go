package openapi

// booking documents the routes of tenant/booking.
func (d *doc) booking() {
}

// bookingSchemas are the component schemas of tenant/booking.
func bookingSchemas() M { return M{} }
