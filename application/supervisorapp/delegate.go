package supervisorapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// DelegationDeps are what Delegate and AnswerDelegation need.
type DelegationDeps struct {
	Store       DelegationStore
	Supervisors Reader
	Now         func() time.Time
	// TTL is how long a target has to answer (default
	// supervisor.DefaultDelegationTTL).
	TTL time.Duration
}

// Delegate opens a delegation: a supervisor's ESCALATE to its parent or
// CONSULT of another supervisor (the agent API's POST /delegations, the
// process engine's delegate line, the workflow engine's ESCALATE outcome).
// The target receives it as a DELEGATED or CONSULTED signal; the answer
// comes back to the sender as one too. The same key from the same sender
// finds the delegation it opened.
type Delegate struct{ d DelegationDeps }

// NewDelegate returns the use case.
func NewDelegate(d DelegationDeps) *Delegate {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Delegate{d: d}
}

// DelegateInput is one request.
type DelegateInput struct {
	SupervisorID string
	Kind         supervisor.DelegationKind
	Key          string
	// To names the supervisor a CONSULT asks; an ESCALATE goes to the
	// parent.
	To      string
	Payload json.RawMessage
	// Channel is the door: agent, process, workflow.
	Channel string
	// Fence is the sending engine's lease; an engine that lost it opens
	// nothing (ErrLeaseLost). Nil for the agent API.
	Fence *Fence
}

// Handle opens the delegation, or returns the one the key already opened
// (created = false).
func (uc *Delegate) Handle(ctx context.Context, in DelegateInput) (supervisor.Delegation, bool, error) {
	from, err := uc.d.Supervisors.Supervisor(ctx, in.SupervisorID)
	if err != nil {
		return supervisor.Delegation{}, false, err
	}
	exists := func(id string) bool {
		_, err := uc.d.Supervisors.Supervisor(ctx, id)
		return err == nil
	}
	if in.Kind == supervisor.Consult && in.To != "" && in.To != in.SupervisorID {
		// Tell a failed read apart from a missing target.
		if _, err := uc.d.Supervisors.Supervisor(ctx, in.To); err != nil && !errors.Is(err, supervisor.ErrSupervisorNotFound) {
			return supervisor.Delegation{}, false, err
		}
	}
	d, err := supervisor.NewDelegation(supervisor.DelegationSpec{ID: executionapp.NewID(), Kind: in.Kind, From: in.SupervisorID,
		FromParent: from.Supervisor.ParentID(), To: in.To, Exists: exists, Key: in.Key, Payload: in.Payload, Now: uc.d.Now(), TTL: uc.d.TTL})
	if err != nil {
		return supervisor.Delegation{}, false, err
	}
	stored, created, err := uc.d.Store.OpenDelegation(ctx, d, "supervisor:"+in.SupervisorID, in.Channel, in.Fence)
	if err != nil {
		return supervisor.Delegation{}, false, fmt.Errorf("open delegation: %w", err)
	}
	return stored, created, nil
}
