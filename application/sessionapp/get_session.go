package sessionapp

import (
	"context"

	"github.com/yukta/yukta/domain/session"
)

// GetSession reads one session with its secrets masked.
type GetSession struct {
	store   SessionStore
	catalog session.Catalog
}

// NewGetSession returns the use case.
func NewGetSession(s SessionStore, c session.Catalog) *GetSession {
	return &GetSession{store: s, catalog: c}
}

// Handle returns the session or session.ErrSessionNotFound.
func (uc *GetSession) Handle(ctx context.Context, id string) (session.Session, error) {
	s, err := uc.store.Get(ctx, id)
	if err != nil {
		return session.Session{}, err
	}
	return s.Masked(uc.catalog), nil
}
