package supervisorapp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// AnswerDelegation takes a target's answer to a delegation sent to it (the
// agent API's POST /delegations/{id}, the process engine's
// delegationAnswer line). It answers once: a second answer, or one after
// the deadline, is supervisor.ErrDelegationSettled; a delegation sent to
// another supervisor is not found. The sender receives the answer as a
// DELEGATED or CONSULTED signal.
type AnswerDelegation struct{ d DelegationDeps }

// NewAnswerDelegation returns the use case.
func NewAnswerDelegation(d DelegationDeps) *AnswerDelegation {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &AnswerDelegation{d: d}
}

// AnswerDelegationInput is one answer.
type AnswerDelegationInput struct {
	DelegationID string
	SupervisorID string
	Answer       json.RawMessage
	Channel      string
	// Fence is the answering engine's lease (nil for the agent API).
	Fence *Fence
}

// Handle records the answer and returns the answered delegation.
func (uc *AnswerDelegation) Handle(ctx context.Context, in AnswerDelegationInput) (supervisor.Delegation, error) {
	now := uc.d.Now()
	d, err := uc.d.Store.ChangeDelegation(ctx, in.DelegationID, "supervisor:"+in.SupervisorID, in.Channel, in.Fence,
		func(d supervisor.Delegation) (supervisor.Delegation, error) {
			err := d.Respond(in.SupervisorID, in.Answer, now)
			return d, err
		})
	if err != nil {
		return supervisor.Delegation{}, fmt.Errorf("answer delegation %s: %w", in.DelegationID, err)
	}
	return d, nil
}
