package mcpserver

import (
	"context"
	"fmt"
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
	SessionID   string `json:"sessionId" jsonschema:"session id"`
	Action      string `json:"action" jsonschema:"PAUSE, RESUME, STOP, STOP_ALL, RESTART or RESTART_FROM_NODE"`
	ExecutionID string `json:"executionId,omitempty" jsonschema:"execution id; required for every action but STOP_ALL"`
	WorkflowID  string `json:"workflowId,omitempty" jsonschema:"workflow id; required for STOP_ALL, which stops every active execution of it in the session"`
	FromNodeID  string `json:"fromNodeId,omitempty" jsonschema:"node to restart from; required for RESTART_FROM_NODE"`
	Mode        string `json:"mode,omitempty" jsonschema:"STOP and STOP_ALL only: DRAIN (queued work finishes), CANCEL (default: queued work dropped) or KILL (running work cancelled too)"`
	Reason      string `json:"reason,omitempty" jsonschema:"why, recorded with the command (at most 1024 characters)"`
	Key         string `json:"key,omitempty" jsonschema:"idempotency key (at most 128 characters): repeating a command with the same key returns the first answer and does nothing again"`
	IfStatus    string `json:"ifStatus,omitempty" jsonschema:"apply only if the execution is in this status, else a conflict naming the actual status"`
}

// ControlNodeIn is a node-scoped command.
type ControlNodeIn struct {
	SessionID   string `json:"sessionId" jsonschema:"session id"`
	ExecutionID string `json:"executionId" jsonschema:"execution id"`
	NodeID      string `json:"nodeId" jsonschema:"node id, from get_workflow_status"`
	Action      string `json:"action" jsonschema:"PAUSE, RESUME, STOP, STEP_ENABLE, STEP, STEP_DISABLE, SKIP, UNSKIP, RETRY or BREAKPOINT_CLEAR"`
	Immediate   bool   `json:"immediate,omitempty" jsonschema:"STOP only: also cancel the message the node is running"`
	Reason      string `json:"reason,omitempty" jsonschema:"why, recorded with the command"`
	Key         string `json:"key,omitempty" jsonschema:"idempotency key: repeating a command with the same key returns the first answer and does nothing again"`
	IfStatus    string `json:"ifStatus,omitempty" jsonschema:"apply only if the node is in this status"`
}

// BreakpointIn sets a breakpoint on a node.
type BreakpointIn struct {
	SessionID   string `json:"sessionId" jsonschema:"session id"`
	ExecutionID string `json:"executionId" jsonschema:"execution id"`
	NodeID      string `json:"nodeId" jsonschema:"node id"`
	Field       string `json:"field,omitempty" jsonschema:"dotted payload path, such as order.status; give field and equals, or condition"`
	Equals      any    `json:"equals,omitempty" jsonschema:"the value of field that pauses the node (numbers compare by value)"`
	Condition   string `json:"condition,omitempty" jsonschema:"CEL condition over payload instead of field/equals, such as payload.amount > 100"`
	Reason      string `json:"reason,omitempty" jsonschema:"why, recorded with the command"`
	Key         string `json:"key,omitempty" jsonschema:"idempotency key"`
}

// CommandOut is the answer to a command. "accepted" and "applied" mean the
// command is recorded; effects show in get_workflow_status.
type CommandOut struct {
	CommandID          string   `json:"commandId"`
	Status             string   `json:"status" jsonschema:"applied, accepted (a DRAIN still finishing) or rejected"`
	Message            string   `json:"message,omitempty"`
	ResultExecutionIDs []string `json:"resultExecutionIds" jsonschema:"the new executions RESTART, RESTART_FROM_NODE and RETRY started, or the executions STOP_ALL stopped"`
	Next               string   `json:"next"`
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
			"RESTART and RESTART_FROM_NODE return the new execution ids. Pass a key to make a retried call safe. Next: get_workflow_status.",
		InputSchema: withEnums[ControlWorkflowIn](map[string][]string{"action": wfActions, "mode": {"DRAIN", "CANCEL", "KILL"}})},
		s.controlWorkflow)
	addTool(m, &mcp.Tool{Name: "control_node", Annotations: annotated(destructive, "Control a node"),
		Description: "Steer one node of an execution: PAUSE, RESUME, STOP, STEP_ENABLE/STEP/STEP_DISABLE (one message per STEP), SKIP/UNSKIP (pass input through), " +
			"RETRY (a new execution from this node, id in resultExecutionIds) or BREAKPOINT_CLEAR. Next: get_workflow_status.",
		InputSchema: withEnums[ControlNodeIn](map[string][]string{"action": actions(execution.ScopeNode)})},
		s.controlNode)
	addTool(m, &mcp.Tool{Name: "set_node_breakpoint", Annotations: annotated(additive, "Set a breakpoint"),
		Description: "Pause a node before a message whose payload field equals a value (or a CEL condition holds). Clear it with control_node BREAKPOINT_CLEAR; continue with control_node RESUME or STEP."},
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
	act := strings.ToUpper(strings.TrimSpace(in.Action))
	ci := execution.CommandInput{Scope: execution.ScopeExecution, Action: in.Action, Mode: in.Mode, FromNodeID: in.FromNodeID,
		Reason: in.Reason, Key: in.Key, IfStatus: in.IfStatus, Actor: p.Actor(), Channel: Channel}
	target := executionapp.ControlInput{SessionID: in.SessionID, ExecutionID: in.ExecutionID}
	switch {
	case act == string(execution.ActionStopAll) && in.WorkflowID == "":
		return nil, CommandOut{}, s.toolError(tool, invalid("workflowId is required for action STOP_ALL. Use get_session_details to list the workflows."), subj)
	case act == string(execution.ActionStopAll):
		if in.ExecutionID != "" {
			return nil, CommandOut{}, s.toolError(tool, invalid("STOP_ALL stops every active execution of workflowId; leave executionId out, or use STOP for one execution."), subj)
		}
		if _, err := s.d.GetWorkflow.Handle(ctx, in.SessionID, in.WorkflowID); err != nil {
			return nil, CommandOut{}, s.toolError(tool, err, subj)
		}
		ci.Scope = execution.ScopeWorkflow
		target = executionapp.ControlInput{SessionID: in.SessionID, WorkflowID: in.WorkflowID}
	case in.ExecutionID == "" && act != "":
		return nil, CommandOut{}, s.toolError(tool, invalid(fmt.Sprintf("executionId is required for action %s. Use get_workflow_history to list executions.", act)), subj)
	case act == string(execution.ActionRestartFromNode) && in.FromNodeID == "":
		return nil, CommandOut{}, s.toolError(tool, invalid("fromNodeId is required for action RESTART_FROM_NODE. Use get_workflow_status to see the nodes."), subj)
	}
	if (act == string(execution.ActionStop) || act == string(execution.ActionStopAll)) && ci.Reason == "" {
		ci.Reason = defaultStopReason
	}
	return s.command(ctx, tool, subj, target, ci)
}

