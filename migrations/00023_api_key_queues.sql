-- +goose Up
-- The key role WORKER and queue lists on stored keys (issue 23;
-- docs/security.md, "Roles"): a WORKER key may only take and answer the
-- tasks of worker queues, and may be limited to named queues. NULL: every
-- queue. Only a WORKER key may have a list; names follow
-- access.ValidateQueueName.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_role_check CHECK (role IN ('VIEWER', 'OPERATOR', 'ADMIN', 'WORKER'));
ALTER TABLE api_keys ADD COLUMN queues text[]
    CONSTRAINT api_keys_queues_worker CHECK (queues IS NULL OR role = 'WORKER');

-- +goose Down
DELETE FROM api_keys WHERE role = 'WORKER';
ALTER TABLE api_keys DROP COLUMN queues;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_role_check CHECK (role IN ('VIEWER', 'OPERATOR', 'ADMIN'));
