-- +goose Up
-- Webhook listeners (plinth listen): an endpoint of mode listen has no
-- URL; its deliveries are handed to the stream a developer's CLI holds
-- (GET /v1/webhook-endpoints/{id}/listen), which forwards them to a
-- receiver on their own machine. It is subscribed only while a stream
-- holds it: listening_until, pushed forward by the stream and ended when
-- it goes, so a listener nobody holds receives nothing and costs nothing.
-- forwarded_seq numbers the deliveries handed to it, in commit order (the
-- endpoint row is locked from the numbering to the commit), and a
-- delivery's forward_seq is its number: the id of its stream event, from
-- which a stream resumes (Last-Event-ID).
ALTER TABLE webhook_endpoints
    ADD COLUMN mode text NOT NULL DEFAULT 'http' CHECK (mode IN ('http', 'listen')),
    ADD COLUMN listening_until timestamptz,
    ADD COLUMN forwarded_seq bigint NOT NULL DEFAULT 0,
    ALTER COLUMN url DROP NOT NULL,
    ADD CONSTRAINT webhook_endpoints_url_mode CHECK ((mode = 'http') = (url IS NOT NULL));

ALTER TABLE webhook_deliveries ADD COLUMN forward_seq bigint;
CREATE INDEX webhook_deliveries_forwarded ON webhook_deliveries (endpoint_id, forward_seq) WHERE forward_seq IS NOT NULL;

-- webhooks_unwanted (0003) counts a listener only while it is held, as
-- the outbox's reads of the subscribed endpoints do.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks_unwanted(topics text[]) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM webhook_endpoints WHERE is_active AND (mode = 'http' OR listening_until > now()) AND events && topics) THEN
        RAISE EXCEPTION 'webhook endpoints want these events' USING ERRCODE = 'PL409';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks_unwanted(topics text[]) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM webhook_endpoints WHERE is_active AND events && topics) THEN
        RAISE EXCEPTION 'webhook endpoints want these events' USING ERRCODE = 'PL409';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd
DROP INDEX webhook_deliveries_forwarded;
ALTER TABLE webhook_deliveries DROP COLUMN forward_seq;
DELETE FROM webhook_endpoints WHERE mode = 'listen';
ALTER TABLE webhook_endpoints
    DROP CONSTRAINT webhook_endpoints_url_mode,
    ALTER COLUMN url SET NOT NULL,
    DROP COLUMN forwarded_seq,
    DROP COLUMN listening_until,
    DROP COLUMN mode;
