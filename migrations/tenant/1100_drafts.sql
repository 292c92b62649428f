-- +goose Up
-- The content workflow (tenant/drafts): a draft over what is live, and
-- the versions of each item. One pair of tables for every type of item
-- (page, component, content_key, gallery, brand, blog_post), addressed by
-- the item's type and its reference (a page's, component's or post's id,
-- a gallery's slug, a content key, '' for the brand). Lean, as every
-- project schema runs it: the primary keys are the only indexes.

-- The draft of an item: its whole resource as it would be published.
-- Public reads never touch this table.
CREATE TABLE drafts (
    type       text NOT NULL,
    ref        text NOT NULL,
    doc        jsonb NOT NULL,
    updated_by text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (type, ref)
);

-- The versions of an item, numbered from 1: every publish (doc: what went
-- live), every explicit save of a draft, and one autosave version that
-- autosaves update while it is the newest. At most 100 per item (the
-- oldest are dropped).
CREATE TABLE versions (
    type       text NOT NULL,
    ref        text NOT NULL,
    n          int NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('save','autosave','publish','restore')),
    languages  text[] NOT NULL DEFAULT '{}',
    actor      text NOT NULL,
    doc        jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (type, ref, n)
);
