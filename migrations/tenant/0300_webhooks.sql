-- +goose Up
-- Outgoing webhooks: endpoints, the outbox of frozen event envelopes, and
-- one delivery per (event, endpoint) or redeliver request.
CREATE TABLE webhook_endpoints (
    id                   text PRIMARY KEY,
    url                  text NOT NULL,
    events               text[] NOT NULL,
    is_active            boolean NOT NULL DEFAULT true,
    -- signing secrets, AES-GCM sealed under the server secret (they must
    -- stay usable as HMAC keys, so they cannot be hashed)
    secret               bytea NOT NULL,
    previous_secret      bytea,
    previous_until       timestamptz,
    last_delivery_status text NOT NULL DEFAULT 'none',
    -- pacing: the next free send slot, leased by delivery workers (GCRA)
    next_slot            timestamptz NOT NULL DEFAULT '-infinity',
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- payload is the exact envelope body sent, frozen when the event was
-- emitted; test marks events of test-key requests (charged to the test pool)
CREATE TABLE webhook_events (
    id         text PRIMARY KEY,
    type       text NOT NULL,
    payload    text NOT NULL,
    test       boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id               text PRIMARY KEY,
    endpoint_id      text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    event_id         text NOT NULL REFERENCES webhook_events(id),
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','succeeded','failed')),
    attempts         integer NOT NULL DEFAULT 0,
    -- an attempt was started and its outcome is not recorded yet
    in_flight        boolean NOT NULL DEFAULT false,
    last_status_code integer,
    last_error       text,
    next_attempt_at  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id DESC);
