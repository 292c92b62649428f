-- +goose Up
-- Draining a shard (issue 35, docs/operations.md "Draining a shard"):
-- `plinth shard drain` and POST /admin/api/shards/{name}/drain make the
-- shard draining and start one move for each project it holds, run a
-- bounded number at a time (PLINTH_MOVE_CONCURRENCY per worker process).
-- A drain row groups those moves, so the shard shows its drain's progress.
-- A move's method is how its rows went over: replication (a publication
-- and a subscription, then a short fence) or fenced_copy (a small
-- project's rows copied under the fence); NULL until the move chooses.
CREATE TABLE drains (
    id         text PRIMARY KEY,
    shard      text NOT NULL REFERENCES shards (name),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX drains_shard ON drains (shard, created_at DESC);

ALTER TABLE moves
    ADD COLUMN drain_id text REFERENCES drains (id),
    ADD COLUMN method text CHECK (method IN ('replication', 'fenced_copy'));
CREATE INDEX moves_drain ON moves (drain_id) WHERE drain_id IS NOT NULL;

-- +goose Down
ALTER TABLE moves DROP COLUMN drain_id, DROP COLUMN method;
DROP TABLE drains;
