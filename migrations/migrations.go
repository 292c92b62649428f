// Package migrations embeds the SQL migrations: central/ for the control
// plane schema, tenant/ for every project schema. Numbers are reserved in
// ranges per area (tenant: 0001 core and credits, 0100 idempotency, 0200
// jobs, 0300 webhooks, 0400 content, 0500 blog, 0600 commerce, 0700
// booking, 0800 social, 0900 forms, 1000 sites) so areas can add files
// independently.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed central/*.sql tenant/*.sql
var files embed.FS

// Central is the migration set of the central schema.
func Central() fs.FS { sub, _ := fs.Sub(files, "central"); return sub }

// Tenant is the migration set of each project schema.
func Tenant() fs.FS { sub, _ := fs.Sub(files, "tenant"); return sub }
