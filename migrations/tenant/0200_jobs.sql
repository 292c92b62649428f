-- +goose Up
-- The Job resource of the API (states and transitions: tenant/jobs).
-- admitted: the job counts against the project's cap of active jobs; a job
-- submitted over the cap waits as a River "pending" job until a slot frees.
-- event_seq numbers the job's SSE events (job_events), for Last-Event-ID.
CREATE TABLE jobs (
    id               text PRIMARY KEY,
    type             text NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending','processing','completed','failed','cancelled')),
    progress         int NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    message          text NOT NULL DEFAULT '',
    steps            jsonb NOT NULL DEFAULT '[]',
    result           json, -- json, not jsonb: kept as the handler wrote it
    error            json,
    write_scope      text NOT NULL,
    admitted         boolean NOT NULL,
    cancel_requested boolean NOT NULL DEFAULT false,
    river_id         bigint NOT NULL,
    event_seq        int NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
-- Unfinished jobs: admission counts them and promotion picks from them.
CREATE INDEX jobs_unfinished ON jobs (id) WHERE status IN ('pending','processing');

CREATE TABLE job_events (
    job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq    int NOT NULL,
    kind   text NOT NULL,
    data   json NOT NULL, -- json, not jsonb: sent as written
    PRIMARY KEY (job_id, seq)
);
