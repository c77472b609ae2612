-- +goose Up
-- Reviews and approvals (docs/supervisors.md, "Reviews and approvals"): a
-- command on a unit that supervisors review waits here for their verdicts,
-- then for an ADMIN when a verdict asks for approval. The id is the
-- review's and the approval's. request is the door's request, replayed
-- when the review allows it; command is its wire form, what reviewers see.
-- A key (the command's own idempotency key) is unique per session, so the
-- same command sent again finds its review instead of opening another.
CREATE TABLE supervisor_reviews (
    review_id        uuid PRIMARY KEY,
    key              text NOT NULL DEFAULT '',
    session_id       text NOT NULL,
    workflow_id      text NOT NULL DEFAULT '',
    execution_id     text NOT NULL DEFAULT '',
    node_id          text NOT NULL DEFAULT '',
    command          jsonb NOT NULL,
    request          jsonb NOT NULL,
    actor            text NOT NULL,
    channel          text NOT NULL DEFAULT '',
    reason           text NOT NULL DEFAULT '',
    reviewers        text[] NOT NULL,
    next_reviewer    integer NOT NULL,
    asking           text NOT NULL DEFAULT '',
    timeout_ms       bigint NOT NULL CHECK (timeout_ms > 0),
    default_decision text NOT NULL CHECK (default_decision IN ('ALLOW', 'DENY', 'REQUIRE_APPROVAL')),
    deadline         timestamptz NOT NULL,
    status           text NOT NULL CHECK (status IN ('PENDING', 'AWAITING_APPROVAL', 'ALLOWED', 'APPLIED', 'DENIED')),
    steps            jsonb NOT NULL,
    outcome          jsonb,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE UNIQUE INDEX supervisor_reviews_key ON supervisor_reviews (session_id, key) WHERE key <> '';
-- The sweeper's and the approval list's reads: only open reviews.
CREATE INDEX supervisor_reviews_open ON supervisor_reviews (status, deadline) WHERE status IN ('PENDING', 'AWAITING_APPROVAL', 'ALLOWED');
CREATE INDEX supervisor_reviews_created ON supervisor_reviews (created_at DESC);

-- +goose Down
DROP TABLE supervisor_reviews;