func (s *server) controlNode(ctx context.Context, _ *mcp.CallToolRequest, in ControlNodeIn) (*mcp.CallToolResult, CommandOut, error) {
	const tool = "control_node"
	subj := subject{Session: in.SessionID, Execution: in.ExecutionID}
	p := caller(ctx)
	if err := p.Can(access.ControlExecution, in.SessionID); err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	act := strings.ToUpper(strings.TrimSpace(in.Action))
	if act == string(execution.ActionBreakpoint) {
		return nil, CommandOut{}, s.toolError(tool, invalid("BREAKPOINT is set with set_node_breakpoint; control_node clears it with BREAKPOINT_CLEAR."), subj)
	}
	ci := execution.CommandInput{Scope: execution.ScopeNode, Action: in.Action, NodeID: in.NodeID, Immediate: in.Immediate,
		Reason: in.Reason, Key: in.Key, IfStatus: in.IfStatus, Actor: p.Actor(), Channel: Channel}
	if act == string(execution.ActionStop) && ci.Reason == "" {
		ci.Reason = defaultStopReason
	}
	return s.command(ctx, tool, subj, executionapp.ControlInput{SessionID: in.SessionID, ExecutionID: in.ExecutionID}, ci)
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
	bp, err := execution.NewBreakpoint(in.Field, equals, equals != nil, in.Condition)
	if err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	if bp.Condition != "" && s.d.CheckCondition != nil {
		if err := s.d.CheckCondition(bp.Condition); err != nil {
			return nil, CommandOut{}, s.toolError(tool, &fault.ValidationError{Subject: "breakpoint",
				Violations: []fault.Violation{{Path: "condition", Message: err.Error()}}}, subj)
		}
	}
	return s.command(ctx, tool, subj, executionapp.ControlInput{SessionID: in.SessionID, ExecutionID: in.ExecutionID}, execution.CommandInput{
		Scope: execution.ScopeNode, Action: string(execution.ActionBreakpoint), NodeID: in.NodeID, Breakpoint: &bp,
		Reason: in.Reason, Key: in.Key, Actor: p.Actor(), Channel: Channel})
}

// command validates and applies one command through the Control use case,
// the same one REST uses.
func (s *server) command(ctx context.Context, tool string, subj subject, target executionapp.ControlInput, ci execution.CommandInput) (*mcp.CallToolResult, CommandOut, error) {
	cmd, err := execution.NewCommand(ci)
	if err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	target.Command = cmd
	res, err := s.d.Control.Handle(ctx, target)
	if err != nil {
		return nil, CommandOut{}, s.toolError(tool, err, subj)
	}
	out := CommandOut{CommandID: res.CommandID, Status: res.Status, Message: res.Message, ResultExecutionIDs: nonNil(res.ResultExecutionIDs),
		Next: "The command is recorded, not necessarily in effect yet: call get_workflow_status to see it."}
	if len(out.ResultExecutionIDs) > 0 && cmd.Action != execution.ActionStopAll {
		out.Next = "A new execution was started: poll get_workflow_status with its id (resultExecutionIds) until terminal is true."
	}
	return nil, out, nil
}

// invalid is an argument error whose text is the sentence itself.
func invalid(msg string) error { return fault.Newf(fault.ErrInvalid, "%s", msg) }
