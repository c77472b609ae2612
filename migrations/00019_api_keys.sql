-- +goose Up
-- Stored API keys (issue 22, item 1; docs/security.md, "Stored keys"):
-- keys an ADMIN creates over REST, MCP or the CLI, beside the configured
-- ones. Only the SHA-256 of the secret is kept (secret_hash, 32 bytes): the
-- secret is shown once, when it is created or rotated, and never stored. A
-- rotation replaces secret_hash in one statement, so the old secret works
-- on no request once every instance has re-read the table (each is told by
-- NOTIFY yukta_api_keys in the same transaction, and re-reads the table
-- every second anyway). Names are unique in any letter case, like the key
-- file's, since a name is recorded as the actor key:<name>.
CREATE TABLE api_keys (
    name            text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    role            text NOT NULL CHECK (role IN ('VIEWER', 'OPERATOR', 'ADMIN')),
    -- NULL: every session.
    sessions        text[],
    secret_hash     bytea NOT NULL UNIQUE CHECK (octet_length(secret_hash) = 32),
    -- The secret's prefix and first characters, to tell keys apart.
    hint            text NOT NULL CHECK (hint LIKE 'yk\_%'),
    created_at      timestamptz NOT NULL,
    created_by      text NOT NULL DEFAULT '',
    created_via     text NOT NULL DEFAULT '',
    -- NULL: the key does not expire.
    expires_at      timestamptz CHECK (expires_at > created_at),
    rotated_at      timestamptz,
    rotated_by      text NOT NULL DEFAULT '',
    rotated_via     text NOT NULL DEFAULT '',
    -- When and from which address a request last presented it, written at
    -- most once a minute.
    last_used_at    timestamptz,
    last_used_from  text NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX api_keys_name_folded ON api_keys (lower(name));

-- +goose Down
DROP TABLE api_keys;
