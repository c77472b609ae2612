-- +goose Up
-- Delegations and consultations (docs/supervisors.md, "Delegations and
-- consultations"): a supervisor's request to its parent (ESCALATE) or to a
-- named supervisor (CONSULT), answered once by that supervisor. A key is
-- unique per sender, so the same request sent again finds its delegation.
CREATE TABLE supervisor_delegations (
    delegation_id uuid PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('ESCALATE', 'CONSULT')),
    from_id       text NOT NULL,
    to_id         text NOT NULL,
    key           text NOT NULL,
    payload       jsonb NOT NULL,
    status        text NOT NULL CHECK (status IN ('OPEN', 'ANSWERED', 'EXPIRED')),
    answer        jsonb,
    created_at    timestamptz NOT NULL,
    answered_at   timestamptz,
    deadline      timestamptz NOT NULL,
    UNIQUE (from_id, key)
);
CREATE INDEX supervisor_delegations_open ON supervisor_delegations (deadline) WHERE status = 'OPEN';

-- +goose Down
DROP TABLE supervisor_delegations;
