package openapi

// blog documents the routes of tenant/blog.
func (d *doc) blog() {
}

// blogSchemas are the component schemas of tenant/blog.
func blogSchemas() M { return M{} }
