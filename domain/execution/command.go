package execution

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
)

// Scope is what a command targets.
type Scope string

// The scopes of control commands.
const (
	ScopeExecution Scope = "execution"
	ScopeWorkflow  Scope = "workflow"
	ScopeNode      Scope = "node"
)

// Action is what a command does.
type Action string

// The control actions (DESIGN §5).
const (
	ActionPause   Action = "PAUSE"
	ActionResume  Action = "RESUME"
	ActionStop    Action = "STOP"
	ActionStopAll Action = "STOP_ALL"
	// ActionPauseWorkflow pauses a workflow: its active runs are paused
	// and no new run of it starts until ActionResumeWorkflow (WorkflowPause).
	ActionPauseWorkflow   Action = "PAUSE_WORKFLOW"
	ActionResumeWorkflow  Action = "RESUME_WORKFLOW"
	ActionRestart         Action = "RESTART"
	ActionRestartFromNode Action = "RESTART_FROM_NODE"
	ActionStepEnable      Action = "STEP_ENABLE"
	ActionStep            Action = "STEP"
	ActionStepDisable     Action = "STEP_DISABLE"
	ActionSkip            Action = "SKIP"
	ActionUnskip          Action = "UNSKIP"
	ActionRetry           Action = "RETRY"
	ActionBreakpoint      Action = "BREAKPOINT"
	ActionBreakpointClear Action = "BREAKPOINT_CLEAR"
)

// actions lists the actions each scope accepts, in the order errors list them.
var actions = map[Scope][]Action{
	ScopeExecution: {ActionPause, ActionResume, ActionStop, ActionRestart, ActionRestartFromNode},
	ScopeWorkflow:  {ActionStopAll, ActionPauseWorkflow, ActionResumeWorkflow},
	ScopeNode: {ActionPause, ActionResume, ActionStop, ActionStepEnable, ActionStep, ActionStepDisable,
		ActionSkip, ActionUnskip, ActionRetry, ActionBreakpoint, ActionBreakpointClear},
}

// StopMode says how a STOP treats the work of a run.
type StopMode string

// The stop modes.
const (
	Drain  StopMode = "DRAIN"
	Cancel StopMode = "CANCEL"
	Kill   StopMode = "KILL"
)

// DefaultStopMode drops queued work but lets running plugins finish: it
// never leaves a half-done side effect and never waits for a long queue.
const DefaultStopMode = Cancel

// Limits of command arguments.
const (
	MaxWait      = 60 * time.Second
	MaxReasonLen = 1024
	MaxKeyLen    = 128
)

// Command is a validated control command. Actor and Channel say who sent it
// and through which door; both are recorded with its effect.
type Command struct {
	Scope      Scope
	Action     Action
	Mode       StopMode
	NodeID     string
	FromNodeID string
	Immediate  bool
	Reason     string
	Key        string
	IfStatus   string
	Wait       time.Duration
	Breakpoint *Breakpoint
	Actor      string
	Channel    string
}

// CommandInput is a command as a client sends it, before validation.
type CommandInput struct {
	Scope      Scope
	Action     string
	Mode       string
	NodeID     string
	FromNodeID string
	Immediate  bool
	Reason     string
	Key        string
	IfStatus   string
	WaitSecs   float64
	Breakpoint *Breakpoint
	Actor      string
	Channel    string
}

