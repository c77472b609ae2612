-- +goose Up
-- Scheduler limits (issue 13, item 7; docs/adr/0007-scheduler-admission.md).
-- A start over a limit is stored PENDING and waits in this table, which is
-- the durable queue: a crash loses no waiting start, and after a restart the
-- admission pass of any instance starts them in order.

-- limits.maxRunning of a session and of each workflow; 0 is no limit.
ALTER TABLE sessions ADD COLUMN max_running int NOT NULL DEFAULT 0 CHECK (max_running >= 0);
ALTER TABLE workflows ADD COLUMN max_running int NOT NULL DEFAULT 0 CHECK (max_running >= 0);

-- queue_seq is the start order (admission is FIFO by it); it is taken at
-- insert, under the admission lock when a limit applies, so it is also the
-- order of the commits that queued. Rows from before keep NULL: none waits.
CREATE SEQUENCE execution_queue_seq;
ALTER TABLE executions
    ADD COLUMN queue_seq   bigint,
    -- the run asked for the reserved pool (a supervisor's run)
    ADD COLUMN reserved    boolean NOT NULL DEFAULT false,
    -- when the run became RUNNING the first time: a PAUSED run holds a
    -- slot only if it was admitted (a run paused while it waited does not)
    ADD COLUMN admitted_at timestamptz;
ALTER TABLE executions ALTER COLUMN queue_seq SET DEFAULT nextval('execution_queue_seq');
ALTER SEQUENCE execution_queue_seq OWNED BY executions.queue_seq;
UPDATE executions SET admitted_at = started_at WHERE status IN ('RUNNING', 'PAUSED');

-- The queue, in start order, and the runs that may hold a slot; both stay
-- as small as the live work however long the history grows.
CREATE INDEX executions_queue ON executions (queue_seq) WHERE status = 'PENDING';
CREATE INDEX executions_holding ON executions (session_id, workflow_id) WHERE status IN ('RUNNING', 'PAUSED');
-- The sessions and workflows that have a limit, for the status. Without an
-- index the scan would cost the pool's disabled-seqscan penalty, which also
-- sets off JIT compilation: a second per read.
CREATE INDEX sessions_limited ON sessions (session_id) WHERE max_running > 0;
CREATE INDEX workflows_limited ON workflows (session_id, workflow_id) WHERE max_running > 0;

-- Every way into RUNNING stamps admitted_at once (a start with room, an
-- admission, a RESUME, a restart), whoever writes the row. The statement's
-- time: admissions are serialized by the admission lock, so later
-- admissions have later stamps.
-- +goose StatementBegin
CREATE FUNCTION executions_admitted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.admitted_at := statement_timestamp();
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER executions_admitted BEFORE INSERT OR UPDATE OF status ON executions
    FOR EACH ROW WHEN (NEW.status = 'RUNNING' AND NEW.admitted_at IS NULL)
    EXECUTE FUNCTION executions_admitted();

-- +goose Down
DROP TRIGGER executions_admitted ON executions;
DROP FUNCTION executions_admitted();
DROP INDEX workflows_limited;
DROP INDEX sessions_limited;
DROP INDEX executions_holding;
DROP INDEX executions_queue;
ALTER TABLE executions DROP COLUMN admitted_at, DROP COLUMN reserved, DROP COLUMN queue_seq;
ALTER TABLE workflows DROP COLUMN max_running;
ALTER TABLE sessions DROP COLUMN max_running;
