package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/domain/access"
)

// APIKeyStore keeps stored API keys (migrations/00019, queue lists and the
// role WORKER 00023): the SHA-256 of each
// secret, never the secret. Built on a pool it is also the reader of the
// ADMIN's lists, of every instance's ring (accessapp.StoredKeys) and the
// writer of last uses. Names are matched in any letter case (the unique
// index on lower(name)).
type APIKeyStore struct{ db dbtx }

// NewAPIKeyStore returns a store that runs each call on pool.
func NewAPIKeyStore(pool *pgxpool.Pool) *APIKeyStore { return &APIKeyStore{db: pool} }

var (
	_ accessapp.KeyStore    = (*APIKeyStore)(nil)
	_ accessapp.Reader      = (*APIKeyStore)(nil)
	_ accessapp.KeySource   = (*APIKeyStore)(nil)
	_ accessapp.UsageWriter = (*APIKeyStore)(nil)
)

const apiKeyColumns = `name, role, sessions, queues, secret_hash, hint, created_at, created_by, created_via, expires_at,
	rotated_at, rotated_by, rotated_via, last_used_at, last_used_from`

// Get loads the key of a name, in any letter case.
func (s *APIKeyStore) Get(ctx context.Context, name string) (access.APIKey, error) {
	k, err := scanAPIKey(s.db.QueryRow(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE lower(name) = lower($1)`, name))
	if err != nil {
		return access.APIKey{}, notFound(err, access.ErrAPIKeyNotFound)
	}
	return k, nil
}

// Count returns how many keys are stored.
func (s *APIKeyStore) Count(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM api_keys`).Scan(&n)
	return n, translate(err)
}

// Insert stores a new key.
func (s *APIKeyStore) Insert(ctx context.Context, k access.APIKey) error {
	h := k.Hash()
	_, err := s.db.Exec(ctx, `
		INSERT INTO api_keys (name, role, sessions, queues, secret_hash, hint, created_at, created_by, created_via, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		k.Name(), k.Role().String(), k.Sessions(), k.Queues(), h[:], k.Hint(), k.CreatedAt(), k.CreatedBy(), k.CreatedVia(), nullTime(k.ExpiresAt()))
	return translate(err)
}

// Replace stores a rotated key: the new hash replaces the old in one
// statement, and the last use starts over.
func (s *APIKeyStore) Replace(ctx context.Context, k access.APIKey) error {
	h := k.Hash()
	tag, err := s.db.Exec(ctx, `
		UPDATE api_keys SET secret_hash = $2, hint = $3, rotated_at = $4, rotated_by = $5, rotated_via = $6,
		       last_used_at = NULL, last_used_from = ''
		 WHERE lower(name) = lower($1)`,
		k.Name(), h[:], k.Hint(), k.RotatedAt(), k.RotatedBy(), k.RotatedVia())
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return access.ErrAPIKeyNotFound
	}
	return nil
}

// SetExpiry stores a key's new expiry; the secret and its last use stay.
func (s *APIKeyStore) SetExpiry(ctx context.Context, k access.APIKey) error {
	tag, err := s.db.Exec(ctx, `UPDATE api_keys SET expires_at = $2 WHERE lower(name) = lower($1)`, k.Name(), nullTime(k.ExpiresAt()))
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return access.ErrAPIKeyNotFound
	}
	return nil
}

// Delete removes a key.
func (s *APIKeyStore) Delete(ctx context.Context, name string) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM api_keys WHERE lower(name) = lower($1)`, name)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return access.ErrAPIKeyNotFound
	}
	return nil
}

