package supervisorapp

import (
	"context"
	"slices"

	"github.com/yukta/yukta/domain/supervisor"
)

// GetSupervisor reads one supervisor with its secret settings masked, and
// the warnings about it (owned sessions that do not exist).
type GetSupervisor struct {
	r        Reader
	sessions SessionGetter
}

// NewGetSupervisor returns the use case.
func NewGetSupervisor(r Reader) *GetSupervisor { return &GetSupervisor{r: r} }

// UseSessions makes reads warn of owned sessions and workflows that do
// not exist. The server always sets it; call it before the first Handle.
func (uc *GetSupervisor) UseSessions(s SessionGetter) { uc.sessions = s }

// GetInput names a supervisor and whom it is read for.
type GetInput struct {
	ID string
	// Only, when not nil, is the caller's session list (a session-limited
	// key): a supervisor it may not see (Visible) reads as one that does
	// not exist.
	Only []string
}

// Handle returns the supervisor, masked, or an error matching
// supervisor.ErrSupervisorNotFound.
func (uc *GetSupervisor) Handle(ctx context.Context, in GetInput) (Summary, error) {
	s, err := uc.r.Supervisor(ctx, in.ID)
	if err != nil {
		return Summary{}, err
	}
	if !Visible(s.Supervisor, in.Only) {
		return Summary{}, NotFound(in.ID)
	}
	s.Supervisor = s.Supervisor.Masked()
	if s.Warnings, err = ownsWarnings(ctx, uc.sessions, s.Supervisor); err != nil {
		return Summary{}, err
	}
	return s, nil
}

// Visible reports whether a caller limited to the sessions only (nil: every
// session) may see s. A supervisor is server configuration, so a limited
// caller sees only one that acts within its sessions alone: it owns at
// least one unit and every unit it owns is one of those sessions or a
// workflow of one. A supervisor of the server, of another session, or of
// nothing is hidden.
func Visible(s supervisor.Supervisor, only []string) bool {
	if only == nil {
		return true
	}
	owns := s.Owns()
	if len(owns) == 0 {
		return false
	}
	for _, u := range owns {
		if u.Kind() == supervisor.UnitServer || u.SessionID() == "" || !slices.Contains(only, u.SessionID()) {
			return false
		}
	}
	return true
}
