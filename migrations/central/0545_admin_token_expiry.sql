-- +goose Up
-- An admin token may be minted with an expiry (issue 33): past it, the
-- token is refused like a revoked one. NULL: it lasts until revoked.
ALTER TABLE admin_tokens ADD COLUMN IF NOT EXISTS expires_at timestamptz;
