package httpapi

import (
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
)

// executionToAPI maps an execution's status to its API document.
func executionToAPI(v executionapp.ExecutionView) restapi.Execution {
	out := restapi.Execution{ExecutionId: v.ID, SessionId: v.SessionID, WorkflowId: v.WorkflowID,
		Status: restapi.ExecutionStatus(v.Status), Draining: v.Draining, StartedAt: v.StartedAt.UTC(), EndedAt: utc(v.EndedAt),
		Error: v.Error, RestartOf: v.RestartOf, FromNodeId: v.FromNodeID, Actor: v.Actor, Channel: v.Channel,
		Nodes: make([]restapi.ExecutionNode, len(v.Nodes))}
	if v.HasResult {
		out.Result = v.Result
	}
	for i, n := range v.Nodes {
		en := restapi.ExecutionNode{NodeId: n.NodeID, Type: n.Type, Status: restapi.NodeStatus(n.Status), Received: n.Received,
			Emitted: n.Emitted, Paused: n.Paused, StepMode: n.StepMode, StepCredits: n.Credits, Skipped: n.Skipped, Error: n.Error,
			StartedAt: utc(n.StartedAt), EndedAt: utc(n.EndedAt), WallMs: n.RunTime.Milliseconds(), Waiting: n.Waiting, DueAt: utc(n.DueAt)}
		if bp := n.Breakpoint; bp != nil {
			en.Breakpoint = restapi.Breakpoint{Field: bp.Field, Equals: bp.Equals, Condition: bp.Condition}
		}
		out.Nodes[i] = en
	}
	return out
}
