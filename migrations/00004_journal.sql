-- +goose Up
-- The observer journal (DESIGN §10): one hash-chained, append-only journal
-- per execution, written by the observer from the event outbox. There is no
-- foreign key to executions on purpose: a journal is an audit record and
-- outlives the execution (deleting a session keeps its journals).
CREATE TABLE journal_records (
    execution_id uuid NOT NULL,
    -- 1, 2, … with no gap; the primary key makes a fork impossible
    sequence     bigint NOT NULL CHECK (sequence > 0),
    session_id   text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('event', 'decision')),
    -- the outbox event this record was made from; unique, so a replay is a no-op
    source_seq   bigint UNIQUE,
    digest       text NOT NULL,
    -- the record exactly as exported: its RFC 8785 canonical JSON line
    line         text NOT NULL,
    appended_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (execution_id, sequence)
);

-- A signed checkpoint {executionId, sequence, digest} of a settled
-- execution's journal; a new one is signed whenever a settled execution's
-- journal grows (a command refused after the end, say), the latest counts.
CREATE TABLE journal_checkpoints (
    execution_id uuid NOT NULL,
    sequence     bigint NOT NULL,
    digest       text NOT NULL,
    signature    bytea NOT NULL,
    -- the key that signed it, so a verifier can tell a rotated key from a forgery
    public_key   bytea NOT NULL,
    signed_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (execution_id, sequence)
);

-- Where the observer is in the outbox: the (xid, seq) of the last event it
-- consumed, moved in the same transaction as the records it appended.
CREATE TABLE journal_cursor (
    id  int PRIMARY KEY CHECK (id = 1),
    xid xid8 NOT NULL,
    seq bigint NOT NULL
);
INSERT INTO journal_cursor (id, xid, seq) VALUES (1, '0', 0);

-- Append-only: no UPDATE, DELETE or TRUNCATE path exists for records or
-- checkpoints.
-- +goose StatementBegin
CREATE FUNCTION journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'journal: % on % refused: the journal is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER journal_records_append_only BEFORE UPDATE OR DELETE ON journal_records
    FOR EACH ROW EXECUTE FUNCTION journal_append_only();
CREATE TRIGGER journal_records_no_truncate BEFORE TRUNCATE ON journal_records
    FOR EACH STATEMENT EXECUTE FUNCTION journal_append_only();
CREATE TRIGGER journal_checkpoints_append_only BEFORE UPDATE OR DELETE ON journal_checkpoints
    FOR EACH ROW EXECUTE FUNCTION journal_append_only();
CREATE TRIGGER journal_checkpoints_no_truncate BEFORE TRUNCATE ON journal_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION journal_append_only();

-- +goose Down
DROP TABLE journal_cursor;
DROP TABLE journal_checkpoints;
DROP TABLE journal_records;
DROP FUNCTION journal_append_only();
