-- +goose Up
-- Supervisor credentials (issue 14, item 1; docs/supervisors.md,
-- "Credentials"): the one credential of a supervisor that opens the agent
-- API for it. Only the SHA-256 of the token is kept (token_hash, 32 bytes):
-- the token is shown once, when it is issued, and never stored. Issuing
-- again replaces the row in one statement (INSERT … ON CONFLICT), so the old
-- token stops working when that transaction commits; revoking deletes the
-- row; deleting the supervisor deletes its credential (ON DELETE CASCADE).
-- A token is found by an equality lookup on token_hash (the unique index):
-- what an attacker could time is a b-tree walk over hashes of 200-bit
-- random tokens, which says nothing about any token.
CREATE TABLE supervisor_credentials (
    supervisor_id     text PRIMARY KEY REFERENCES supervisors (id) ON DELETE CASCADE,
    token_hash        bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    -- The token's prefix and first characters, to tell credentials apart.
    hint              text NOT NULL CHECK (hint LIKE 'yks\_%'),
    -- Normalised CIDRs; empty: any address.
    allowed_addresses text[] NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL CHECK (expires_at > created_at),
    created_by        text NOT NULL DEFAULT '',
    created_via       text NOT NULL DEFAULT '',
    -- When the agent API last took it, updated at most once a minute.
    last_used_at      timestamptz
);

-- +goose Down
DROP TABLE supervisor_credentials;
