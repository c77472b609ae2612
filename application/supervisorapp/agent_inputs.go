package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/domain/supervisor"
)

// MaxAgentInputs caps the open inputs one agent read returns.
const MaxAgentInputs = 200

// AgentInputs is the open inputs of the owned units, oldest first;
// Truncated when there are more than MaxAgentInputs.
type AgentInputs struct {
	Inputs    []InputInfo
	Truncated bool
}

// ListAgentInputs answers an agent's read of the open inputs of its units
// (REST GET /inputs, MCP list_open_inputs).
type ListAgentInputs struct{ runs RunDirectory }

// NewListAgentInputs returns the use case.
func NewListAgentInputs(runs RunDirectory) *ListAgentInputs { return &ListAgentInputs{runs: runs} }

// Handle returns the inputs.
func (uc *ListAgentInputs) Handle(ctx context.Context, sup supervisor.Supervisor) (AgentInputs, error) {
	out := AgentInputs{Inputs: []InputInfo{}}
	owns := sup.Owns()
	if len(owns) == 0 {
		return out, nil
	}
	ins, err := uc.runs.OpenInputs(ctx, owns, MaxAgentInputs+1)
	if err != nil {
		return AgentInputs{}, err
	}
	if len(ins) > MaxAgentInputs {
		ins, out.Truncated = ins[:MaxAgentInputs], true
	}
	out.Inputs = ins
	return out, nil
}
