-- +goose Up
-- A delivery's last_error is one of the generic reasons of
-- internal/webhook (reasons.go, docs/api/webhooks.md). Before, it held the
-- transport's own error, which names the server's resolver and the
-- addresses it dialled: rewrite those rows to the reason the worker would
-- record now (the first pattern that matches wins, as in
-- transportReason).
UPDATE webhook_deliveries SET last_error = CASE
    WHEN last_error ~ '^the receiver answered [0-9]{3}'
        THEN 'http_status ' || substring(last_error FROM '^the receiver answered ([0-9]{3})')
    WHEN last_error LIKE 'no response within %' THEN 'timeout'
    WHEN last_error = 'the endpoint is disabled' THEN 'endpoint_disabled'
    WHEN last_error LIKE 'the signing secret cannot be decrypted%' THEN 'signing_secret_unusable'
    WHEN last_error LIKE 'insufficient_credits%' THEN 'insufficient_credits'
    WHEN last_error LIKE 'invalid endpoint url%' THEN 'invalid_url'
    WHEN last_error LIKE '%ssrf: address not allowed%' THEN 'address_not_allowed'
    WHEN last_error ~ '(lookup .* on |no such host|server misbehaving)' THEN 'dns_failure'
    WHEN last_error ~ '(i/o timeout|deadline exceeded|Client\.Timeout)' THEN 'timeout'
    WHEN last_error LIKE '%connection refused%' THEN 'connection_refused'
    WHEN last_error ~ '(connection reset|broken pipe|software caused connection abort|EOF)' THEN 'connection_reset'
    WHEN last_error ~ '(tls: |x509: |HTTP response to HTTPS client)' THEN 'tls_error'
    ELSE 'other'
END
WHERE last_error IS NOT NULL
  AND last_error !~ '^(dns_failure|connection_refused|connection_reset|tls_error|timeout|address_not_allowed|invalid_url|endpoint_disabled|signing_secret_unusable|insufficient_credits|other|http_status [0-9]{3})$';
