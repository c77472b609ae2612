-- +goose Up
-- A supervisor's cursor is a position in the outbox's one order, (xid, seq)
-- (docs/adr/0011-signal-cursors.md): it stays a position when its event is
-- deleted (retention), where a bare seq had to be looked up and, once its
-- event was gone, read again from the oldest event.
ALTER TABLE supervisor_cursors ADD COLUMN xid xid8 NOT NULL DEFAULT '0';

-- A cursor whose event still exists takes that event's xid. One whose event
-- is gone takes the xid of the nearest older event that remains (events of
-- one seq range nearly always share the commit order), or none, which reads
-- the events that remain after its seq: never the whole outbox again.
UPDATE supervisor_cursors c
   SET xid = coalesce((SELECT e.xid FROM events e WHERE e.seq = c.seq),
                      (SELECT e.xid FROM events e WHERE e.seq < c.seq ORDER BY e.seq DESC LIMIT 1),
                      '0')
 WHERE c.seq > 0;

-- Within one generation (one life of a supervisor id) a cursor never moves
-- back, whoever writes it: the runtime's conditional save refuses it first
-- (ErrCursorBehind), and this trigger refuses any other write. A new
-- generation (the id deleted and created again) starts where it is put.
-- +goose StatementBegin
CREATE FUNCTION supervisor_cursor_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.generation = OLD.generation AND (NEW.xid, NEW.seq) < (OLD.xid, OLD.seq) THEN
        RAISE EXCEPTION 'the cursor of supervisor % would move back from (%, %) to (%, %): a cursor never moves back',
            OLD.supervisor_id, OLD.xid, OLD.seq, NEW.xid, NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER supervisor_cursors_forward BEFORE UPDATE ON supervisor_cursors
    FOR EACH ROW EXECUTE FUNCTION supervisor_cursor_forward();

-- +goose Down
DROP TRIGGER supervisor_cursors_forward ON supervisor_cursors;
DROP FUNCTION supervisor_cursor_forward();
ALTER TABLE supervisor_cursors DROP COLUMN xid;
