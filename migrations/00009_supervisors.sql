-- +goose Up
-- Supervisors (issue 13, item 2): one row per supervisor. spec is the whole
-- supervisor document with every default explicit (supervisor.MarshalJSON:
-- id, name, engine {type, settings}, owns, parentId, allowedCommands,
-- reviews, tickSeconds, enabled), secret settings included: reads that leave
-- the server mask them. enabled repeats spec's so the runtime can select the
-- running supervisors without reading documents. Changes are serialized by
-- the application (one advisory lock per transaction), so the parent chains
-- checked before a write hold when it commits.
CREATE TABLE supervisors (
    id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    spec        jsonb NOT NULL CHECK (jsonb_typeof(spec) = 'object' AND spec->>'id' = id),
    enabled     boolean NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    updated_by  text NOT NULL DEFAULT '',
    updated_via text NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE supervisors;
