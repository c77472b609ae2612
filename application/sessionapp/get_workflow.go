package sessionapp

import (
	"context"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/session"
)

// PauseReader reads a workflow's pause (PAUSE_WORKFLOW) outside a
// transaction, for the reads that show it.
type PauseReader interface {
	// WorkflowPause returns the workflow's pause, ok false when it is not
	// paused.
	WorkflowPause(ctx context.Context, sessionID, workflowID string) (p execution.WorkflowPause, ok bool, err error)
}

// GetWorkflow reads one workflow of a session with its secrets masked, and
// its pause if it is paused.
type GetWorkflow struct {
	store   SessionStore
	pauses  PauseReader
	catalog session.Catalog
}

// NewGetWorkflow returns the use case.
func NewGetWorkflow(s SessionStore, pauses PauseReader, c session.Catalog) *GetWorkflow {
	return &GetWorkflow{store: s, pauses: pauses, catalog: c}
}

// WorkflowView is a workflow as its readers see it: secrets masked, and
// the pause that refuses its new runs (nil when it is not paused).
type WorkflowView struct {
	session.Workflow
	Pause *execution.WorkflowPause
}

// Handle returns the workflow and its pause, or session.ErrSessionNotFound /
// session.ErrWorkflowNotFound.
func (uc *GetWorkflow) Handle(ctx context.Context, sessionID, workflowID string) (WorkflowView, error) {
	// No stored session or workflow has an id outside the id format, and
	// such a value (U+0000, invalid UTF-8) is not one the store can take.
	switch {
	case !session.ValidID(sessionID):
		return WorkflowView{}, session.ErrSessionNotFound
	case !session.ValidID(workflowID):
		return WorkflowView{}, session.ErrWorkflowNotFound
	}
	w, err := uc.store.Workflow(ctx, sessionID, workflowID)
	if err != nil {
		return WorkflowView{}, err
	}
	masked := session.RestoreSession(sessionID, "", "", "", nil, "", []session.Workflow{w}).Masked(uc.catalog)
	view := WorkflowView{Workflow: masked.Workflows()[0]}
	p, paused, err := uc.pauses.WorkflowPause(ctx, sessionID, workflowID)
	if err != nil {
		return WorkflowView{}, err
	}
	if paused {
		view.Pause = &p
	}
	return view, nil
}

// Unmasked returns the workflow with its real secret values. Only the
// runtime may use it (to run nodes, verify webhooks); never a read path.
func (uc *GetWorkflow) Unmasked(ctx context.Context, sessionID, workflowID string) (session.Workflow, error) {
	return uc.store.Workflow(ctx, sessionID, workflowID)
}
