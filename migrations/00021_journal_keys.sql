-- +goose Up
-- The journal's signing key registry (issue 22; docs/journal.md#the-key):
-- every ed25519 public key that has signed checkpoints on this database,
-- named by its key id (the lowercase hex of the first 8 bytes of the
-- SHA-256 of the raw 32-byte key). Public keys only: the private keys stay
-- with the instances (YUKTA_JOURNAL_KEY or the data folder).
--
-- Exactly one key is current: an instance starts only with it (or makes
-- its own key current with --rotate-journal-key, which retires the one
-- before). Retired keys stay listed so old checkpoints still verify; a key
-- once retired never becomes current again.
CREATE TABLE journal_keys (
    key_id        text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
    algorithm     text NOT NULL DEFAULT 'ed25519' CHECK (algorithm = 'ed25519'),
    public_key    bytea NOT NULL UNIQUE CHECK (length(public_key) = 32),
    status        text NOT NULL CHECK (status IN ('current', 'retired')),
    registered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    retired_at    timestamptz,
    CHECK ((status = 'retired') = (retired_at IS NOT NULL)),
    CHECK (key_id = substr(encode(sha256(public_key), 'hex'), 1, 16))
);
-- One current key at most: two instances registering different keys at
-- once cannot both win.
CREATE UNIQUE INDEX journal_keys_one_current ON journal_keys ((true)) WHERE status = 'current';

-- The keys that signed checkpoints before the registry: the one that
-- signed the latest checkpoint is current (an instance still running with
-- it starts as before), every other one is retired as of its last
-- checkpoint (an instance with it refuses to start and says what to do).
INSERT INTO journal_keys (key_id, public_key, status, registered_at, retired_at)
SELECT substr(encode(sha256(k.public_key), 'hex'), 1, 16), k.public_key,
       CASE WHEN k.rank = 1 THEN 'current' ELSE 'retired' END, k.first_signed,
       CASE WHEN k.rank = 1 THEN NULL ELSE k.last_signed END
  FROM (SELECT public_key, min(signed_at) AS first_signed, max(signed_at) AS last_signed,
               row_number() OVER (ORDER BY max(signed_at) DESC, public_key) AS rank
          FROM journal_checkpoints WHERE length(public_key) = 32 GROUP BY public_key) k;

-- +goose Down
DROP TABLE journal_keys;
