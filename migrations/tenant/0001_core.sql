-- +goose Up
-- Credits: one row per pool (live, test), locked by every charge so that
-- concurrent writes serialise on the balance and it never goes negative.
-- Amounts are in hundredths of a credit.
CREATE TABLE credit_pools (
    pool          text PRIMARY KEY CHECK (pool IN ('live','test')),
    period_start  timestamptz NOT NULL,
    plan_used     bigint NOT NULL DEFAULT 0 CHECK (plan_used >= 0),
    topup_balance bigint NOT NULL DEFAULT 0 CHECK (topup_balance >= 0)
);

CREATE TABLE credit_ledger (
    id           bigserial PRIMARY KEY,
    pool         text NOT NULL,
    op           text NOT NULL,
    amount       bigint NOT NULL,
    from_plan    bigint NOT NULL DEFAULT 0,
    from_topup   bigint NOT NULL DEFAULT 0,
    period_start timestamptz NOT NULL,
    ref          text,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credit_ledger_period ON credit_ledger (pool, period_start, op);
CREATE INDEX credit_ledger_ref ON credit_ledger (ref) WHERE ref IS NOT NULL;
