-- +goose Up
-- Retention (issue 15, item 3; docs/adr/0008-retention.md): the sweeper
-- deletes finished runs older than the policy, a batch at a time, leaving a
-- tombstone per run; finished runs' work items are folded into one row per
-- node, which is all RESTART, RESTART_FROM_NODE and RETRY read of them.

-- A session's own retention; NULL inherits the server's setting.
ALTER TABLE sessions
    ADD COLUMN retention_days     int CHECK (retention_days BETWEEN 0 AND 36500),
    ADD COLUMN retention_journals text CHECK (retention_journals IN ('keep', 'delete'));

-- One row per run the sweeper deleted, so a read of it can say what
-- happened instead of a bare "not found". Small, and itself expires
-- (--retention-tombstone-days).
CREATE TABLE deleted_executions (
    execution_id   uuid PRIMARY KEY,
    session_id     text NOT NULL,
    workflow_id    text NOT NULL,
    status         text NOT NULL,
    started_at     timestamptz NOT NULL,
    ended_at       timestamptz NOT NULL,
    deleted_at     timestamptz NOT NULL,
    -- the policy that deleted it
    retention_days int NOT NULL,
    journal        text NOT NULL CHECK (journal IN ('kept', 'deleted')),
    -- the file the journal was exported to first, '' when not exported
    exported_to    text NOT NULL DEFAULT ''
);
CREATE INDEX deleted_executions_expiry ON deleted_executions (deleted_at);

-- The sweeper's reads: finished runs of a session by end time, and the
-- finished runs whose work items are not folded yet. Both stay off the live
-- rows (PENDING, RUNNING, PAUSED), which the engine works on.
ALTER TABLE executions ADD COLUMN items_pruned boolean NOT NULL DEFAULT false;
CREATE INDEX executions_ended ON executions (session_id, ended_at) WHERE status IN ('SUCCESS', 'FAILURE', 'STOPPED');
CREATE INDEX executions_unpruned ON executions (ended_at)
    WHERE status IN ('SUCCESS', 'FAILURE', 'STOPPED') AND NOT items_pruned;

-- Deletes by execution id must find their rows by index: events has
-- events_execution, the cascaded tables have their primary keys or
-- work_items_inputs; commands and inputs had none.
CREATE INDEX commands_execution ON commands (execution_id) WHERE execution_id IS NOT NULL;
CREATE INDEX inputs_execution ON inputs (execution_id);

-- What a finished run's nodes received, in arrival order: the payloads of
-- its work items, folded into one array per node once the run has ended.
-- ItemStore.Inputs reads work_items while the run lives and this after.
CREATE TABLE execution_received (
    execution_id uuid NOT NULL REFERENCES executions (execution_id) ON DELETE CASCADE,
    node_id      text NOT NULL,
    payloads     jsonb NOT NULL CHECK (jsonb_typeof(payloads) = 'array'),
    PRIMARY KEY (execution_id, node_id)
);

-- The journal stays append-only for everyone but the retention sweeper,
-- which deletes whole journals of deleted runs when the policy says so.
-- It marks its transaction (SET LOCAL yukta.retention_delete = 'on');
-- UPDATE and TRUNCATE stay refused for everyone.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('yukta.retention_delete', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'journal: % on % refused: the journal is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'journal: % on % refused: the journal is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
DROP TABLE execution_received;
DROP INDEX inputs_execution;
DROP INDEX commands_execution;
DROP INDEX executions_unpruned;
DROP INDEX executions_ended;
ALTER TABLE executions DROP COLUMN items_pruned;
DROP TABLE deleted_executions;
ALTER TABLE sessions DROP COLUMN retention_journals, DROP COLUMN retention_days;
