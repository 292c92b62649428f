-- +goose Up
-- Connected payment-processor accounts and the project each belongs to:
-- the processor's webhook names the account, never the project.
CREATE TABLE payment_accounts (
    account_id text PRIMARY KEY,
    project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_accounts_project ON payment_accounts (project_id);
