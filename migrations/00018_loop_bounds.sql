-- +goose Up
-- Loop bounds (issue 21, hole 7; docs/supervisors.md#loop-bounds).
--
-- What caused a run: the supervisor whose directive started or restarted it
-- (caused_by, '' for a person, a webhook or a schedule) and its causal
-- depth, one more than the run whose event the supervisor reacted to (0 for
-- runs nobody's supervisor caused). The intake refuses a directive that would
-- start a run deeper than the server's bound.
ALTER TABLE executions
    ADD COLUMN cause_depth int NOT NULL DEFAULT 0 CHECK (cause_depth >= 0),
    ADD COLUMN caused_by text NOT NULL DEFAULT '';

-- Each supervisor's command budget: the window open now (it opens at the
-- first directive after the last one ended) and what was counted in it.
-- commands counts every directive the intake took in during the window,
-- those refused for the budget included, so the refusal that goes one past
-- the budget is known on every instance (commands = budget + 1) and is the
-- one that tells the supervisor. depth_refusals counts the refusals for
-- depth the same way. One row per supervisor id, updated in one statement.
CREATE TABLE supervisor_budgets (
    supervisor_id  text PRIMARY KEY,
    window_start   timestamptz NOT NULL,
    commands       int NOT NULL DEFAULT 0 CHECK (commands >= 0),
    depth_refusals int NOT NULL DEFAULT 0 CHECK (depth_refusals >= 0)
);

-- +goose Down
DROP TABLE supervisor_budgets;
ALTER TABLE executions DROP COLUMN caused_by, DROP COLUMN cause_depth;
