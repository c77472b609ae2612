package executionapp

import "context"

// ListInputs lists inputs of a session (or of one execution).
type ListInputs struct{ reader Reader }

// NewListInputs returns the use case.
func NewListInputs(r Reader) *ListInputs { return &ListInputs{reader: r} }

// Handle lists inputs; onlyOpen hides answered and cancelled ones.
func (uc *ListInputs) Handle(ctx context.Context, sessionID, executionID string, onlyOpen bool) ([]Input, error) {
	if executionID != "" {
		if _, err := uc.reader.Execution(ctx, sessionID, executionID); err != nil {
			return nil, err
		}
	}
	return uc.reader.Inputs(ctx, sessionID, executionID, onlyOpen)
}
