-- +goose Up
-- Locale fallback chains (issue 36): for a language, the languages a read
-- in it looks in next, in order ({"fr-CA": ["fr", "en"]}); the project's
-- default language ends every chain. Set with PATCH /v1/projects/me.
ALTER TABLE projects ADD COLUMN fallback_languages jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE projects DROP COLUMN fallback_languages;
