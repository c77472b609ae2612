package mcpserver

import (
	"context"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// ControlWorkflowIn is an execution- or workflow-scoped command.
type ControlWorkflowIn struct {
	SessionID   string  `json:"sessionId" jsonschema:"session id"`
	Action      string  `json:"action" jsonschema:"PAUSE, RESUME, STOP, STOP_ALL, RESTART, RESTART_FROM_NODE, PAUSE_WORKFLOW or RESUME_WORKFLOW"`
	ExecutionID string  `json:"executionId,omitempty" jsonschema:"execution id; required for every action but STOP_ALL, PAUSE_WORKFLOW and RESUME_WORKFLOW"`
	WorkflowID  string  `json:"workflowId,omitempty" jsonschema:"workflow id; required for STOP_ALL (stops every active execution of it in the session), PAUSE_WORKFLOW and RESUME_WORKFLOW"`
	FromNodeID  string  `json:"fromNodeId,omitempty" jsonschema:"node to restart from; required for RESTART_FROM_NODE"`
	Mode        string  `json:"mode,omitempty" jsonschema:"STOP and STOP_ALL only: DRAIN (queued work finishes), CANCEL (default: queued work dropped) or KILL (running work cancelled too)"`
	Reason      string  `json:"reason,omitempty" jsonschema:"why, recorded with the command (at most 1024 characters)"`
	Key         string  `json:"key,omitempty" jsonschema:"idempotency key (at most 128 characters): repeating a command with the same key returns the first answer and does nothing again"`
	IfStatus    string  `json:"ifStatus,omitempty" jsonschema:"apply only if the execution is in this status, else a conflict naming the actual status"`
	Wait        float64 `json:"wait,omitempty" jsonschema:"0 to 60 seconds to wait for the effect: a DRAIN until the stopped runs have ended, a RESTART or RESTART_FROM_NODE until the new run has ended (returned in executions)"`
}

// ControlNodeIn is a node-scoped command.
type ControlNodeIn struct {
	SessionID   string  `json:"sessionId" jsonschema:"session id"`
	ExecutionID string  `json:"executionId" jsonschema:"execution id"`
	NodeID      string  `json:"nodeId" jsonschema:"node id, from get_workflow_status"`
	Action      string  `json:"action" jsonschema:"PAUSE, RESUME, STOP, STEP_ENABLE, STEP, STEP_DISABLE, SKIP, UNSKIP, RETRY or BREAKPOINT_CLEAR"`
	Immediate   bool    `json:"immediate,omitempty" jsonschema:"STOP only: also cancel the message the node is running"`
	Reason      string  `json:"reason,omitempty" jsonschema:"why, recorded with the command"`
	Key         string  `json:"key,omitempty" jsonschema:"idempotency key: repeating a command with the same key returns the first answer and does nothing again"`
	IfStatus    string  `json:"ifStatus,omitempty" jsonschema:"apply only if the node is in this status"`
	Wait        float64 `json:"wait,omitempty" jsonschema:"0 to 60 seconds to wait for the effect: a RETRY until the new run has ended (returned in executions)"`
}

// BreakpointIn sets a breakpoint on a node.
type BreakpointIn struct {
	SessionID   string  `json:"sessionId" jsonschema:"session id"`
	ExecutionID string  `json:"executionId" jsonschema:"execution id"`
	NodeID      string  `json:"nodeId" jsonschema:"node id"`
	Field       string  `json:"field,omitempty" jsonschema:"dotted payload path, such as order.status; give field and equals, or condition"`
	Equals      any     `json:"equals,omitempty" jsonschema:"the value of field that pauses the node (numbers compare by value)"`
	Condition   string  `json:"condition,omitempty" jsonschema:"CEL condition over payload instead of field/equals, such as payload.amount > 100"`
	Reason      string  `json:"reason,omitempty" jsonschema:"why, recorded with the command"`
	Key         string  `json:"key,omitempty" jsonschema:"idempotency key"`
	Wait        float64 `json:"wait,omitempty" jsonschema:"0 to 60 seconds; a breakpoint is in effect when it is recorded, so the answer does not wait"`
}

// CommandOut is the answer to a command. "accepted" and "applied" mean the
// command is recorded; effects show in get_workflow_status.
type CommandOut struct {
	CommandID          string            `json:"commandId"`
	Status             string            `json:"status" jsonschema:"applied, accepted (a DRAIN still finishing), rejected, or review (a supervisor holds the command for review and nothing was applied yet: see review)"`
	Message            string            `json:"message,omitempty"`
	ResultExecutionIDs []string          `json:"resultExecutionIds" jsonschema:"the new executions RESTART, RESTART_FROM_NODE and RETRY started, or the executions STOP_ALL stopped"`
	Executions         []ExecutionStatus `json:"executions,omitempty" jsonschema:"with wait: the executions the command stopped or started, as the wait left them (final when terminal is true)"`
	Review             *ReviewOut        `json:"review,omitempty" jsonschema:"set when a supervisor reviews the command: where its review stands (with wait, how it ended)"`
	Next               string            `json:"next"`
}

// withEnums is the inferred input schema of In with enums on some properties.
func withEnums[In any](enums map[string][]string) *jsonschema.Schema {
	sch, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err)
	}
	for prop, vals := range enums {
		p := sch.Properties[prop]
		for _, v := range vals {
			p.Enum = append(p.Enum, v)
		}
	}
	return sch
}

