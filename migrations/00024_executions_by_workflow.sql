-- +goose Up
-- A workflow's runs, newest first (issue 24): the sessions list shows each
-- workflow's newest run (one LATERAL probe per workflow), and the run
-- history filters by workflow. executions_history (session_id,
-- execution_id) serves both only by scanning past every other workflow's
-- runs, which in a busy session can be all of them for a workflow that
-- rarely runs.
CREATE INDEX executions_by_workflow ON executions (session_id, workflow_id, execution_id);

-- +goose Down
DROP INDEX executions_by_workflow;
