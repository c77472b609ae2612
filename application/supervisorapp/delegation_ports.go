package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/domain/supervisor"
)

// The outbox event types of delegations. They belong to no session; their
// data names the delegation, its kind, its sender (from) and its target
// (to). signalOf turns them into DELEGATED and CONSULTED signals.
const (
	// EventDelegationRequested: a supervisor opened a delegation; the
	// target receives it.
	EventDelegationRequested = "DelegationRequested"
	// EventDelegationAnswered: the target answered; the sender receives
	// the answer.
	EventDelegationAnswered = "DelegationAnswered"
)

// DelegationStore keeps delegations. Every change appends its event in the
// same transaction.
type DelegationStore interface {
	// OpenDelegation stores a new OPEN delegation and its
	// DelegationRequested event. When the sender already has a delegation
	// with d's key, nothing is stored and that one is returned with
	// created = false. A fence, when given, must be the sender's current
	// lease (ErrLeaseLost otherwise).
	OpenDelegation(ctx context.Context, d supervisor.Delegation, actor, channel string, fence *Fence) (stored supervisor.Delegation, created bool, err error)
	// ChangeDelegation locks a delegation, calls change with it and stores
	// what it returns; a change to ANSWERED appends DelegationAnswered. A
	// fence, when given, must be the answering supervisor's current lease.
	// A delegation that does not exist is supervisor.ErrDelegationNotFound.
	ChangeDelegation(ctx context.Context, id, actor, channel string, fence *Fence,
		change func(supervisor.Delegation) (supervisor.Delegation, error)) (supervisor.Delegation, error)
	// Delegation returns a delegation; ok is false when none has the id.
	Delegation(ctx context.Context, id string) (d supervisor.Delegation, ok bool, err error)
	// DueDelegations returns the ids of OPEN delegations past their
	// deadline, at most limit.
	DueDelegations(ctx context.Context, limit int) ([]string, error)
}

// Delegator opens delegations (*Delegate).
type Delegator interface {
	Handle(ctx context.Context, in DelegateInput) (supervisor.Delegation, bool, error)
}

// DelegationAnswerer answers delegations (*AnswerDelegation).
type DelegationAnswerer interface {
	Handle(ctx context.Context, in AnswerDelegationInput) (supervisor.Delegation, error)
}
