package sessionapp

import "context"

// DeleteSession removes a session and its workflows.
type DeleteSession struct{ store SessionStore }

// NewDeleteSession returns the use case.
func NewDeleteSession(s SessionStore) *DeleteSession { return &DeleteSession{store: s} }

// Handle deletes the session or reports session.ErrSessionNotFound.
func (uc *DeleteSession) Handle(ctx context.Context, id string) error {
	return uc.store.Delete(ctx, id)
}
