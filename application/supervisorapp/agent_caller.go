package supervisorapp

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ErrOwnedRunNotFound is the answer to an agent read of a run, an input or
// a workflow outside the units its supervisor owns, and of one that does
// not exist: the two read alike, so an agent cannot tell whether another
// session's run exists. It is a fault.ErrNotFound.
var ErrOwnedRunNotFound = fmt.Errorf("supervisorapp: not among the owned units: %w", fault.ErrNotFound)

// AgentCaller loads the supervisor an agent acts for, as stored now, for
// both agent doors (REST /api/agent/v1 and its MCP endpoint): a change
// applies to the next request, and a disabled supervisor is refused.
type AgentCaller struct{ sups Reader }

// NewAgentCaller returns the use case.
func NewAgentCaller(sups Reader) *AgentCaller { return &AgentCaller{sups: sups} }

// Handle returns the supervisor with id (the credential's principal).
func (uc *AgentCaller) Handle(ctx context.Context, id string) (supervisor.Supervisor, error) {
	if id == "" {
		return supervisor.Supervisor{}, ErrAgentUnauthenticated
	}
	s, err := uc.sups.Supervisor(ctx, id)
	if err != nil {
		return supervisor.Supervisor{}, err
	}
	if !s.Supervisor.Enabled() {
		return supervisor.Supervisor{}, fault.Newf(fault.ErrForbidden, "supervisor %s is disabled; an ADMIN must enable it before its agent may act", id)
	}
	return s.Supervisor, nil
}

// ownedRun is the one ownership check of the agent reads of a run: the run
// with id, when sup owns its unit now. A malformed id, an unknown run and a
// run of a unit sup does not own are the same ErrOwnedRunNotFound but for
// the id quoted.
func ownedRun(ctx context.Context, runs RunDirectory, sup supervisor.Supervisor, id string) (RunInfo, error) {
	if execution.ValidID(id) {
		found, err := runs.Runs(ctx, []string{id})
		if err != nil {
			return RunInfo{}, err
		}
		if r, ok := found[id]; ok && sup.OwnsPlace(r.Place()) {
			return r, nil
		}
	}
	return RunInfo{}, fault.Newf(ErrOwnedRunNotFound,
		"execution %s does not exist among the runs supervisor %s owns; list them with GET /api/agent/v1/executions (MCP: list_owned_executions)",
		clip(id), sup.ID())
}

// ownedWorkflow is the ownership check of a workflow: one outside the
// owned units reads as one that does not exist.
func ownedWorkflow(sup supervisor.Supervisor, sessionID, workflowID string) error {
	if sup.OwnsPlace(supervisor.Place{SessionID: sessionID, WorkflowID: workflowID}) {
		return nil
	}
	return fault.Newf(ErrOwnedRunNotFound, "workflow %s/%s is not in the units supervisor %s owns; GET /api/agent/v1/self (MCP: get_self) lists them",
		clip(sessionID), clip(workflowID), sup.ID())
}

// clip shortens a value quoted back in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
