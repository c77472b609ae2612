package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/domain/supervisor"
)

// AgentSelf is what an agent reads of its own supervisor.
type AgentSelf struct {
	Supervisor supervisor.Supervisor
	// Parents is the parent chain, nearest first (at most
	// supervisor.MaxDepth; a parent that cannot be read ends it).
	Parents []string
	// Warnings name the owned sessions and workflows that do not exist,
	// as GetSupervisor's do.
	Warnings []string
}

// ReadAgentSelf answers an agent's "who am I" (REST GET /self, MCP
// get_self).
type ReadAgentSelf struct {
	sups     Reader
	sessions SessionGetter
}

// NewReadAgentSelf returns the use case.
func NewReadAgentSelf(sups Reader) *ReadAgentSelf { return &ReadAgentSelf{sups: sups} }

// UseSessions makes the answer warn of owned sessions and workflows that
// do not exist. The server always sets it; call it before the first Handle.
func (uc *ReadAgentSelf) UseSessions(s SessionGetter) { uc.sessions = s }

// Handle returns sup with its parent chain.
func (uc *ReadAgentSelf) Handle(ctx context.Context, sup supervisor.Supervisor) (AgentSelf, error) {
	out := AgentSelf{Supervisor: sup, Parents: []string{}}
	for p := sup.ParentID(); p != "" && len(out.Parents) < supervisor.MaxDepth; {
		out.Parents = append(out.Parents, p)
		s, err := uc.sups.Supervisor(ctx, p)
		if err != nil {
			break
		}
		p = s.Supervisor.ParentID()
	}
	var err error
	if out.Warnings, err = ownsWarnings(ctx, uc.sessions, sup); err != nil {
		return AgentSelf{}, err
	}
	return out, nil
}
