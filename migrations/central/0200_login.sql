-- +goose Up
-- Failed (and in-flight) dashboard logins per lower-cased email: five within
-- fifteen minutes make further attempts 429. Kept in the central database so
-- the limit holds across instances; rows older than the window are pruned.
CREATE TABLE login_failures (
    id        bigserial PRIMARY KEY,
    email     text NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_email ON login_failures (email, failed_at);
CREATE INDEX login_failures_at ON login_failures (failed_at);
