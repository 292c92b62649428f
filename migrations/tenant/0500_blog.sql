-- +goose Up
-- The blog pillar (decisions.md section 5 "Blog"). Kept to two tables, as
-- every project schema is created with them: categories and tags share
-- blog_terms (kind), and a post holds its texts (one object per language,
-- keyed by language code: {title, excerpt, content, meta_title,
-- meta_description}) and its tag ids itself. language is the original
-- language, the fallback of ?lang. Slugs are unique per project and kind.
-- Lists read by id descending (the primary key); the scheduler's scan of
-- scheduled posts needs no index at a blog's size.
CREATE TABLE blog_terms (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('category','tag')),
    name       text NOT NULL,
    slug       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (kind, slug)
);

CREATE TABLE blog_posts (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug           text NOT NULL UNIQUE,
    status         text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft','published','scheduled','archived')),
    language       text NOT NULL,
    texts          jsonb NOT NULL,
    category_id    bigint REFERENCES blog_terms (id) ON DELETE SET NULL,
    tag_ids        bigint[] NOT NULL DEFAULT '{}',
    featured_image text,
    published_at   timestamptz,
    scheduled_at   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (status <> 'scheduled' OR scheduled_at IS NOT NULL),
    CHECK (texts ? language)
);
