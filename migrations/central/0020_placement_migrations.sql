-- +goose Up
-- How many tenant migrations a project schema has applied. Migration files
-- are never removed, so a schema is current exactly when this equals the
-- number of embedded tenant migrations; the highest version alone misses a
-- file numbered below one already applied (goose applies such files out of
-- order). Existing rows start at 0 and are checked once by the next
-- `plinth migrate`.
ALTER TABLE placements ADD COLUMN migrations_applied integer NOT NULL DEFAULT 0;
