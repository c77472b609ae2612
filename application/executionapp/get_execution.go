package executionapp

import "context"

// GetExecution reads the live status of one execution of a session.
type GetExecution struct{ reader Reader }

// NewGetExecution returns the use case.
func NewGetExecution(r Reader) *GetExecution { return &GetExecution{reader: r} }

// Handle returns the execution, or ErrExecutionNotFound (identical for an
// unknown id and for one of another session).
func (uc *GetExecution) Handle(ctx context.Context, sessionID, id string) (ExecutionView, error) {
	return uc.reader.Execution(ctx, sessionID, id)
}