func actions(s execution.Scope) []string {
	var out []string
	for _, a := range execution.Actions(s) {
		if a != execution.ActionBreakpoint { // set_node_breakpoint sets breakpoints
			out = append(out, string(a))
		}
	}
	return out
}

func (s *server) addControlTools(m *mcp.Server) {
	wfActions := append(actions(execution.ScopeExecution), actions(execution.ScopeWorkflow)...)
	addTool(m, &mcp.Tool{Name: "control_workflow", Annotations: annotated(destructive, "Control an execution"),
		Description: "PAUSE, RESUME, STOP (mode DRAIN, CANCEL or KILL), RESTART or RESTART_FROM_NODE one execution, or STOP_ALL active executions of a workflow. " +
			"PAUSE_WORKFLOW pauses a workflow (workflowId): its active runs, and every new start of it is refused until RESUME_WORKFLOW. " +
			"RESTART and RESTART_FROM_NODE return the new execution ids. Pass a key to make a retried call safe, and wait (up to 60 s) to get the effect in the answer. " +
			"A command a supervisor reviews answers status review with its review (nothing applied yet; next says how to follow it). Next: get_workflow_status.",
		InputSchema: bounded(withEnums[ControlWorkflowIn](map[string][]string{"action": wfActions, "mode": {"DRAIN", "CANCEL", "KILL"}}), "wait")},
		s.controlWorkflow)
	addTool(m, &mcp.Tool{Name: "control_node", Annotations: annotated(destructive, "Control a node"),
		Description: "Steer one node of an execution: PAUSE, RESUME, STOP, STEP_ENABLE/STEP/STEP_DISABLE (one message per STEP), SKIP/UNSKIP (pass input through), " +
			"RETRY (a new execution from this node, id in resultExecutionIds; with wait, its final status in executions) or BREAKPOINT_CLEAR. " +
			"A command a supervisor reviews answers status review with its review (nothing applied yet). Next: get_workflow_status.",
		InputSchema: bounded(withEnums[ControlNodeIn](map[string][]string{"action": actions(execution.ScopeNode)}), "wait")},
		s.controlNode)
	addTool(m, &mcp.Tool{Name: "set_node_breakpoint", Annotations: annotated(additive, "Set a breakpoint"),
		Description: "Pause a node before a message whose payload field equals a value (or a CEL condition holds). Clear it with control_node BREAKPOINT_CLEAR. When it hits, the node is PAUSED: control_node RESUME lets the held message run; to go one message at a time, send STEP_ENABLE and RESUME, then one STEP per message. " +
			"A breakpoint a supervisor reviews answers status review with its review (not set yet).",
		InputSchema: waitSchema[BreakpointIn]("wait")},
		s.setBreakpoint)
}

// defaultStopReason is recorded for a STOP an agent gives no reason for.
const defaultStopReason = "Requested via MCP"

func (s *server) controlWorkflow(ctx context.Context, _ *mcp.CallToolRequest, in ControlWorkflowIn) (*mcp.CallToolResult, CommandOut, error) {
	const tool = "control_workflow"
	subj := subject{Session: in.SessionID, Execution: in.ExecutionID, Workflow: in.WorkflowID}
	p := caller(ctx)
	if err := p.Can(access.ControlExecution, in.SessionID); err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	return s.command(ctx, tool, subj, executionapp.ControlRequest{SessionID: in.SessionID, ExecutionID: in.ExecutionID, WorkflowID: in.WorkflowID,
		Scope: execution.ScopeExecution, Action: in.Action, Mode: in.Mode, FromNodeID: in.FromNodeID, Reason: stopReason(in.Action, in.Reason),
		Key: in.Key, IfStatus: in.IfStatus, WaitSecs: in.Wait, Actor: p.Actor(), Channel: Channel})
}

