-- +goose Up
-- credits_short fails the statement that calls it with SQLSTATE PL402
-- and the balance in its detail: a write's charges (credits.chargeSQL)
-- travel with its COMMIT in one pipeline, and a charge the balance does
-- not cover must stop the COMMIT, not be read back before it.
-- +goose StatementBegin
CREATE FUNCTION credits_short(balance bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'insufficient credits' USING ERRCODE = 'PL402', DETAIL = balance::text;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION credits_short(bigint);
