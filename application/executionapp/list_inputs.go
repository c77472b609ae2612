package executionapp

import "context"

// InputQuery selects inputs: of one session (or every session when
// SessionID is empty), of one execution when ExecutionID is set.
type InputQuery struct {
	SessionID, ExecutionID string
	// Sessions, when not nil, keeps only inputs of these sessions (a
	// session-limited key listing across sessions). The store filters
	// before it caps the list, so other sessions' inputs never crowd out
	// the caller's or show in how many it gets.
	Sessions []string
	// OnlyOpen hides answered and cancelled inputs.
	OnlyOpen bool
}

// ListInputs lists inputs of a session (or of one execution).
type ListInputs struct{ reader Reader }

// NewListInputs returns the use case.
func NewListInputs(r Reader) *ListInputs { return &ListInputs{reader: r} }

// Handle lists inputs, oldest first.
func (uc *ListInputs) Handle(ctx context.Context, q InputQuery) ([]Input, error) {
	if q.ExecutionID != "" {
		if _, err := uc.reader.Execution(ctx, q.SessionID, q.ExecutionID); err != nil {
			return nil, err
		}
	}
	return uc.reader.Inputs(ctx, q)
}
