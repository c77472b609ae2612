package sessionapp

import (
	"context"

	"github.com/yukta/yukta/domain/session"
)

// GetWorkflow reads one workflow of a session with its secrets masked.
type GetWorkflow struct {
	store   SessionStore
	catalog session.Catalog
}

// NewGetWorkflow returns the use case.
func NewGetWorkflow(s SessionStore, c session.Catalog) *GetWorkflow {
	return &GetWorkflow{store: s, catalog: c}
}

// Handle returns the workflow, or session.ErrSessionNotFound /
// session.ErrWorkflowNotFound.
func (uc *GetWorkflow) Handle(ctx context.Context, sessionID, workflowID string) (session.Workflow, error) {
	// No stored session or workflow has an id outside the id format, and
	// such a value (U+0000, invalid UTF-8) is not one the store can take.
	switch {
	case !session.ValidID(sessionID):
		return session.Workflow{}, session.ErrSessionNotFound
	case !session.ValidID(workflowID):
		return session.Workflow{}, session.ErrWorkflowNotFound
	}
	w, err := uc.store.Workflow(ctx, sessionID, workflowID)
	if err != nil {
		return session.Workflow{}, err
	}
	masked := session.RestoreSession(sessionID, "", "", "", nil, "", []session.Workflow{w}).Masked(uc.catalog)
	return masked.Workflows()[0], nil
}

// Unmasked returns the workflow with its real secret values. Only the
// runtime may use it (to run nodes, verify webhooks); never a read path.
func (uc *GetWorkflow) Unmasked(ctx context.Context, sessionID, workflowID string) (session.Workflow, error) {
	return uc.store.Workflow(ctx, sessionID, workflowID)
}
