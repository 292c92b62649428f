-- +goose Up
-- Project schemas created ahead of the projects that will hold them
-- (docs/operations.md, "Spare schemas"): creating a project claims one
-- when a current one is ready, so its latency is a few inserts instead of
-- creating every table. A spare's name comes from the projects' own
-- sequence (projects_seq_seq), like every schema name, so names never
-- collide. A spare built by older migrations is never claimed and is
-- dropped by the next refill.
CREATE TABLE spare_schemas (
    schema_name        text PRIMARY KEY CHECK (schema_name ~ '^project_[0-9]+$'),
    shard              text NOT NULL,
    schema_version     bigint NOT NULL,
    migrations_applied integer NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX spare_schemas_shard ON spare_schemas (shard, schema_version, migrations_applied);

-- +goose Down
DROP TABLE spare_schemas;
