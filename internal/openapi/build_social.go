package openapi

// social documents the routes of tenant/social.
func (d *doc) social() {
}

// socialSchemas are the component schemas of tenant/social.
func socialSchemas() M { return M{} }
