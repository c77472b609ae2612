-- +goose Up
-- Paused workflows (issue 22, section 2; docs/control.md#workflow-pause_workflow-and-resume_workflow).
--
-- One row per paused workflow: who paused it (actor), through which door
-- (channel), why (reason, '' for none) and since when. While the row stands
-- no new run of the workflow starts, on any instance. paused_runs are the runs
-- the pause paused; RESUME_WORKFLOW resumes those still PAUSED and deletes the
-- row. The row is keyed by the workflow's id, not its definition: re-applying
-- the session, or removing the workflow from it, keeps the pause; deleting the
-- session deletes it.
--
-- A start and a pause are serialized by a transaction-scoped advisory lock on
-- (session, workflow): a start takes it shared and reads this table in the
-- transaction that inserts the execution; PAUSE_WORKFLOW takes it exclusive
-- before it inserts the row and pauses the active runs.
CREATE TABLE workflow_pauses (
    session_id  text NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    workflow_id text NOT NULL,
    actor       text NOT NULL,
    channel     text NOT NULL,
    reason      text NOT NULL DEFAULT '',
    paused_at   timestamptz NOT NULL,
    paused_runs uuid[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (session_id, workflow_id)
);

-- +goose Down
DROP TABLE workflow_pauses;
