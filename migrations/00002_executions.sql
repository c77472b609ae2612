-- +goose Up
CREATE TABLE executions (
    execution_id    uuid PRIMARY KEY,
    session_id      text NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    workflow_id     text NOT NULL,
    status          text NOT NULL,
    draining        boolean NOT NULL DEFAULT false,
    -- the workflow as it was when the run started; replacing the session never changes it
    definition      jsonb NOT NULL,
    payload         jsonb,
    result          jsonb,
    error           text NOT NULL DEFAULT '',
    actor           text NOT NULL,
    channel         text NOT NULL,
    idempotency_key text,
    restart_of      uuid,
    from_node_id    text,
    started_at      timestamptz NOT NULL,
    ended_at        timestamptz,
    -- next log line number; bumped under the row lock every commit takes
    log_seq         bigint NOT NULL DEFAULT 0,
    UNIQUE (session_id, idempotency_key)
);
CREATE INDEX executions_history ON executions (session_id, execution_id);
CREATE INDEX executions_active ON executions (session_id, workflow_id) WHERE status IN ('PENDING', 'RUNNING', 'PAUSED');

CREATE TABLE execution_nodes (
    execution_id uuid NOT NULL REFERENCES executions (execution_id) ON DELETE CASCADE,
    node_id      text NOT NULL,
    position     int NOT NULL,
    type         text NOT NULL,
    phase        text NOT NULL,
    -- the visible status derived from phase and flags, kept for reads and filters
    status       text NOT NULL,
    paused       boolean NOT NULL DEFAULT false,
    step_mode    boolean NOT NULL DEFAULT false,
    credits      int NOT NULL DEFAULT 0,
    skipped      boolean NOT NULL DEFAULT false,
    parked       int NOT NULL DEFAULT 0,
    breakpoint   jsonb,
    received     bigint NOT NULL DEFAULT 0,
    emitted      bigint NOT NULL DEFAULT 0,
    error        text NOT NULL DEFAULT '',
    started_at   timestamptz,
    ended_at     timestamptz,
    PRIMARY KEY (execution_id, node_id)
);

-- One message waiting at (or taken by) one node. Done rows stay: they are the
-- inputs RESTART_FROM_NODE re-feeds.
CREATE TABLE work_items (
    item_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id uuid NOT NULL REFERENCES executions (execution_id) ON DELETE CASCADE,
    node_id      text NOT NULL,
    payload      jsonb,
    -- ready | held (behind a closed gate) | parked | done | dropped; a claim does
    -- not change the state: it sets the lease columns (see work_items_ready)
    state        text NOT NULL,
    available_at timestamptz NOT NULL,
    attempt      int NOT NULL DEFAULT 0,
    resumed      boolean NOT NULL DEFAULT false,
    answer       jsonb,
    answered_by  text,
    bp_passed    boolean NOT NULL DEFAULT false,
    lease_owner  text,
    lease_token  bigint,
    lease_until  timestamptz,
    claimed_at   timestamptz,
    -- the instance that finished the item (lease owner at commit), for audits
    done_by      text,
    created_at   timestamptz NOT NULL
);
-- A claim writes only unindexed columns (lease_owner, lease_token,
-- lease_until, attempt, claimed_at), so PostgreSQL can update the row in
-- place (HOT) without touching any index; claims skip leased rows instead.
CREATE INDEX work_items_ready ON work_items (available_at, item_id) WHERE state = 'ready';
-- The queue churns: analyze and vacuum it far more often than the defaults,
-- so the claim plan follows the real queue length.
ALTER TABLE work_items SET (fillfactor = 70, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500,
                            autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_threshold = 1000);
CREATE INDEX work_items_live ON work_items (execution_id, node_id) WHERE state IN ('ready', 'held', 'parked');
CREATE INDEX work_items_inputs ON work_items (execution_id, node_id, item_id);
CREATE SEQUENCE lease_tokens;

CREATE TABLE execution_logs (
    execution_id uuid NOT NULL REFERENCES executions (execution_id) ON DELETE CASCADE,
    seq          bigint NOT NULL,
    at           timestamptz NOT NULL,
    level        text NOT NULL,
    node_id      text NOT NULL DEFAULT '',
    message      text NOT NULL,
    PRIMARY KEY (execution_id, seq)
);

-- The outbox. Readers order by (xid, seq) and read only transactions older
-- than every running one, so a late commit can never slip behind a reader.
CREATE TABLE events (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xid          xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at           timestamptz NOT NULL,
    type         text NOT NULL,
    session_id   text NOT NULL,
    workflow_id  text NOT NULL DEFAULT '',
    execution_id uuid,
    node_id      text NOT NULL DEFAULT '',
    actor        text NOT NULL,
    data         jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX events_order ON events (xid, seq);
CREATE INDEX events_execution ON events (execution_id, xid, seq);
CREATE INDEX events_session ON events (session_id, xid, seq);

CREATE TABLE commands (
    command_id    uuid PRIMARY KEY,
    session_id    text NOT NULL,
    execution_id  uuid,
    workflow_id   text NOT NULL DEFAULT '',
    node_id       text NOT NULL DEFAULT '',
    scope         text NOT NULL,
    action        text NOT NULL,
    args          jsonb NOT NULL DEFAULT '{}',
    reason        text NOT NULL DEFAULT '',
    key           text,
    actor         text NOT NULL,
    channel       text NOT NULL,
    status        text NOT NULL,
    message       text NOT NULL DEFAULT '',
    result_execution_ids text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL,
    applied_at    timestamptz,
    UNIQUE (session_id, key)
);

CREATE TABLE inputs (
    input_id     uuid PRIMARY KEY,
    session_id   text NOT NULL,
    execution_id uuid NOT NULL REFERENCES executions (execution_id) ON DELETE CASCADE,
    node_id      text NOT NULL,
    item_id      bigint NOT NULL,
    prompt       text NOT NULL,
    schema       jsonb,
    status       text NOT NULL, -- open | answered | cancelled
    answer       jsonb,
    answered_by  text,
    created_at   timestamptz NOT NULL,
    answered_at  timestamptz
);
CREATE INDEX inputs_open ON inputs (session_id, created_at) WHERE status = 'open';

-- +goose Down
DROP TABLE inputs;
DROP TABLE commands;
DROP TABLE events;
DROP TABLE execution_logs;
DROP SEQUENCE lease_tokens;
DROP TABLE work_items;
DROP TABLE execution_nodes;
DROP TABLE executions;