func (s *server) controlNode(ctx context.Context, _ *mcp.CallToolRequest, in ControlNodeIn) (*mcp.CallToolResult, CommandOut, error) {
	const tool = "control_node"
	subj := subject{Session: in.SessionID, Execution: in.ExecutionID}
	p := caller(ctx)
	if err := p.Can(access.ControlExecution, in.SessionID); err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	return s.command(ctx, tool, subj, executionapp.ControlRequest{SessionID: in.SessionID, ExecutionID: in.ExecutionID, NodeID: in.NodeID,
		Scope: execution.ScopeNode, Action: in.Action, Immediate: in.Immediate, Reason: stopReason(in.Action, in.Reason),
		Key: in.Key, IfStatus: in.IfStatus, WaitSecs: in.Wait, Actor: p.Actor(), Channel: Channel})
}

// stopReason is the reason recorded for a command: an agent's STOP without
// one is recorded as the seed's "Requested via MCP".
func stopReason(action, reason string) string {
	if reason == "" && slices.Contains([]string{"STOP", "STOP_ALL"}, strings.ToUpper(strings.TrimSpace(action))) {
		return defaultStopReason
	}
	return reason
}

func (s *server) setBreakpoint(ctx context.Context, req *mcp.CallToolRequest, in BreakpointIn) (*mcp.CallToolResult, CommandOut, error) {
	const tool = "set_node_breakpoint"
	subj := subject{Session: in.SessionID, Execution: in.ExecutionID}
	p := caller(ctx)
	if err := p.Can(access.SetBreakpoint, in.SessionID); err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	equals := in.Equals
	if raw, ok := rawArgument(req, "equals"); ok {
		equals = raw // exact numbers, not the SDK's float64
	}
	return s.command(ctx, tool, subj, executionapp.ControlRequest{SessionID: in.SessionID, ExecutionID: in.ExecutionID, NodeID: in.NodeID,
		Scope: execution.ScopeNode, Action: string(execution.ActionBreakpoint),
		Breakpoint: &executionapp.BreakpointRequest{Field: in.Field, Equals: equals, HasEquals: equals != nil, Condition: in.Condition},
		Reason:     in.Reason, Key: in.Key, WaitSecs: in.Wait, Actor: p.Actor(), Channel: Channel})
}

// command applies one command through the Control use case, the same one
// REST uses, and maps its answer.
func (s *server) command(ctx context.Context, tool string, subj subject, r executionapp.ControlRequest) (*mcp.CallToolResult, CommandOut, error) {
	res, err := s.d.Control.Handle(ctx, r)
	if err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	out := CommandOut{CommandID: res.CommandID, Status: res.Status, Message: res.Message, ResultExecutionIDs: nonNil(res.ResultExecutionIDs),
		Next: "The command is recorded, not necessarily in effect yet: call get_workflow_status to see it."}
	if res.Review != nil {
		out.Review = ticketOut(*res.Review)
		if res.Status == executionapp.CommandInReview {
			out.Message = sanitizeText(res.Message, MaxLogLineBytes)
			out.Next = heldNext(tool, "key", "wait", r.Key != "", *res.Review)
			return nil, out, nil
		}
	}
	workflowScope := slices.Contains(execution.Actions(execution.ScopeWorkflow), execution.Action(strings.ToUpper(strings.TrimSpace(r.Action))))
	if len(out.ResultExecutionIDs) > 0 && !workflowScope {
		out.Next = "A new execution was started: call get_workflow_status with its id (resultExecutionIds) until terminal is true, or send the command with wait to get its end in the answer."
	}
	for _, o := range res.Waited {
		out.Executions = append(out.Executions, statusOut(o.ExecutionView))
	}
	if len(out.Executions) > 0 {
		out.Next = "executions holds the runs as the wait left them: those with terminal true have ended; call get_workflow_status for the others."
	}
	return nil, out, nil
}

// waitSchema is the inferred input schema of In with its wait property
// bounded to 0–60 seconds.
func waitSchema[In any](prop string) *jsonschema.Schema {
	sch, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err)
	}
	return bounded(sch, prop)
}

// bounded sets a wait property's range: 0 to execution.MaxWait seconds.
func bounded(sch *jsonschema.Schema, prop string) *jsonschema.Schema {
	lo, hi := 0.0, execution.MaxWait.Seconds()
	p := sch.Properties[prop]
	p.Minimum, p.Maximum = &lo, &hi
	return sch
}

// invalid is an argument error whose text is the sentence itself.
func invalid(msg string) error { return fault.Newf(fault.ErrInvalid, "%s", msg) }
