package supervisorapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// The credential event types. Their data never holds the token or its
// hash.
const (
	EventCredentialIssued  = "SupervisorCredentialIssued"
	EventCredentialRevoked = "SupervisorCredentialRevoked"
)

// CredentialStore keeps the one credential of each supervisor (the token's
// hash, never the token) inside a transaction. Get and Delete report
// supervisor.ErrCredentialNotFound.
type CredentialStore interface {
	Get(ctx context.Context, supervisorID string) (supervisor.Credential, error)
	// Put stores c as its supervisor's credential, replacing an earlier
	// one in the same statement: the earlier token stops working when the
	// transaction commits.
	Put(ctx context.Context, c supervisor.Credential) error
	Delete(ctx context.Context, supervisorID string) error
}

// CredentialStores are the stores a credential change uses, bound to one
// transaction.
type CredentialStores struct {
	Supervisors SupervisorStore
	Credentials CredentialStore
	Audit       Audit
}

// CredentialTransactor runs fn in one transaction with the credential
// stores bound to it, serialized with supervisor changes (so a supervisor
// cannot be deleted between the check that it exists and the write of its
// credential). fn may run more than once; it must do nothing but storage
// work.
type CredentialTransactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, s CredentialStores) error) error
}

// CredentialReader reads credentials outside a transaction: the metadata
// an ADMIN reads and the lookup of every agent API request.
type CredentialReader interface {
	// Credential returns a supervisor's credential, or
	// supervisor.ErrCredentialNotFound.
	Credential(ctx context.Context, supervisorID string) (supervisor.Credential, error)
	// CredentialByHash returns the credential whose token has this hash,
	// or supervisor.ErrCredentialNotFound. It is one equality lookup on
	// the hash.
	CredentialByHash(ctx context.Context, hash supervisor.TokenHash) (supervisor.Credential, error)
	// MarkCredentialUsed records at as the last use of the credential with
	// this hash, if it is still stored.
	MarkCredentialUsed(ctx context.Context, hash supervisor.TokenHash, at time.Time) error
}
