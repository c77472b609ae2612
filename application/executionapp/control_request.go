package executionapp

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// ControlRequest is a command as a door receives it. The Control use case
// checks it, builds the domain command and applies it, so every door (REST,
// MCP, CLI, supervisors) refuses the same things in the same words.
type ControlRequest struct {
	SessionID   string
	ExecutionID string // execution and node commands
	WorkflowID  string // STOP_ALL
	NodeID      string // node commands
	// Scope is where the door sent the command. A STOP_ALL sent at
	// execution scope (one tool for execution and workflow commands) is a
	// workflow command.
	Scope      execution.Scope
	Action     string
	Mode       string
	FromNodeID string
	Immediate  bool
	Reason     string
	// Cause is what the sender reacted to (a supervisor's signal cursor);
	// it is recorded in the command's events and so in the journal.
	Cause    string
	Key      string
	IfStatus string
	// WaitSecs blocks the answer (at most execution.MaxWait) until the
	// command's effect is visible: see Control.Handle.
	WaitSecs   float64
	Breakpoint *BreakpointRequest
	Actor      string
	Channel    string
	// Origin is what caused the command: the run a restart starts gets it.
	// Only the supervisor intake sets it.
	Origin Origin
}

// BreakpointRequest is a breakpoint as sent: field and equals, or a CEL
// condition.
type BreakpointRequest struct {
	Field     string
	Equals    any
	HasEquals bool // equals was sent (it may be JSON null)
	Condition string
}

// ConditionChecker compiles a breakpoint condition without running it.
type ConditionChecker interface {
	CheckCondition(expr string) error
}

// command checks a request's addressing and builds the domain command,
// reporting every problem at once.
func (uc *Control) command(ctx context.Context, r ControlRequest) (ControlInput, error) {
	in := ControlInput{SessionID: r.SessionID, ExecutionID: r.ExecutionID, WorkflowID: r.WorkflowID, Cause: r.Cause, Origin: r.Origin}
	scope := r.Scope
	action := execution.Action(strings.ToUpper(strings.TrimSpace(r.Action)))
	if scope == execution.ScopeExecution && slices.Contains(execution.Actions(execution.ScopeWorkflow), action) {
		scope = execution.ScopeWorkflow
	}
	var vs []fault.Violation
	switch {
	case scope == execution.ScopeWorkflow && r.WorkflowID == "":
		vs = append(vs, fault.Violation{Path: "workflowId", Message: "workflowId is required for " + orAction(r.Action) + "."})
	case scope == execution.ScopeWorkflow && r.ExecutionID != "" && action == execution.ActionStopAll:
		vs = append(vs, fault.Violation{Path: "executionId", Message: "must be left out for STOP_ALL, which stops every active execution of workflowId; use STOP for one execution"})
	case scope == execution.ScopeWorkflow && r.ExecutionID != "":
		vs = append(vs, fault.Violation{Path: "executionId", Message: "must be left out for " + string(action) +
			", which acts on the workflow and its runs; use PAUSE or RESUME for one execution"})
	case scope != execution.ScopeWorkflow && r.ExecutionID == "":
		vs = append(vs, fault.Violation{Path: "executionId", Message: "executionId is required for " + orAction(r.Action) + "."})
	}
	if scope != execution.ScopeWorkflow {
		in.WorkflowID = ""
	}
	ci := execution.CommandInput{Scope: scope, Action: r.Action, Mode: r.Mode, NodeID: r.NodeID, FromNodeID: r.FromNodeID,
		Immediate: r.Immediate, Reason: r.Reason, Key: r.Key, IfStatus: r.IfStatus, WaitSecs: r.WaitSecs,
		Actor: r.Actor, Channel: r.Channel}
	if b := r.Breakpoint; b != nil {
		bp, err := execution.NewBreakpoint(b.Field, b.Equals, b.HasEquals, b.Condition)
		switch {
		case err != nil:
			if vs, err = collect(vs, err); err != nil {
				return ControlInput{}, err
			}
		case bp.Condition != "" && uc.conditions != nil:
			if err := uc.conditions.CheckCondition(bp.Condition); err != nil {
				vs = append(vs, fault.Violation{Path: "condition", Message: err.Error()})
			}
		}
		ci.Breakpoint = &bp
	}
	cmd, err := execution.NewCommand(ci)
	if vs, err = collect(vs, err); err != nil {
		return ControlInput{}, err
	}
	if len(vs) > 0 {
		return ControlInput{}, &fault.ValidationError{Subject: "command", Violations: vs}
	}
	if scope == execution.ScopeWorkflow && cmd.Action != execution.ActionResumeWorkflow {
		// An unknown workflow is not found, not "nothing to stop". A
		// RESUME_WORKFLOW may lift the pause of a workflow that was removed
		// from the session since (resumeWorkflow looks).
		if _, err := uc.workflows.Workflow(ctx, r.SessionID, r.WorkflowID); err != nil {
			return ControlInput{}, err
		}
	}
	in.Command = cmd
	return in, nil
}

// collect adds a validation error's problems to vs; any other error is
// returned as it is.
func collect(vs []fault.Violation, err error) ([]fault.Violation, error) {
	if ve, ok := errors.AsType[*fault.ValidationError](err); ok {
		return append(vs, ve.Violations...), nil
	}
	return vs, err
}

func orAction(a string) string {
	if a = strings.ToUpper(strings.TrimSpace(a)); a != "" {
		return "action " + a
	}
	return "this command"
}
