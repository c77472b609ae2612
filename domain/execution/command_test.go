package execution_test

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

const (
	executionActions = "PAUSE, RESUME, STOP, RESTART, RESTART_FROM_NODE"
	nodeActions      = "PAUSE, RESUME, STOP, STEP_ENABLE, STEP, STEP_DISABLE, SKIP, UNSKIP, RETRY, BREAKPOINT, BREAKPOINT_CLEAR"
)

func TestNewCommandValid(t *testing.T) {
	t.Parallel()
	bp := &execution.Breakpoint{Field: "status", Equals: "error"}
	tests := []struct {
		name string
		in   execution.CommandInput
		want execution.Command
	}{
		{"execution pause", execution.CommandInput{Scope: execution.ScopeExecution, Action: "PAUSE"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionPause}},
		{"lower-case action", execution.CommandInput{Scope: execution.ScopeExecution, Action: "pause"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionPause}},
		{"mixed case, padded action", execution.CommandInput{Scope: execution.ScopeExecution, Action: " Resume\t"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionResume}},
		{"stop defaults to CANCEL", execution.CommandInput{Scope: execution.ScopeExecution, Action: "STOP"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Cancel}},
		{"stop drain, lower case", execution.CommandInput{Scope: execution.ScopeExecution, Action: "stop", Mode: "drain"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Drain}},
		{"stop kill", execution.CommandInput{Scope: execution.ScopeExecution, Action: "STOP", Mode: "KILL"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Kill}},
		{"restart", execution.CommandInput{Scope: execution.ScopeExecution, Action: "RESTART"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionRestart}},
		{"restart from node", execution.CommandInput{Scope: execution.ScopeExecution, Action: "RESTART_FROM_NODE", FromNodeID: "fetch"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionRestartFromNode, FromNodeID: "fetch"}},
		{"stop all defaults to CANCEL", execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "STOP_ALL"},
			execution.Command{Scope: execution.ScopeWorkflow, Action: execution.ActionStopAll, Mode: execution.Cancel}},
		{"stop all drain", execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "STOP_ALL", Mode: "DRAIN"},
			execution.Command{Scope: execution.ScopeWorkflow, Action: execution.ActionStopAll, Mode: execution.Drain}},
		{"node stop has no mode", execution.CommandInput{Scope: execution.ScopeNode, Action: "STOP", NodeID: "n"},
			execution.Command{Scope: execution.ScopeNode, Action: execution.ActionStop, NodeID: "n"}},
		{"node stop immediate", execution.CommandInput{Scope: execution.ScopeNode, Action: "STOP", NodeID: "n", Immediate: true},
			execution.Command{Scope: execution.ScopeNode, Action: execution.ActionStop, NodeID: "n", Immediate: true}},
		{"node breakpoint", execution.CommandInput{Scope: execution.ScopeNode, Action: "BREAKPOINT", NodeID: "n", Breakpoint: bp},
			execution.Command{Scope: execution.ScopeNode, Action: execution.ActionBreakpoint, NodeID: "n", Breakpoint: bp}},
		{"node retry", execution.CommandInput{Scope: execution.ScopeNode, Action: "retry", NodeID: "n"},
			execution.Command{Scope: execution.ScopeNode, Action: execution.ActionRetry, NodeID: "n"}},
		{"ifStatus upper-cased", execution.CommandInput{Scope: execution.ScopeExecution, Action: "PAUSE", IfStatus: "running"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionPause, IfStatus: "RUNNING"}},
		{"node ifStatus WAITING", execution.CommandInput{Scope: execution.ScopeNode, Action: "STEP", NodeID: "n", IfStatus: "Waiting"},
			execution.Command{Scope: execution.ScopeNode, Action: execution.ActionStep, NodeID: "n", IfStatus: "WAITING"}},
		{"wait fractional", execution.CommandInput{Scope: execution.ScopeExecution, Action: "STOP", Mode: "DRAIN", WaitSecs: 1.5},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Drain, Wait: 1500 * time.Millisecond}},
		{"wait at the limit", execution.CommandInput{Scope: execution.ScopeExecution, Action: "PAUSE", WaitSecs: 60},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionPause, Wait: execution.MaxWait}},
		{"reason, key, actor and channel kept", execution.CommandInput{Scope: execution.ScopeExecution, Action: "PAUSE",
			Reason: strings.Repeat("r", execution.MaxReasonLen), Key: strings.Repeat("k", execution.MaxKeyLen), Actor: "key:ops", Channel: "mcp"},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionPause,
				Reason: strings.Repeat("r", execution.MaxReasonLen), Key: strings.Repeat("k", execution.MaxKeyLen), Actor: "key:ops", Channel: "mcp"}},
		// Limits count characters, as the API's maxLength does: 1024 × "ह" is 3072 bytes.
		{"reason limit counts characters", execution.CommandInput{Scope: execution.ScopeExecution, Action: "PAUSE",
			Reason: strings.Repeat("ह", execution.MaxReasonLen), Key: strings.Repeat("é", execution.MaxKeyLen)},
			execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionPause,
				Reason: strings.Repeat("ह", execution.MaxReasonLen), Key: strings.Repeat("é", execution.MaxKeyLen)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := execution.NewCommand(tt.in)
			if err != nil {
				t.Fatalf("NewCommand(%+v): got error %v, want nil", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewCommand(%+v):\ngot  %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

// violation is one expected problem: its path and a part of its message.
type violation struct{ path, text string }

func TestNewCommandInvalid(t *testing.T) {
	t.Parallel()
	bp := &execution.Breakpoint{Field: "status", Equals: "error"}
	exec := func(in execution.CommandInput) execution.CommandInput { in.Scope = execution.ScopeExecution; return in }
	node := func(in execution.CommandInput) execution.CommandInput {
		in.Scope = execution.ScopeNode
		if in.NodeID == "" {
			in.NodeID = "n"
		}
		return in
	}
	tests := []struct {
		name string
		in   execution.CommandInput
		want []violation
	}{
		{"unknown execution action", exec(execution.CommandInput{Action: "STEP"}),
			[]violation{{"action", `"STEP" is not an execution action; use one of ` + executionActions}}},
		{"unknown workflow action", execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "STOP"},
			[]violation{{"action", `"STOP" is not a workflow action; use one of STOP_ALL`}}},
		{"unknown node action", node(execution.CommandInput{Action: "restart"}),
			[]violation{{"action", `"restart" is not a node action; use one of ` + nodeActions}}},
		{"blank action", exec(execution.CommandInput{Action: "  "}),
			[]violation{{"action", `"  " is not an execution action`}}},
		{"missing execution action", exec(execution.CommandInput{}),
			[]violation{{"action", "is required; one of " + executionActions}}},
		{"missing workflow action", execution.CommandInput{Scope: execution.ScopeWorkflow},
			[]violation{{"action", "is required; one of STOP_ALL"}}},
		{"missing node action", node(execution.CommandInput{}),
			[]violation{{"action", "is required; one of " + nodeActions}}},
		{"mode on pause", exec(execution.CommandInput{Action: "PAUSE", Mode: "DRAIN"}),
			[]violation{{"mode", "applies only to STOP and STOP_ALL, not PAUSE; leave it out"}}},
		{"mode on restart", exec(execution.CommandInput{Action: "RESTART", Mode: "KILL"}),
			[]violation{{"mode", "not RESTART"}}},
		{"mode on node stop", node(execution.CommandInput{Action: "STOP", Mode: "KILL"}),
			[]violation{{"mode", "a node STOP has no mode (send immediate=true"}}},
		{"invalid mode", exec(execution.CommandInput{Action: "STOP", Mode: "HARD"}),
			[]violation{{"mode", `"HARD" is not a stop mode; use DRAIN (finish queued work), CANCEL (drop queued work) or KILL (also cancel running work)`}}},
		{"invalid stop all mode", execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "STOP_ALL", Mode: "soft"},
			[]violation{{"mode", `"soft" is not a stop mode`}}},
		{"fromNodeId required", exec(execution.CommandInput{Action: "RESTART_FROM_NODE"}),
			[]violation{{"fromNodeId", "fromNodeId is required for action RESTART_FROM_NODE."}}},
		{"fromNodeId on restart", exec(execution.CommandInput{Action: "RESTART", FromNodeID: "x"}),
			[]violation{{"fromNodeId", "applies only to RESTART_FROM_NODE; leave it out for RESTART"}}},
		{"fromNodeId on node retry", node(execution.CommandInput{Action: "RETRY", FromNodeID: "x"}),
			[]violation{{"fromNodeId", "leave it out for RETRY"}}},
		{"immediate on execution stop", exec(execution.CommandInput{Action: "STOP", Immediate: true}),
			[]violation{{"immediate", "applies only to a node STOP"}}},
		{"immediate on node pause", node(execution.CommandInput{Action: "PAUSE", Immediate: true}),
			[]violation{{"immediate", "applies only to a node STOP"}}},
		{"breakpoint without one", node(execution.CommandInput{Action: "BREAKPOINT"}),
			[]violation{{"breakpoint", `BREAKPOINT needs {"field","equals"} or {"condition"}`}}},
		{"node command without node", execution.CommandInput{Scope: execution.ScopeNode, Action: "PAUSE"},
			[]violation{{"nodeId", "is required for node commands"}}},
		{"reason too long", exec(execution.CommandInput{Action: "PAUSE", Reason: strings.Repeat("ह", execution.MaxReasonLen+1)}),
			[]violation{{"reason", "is 1025 characters long; the limit is 1024"}}},
		{"key too long", exec(execution.CommandInput{Action: "PAUSE", Key: strings.Repeat("k", execution.MaxKeyLen+1)}),
			[]violation{{"key", "is 129 characters long; the limit is 128"}}},
		{"execution ifStatus is a node status", exec(execution.CommandInput{Action: "PAUSE", IfStatus: "WAITING"}),
			[]violation{{"ifStatus", `"WAITING" is not a status an execution can have; use one of PENDING, RUNNING, PAUSED, SUCCESS, FAILURE, STOPPED`}}},
		{"node ifStatus unknown", node(execution.CommandInput{Action: "PAUSE", IfStatus: "done"}),
			[]violation{{"ifStatus", `"done" is not a status a node can have; use one of PENDING, RUNNING, PAUSED, WAITING, SKIPPED, SUCCESS, FAILURE, STOPPED`}}},
		{"ifStatus on stop all", execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "STOP_ALL", IfStatus: "RUNNING"},
			[]violation{{"ifStatus", "leave it out for STOP_ALL"}}},
		{"wait negative", exec(execution.CommandInput{Action: "PAUSE", WaitSecs: -1}),
			[]violation{{"wait", "must be between 0 and 60 seconds, got -1"}}},
		{"wait too long", exec(execution.CommandInput{Action: "PAUSE", WaitSecs: 60.001}),
			[]violation{{"wait", "got 60.001"}}},
		{"wait infinite", exec(execution.CommandInput{Action: "PAUSE", WaitSecs: math.Inf(1)}),
			[]violation{{"wait", "got +Inf"}}},
		{"wait NaN", exec(execution.CommandInput{Action: "PAUSE", WaitSecs: math.NaN()}),
			[]violation{{"wait", "got NaN"}}},
		{"several at once, in order", exec(execution.CommandInput{Action: "STOP", Mode: "HARD", FromNodeID: "x", Immediate: true,
			Reason: strings.Repeat("r", 1025), Key: strings.Repeat("k", 129), IfStatus: "NOPE", WaitSecs: 61}),
			[]violation{{"mode", "HARD"}, {"fromNodeId", "leave it out for STOP"}, {"immediate", "node STOP"}, {"reason", "1025"},
				{"key", "129"}, {"ifStatus", "NOPE"}, {"wait", "61"}}},
		{"several node problems", execution.CommandInput{Scope: execution.ScopeNode, Action: "BREAKPOINT", Mode: "KILL", WaitSecs: -2},
			[]violation{{"mode", "not BREAKPOINT"}, {"breakpoint", "BREAKPOINT needs"}, {"nodeId", "required"}, {"wait", "-2"}}},
		{"bad action and its arguments", exec(execution.CommandInput{Action: "JUMP", Mode: "KILL", Breakpoint: bp}),
			[]violation{{"action", "JUMP"}, {"mode", "not JUMP"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := execution.NewCommand(tt.in)
			ve, ok := errors.AsType[*fault.ValidationError](err)
			if !ok {
				t.Fatalf("NewCommand(%+v): got (%+v, %v), want a *fault.ValidationError", tt.in, c, err)
			}
			if !errors.Is(err, fault.ErrInvalid) {
				t.Errorf("got %v, want it to match fault.ErrInvalid", err)
			}
			if ve.Subject != "command" {
				t.Errorf("Subject got %q, want %q", ve.Subject, "command")
			}
			if !reflect.DeepEqual(c, execution.Command{}) {
				t.Errorf("got command %+v with an error, want the zero Command", c)
			}
			var gotPaths, wantPaths []string
			for _, v := range ve.Violations {
				gotPaths = append(gotPaths, v.Path)
			}
			for _, w := range tt.want {
				wantPaths = append(wantPaths, w.path)
			}
			if !slices.Equal(gotPaths, wantPaths) {
				t.Fatalf("violation paths got %v, want %v (%v)", gotPaths, wantPaths, err)
			}
			for i, w := range tt.want {
				if got := ve.Violations[i].Message; !strings.Contains(got, w.text) {
					t.Errorf("%s: got %q, want it to contain %q", w.path, got, w.text)
				}
			}
		})
	}
}

// TestNewCommandFromNodeIDExactText pins the sentence agents match on (the
// error table of the MCP module lists it verbatim).
func TestNewCommandFromNodeIDExactText(t *testing.T) {
	t.Parallel()
	_, err := execution.NewCommand(execution.CommandInput{Scope: execution.ScopeExecution, Action: "RESTART_FROM_NODE"})
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok || len(ve.Violations) != 1 {
		t.Fatalf("got %v, want one violation", err)
	}
	if got, want := ve.Violations[0], (fault.Violation{Path: "fromNodeId", Message: "fromNodeId is required for action RESTART_FROM_NODE."}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestNewCommandUnknownScope(t *testing.T) {
	t.Parallel()
	for _, s := range []execution.Scope{"", "session", "EXECUTION"} {
		_, err := execution.NewCommand(execution.CommandInput{Scope: s, Action: "PAUSE"})
		if err == nil || !strings.Contains(err.Error(), "unknown command scope") {
			t.Errorf("NewCommand(scope %q): got %v, want an unknown scope error", s, err)
		}
		if _, ok := errors.AsType[*fault.ValidationError](err); ok {
			t.Errorf("NewCommand(scope %q): got a ValidationError, want a programming error (scope is set by the server, not the client)", s)
		}
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope execution.Scope
		want  string
	}{
		{execution.ScopeExecution, executionActions},
		{execution.ScopeWorkflow, "STOP_ALL, PAUSE_WORKFLOW, RESUME_WORKFLOW"},
		{execution.ScopeNode, nodeActions},
		{"nope", ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.scope), func(t *testing.T) {
			t.Parallel()
			as := execution.Actions(tt.scope)
			s := make([]string, len(as))
			for i, a := range as {
				s[i] = string(a)
			}
			if got := strings.Join(s, ", "); got != tt.want {
				t.Errorf("Actions(%q) got %s, want %s", tt.scope, got, tt.want)
			}
			if len(as) > 0 {
				as[0] = "CHANGED"
				if execution.Actions(tt.scope)[0] == "CHANGED" {
					t.Errorf("Actions(%q): got a slice that aliases the table, want a copy", tt.scope)
				}
			}
		})
	}
}
