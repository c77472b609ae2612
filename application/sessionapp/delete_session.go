package sessionapp

import (
	"context"
	"time"
)

// DeleteSession removes a session and its workflows, and records who did.
type DeleteSession struct {
	tx  Transactor
	now func() time.Time
}

// NewDeleteSession returns the use case.
func NewDeleteSession(tx Transactor, now func() time.Time) *DeleteSession {
	return &DeleteSession{tx: tx, now: now}
}

// DeleteInput names the session and who deletes it.
type DeleteInput struct {
	ID             string
	Actor, Channel string
}

// Handle deletes the session or reports session.ErrSessionNotFound.
func (uc *DeleteSession) Handle(ctx context.Context, in DeleteInput) error {
	return uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		if err := st.Sessions.Delete(ctx, in.ID); err != nil {
			return err
		}
		return st.Audit.SessionChanged(ctx, EventSessionDeleted, in.ID, Change{At: uc.now(), Actor: in.Actor, Channel: in.Channel}, nil)
	})
}
