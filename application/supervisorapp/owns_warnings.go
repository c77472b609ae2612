package supervisorapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/yukta/yukta/domain/session"
	"github.com/yukta/yukta/domain/supervisor"
)

// SessionGetter reads a stored session; one that does not exist is an
// error matching session.ErrSessionNotFound.
type SessionGetter interface {
	Get(ctx context.Context, id string) (session.Session, error)
}

// ownsWarnings lists the units sup owns that name a session or workflow
// that does not exist. Owning one is allowed (the session may be applied
// later, and the supervisor acts on it from then on), but it is often a
// typo, so applies and reads say so. sessions nil checks nothing.
func ownsWarnings(ctx context.Context, sessions SessionGetter, sup supervisor.Supervisor) ([]string, error) {
	out := []string{}
	if sessions == nil {
		return out, nil
	}
	read := map[string]*session.Session{} // nil: the session does not exist
	for _, u := range sup.Owns() {
		if u.Kind() != supervisor.UnitSession && u.Kind() != supervisor.UnitWorkflow {
			continue
		}
		s, seen := read[u.SessionID()]
		if !seen {
			switch got, err := sessions.Get(ctx, u.SessionID()); {
			case err == nil:
				s = &got
			case !errors.Is(err, session.ErrSessionNotFound):
				return nil, err
			}
			read[u.SessionID()] = s
		}
		switch {
		case s == nil:
			out = append(out, fmt.Sprintf("owns %q, but session %q does not exist; the supervisor acts on it once it is created (PUT /api/sessions/%s), or fix the unit",
				u.String(), u.SessionID(), u.SessionID()))
		case u.Kind() == supervisor.UnitWorkflow:
			if _, ok := s.Workflow(u.WorkflowID()); !ok {
				out = append(out, fmt.Sprintf("owns %q, but session %q has no workflow %q; the supervisor acts on it once it is added (GET /api/sessions/%s lists its workflows), or fix the unit",
					u.String(), u.SessionID(), u.WorkflowID(), u.SessionID()))
			}
		}
	}
	return out, nil
}
