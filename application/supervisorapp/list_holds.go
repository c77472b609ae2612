package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// ListHolds reads a run's hold ledger: which supervisors hold it, since
// when and why, and whether the holds paused it (REST GET
// /api/sessions/{s}/executions/{e}/holds, MCP list_holds, yukta holds
// list). A finished run has no holds.
type ListHolds struct {
	runs  RunDirectory
	holds HoldStore
}

// NewListHolds returns the use case.
func NewListHolds(runs RunDirectory, holds HoldStore) *ListHolds {
	return &ListHolds{runs: runs, holds: holds}
}

// ListHoldsInput names the run.
type ListHoldsInput struct {
	SessionID, ExecutionID string
}

// Handle returns the run's ledger, or ErrExecutionNotFound when the run
// does not exist in the session.
func (uc *ListHolds) Handle(ctx context.Context, in ListHoldsInput) (supervisor.RunHolds, error) {
	if !execution.ValidID(in.ExecutionID) {
		return supervisor.RunHolds{}, executionNotFound(in.ExecutionID)
	}
	found, err := uc.runs.Runs(ctx, []string{in.ExecutionID})
	if err != nil {
		return supervisor.RunHolds{}, err
	}
	if r, ok := found[in.ExecutionID]; !ok || r.SessionID != in.SessionID {
		return supervisor.RunHolds{}, executionNotFound(in.ExecutionID)
	}
	hs, err := uc.holds.Holds(ctx, []string{in.ExecutionID})
	if err != nil {
		return supervisor.RunHolds{}, err
	}
	for _, h := range hs {
		if h.ExecutionID() == in.ExecutionID {
			return h, nil
		}
	}
	return supervisor.NewRunHolds(in.ExecutionID), nil
}
