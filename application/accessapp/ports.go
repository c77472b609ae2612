package accessapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/access"
)

// The audit event types of stored keys. Their data names the key, its
// role, sessions and expiry; never its secret, the secret's hash or hint.
const (
	EventAPIKeyCreated = "APIKeyCreated"
	EventAPIKeyRotated = "APIKeyRotated"
	EventAPIKeyRevoked = "APIKeyRevoked"
	// EventAPIKeyExpiryChanged: an ADMIN set or changed a stored key's
	// expiry (SetAPIKeyExpiry); its data has the new expiresAt.
	EventAPIKeyExpiryChanged = "APIKeyExpiryChanged"
)

// Change is who changed a key, when and through which door.
type Change struct {
	At             time.Time
	Actor, Channel string
}

// KeyStore keeps the stored keys inside a transaction. Names are matched
// in any letter case. Get, Replace and Delete report
// access.ErrAPIKeyNotFound.
type KeyStore interface {
	Get(ctx context.Context, name string) (access.APIKey, error)
	// Count returns how many keys are stored.
	Count(ctx context.Context) (int, error)
	Insert(ctx context.Context, k access.APIKey) error
	// Replace stores k in place of the key of its name: a rotation, which
	// drops the old secret's hash in the same statement.
	Replace(ctx context.Context, k access.APIKey) error
	// SetExpiry stores k's expiry in place of the key of its name; the
	// secret and its last use stay.
	SetExpiry(ctx context.Context, k access.APIKey) error
	Delete(ctx context.Context, name string) error
}

// Audit records key changes as events in the caller's transaction.
type Audit interface {
	APIKeyChanged(ctx context.Context, typ, name string, ch Change, data map[string]any) error
}

// Stores are the stores a key change uses, bound to one transaction.
type Stores struct {
	Keys  KeyStore
	Audit Audit
}

// Transactor runs fn in one transaction with the stores bound to it; key
// changes run one at a time, and every instance is told of a committed
// change. fn may run more than once; it must do nothing but storage work.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, s Stores) error) error
}

// Reader reads the stored keys outside a transaction.
type Reader interface {
	// APIKeys returns every stored key, by name.
	APIKeys(ctx context.Context) ([]access.APIKey, error)
	// APIKey returns the key of the name (any letter case), or
	// access.ErrAPIKeyNotFound.
	APIKey(ctx context.Context, name string) (access.APIKey, error)
}

// ConfiguredKey is a key the server was started with: its principal and
// the setting it came from (YUKTA_API_KEY, YUKTA_API_KEYS,
// YUKTA_MCP_API_KEY).
type ConfiguredKey struct {
	Principal access.Principal
	Source    string
}

// SourceMCPKey is the Source of YUKTA_MCP_API_KEY, the one configured key
// that opens /mcp alone.
const SourceMCPKey = "YUKTA_MCP_API_KEY"

// ConfiguredKeys lists the configured keys, as they are now: a stored key
// may not take one's name.
type ConfiguredKeys interface {
	ConfiguredKeys() []ConfiguredKey
}

// Ring is the in-memory copy of the stored keys of this instance
// (StoredKeys): a change re-reads it at once, so this instance takes the
// change before its answer is sent; the others are told by the
// transactor's notification.
type Ring interface {
	Refresh(ctx context.Context) error
	Len() int
}
