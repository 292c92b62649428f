-- +goose Up
-- The sites pillar (tenant/sites): content plans and the marks of what
-- website.generate wrote. Lean, as every project schema runs it: no index
-- beyond the keys the API looks rows up by.

-- A content plan, stored when its content_plan.generate job completes
-- (items: [{title, slug, summary, keywords}]). Lists read by id descending.
CREATE TABLE content_plans (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic         text NOT NULL,
    language_code text NOT NULL,
    items         jsonb NOT NULL DEFAULT '[]',
    job_id        text NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- What website.generate last wrote, item by item: a page or component by
-- slug, a content value by key and language, the brand (ref ''). The
-- fingerprint is that of the item as the job left it; an item whose
-- stored form no longer matches was edited by the owner, and a later run
-- leaves it alone. Items without a row were never generated.
CREATE TABLE site_generated (
    kind        text NOT NULL CHECK (kind IN ('page','component','value','brand')),
    ref         text NOT NULL,
    lang        text NOT NULL DEFAULT '',
    fingerprint text NOT NULL,
    job_id      text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, ref, lang)
);
