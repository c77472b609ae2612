-- +goose Up
-- Signed webhook deliveries already accepted, kept until their timestamp is
-- too old to be accepted anyway, so a captured request cannot start a second
-- run (docs/webhooks.md). The signature identifies the delivery: it covers
-- the timestamp and the exact body.
CREATE TABLE webhook_deliveries (
    session_id   text        NOT NULL,
    workflow_id  text        NOT NULL,
    signature    text        NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (session_id, workflow_id, signature)
);
CREATE INDEX webhook_deliveries_expiry ON webhook_deliveries (expires_at);

-- +goose Down
DROP TABLE webhook_deliveries;
