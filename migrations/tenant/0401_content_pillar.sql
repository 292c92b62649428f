-- +goose Up
-- The rest of the content pillar (decisions.md section 5). Lean on purpose:
-- every project schema runs this at provisioning, so no index beyond the
-- keys and unique constraints the API looks rows up by.

-- Where an image's bytes are stored; NULL for generated images, stored
-- under {project}/{key}. Uploads and URL swaps write a new object each
-- time, so a failed or concurrent write never overwrites the live one.
ALTER TABLE images ADD COLUMN object text;

CREATE TABLE components (
    id           bigserial PRIMARY KEY,
    slug         text NOT NULL UNIQUE,
    name         text NOT NULL,
    props        jsonb NOT NULL DEFAULT '{}',
    translations jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pages (
    id           bigserial PRIMARY KEY,
    slug         text NOT NULL UNIQUE,
    path         text NOT NULL UNIQUE,
    title        text NOT NULL,
    status       text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft','published')),
    sections     jsonb NOT NULL DEFAULT '[]',
    seo          jsonb NOT NULL DEFAULT '{}',
    translations jsonb NOT NULL DEFAULT '[]',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);

-- Galleries are addressed by slug only; lists sort by created_at in memory
-- (a project has few galleries).
CREATE TABLE galleries (
    slug       text PRIMARY KEY CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,254}$'),
    name       text NOT NULL,
    items      jsonb NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Brand context: exactly one row per project.
CREATE TABLE brand (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    name        text NOT NULL DEFAULT '',
    tagline     text NOT NULL DEFAULT '',
    description text NOT NULL DEFAULT '',
    voice       text NOT NULL DEFAULT '',
    audience    text NOT NULL DEFAULT '',
    colors      jsonb NOT NULL DEFAULT '{}',
    fonts       jsonb NOT NULL DEFAULT '{}',
    logo_object text,
    logo_url    text,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO brand DEFAULT VALUES;
