package openapi

// commerce documents the routes of tenant/commerce.
func (d *doc) commerce() {
}

// commerceSchemas are the component schemas of tenant/commerce.
func commerceSchemas() M { return M{} }
