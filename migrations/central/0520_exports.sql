-- +goose Up
-- Project exports (provisioning/archive), run as River jobs
-- (central/admin_exports.go). The archive is stored in the media store
-- under storage_key once completed. project_id has no foreign key: an
-- export taken before a project's deletion outlives it.
CREATE TABLE IF NOT EXISTS exports (
    id           text PRIMARY KEY,
    project_id   text NOT NULL,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','running','completed','failed')),
    size_bytes   bigint,
    row_counts   jsonb,
    error        text,
    storage_key  text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
CREATE INDEX IF NOT EXISTS exports_project ON exports (project_id);
