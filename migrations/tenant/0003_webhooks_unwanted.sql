-- +goose Up
-- webhooks_unwanted fails the statement that calls it with SQLSTATE
-- PL409 when an active endpoint is subscribed to one of topics: a write
-- that emitted events bets that no endpoint wants them and sends its last
-- statements with COMMIT (webhook.Outbox); this check, just before the
-- COMMIT, stops it when the bet is lost, and the write goes back to before
-- the check and records the events.
-- +goose StatementBegin
CREATE FUNCTION webhooks_unwanted(topics text[]) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM webhook_endpoints WHERE is_active AND events && topics) THEN
        RAISE EXCEPTION 'webhook endpoints want these events' USING ERRCODE = 'PL409';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION webhooks_unwanted(text[]);
