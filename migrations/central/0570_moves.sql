-- +goose Up
-- Moves of a project from one shard to another (issue 35,
-- docs/operations.md "Moving a project"): PostgreSQL logical replication
-- copies the project's schema to the target shard, a short write fence
-- lets the last changes arrive, and the placement flips. A project has at
-- most one move under way. The phases: queued, copying (the initial copy),
-- catching_up (streaming what changed since), switching (the fence),
-- then done, failed or cancelled. pause_ms is how long the project's
-- writes waited at the fence; lag_bytes the WAL the target had still to
-- apply when last measured.
CREATE TABLE moves (
    id               text PRIMARY KEY,
    project_id       text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    from_shard       text NOT NULL REFERENCES shards (name),
    to_shard         text NOT NULL REFERENCES shards (name),
    phase            text NOT NULL DEFAULT 'queued'
                     CHECK (phase IN ('queued', 'copying', 'catching_up', 'switching', 'done', 'failed', 'cancelled')),
    cancel_requested boolean NOT NULL DEFAULT false,
    rows_copied      bigint NOT NULL DEFAULT 0,
    lag_bytes        bigint,
    pause_ms         integer,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CHECK (from_shard <> to_shard)
);
CREATE UNIQUE INDEX moves_one_under_way ON moves (project_id)
    WHERE phase IN ('queued', 'copying', 'catching_up', 'switching');
CREATE INDEX moves_project ON moves (project_id, created_at DESC);

-- +goose Down
DROP TABLE moves;
