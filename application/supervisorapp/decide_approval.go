package supervisorapp

import (
	"context"
	"fmt"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// DecideApproval lets an ADMIN approve or reject a command a verdict
// parked (REQUIRE_APPROVAL). Approving applies the command at once, as its
// sender sent it; rejecting refuses it with no effect. Both are journaled
// with the ADMIN as actor.
type DecideApproval struct{ a *reviewApplier }

// NewDecideApproval returns the use case.
func NewDecideApproval(d ApplierDeps) *DecideApproval { return &DecideApproval{a: newApplier(d)} }

// The approval decisions.
const (
	Approve = "APPROVE"
	Reject  = "REJECT"
)

// DecideInput is one ADMIN's decision.
type DecideInput struct {
	ApprovalID string
	Decision   string // APPROVE or REJECT
	Reason     string
	Actor      string
	// SessionAllowed hides approvals of sessions the caller may not see
	// (nil: all).
	SessionAllowed func(sessionID string) bool
}

// Handle records the decision and returns the review as it stands after
// it (APPLIED or DENIED).
func (uc *DecideApproval) Handle(ctx context.Context, in DecideInput) (supervisor.Review, error) {
	d := strings.ToUpper(strings.TrimSpace(in.Decision))
	if d != Approve && d != Reject {
		return supervisor.Review{}, &fault.ValidationError{Subject: "approval decision", Violations: []fault.Violation{{Path: "decision",
			Message: fmt.Sprintf("%q is not a decision; use APPROVE (apply the command) or REJECT (refuse it)", in.Decision)}}}
	}
	if in.SessionAllowed != nil {
		r, ok, err := uc.a.store.Review(ctx, in.ApprovalID)
		if err != nil {
			return supervisor.Review{}, err
		}
		if !ok || !in.SessionAllowed(r.SessionID()) {
			return supervisor.Review{}, approvalNotFound(in.ApprovalID)
		}
	}
	now := uc.a.now()
	r, err := uc.a.change(ctx, in.ApprovalID, nil, func(r *supervisor.Review) error {
		if d == Approve {
			return r.Approve(in.Actor, in.Reason, now)
		}
		return r.Reject(in.Actor, in.Reason, now)
	})
	if err != nil {
		return supervisor.Review{}, err
	}
	return r, nil
}

func approvalNotFound(id string) error {
	return fault.Newf(supervisor.ErrReviewNotFound, "approval %s does not exist; list the approvals waiting for a decision", id)
}
