package postgres_test

import "github.com/yukta/yukta/application/executionapp"

// requestOf turns a validated command back into the request a door sends,
// so the model test, which draws domain commands, goes through the same
// checks as REST and MCP.
func requestOf(in executionapp.ControlInput) executionapp.ControlRequest {
	c := in.Command
	r := executionapp.ControlRequest{SessionID: in.SessionID, ExecutionID: in.ExecutionID, WorkflowID: in.WorkflowID,
		NodeID: c.NodeID, Scope: c.Scope, Action: string(c.Action), Mode: string(c.Mode), FromNodeID: c.FromNodeID,
		Immediate: c.Immediate, Reason: c.Reason, Key: c.Key, IfStatus: c.IfStatus, WaitSecs: c.Wait.Seconds(),
		Actor: c.Actor, Channel: c.Channel}
	if bp := c.Breakpoint; bp != nil {
		r.Breakpoint = &executionapp.BreakpointRequest{Field: bp.Field, Equals: bp.Equals, HasEquals: bp.Field != "", Condition: bp.Condition}
	}
	return r
}
