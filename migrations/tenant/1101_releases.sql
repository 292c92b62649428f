-- +goose Up
-- Releases and preview links (tenant/releases, tenant/drafts). Lean, as
-- every project schema runs it: the primary keys are the only indexes.

-- A release: items ([{type, id, languages}], id the item's reference as
-- the drafts table has it) published together in one transaction, by
-- POST /releases/{id}/publish or by its River job at publish_at.
CREATE TABLE releases (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL,
    items        jsonb NOT NULL,
    status       text NOT NULL CHECK (status IN ('pending','scheduled','published','failed','cancelled')),
    publish_at   timestamptz,
    published_at timestamptz,
    error        text,
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- A preview link: the SHA-256 of its secret (shown once), what it covers
-- (a release's items, or items of its own: [{type, id}]), until when.
-- Public reads look it up by the hash (the one index beside the key).
CREATE TABLE previews (
    id          text PRIMARY KEY,
    secret_hash bytea NOT NULL UNIQUE,
    release_id  bigint REFERENCES releases ON DELETE CASCADE,
    items       jsonb NOT NULL DEFAULT '[]',
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
