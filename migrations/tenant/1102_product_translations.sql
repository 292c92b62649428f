-- +goose Up
-- Product translations (issue 36, locale fallback chains): per language,
-- the name, description and short description a read with ?lang serves,
-- following the project's fallback chain; the product's own fields are
-- the default language's.
ALTER TABLE products ADD COLUMN translations jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE products DROP COLUMN translations;
