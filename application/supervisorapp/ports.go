// Package supervisorapp holds the use cases on supervisors: the store's
// apply, read, list and delete; the runtime that hands each supervisor its
// signals (events of its owned units, ticks) in order from a durable
// cursor; and the one directive intake every engine and the agent API
// call. It owns the ports those use cases need; adapters implement them.
package supervisorapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// Change is who changes a supervisor, when, and through which door.
type Change struct {
	At             time.Time
	Actor, Channel string
}

// Summary is a stored supervisor with its audit fields.
type Summary struct {
	Supervisor            supervisor.Supervisor
	CreatedAt, UpdatedAt  time.Time
	UpdatedBy, UpdatedVia string
	// Warnings are what an apply or a read says about a document that
	// is legal but probably not meant (a session it owns that does not
	// exist); empty, never nil, from ApplySupervisor and GetSupervisor.
	Warnings []string
}

// SupervisorStore keeps supervisors (their whole shell, secret settings
// included: reads that leave the server mask them). Get and Delete report
// supervisor.ErrSupervisorNotFound.
type SupervisorStore interface {
	Get(ctx context.Context, id string) (Summary, error)
	// GetForUpdate is Get that also locks the row until the transaction
	// ends.
	GetForUpdate(ctx context.Context, id string) (Summary, error)
	// Put creates or replaces a supervisor.
	Put(ctx context.Context, s supervisor.Supervisor, ch Change) (created bool, err error)
	Delete(ctx context.Context, id string) error
	// List returns every supervisor in id order.
	List(ctx context.Context) ([]Summary, error)
}

// Stores are the stores bound to one transaction. The runtime's stores
// (cursors, leases, the directive ledger) join this struct as they land.
type Stores struct {
	Supervisors SupervisorStore
	// Audit records supervisor changes (SupervisorApplied,
	// SupervisorDeleted) in the outbox.
	Audit Audit
	// Holds is the hold ledger (ReleaseHold, DeleteSupervisor).
	Holds HoldLedger
	// Remains is what the runtime keeps under a supervisor's id
	// (DeleteSupervisor).
	Remains Remains
}

// Audit records supervisor changes as outbox events in the caller's
// transaction.
type Audit interface {
	SupervisorChanged(ctx context.Context, typ, supervisorID string, ch Change, data map[string]any) error
}

// The supervisor event types.
const (
	EventSupervisorApplied = "SupervisorApplied"
	EventSupervisorDeleted = "SupervisorDeleted"
)

// Transactor runs fn in one transaction with the stores bound to it: it
// commits when fn returns nil and rolls back otherwise. fn may run more than
// once (serialization retries), so it must do nothing but storage work.
// Supervisor transactions run one at a time (the postgres adapter takes one
// lock first), so a parent chain checked inside one still holds at commit.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, s Stores) error) error
}

// Reader reads supervisors outside a transaction (the runtime's view).
type Reader interface {
	Supervisor(ctx context.Context, id string) (Summary, error)
	Supervisors(ctx context.Context) ([]Summary, error)
}
