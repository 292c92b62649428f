-- +goose Up
-- Idempotency keys (decisions.md section 6), per project and key string
-- for 24 h. A row with a NULL status is a reservation: its request is
-- running in the process that holds owner, which renews locked_until
-- while it runs; a reservation whose lease lapsed belongs to a request
-- that died and may be taken over.
CREATE TABLE idempotency_keys (
    key          text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 255),
    method       text NOT NULL,
    path         text NOT NULL,
    body_hash    bytea NOT NULL,
    owner        uuid NOT NULL,
    locked_until timestamptz NOT NULL,
    status       integer,
    headers      jsonb,
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);

-- The AI cost ceiling sums a pool's AI charges of the last minute.
CREATE INDEX credit_ledger_recent ON credit_ledger (pool, created_at);