// APIKeys returns every stored key, by name.
func (s *APIKeyStore) APIKeys(ctx context.Context) ([]access.APIKey, error) {
	rows, err := s.db.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys ORDER BY lower(name)`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []access.APIKey
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

// APIKey is Get, for reads outside a transaction.
func (s *APIKeyStore) APIKey(ctx context.Context, name string) (access.APIKey, error) {
	return s.Get(ctx, name)
}

// MarkAPIKeysUsed moves each key's last use forward, if it is at least
// UsedResolution later than the stored one and the key still has that
// secret (a rotation or a revoke meanwhile drops it), in one statement.
func (s *APIKeyStore) MarkAPIKeysUsed(ctx context.Context, uses []accessapp.Usage) error {
	if len(uses) == 0 {
		return nil
	}
	hashes := make([][]byte, len(uses))
	ats := make([]time.Time, len(uses))
	froms := make([]string, len(uses))
	for i, u := range uses {
		hashes[i] = u.Hash[:]
		ats[i], froms[i] = u.At, u.From
	}
	_, err := s.db.Exec(ctx, `
		UPDATE api_keys k SET last_used_at = u.at, last_used_from = u.from_addr
		  FROM unnest($1::bytea[], $2::timestamptz[], $3::text[]) AS u(hash, at, from_addr)
		 WHERE k.secret_hash = u.hash AND (k.last_used_at IS NULL OR k.last_used_at <= u.at - $4::interval)`,
		hashes, ats, froms, accessapp.UsedResolution)
	return translate(err)
}

func scanAPIKey(row pgx.Row) (access.APIKey, error) {
	var r access.APIKeyRecord
	var role string
	var hash []byte
	var expires, rotated, used *time.Time
	if err := row.Scan(&r.Name, &role, &r.Sessions, &r.Queues, &hash, &r.Hint, &r.CreatedAt, &r.CreatedBy, &r.CreatedVia, &expires,
		&rotated, &r.RotatedBy, &r.RotatedVia, &used, &r.LastUsedFrom); err != nil {
		return access.APIKey{}, err
	}
	if len(hash) != len(r.Hash) {
		return access.APIKey{}, fmt.Errorf("stored API key %q: secret hash of %d bytes", r.Name, len(hash))
	}
	copy(r.Hash[:], hash)
	var err error
	if r.Role, err = access.ParseRole(role); err != nil {
		return access.APIKey{}, fmt.Errorf("stored API key %q: %w", r.Name, err)
	}
	for _, p := range []struct {
		from *time.Time
		to   *time.Time
	}{{expires, &r.ExpiresAt}, {rotated, &r.RotatedAt}, {used, &r.LastUsedAt}} {
		if p.from != nil {
			*p.to = *p.from
		}
	}
	return access.RestoreAPIKey(r), nil
}

// APIKeyAudit writes key changes to the event outbox. A key belongs to no
// session, so its events have an empty session: the event stream shows
// them to keys of every session only.
type APIKeyAudit struct{ db dbtx }

var _ accessapp.Audit = (*APIKeyAudit)(nil)

// APIKeyChanged appends one key event in the caller's transaction; data
// gets the key's name as name.
func (a *APIKeyAudit) APIKeyChanged(ctx context.Context, typ, name string, ch accessapp.Change, data map[string]any) error {
	return appendServerEvent(ctx, a.db, typ, ch.At, ch.Actor, ch.Channel, data, "name", name)
}

// apiKeyChannel is the NOTIFY channel of stored key changes.
const apiKeyChannel = "yukta_api_keys"

// apiKeyLockClass is the first half of the advisory lock on key changes.
const apiKeyLockClass = 0x59_6B_41_4B // "YkAK"

// APIKeyTransactor opens transactions for the key use cases: one advisory
// lock makes changes run one at a time (so a name checked free is still
// free at the insert), and a NOTIFY in the same transaction tells every
// instance at the commit.
type APIKeyTransactor struct{ pool *pgxpool.Pool }

// NewAPIKeyTransactor returns an APIKeyTransactor on pool.
func NewAPIKeyTransactor(pool *pgxpool.Pool) *APIKeyTransactor { return &APIKeyTransactor{pool: pool} }

var _ accessapp.Transactor = (*APIKeyTransactor)(nil)

// WithinTx runs fn with the key stores bound to one transaction.
func (t *APIKeyTransactor) WithinTx(ctx context.Context, fn func(context.Context, accessapp.Stores) error) error {
	return inTx(ctx, t.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, apiKeyLockClass); err != nil {
			return err
		}
		if err := fn(ctx, accessapp.Stores{Keys: &APIKeyStore{db: tx}, Audit: &APIKeyAudit{db: tx}}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, apiKeyChannel)
		return err
	})
}

// APIKeyListener hears the notifications of key changes on a dedicated
// connection and passes them on as coalesced hints. After each
// (re)connect it sends one too, since a change may have been missed while
// it was away.
type APIKeyListener struct {
	cfg     *pgx.ConnConfig
	changes chan struct{}
	onError func(error)
}

// NewAPIKeyListener returns a listener on the pool's database; Run starts
// it.
func NewAPIKeyListener(pool *pgxpool.Pool, onError func(error)) *APIKeyListener {
	return &APIKeyListener{cfg: pool.Config().ConnConfig.Copy(), changes: make(chan struct{}, 1), onError: onError}
}

// Changes delivers "the stored keys changed" hints.
func (l *APIKeyListener) Changes() <-chan struct{} { return l.changes }

// Run listens until ctx ends, reconnecting after a growing delay like
// Listener.
func (l *APIKeyListener) Run(ctx context.Context) {
	listen(ctx, l.cfg, apiKeyChannel, idleCheck, l.onError, l.signal, func(*pgconn.Notification) error {
		l.signal()
		return nil
	})
}

func (l *APIKeyListener) signal() {
	select {
	case l.changes <- struct{}{}:
	default:
	}
}
