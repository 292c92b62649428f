-- +goose Up
-- Lead-capture form submissions: newsletter subscriptions and contact
-- messages posted by anonymous visitors through /v1/public/forms/*.
-- A genuine newsletter subscription is unique per email (case-insensitive),
-- so subscribing twice upserts one row; spam (honeypot) rows are kept apart
-- and never merge into a real subscriber. Lists read by id descending (the
-- primary key), so no further index is needed.
CREATE TABLE form_submissions (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type       text NOT NULL CHECK (type IN ('newsletter','contact')),
    email      text NOT NULL,
    name       text,
    subject    text,
    message    text,
    fields     jsonb NOT NULL DEFAULT '{}',
    source     text,
    spam       boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX form_submissions_newsletter_email
    ON form_submissions (lower(email)) WHERE type = 'newsletter' AND NOT spam;
