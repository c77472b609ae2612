package postgres

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/domain/fault"
)

// JournalKeys is the journal's signing key registry (migrations/00021):
// public keys only.
type JournalKeys struct{ pool *pgxpool.Pool }

// NewJournalKeys returns the registry on pool.
func NewJournalKeys(pool *pgxpool.Pool) *JournalKeys { return &JournalKeys{pool: pool} }

var _ journalapp.KeyRegistry = (*JournalKeys)(nil)

// Keys lists the registry: the current key first, then the retired ones,
// latest retired first.
func (r *JournalKeys) Keys(ctx context.Context) ([]journalapp.RegisteredKey, error) {
	return listJournalKeys(ctx, r.pool)
}

// WithinKeyLock runs fn in a transaction that holds the registry's table
// lock (SHARE ROW EXCLUSIVE: registrations take turns, readers and the
// observers' share locks on one key row wait only for a change in flight).
func (r *JournalKeys) WithinKeyLock(ctx context.Context, fn func(context.Context, journalapp.KeyRegistryTx) error) error {
	return inTx(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE journal_keys IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return translate(err)
		}
		return fn(ctx, &journalKeysTx{db: tx})
	})
}

type journalKeysTx struct{ db dbtx }

func (t *journalKeysTx) Keys(ctx context.Context) ([]journalapp.RegisteredKey, error) {
	return listJournalKeys(ctx, t.db)
}

// Add inserts a key.
func (t *journalKeysTx) Add(ctx context.Context, k journalapp.RegisteredKey) error {
	var retired *time.Time
	if k.Status == journalapp.KeyRetired {
		retired = &k.RetiredAt
	}
	_, err := t.db.Exec(ctx, `INSERT INTO journal_keys (key_id, public_key, status, registered_at, retired_at) VALUES ($1, $2, $3, $4, $5)`,
		k.KeyID, []byte(k.PublicKey), string(k.Status), k.RegisteredAt, retired)
	return translate(err)
}

// Retire marks the current key keyID retired.
func (t *journalKeysTx) Retire(ctx context.Context, keyID string, at time.Time) error {
	tag, err := t.db.Exec(ctx, `UPDATE journal_keys SET status = 'retired', retired_at = $2 WHERE key_id = $1 AND status = 'current'`, keyID, at)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() != 1 {
		return fault.Newf(fault.ErrConflict, "journal signing key %s is not the current key; nothing was changed", keyID)
	}
	return nil
}

func listJournalKeys(ctx context.Context, db dbtx) ([]journalapp.RegisteredKey, error) {
	rows, err := db.Query(ctx, `
		SELECT key_id, public_key, status, registered_at, retired_at FROM journal_keys
		 ORDER BY status = 'current' DESC, retired_at DESC NULLS FIRST, key_id`)
	if err != nil {
		return nil, translate(err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (journalapp.RegisteredKey, error) {
		var k journalapp.RegisteredKey
		var pub []byte
		var status string
		var retired *time.Time
		if err := row.Scan(&k.KeyID, &pub, &status, &k.RegisteredAt, &retired); err != nil {
			return k, err
		}
		k.PublicKey, k.Status = ed25519.PublicKey(pub), journalapp.KeyStatus(status)
		if retired != nil {
			k.RetiredAt = *retired
		}
		return k, nil
	})
	return keys, translate(err)
}

// KeyStatus reads a key's status under a share lock on its row, held until
// the observer's transaction ends.
func (s *JournalStore) KeyStatus(ctx context.Context, keyID string) (journalapp.KeyStatus, error) {
	var st string
	err := s.db.QueryRow(ctx, `SELECT status FROM journal_keys WHERE key_id = $1 FOR SHARE`, keyID).Scan(&st)
	if err == pgx.ErrNoRows {
		return "", nil
	}
	return journalapp.KeyStatus(st), translate(err)
}
