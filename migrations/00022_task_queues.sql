-- +goose Up
-- Remote workers (issue 23; docs/workers.md): the messages of a TASK node are
-- work items like any other, with the queue they wait in. The engine's own
-- claim takes only items without a queue; a worker's poll takes the ready
-- items of its queues under the same lease columns (lease_owner is
-- "worker:<key name>"), so a stop, a pause, a retry or a crash treats them
-- exactly like built-in work.
ALTER TABLE work_items
    ADD COLUMN queue text,
    -- how long a poll's lease (and each heartbeat) holds, and how long one
    -- attempt may take, from the node's heartbeatTimeout and timeout
    ADD COLUMN task_lease_ms int,
    ADD COLUMN task_timeout_ms int,
    -- when the attempt a worker holds times out (its lease never outlives it)
    ADD COLUMN deadline timestamptz,
    ADD CONSTRAINT work_items_task_bounds CHECK (queue IS NULL OR (task_lease_ms > 0 AND task_timeout_ms > 0));

-- The engine's claim walks the ready items without a queue; each worker
-- queue has its own ordered run of ready items.
DROP INDEX work_items_ready;
CREATE INDEX work_items_ready ON work_items (available_at, item_id) WHERE state = 'ready' AND queue IS NULL;
CREATE INDEX work_items_tasks ON work_items (queue, available_at, item_id) WHERE state = 'ready' AND queue IS NOT NULL;

-- Who polls each queue, and when it last did (GET /api/scheduler; MCP
-- get_control_bus_status). Written at most once per few seconds per worker
-- and instance, so a busy poller costs no write per poll.
CREATE TABLE task_workers (
    queue     text NOT NULL,
    worker    text NOT NULL,
    last_seen timestamptz NOT NULL,
    PRIMARY KEY (queue, worker)
);

-- +goose Down
DROP TABLE task_workers;
DROP INDEX work_items_tasks;
DROP INDEX work_items_ready;
CREATE INDEX work_items_ready ON work_items (available_at, item_id) WHERE state = 'ready';
ALTER TABLE work_items DROP CONSTRAINT work_items_task_bounds, DROP COLUMN deadline, DROP COLUMN task_timeout_ms,
    DROP COLUMN task_lease_ms, DROP COLUMN queue;
