package openapi

// booking documents the routes of tenant/booking.
func (d *doc) booking() {
}
