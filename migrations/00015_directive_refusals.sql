-- +goose Up
-- Refusals stay with their sender (issue 21, hole 4): a directive the
-- intake refuses is recorded only as its ledger entry (status 'rejected'),
-- the sender's own audit trail, never as an event of a run it named. The
-- trail is read newest first (GET /api/supervisors/{id}/refusals, the
-- agent API's GET /refusals), so each entry gets an order and the door it
-- came through.
ALTER TABLE supervisor_directives
    ADD COLUMN channel text NOT NULL DEFAULT '',
    ADD COLUMN seq     bigint GENERATED ALWAYS AS IDENTITY;
CREATE UNIQUE INDEX supervisor_directives_refusals ON supervisor_directives (supervisor_id, seq) WHERE status = 'rejected';

-- +goose Down
DROP INDEX supervisor_directives_refusals;
ALTER TABLE supervisor_directives DROP COLUMN seq, DROP COLUMN channel;
