-- +goose Up
CREATE TABLE sessions (
    session_id   text PRIMARY KEY CHECK (session_id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    name         text NOT NULL,
    description  text NOT NULL DEFAULT '',
    initiator    text NOT NULL DEFAULT '',
    tags         text[] NOT NULL DEFAULT '{}',
    project_path text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    -- bumped on every apply; later features compare it to detect a replaced session
    version      bigint NOT NULL DEFAULT 1
);

CREATE TABLE workflows (
    session_id  text NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    workflow_id text NOT NULL CHECK (workflow_id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    -- document order, so a read gives the workflows back as they were applied
    position    int NOT NULL,
    description text NOT NULL DEFAULT '',
    -- {"nodes":[...],"edges":[...]} in the session document format
    definition  jsonb NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (session_id, workflow_id)
);

-- +goose Down
DROP TABLE workflows;
DROP TABLE sessions;
