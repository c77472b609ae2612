-- +goose Up
-- Node timings are the plugin's own (issue 12, item 7): started_at is when the
-- node's plugin first started, ended_at when its last attempt finished (or,
-- for a node whose plugin never ran, when it ended). run_us is the plugin's
-- run time summed over every attempt, in microseconds; attempt_started_at and
-- attempt_ended_at bound its latest attempt. Rows written before keep their
-- commit times and a run time of 0.
ALTER TABLE execution_nodes
    ADD COLUMN run_us             bigint NOT NULL DEFAULT 0,
    ADD COLUMN attempt_started_at timestamptz,
    ADD COLUMN attempt_ended_at   timestamptz;

-- +goose Down
ALTER TABLE execution_nodes
    DROP COLUMN run_us,
    DROP COLUMN attempt_started_at,
    DROP COLUMN attempt_ended_at;
