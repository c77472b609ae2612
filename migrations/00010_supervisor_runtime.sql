-- +goose Up
-- The supervisor runtime (DESIGN §9, docs/supervisor-runtime.md). None of
-- these tables refers to the supervisors table: the runtime reads
-- supervisors through a port, and a supervisor's cursor, lease and ledger
-- outlive a replace of its document.

-- One lease per supervisor: the instance whose engine runs it. token grows
-- by one every time the lease changes hands (or its owner restarts the
-- engine), and every write the engine makes carries it, so the writes of an
-- owner that lost the lease (paused past expiry, cut off) are refused.
-- Expiry is read on the database clock, never an instance's.
CREATE TABLE supervisor_leases (
    supervisor_id text PRIMARY KEY,
    owner         text NOT NULL,
    token         bigint NOT NULL CHECK (token > 0),
    expires_at    timestamptz NOT NULL
);

-- Where a supervisor is in the outbox: the seq of the last event its engine
-- handled (events are read in commit order, (xid, seq)), and the engine's
-- state at that point (the rules engine's count windows), moved together.
-- generation is the supervisor's creation time the cursor belongs to: a
-- supervisor deleted and created again under the same id starts afresh at
-- the head instead of replaying everything since the old one stopped.
CREATE TABLE supervisor_cursors (
    supervisor_id text PRIMARY KEY,
    generation    text NOT NULL DEFAULT '',
    seq           bigint NOT NULL,
    state         jsonb,
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The directive ledger: one row per (supervisor, key). The same key again
-- gets the stored answer and no second effect; the same key with another
-- directive (another fingerprint) is refused. A pending row is being
-- applied by whoever holds its claim until claim_until; an expired claim
-- (a crash) is taken over and the application resumes with the stored plan.
CREATE TABLE supervisor_directives (
    supervisor_id text NOT NULL,
    key           text NOT NULL,
    fingerprint   text NOT NULL,
    directive     jsonb NOT NULL,
    status        text NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')),
    -- the runs and nodes the target expanded to when the key was first seen
    plan          jsonb NOT NULL DEFAULT '[]',
    result        jsonb,
    claim         text NOT NULL DEFAULT '',
    claim_until   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    settled_at    timestamptz,
    PRIMARY KEY (supervisor_id, key)
);

-- The hold ledger (supervisor.RunHolds): who holds a run, since when and
-- why, and whether the holds paused it. Rows of a deleted execution go with
-- it; rows of a finished one are ignored and swept.
CREATE TABLE supervisor_hold_runs (
    execution_id   uuid PRIMARY KEY REFERENCES executions (execution_id) ON DELETE CASCADE,
    paused_by_hold boolean NOT NULL DEFAULT false
);
CREATE TABLE supervisor_holds (
    execution_id  uuid NOT NULL REFERENCES supervisor_hold_runs (execution_id) ON DELETE CASCADE,
    supervisor_id text NOT NULL,
    since         timestamptz NOT NULL,
    reason        text NOT NULL,
    PRIMARY KEY (execution_id, supervisor_id)
);
CREATE INDEX supervisor_holds_holder ON supervisor_holds (supervisor_id);

-- +goose Down
DROP TABLE supervisor_holds;
DROP TABLE supervisor_hold_runs;
DROP TABLE supervisor_directives;
DROP TABLE supervisor_cursors;
DROP TABLE supervisor_leases;
