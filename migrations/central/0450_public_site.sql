-- +goose Up
-- What a project's website needs of the control plane (issue 20): the
-- origins its public surface answers browsers from (empty: any) and the
-- public address of the site, from which the sitemap builds its URLs
-- (empty: none set). Both travel with the cached project, so the public
-- surface reads them without a query of its own.
ALTER TABLE projects
    ADD COLUMN IF NOT EXISTS allowed_origins text[] NOT NULL DEFAULT '{}',
    ADD COLUMN IF NOT EXISTS site_url text NOT NULL DEFAULT '';
