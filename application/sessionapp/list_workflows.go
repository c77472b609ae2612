package sessionapp

import (
	"context"

	"github.com/yukta/yukta/domain/session"
)

// WorkflowSummaries reads the summaries of one session's workflows, outside
// a transaction.
type WorkflowSummaries interface {
	// WorkflowSummaries returns the session's workflows in document order,
	// each with its pause and newest run, in one query; it reports
	// session.ErrSessionNotFound.
	WorkflowSummaries(ctx context.Context, sessionID string) ([]WorkflowSummary, error)
}

// ListWorkflows lists a session's workflows with their pauses and last
// runs: what the sessions list shows of each, for one session.
type ListWorkflows struct{ store WorkflowSummaries }

// NewListWorkflows returns the use case.
func NewListWorkflows(s WorkflowSummaries) *ListWorkflows { return &ListWorkflows{store: s} }

// Handle returns the workflows or session.ErrSessionNotFound.
func (uc *ListWorkflows) Handle(ctx context.Context, sessionID string) ([]WorkflowSummary, error) {
	if !session.ValidID(sessionID) {
		return nil, session.NotFound(sessionID)
	}
	return uc.store.WorkflowSummaries(ctx, sessionID)
}
