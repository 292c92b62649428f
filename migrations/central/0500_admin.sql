-- +goose Up
-- Platform admins (issue 26): the tokens of the admin API (/admin/api),
-- stored hashed like API keys and shown once, and the life of a project:
-- active, suspended by an admin (its keys answer 403, its public surface
-- 404, its jobs and webhook deliveries wait), or being deleted (keys
-- revoked, schema renamed out of the way until a job drops it).
CREATE TABLE IF NOT EXISTS admin_tokens (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    scopes       text[] NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

ALTER TABLE projects
    ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'deleting')),
    ADD COLUMN IF NOT EXISTS status_reason text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS status_at timestamptz;
CREATE INDEX IF NOT EXISTS projects_status ON projects (status) WHERE status <> 'active';
