package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// ExecutionGetter reads one run with its nodes (*executionapp.GetExecution).
type ExecutionGetter interface {
	Handle(ctx context.Context, sessionID, id string) (executionapp.ExecutionView, error)
}

// GetAgentExecution answers an agent's read of one run of its units (REST
// GET /executions/{id}, MCP get_execution); any other run is
// ErrOwnedRunNotFound, and is never read.
type GetAgentExecution struct {
	runs RunDirectory
	get  ExecutionGetter
}

// NewGetAgentExecution returns the use case.
func NewGetAgentExecution(runs RunDirectory, get ExecutionGetter) *GetAgentExecution {
	return &GetAgentExecution{runs: runs, get: get}
}

// Handle returns the run with id.
func (uc *GetAgentExecution) Handle(ctx context.Context, sup supervisor.Supervisor, id string) (executionapp.ExecutionView, error) {
	r, err := ownedRun(ctx, uc.runs, sup, id)
	if err != nil {
		return executionapp.ExecutionView{}, err
	}
	return uc.get.Handle(ctx, r.SessionID, r.ID)
}
