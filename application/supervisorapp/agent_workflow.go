package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/session"
	"github.com/yukta/yukta/domain/supervisor"
)

// WorkflowGetter reads one workflow (*sessionapp.GetWorkflow).
type WorkflowGetter interface {
	Handle(ctx context.Context, sessionID, workflowID string) (sessionapp.WorkflowView, error)
}

// ReadAgentWorkflow answers an agent's read of a workflow of its units
// (REST GET /workflows/{s}/{w}, MCP get_workflow); any other workflow,
// existing or not, is the same ErrOwnedRunNotFound, and is never read.
// The doors show its shape only (nodes and edges), never node settings.
type ReadAgentWorkflow struct{ get WorkflowGetter }

// NewReadAgentWorkflow returns the use case.
func NewReadAgentWorkflow(get WorkflowGetter) *ReadAgentWorkflow { return &ReadAgentWorkflow{get: get} }

// Handle returns the workflow.
func (uc *ReadAgentWorkflow) Handle(ctx context.Context, sup supervisor.Supervisor, sessionID, workflowID string) (session.Workflow, error) {
	if err := ownedWorkflow(sup, sessionID, workflowID); err != nil {
		return session.Workflow{}, err
	}
	v, err := uc.get.Handle(ctx, sessionID, workflowID)
	return v.Workflow, err
}
