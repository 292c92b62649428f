-- +goose Up
-- Idempotency entries belong to the API key that made them
-- (decisions.md section 6): another key sending the same Idempotency-Key
-- runs its own request. key_id is the key's id, or 'public' for keyless
-- public submits. committed is written by the request's own transaction
-- as its effect commits, so a retry after a crash between that commit and
-- the storing of the response never runs the effect again.
ALTER TABLE idempotency_keys
    ADD COLUMN key_id text NOT NULL DEFAULT '',
    ADD COLUMN committed boolean NOT NULL DEFAULT false,
    DROP CONSTRAINT idempotency_keys_pkey,
    ADD PRIMARY KEY (key_id, key);
ALTER TABLE idempotency_keys ALTER COLUMN key_id DROP DEFAULT;
