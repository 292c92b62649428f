-- +goose Up
-- Content keys: one value per key and language (decisions.md section 5).
CREATE TABLE content_values (
    key        text NOT NULL CHECK (key ~ '^[a-z0-9][a-z0-9._-]{0,199}$'),
    lang       text NOT NULL,
    value      text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key, lang)
);

-- Images: uploaded, registered by URL, or generated (source ai). Stored
-- media (upload, ai) is served at /v1/public/media/{project}/{key}.
CREATE TABLE images (
    key          text PRIMARY KEY CHECK (key ~ '^[a-z0-9][a-z0-9._-]{0,199}$'),
    url          text NOT NULL,
    alt          text NOT NULL DEFAULT '',
    width        int,
    height       int,
    content_type text,
    size_bytes   bigint,
    source       text NOT NULL CHECK (source IN ('upload','url','ai')),
    created_at   timestamptz NOT NULL DEFAULT now()
);
