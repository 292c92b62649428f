package openapi

// commerce documents the routes of tenant/commerce.
func (d *doc) commerce() {
}
