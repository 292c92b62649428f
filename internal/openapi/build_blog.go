package openapi

// blog documents the routes of tenant/blog.
func (d *doc) blog() {
}
