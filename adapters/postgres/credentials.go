package postgres

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// CredentialStore keeps supervisor credentials (migrations/00012): one row
// per supervisor with the SHA-256 of its token, never the token. Built on a
// pool it is also the supervisorapp.CredentialReader of the agent API's
// lookups.
//
// A token is found by an equality lookup on its hash (the unique index on
// token_hash). That is why no constant-time comparison is needed: what the
// lookup's timing could reveal is how the presented token's hash compares
// with stored hashes, and a hash of a 200-bit random token says nothing
// about the token.
type CredentialStore struct{ db dbtx }

// NewCredentialStore returns a store that runs each call on pool.
func NewCredentialStore(pool *pgxpool.Pool) *CredentialStore { return &CredentialStore{db: pool} }

var (
	_ supervisorapp.CredentialStore  = (*CredentialStore)(nil)
	_ supervisorapp.CredentialReader = (*CredentialStore)(nil)
)

const credentialColumns = `supervisor_id, token_hash, hint, allowed_addresses, created_at, expires_at, created_by, created_via, last_used_at`

// Get loads a supervisor's credential.
func (s *CredentialStore) Get(ctx context.Context, supervisorID string) (supervisor.Credential, error) {
	c, err := scanCredential(s.db.QueryRow(ctx, `SELECT `+credentialColumns+` FROM supervisor_credentials WHERE supervisor_id = $1`, supervisorID))
	if err != nil {
		return supervisor.Credential{}, notFound(err, supervisor.ErrCredentialNotFound)
	}
	return c, nil
}

// Put stores c as its supervisor's credential. An earlier credential is
// replaced by the same statement, so no moment exists in which both
// tokens, or neither, are stored.
func (s *CredentialStore) Put(ctx context.Context, c supervisor.Credential) error {
	h := c.Hash()
	_, err := s.db.Exec(ctx, `
		INSERT INTO supervisor_credentials (supervisor_id, token_hash, hint, allowed_addresses, created_at, expires_at, created_by, created_via)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (supervisor_id) DO UPDATE SET
		    token_hash = EXCLUDED.token_hash, hint = EXCLUDED.hint, allowed_addresses = EXCLUDED.allowed_addresses,
		    created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at, created_by = EXCLUDED.created_by,
		    created_via = EXCLUDED.created_via, last_used_at = NULL`,
		c.SupervisorID(), h[:], c.Hint(), c.AllowedAddressStrings(), c.CreatedAt(), c.ExpiresAt(), c.CreatedBy(), c.CreatedVia())
	return translate(err)
}

// Delete removes a supervisor's credential.
func (s *CredentialStore) Delete(ctx context.Context, supervisorID string) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM supervisor_credentials WHERE supervisor_id = $1`, supervisorID)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return supervisor.ErrCredentialNotFound
	}
	return nil
}

// Credential is Get, for reads outside a transaction.
func (s *CredentialStore) Credential(ctx context.Context, supervisorID string) (supervisor.Credential, error) {
	return s.Get(ctx, supervisorID)
}

// CredentialByHash finds the credential of a token by the token's hash.
func (s *CredentialStore) CredentialByHash(ctx context.Context, hash supervisor.TokenHash) (supervisor.Credential, error) {
	c, err := scanCredential(s.db.QueryRow(ctx, `SELECT `+credentialColumns+` FROM supervisor_credentials WHERE token_hash = $1`, hash[:]))
	if err != nil {
		return supervisor.Credential{}, notFound(err, supervisor.ErrCredentialNotFound)
	}
	return c, nil
}

// MarkCredentialUsed moves last_used_at forward to at; a credential
// rotated or revoked meanwhile is left alone (its hash is gone).
func (s *CredentialStore) MarkCredentialUsed(ctx context.Context, hash supervisor.TokenHash, at time.Time) error {
	_, err := s.db.Exec(ctx, `
		UPDATE supervisor_credentials SET last_used_at = $2
		 WHERE token_hash = $1 AND (last_used_at IS NULL OR last_used_at < $2)`, hash[:], at)
	return translate(err)
}

func scanCredential(row pgx.Row) (supervisor.Credential, error) {
	var r supervisor.CredentialRecord
	var hash []byte
	var addrs []string
	var used *time.Time
	if err := row.Scan(&r.SupervisorID, &hash, &r.Hint, &addrs, &r.CreatedAt, &r.ExpiresAt, &r.CreatedBy, &r.CreatedVia, &used); err != nil {
		return supervisor.Credential{}, err
	}
	if len(hash) != len(r.Hash) {
		return supervisor.Credential{}, fmt.Errorf("stored credential of supervisor %q: token hash of %d bytes", r.SupervisorID, len(hash))
	}
	copy(r.Hash[:], hash)
	r.AllowedAddresses = make([]netip.Prefix, len(addrs))
	for i, a := range addrs {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return supervisor.Credential{}, fmt.Errorf("stored credential of supervisor %q: allowed address %d: %w", r.SupervisorID, i, err)
		}
		r.AllowedAddresses[i] = p
	}
	if used != nil {
		r.LastUsedAt = *used
	}
	return supervisor.RestoreCredential(r), nil
}

// CredentialTransactor opens transactions for the credential use cases. It
// takes the supervisor changes' advisory lock first (SupervisorTransactor),
// so issuing a credential and deleting its supervisor run one after the
// other: the credential of a deleted supervisor cannot be written after
// the delete (and would go with it, ON DELETE CASCADE, before).
type CredentialTransactor struct{ pool *pgxpool.Pool }

// NewCredentialTransactor returns a CredentialTransactor on pool.
func NewCredentialTransactor(pool *pgxpool.Pool) *CredentialTransactor {
	return &CredentialTransactor{pool: pool}
}

var _ supervisorapp.CredentialTransactor = (*CredentialTransactor)(nil)

// WithinTx runs fn with the credential stores bound to one transaction,
// holding the supervisor lock.
func (t *CredentialTransactor) WithinTx(ctx context.Context, fn func(context.Context, supervisorapp.CredentialStores) error) error {
	return inTx(ctx, t.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, supervisorLockClass); err != nil {
			return err
		}
		return fn(ctx, supervisorapp.CredentialStores{Supervisors: &SupervisorStore{db: tx}, Credentials: &CredentialStore{db: tx},
			Audit: &SupervisorAudit{db: tx}})
	})
}
