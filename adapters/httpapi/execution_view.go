package httpapi

import (
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
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
		if n.AttemptsKnown {
			en.Attempts = &n.Attempts
		}
		if bp := n.Breakpoint; bp != nil {
			en.Breakpoint = restapi.Breakpoint{Field: bp.Field, Equals: bp.Equals, Condition: bp.Condition}
		}
		out.Nodes[i] = en
	}
	if v.Edges != nil {
		edges := make([]restapi.EdgeConfig, len(v.Edges))
		for i, e := range v.Edges {
			edges[i] = restapi.EdgeConfig{Source: e.Source, Target: e.Target, SourcePort: e.SourcePort}
		}
		out.Edges = edges
	}
	if v.Spend != nil {
		out.Spend = spendToAPI(*v.Spend)
	}
	return out
}

// spendToAPI maps a run's spend to its API document; what is absent (a sum
// no task reported, a class no report carried) stays absent.
func spendToAPI(s execution.Spend) restapi.Spend {
	out := restapi.Spend{Nodes: make(map[string]restapi.NodeSpend, len(s.Nodes)), Total: nodeSpendToAPI(s.Total),
		SpendGaps: append([]string{}, s.SpendGaps...), CostGaps: append([]string{}, s.CostGaps...)}
	for id, n := range s.Nodes {
		out.Nodes[id] = nodeSpendToAPI(n)
	}
	return out
}

func nodeSpendToAPI(n execution.NodeSpend) restapi.NodeSpend {
	out := restapi.NodeSpend{Tasks: n.Tasks, UsageReports: n.UsageReports, CostReports: n.CostReports,
		UsageKnown: n.UsageKnown, CostKnown: n.CostKnown}
	if u := n.Usage; u != nil {
		out.Usage = &restapi.SpendUsage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
			Reasoning: u.Reasoning, TokensKnown: u.TokensKnown}
	}
	if c := n.Cost; c != nil {
		out.Cost = &restapi.SpendCost{Usd: c.USD, UsdKnown: c.USDKnown, Provenance: restapi.SpendCostProvenance(c.Provenance)}
	}
	return out
}
