-- +goose Up
-- Dashboard sessions end on the server (issue 33): a token stays a signed
-- JWT, and each request also checks, in the query that loads its user,
--   * the user's session epoch, which a password change or reset raises:
--     every token issued before it (carrying the old epoch) is refused;
--   * the revoked sessions, one row per signed-out token (the SHA-256 of
--     its signed part), kept until the token would have expired anyway.
ALTER TABLE users ADD COLUMN IF NOT EXISTS session_epoch bigint NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS revoked_sessions (
    id         bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS revoked_sessions_expires ON revoked_sessions (expires_at);
