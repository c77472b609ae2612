-- +goose Up
-- Every event and stored change records who made it and through which door
-- (rest, cli, mcp, webhook, schedule, engine).
ALTER TABLE events ADD COLUMN channel text NOT NULL DEFAULT '';
ALTER TABLE sessions
    ADD COLUMN updated_by  text NOT NULL DEFAULT '',
    ADD COLUMN updated_via text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sessions DROP COLUMN updated_via, DROP COLUMN updated_by;
ALTER TABLE events DROP COLUMN channel;
