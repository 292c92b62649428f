-- +goose Up
-- The shards: PostgreSQL servers that hold project schemas (issue 35,
-- docs/operations.md "Shards"). "default" is the central database itself
-- (DATABASE_URL) and has no URL of its own; every other shard's
-- connection URL is sealed at rest (AES-256-GCM under a key derived from
-- the server secret, the shard's name as associated data). Capacity is
-- in projects: a new project goes to the active shard with the most
-- room. A draining shard takes no new project and gives its projects
-- away; a retired one holds none.
CREATE TABLE shards (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,30}$'),
    url_sealed bytea,
    state      text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'draining', 'retired')),
    capacity   integer NOT NULL DEFAULT 10000 CHECK (capacity > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((name = 'default') = (url_sealed IS NULL))
);
INSERT INTO shards (name) VALUES ('default');

-- Every placement and spare names a shard that exists; the count of a
-- shard's projects (placement) reads this index only.
ALTER TABLE placements ADD CONSTRAINT placements_shard_fkey FOREIGN KEY (shard) REFERENCES shards (name);
ALTER TABLE spare_schemas ADD CONSTRAINT spare_schemas_shard_fkey FOREIGN KEY (shard) REFERENCES shards (name);
CREATE INDEX placements_shard ON placements (shard);

-- +goose Down
DROP INDEX placements_shard;
ALTER TABLE spare_schemas DROP CONSTRAINT spare_schemas_shard_fkey;
ALTER TABLE placements DROP CONSTRAINT placements_shard_fkey;
DROP TABLE shards;
