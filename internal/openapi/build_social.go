package openapi

// social documents the routes of tenant/social.
func (d *doc) social() {
}
