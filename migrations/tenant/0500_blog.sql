-- +goose Up
-- The blog pillar (decisions.md section 5 "Blog"): posts with one row of
-- text per language, categories and tags. Slugs are unique per project
-- (schema). Lists read by id descending (the primary key); the only other
-- index serves the scheduler, which looks for due posts in every project
-- at each tick.
CREATE TABLE blog_categories (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL,
    slug       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE blog_tags (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL,
    slug       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- language is the post's original language: the fallback of ?lang.
CREATE TABLE blog_posts (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug           text NOT NULL UNIQUE,
    status         text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft','published','scheduled','archived')),
    language       text NOT NULL,
    category_id    bigint REFERENCES blog_categories (id) ON DELETE SET NULL,
    featured_image text,
    published_at   timestamptz,
    scheduled_at   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (status <> 'scheduled' OR scheduled_at IS NOT NULL)
);
CREATE INDEX blog_posts_due ON blog_posts (scheduled_at) WHERE status = 'scheduled';

CREATE TABLE blog_post_translations (
    post_id          bigint NOT NULL REFERENCES blog_posts (id) ON DELETE CASCADE,
    lang             text NOT NULL,
    title            text NOT NULL,
    excerpt          text NOT NULL DEFAULT '',
    content          text NOT NULL DEFAULT '',
    meta_title       text NOT NULL DEFAULT '',
    meta_description text NOT NULL DEFAULT '',
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (post_id, lang)
);

CREATE TABLE blog_post_tags (
    post_id bigint NOT NULL REFERENCES blog_posts (id) ON DELETE CASCADE,
    tag_id  bigint NOT NULL REFERENCES blog_tags (id) ON DELETE CASCADE,
    PRIMARY KEY (post_id, tag_id)
);
