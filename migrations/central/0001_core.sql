-- +goose Up
CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA public;

CREATE TABLE settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE tenants (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL,
    domain     text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    tenant_id     bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name          text NOT NULL,
    email         text NOT NULL,
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_tenant_email ON users (tenant_id, lower(email));
CREATE INDEX users_email ON users (lower(email));

CREATE TABLE projects (
    id               text PRIMARY KEY,
    seq              bigserial NOT NULL UNIQUE,
    tenant_id        bigint NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name             text NOT NULL,
    slug             text NOT NULL,
    industry         text NOT NULL DEFAULT '',
    default_language text NOT NULL DEFAULT 'en',
    target_languages text[] NOT NULL DEFAULT '{}',
    timezone         text NOT NULL DEFAULT 'UTC',
    plan             text NOT NULL DEFAULT 'free' CHECK (plan IN ('free','hobby','build','scale','enterprise')),
    -- enterprise settings, set per project
    plan_credits     bigint,
    rate_rpm         integer,
    rate_burst       integer,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, slug)
);

-- placement: which shard and schema hold a project's data
CREATE TABLE placements (
    project_id     text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    shard          text NOT NULL DEFAULT 'default',
    schema_name    text NOT NULL UNIQUE CHECK (schema_name ~ '^project_[0-9]+$'),
    schema_version bigint NOT NULL DEFAULT 0,
    migrated_at    timestamptz
);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    project_id   text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name         text NOT NULL,
    prefix       text NOT NULL,
    masked       text NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    scopes       text[] NOT NULL,
    test         boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_project ON api_keys (project_id, created_at DESC);
