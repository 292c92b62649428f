-- +goose Up
-- Social accounts connected through OAuth. token holds the account's
-- tokens sealed with AES-GCM under a key derived from the server secret
-- (internal/oauth); they are never stored readable.
CREATE TABLE social_accounts (
    id           text PRIMARY KEY,
    platform     text NOT NULL,
    name         text NOT NULL,
    external_id  text NOT NULL,
    status       text NOT NULL DEFAULT 'connected' CHECK (status IN ('connected','expired','revoked')),
    token        bytea NOT NULL,
    connected_at timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (platform, external_id)
);

-- The stored half of an OAuth flow started by POST /social-accounts/connect:
-- the sealed PKCE verifier, and used_at, which makes the state single-use.
CREATE TABLE social_oauth_states (
    id         text PRIMARY KEY,
    platform   text NOT NULL,
    verifier   bytea,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

-- Social posts (statuses and transitions: tenant/social). results holds one
-- entry per target account: {platform, account_id, status, external_id, url,
-- error, run}; publish_run counts the post's publishes, and a result's run
-- tells which publish it came from.
CREATE TABLE social_posts (
    id           bigserial PRIMARY KEY,
    title        text NOT NULL,
    content      text NOT NULL DEFAULT '',
    platforms    text[] NOT NULL DEFAULT '{}',
    account_ids  text[] NOT NULL DEFAULT '{}',
    media        text[] NOT NULL DEFAULT '{}',
    status       text NOT NULL DEFAULT 'draft'
                 CHECK (status IN ('draft','scheduled','publishing','published','partially_published','failed')),
    scheduled_at timestamptz,
    published_at timestamptz,
    results      jsonb NOT NULL DEFAULT '[]',
    publish_run  int NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (status <> 'scheduled' OR scheduled_at IS NOT NULL)
);
-- The scheduler's claim: due scheduled posts only.
CREATE INDEX social_posts_due ON social_posts (scheduled_at) WHERE status = 'scheduled';
