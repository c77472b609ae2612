-- +goose Up
-- Idempotency keys are scoped to what they protect (issue 11): a start key
-- to its workflow, a command key to its target and action. A key reused for
-- something else is another key, not a match for the first use.
ALTER TABLE executions DROP CONSTRAINT executions_session_id_idempotency_key_key;
ALTER TABLE executions ADD CONSTRAINT executions_idempotency_key UNIQUE (session_id, workflow_id, idempotency_key);
ALTER TABLE commands DROP CONSTRAINT commands_session_id_key_key;
CREATE UNIQUE INDEX commands_key ON commands
    (session_id, key, coalesce(execution_id::text, ''), workflow_id, node_id, scope, action) WHERE key IS NOT NULL;

-- +goose Down
DROP INDEX commands_key;
ALTER TABLE commands ADD CONSTRAINT commands_session_id_key_key UNIQUE (session_id, key);
ALTER TABLE executions DROP CONSTRAINT executions_idempotency_key;
ALTER TABLE executions ADD CONSTRAINT executions_session_id_idempotency_key_key UNIQUE (session_id, idempotency_key);