// NewCommand validates a command and reports every problem at once, each
// naming the argument and what to send instead.
func NewCommand(in CommandInput) (Command, error) {
	var vs []fault.Violation
	bad := func(path, format string, args ...any) {
		vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	valid := actions[in.Scope]
	if valid == nil {
		return Command{}, fmt.Errorf("execution: unknown command scope %q", in.Scope)
	}
	act := Action(strings.ToUpper(strings.TrimSpace(in.Action)))
	switch {
	case in.Action == "":
		bad("action", "is required; one of %s", joinActions(valid))
	case !slices.Contains(valid, act):
		bad("action", "%q is not %s %s action; use one of %s", in.Action, article(in.Scope), in.Scope, joinActions(valid))
	}
	c := Command{Scope: in.Scope, Action: act, NodeID: in.NodeID, FromNodeID: in.FromNodeID, Immediate: in.Immediate,
		Reason: in.Reason, Key: in.Key, IfStatus: strings.ToUpper(in.IfStatus), Breakpoint: in.Breakpoint,
		Actor: in.Actor, Channel: in.Channel}

	stops := act == ActionStop && in.Scope != ScopeNode || act == ActionStopAll
	switch {
	case in.Mode == "" && stops:
		c.Mode = DefaultStopMode
	case in.Mode == "":
	case in.Scope == ScopeNode && act == ActionStop:
		bad("mode", "applies only to an execution STOP and to STOP_ALL; a node STOP has no mode (send immediate=true to also cancel its running message)")
	case !stops:
		bad("mode", "applies only to STOP and STOP_ALL, not %s; leave it out", act)
	default:
		c.Mode = StopMode(strings.ToUpper(in.Mode))
		if !slices.Contains([]StopMode{Drain, Cancel, Kill}, c.Mode) {
			bad("mode", "%q is not a stop mode; use DRAIN (finish queued work), CANCEL (drop queued work) or KILL (also cancel running work)", in.Mode)
		}
	}
	if act == ActionRestartFromNode && in.FromNodeID == "" {
		bad("fromNodeId", "fromNodeId is required for action RESTART_FROM_NODE.")
	}
	if in.FromNodeID != "" && act != ActionRestartFromNode && act != "" {
		bad("fromNodeId", "applies only to RESTART_FROM_NODE; leave it out for %s", act)
	}
	if in.Immediate && !(in.Scope == ScopeNode && act == ActionStop) {
		bad("immediate", "applies only to a node STOP")
	}
	if act == ActionBreakpoint && in.Breakpoint == nil {
		bad("breakpoint", `BREAKPOINT needs {"field","equals"} or {"condition"}`)
	}
	if in.Scope == ScopeNode && in.NodeID == "" {
		bad("nodeId", "is required for node commands")
	}
	// Lengths count characters (code points), as the API's maxLength does.
	if n := utf8.RuneCountInString(in.Reason); n > MaxReasonLen {
		bad("reason", "is %d characters long; the limit is %d", n, MaxReasonLen)
	}
	if n := utf8.RuneCountInString(in.Key); n > MaxKeyLen {
		bad("key", "is %d characters long; the limit is %d", n, MaxKeyLen)
	}
	switch {
	case in.IfStatus == "":
	case in.Scope == ScopeWorkflow:
		// STOP_ALL acts on every active execution; there is no one status to test.
		bad("ifStatus", "applies only to execution and node commands; leave it out for %s", orWorkflowAction(act))
	default:
		ok, valid := Status(c.IfStatus).Valid(), fmt.Sprint(Statuses)
		if in.Scope == ScopeNode {
			ok, valid = NodeStatus(c.IfStatus).Valid(), fmt.Sprint(NodeStatuses)
		}
		if !ok {
			bad("ifStatus", "%q is not a status %s %s can have; use one of %s", in.IfStatus, article(in.Scope), in.Scope,
				strings.ReplaceAll(strings.Trim(valid, "[]"), " ", ", "))
		}
	}
	switch {
	case !(in.WaitSecs >= 0 && in.WaitSecs <= MaxWait.Seconds()): // also refuses NaN
		bad("wait", "must be between 0 and %d seconds, got %v", int(MaxWait.Seconds()), in.WaitSecs)
	default:
		c.Wait = time.Duration(in.WaitSecs * float64(time.Second))
	}
	if len(vs) > 0 {
		return Command{}, &fault.ValidationError{Subject: "command", Violations: vs}
	}
	return c, nil
}

// orWorkflowAction names a workflow action in a refusal, STOP_ALL when the
// action itself was not one.
func orWorkflowAction(a Action) string {
	if slices.Contains(actions[ScopeWorkflow], a) {
		return string(a)
	}
	return string(ActionStopAll)
}

// Actions returns the actions a scope accepts.
func Actions(s Scope) []Action { return slices.Clone(actions[s]) }

func article(s Scope) string {
	if s == ScopeExecution {
		return "an"
	}
	return "a"
}

func joinActions(as []Action) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}
