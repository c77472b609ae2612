package executionapp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

type noWorkflows struct{}

func (noWorkflows) Workflow(_ context.Context, _, id string) (session.Workflow, error) {
	return session.Workflow{}, fault.Newf(session.ErrWorkflowNotFound, "workflow %s", id)
}

type refuseConditions struct{}

func (refuseConditions) CheckCondition(expr string) error {
	return errors.New("undeclared reference to 'paylod'")
}

func violations(t *testing.T, err error) map[string]string {
	t.Helper()
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("error %v is not a validation error", err)
	}
	out := map[string]string{}
	for _, v := range ve.Violations {
		out[v.Path] = v.Message
	}
	return out
}

// The use case, not the doors, checks how a command is addressed and builds
// it; every problem comes back at once, naming its argument.
func TestControlRequestChecks(t *testing.T) {
	uc := &Control{workflows: noWorkflows{}, conditions: refuseConditions{}}
	cases := []struct {
		name string
		req  ControlRequest
		want []string // violation paths
	}{
		{"STOP_ALL needs a workflow", ControlRequest{Scope: execution.ScopeExecution, Action: "stop_all"}, []string{"workflowId"}},
		{"STOP_ALL names no execution", ControlRequest{Scope: execution.ScopeExecution, Action: "STOP_ALL", WorkflowID: "w", ExecutionID: "e"}, []string{"executionId"}},
		{"an execution command needs its execution", ControlRequest{Scope: execution.ScopeExecution, Action: "PAUSE"}, []string{"executionId"}},
		{"every problem at once", ControlRequest{Scope: execution.ScopeExecution, Action: "RESTART_FROM_NODE", Mode: "KILL", WaitSecs: 61},
			[]string{"executionId", "fromNodeId", "mode", "wait"}},
		{"a condition that does not compile", ControlRequest{Scope: execution.ScopeNode, ExecutionID: "e", NodeID: "n",
			Action: "BREAKPOINT", Breakpoint: &BreakpointRequest{Condition: "paylod.x > 1"}}, []string{"condition"}},
		{"field without equals", ControlRequest{Scope: execution.ScopeNode, ExecutionID: "e", NodeID: "n",
			Action: "BREAKPOINT", Breakpoint: &BreakpointRequest{Field: "a"}}, []string{"equals"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := uc.command(t.Context(), c.req)
			got := violations(t, err)
			if len(got) != len(c.want) {
				t.Fatalf("violations %v, want paths %v", got, c.want)
			}
			for _, p := range c.want {
				if got[p] == "" {
					t.Errorf("no violation at %s: %v", p, got)
				}
			}
			for _, msg := range got {
				for _, door := range []string{"/api/", "get_", "control_"} {
					if strings.Contains(msg, door) {
						t.Errorf("the core's text names a door (%s): %s", door, msg)
					}
				}
			}
		})
	}
	// A well-formed STOP_ALL of an unknown workflow is not found, not
	// "nothing to stop".
	_, err := uc.command(t.Context(), ControlRequest{Scope: execution.ScopeExecution, Action: "STOP_ALL", WorkflowID: "gone", SessionID: "s"})
	if !errors.Is(err, session.ErrWorkflowNotFound) {
		t.Fatalf("STOP_ALL of an unknown workflow: %v", err)
	}
	// A STOP_ALL sent where execution commands go is the workflow command.
	uc.workflows = oneWorkflow{}
	in, err := uc.command(t.Context(), ControlRequest{Scope: execution.ScopeExecution, Action: "STOP_ALL", WorkflowID: "w", SessionID: "s", Actor: "a", Channel: "mcp"})
	if err != nil || in.Command.Scope != execution.ScopeWorkflow || in.Command.Mode != execution.DefaultStopMode || in.WorkflowID != "w" {
		t.Fatalf("STOP_ALL: %+v, %v", in, err)
	}
}

type oneWorkflow struct{}

func (oneWorkflow) Workflow(context.Context, string, string) (session.Workflow, error) {
	return session.Workflow{}, nil
}

// PAUSE_WORKFLOW and RESUME_WORKFLOW sent where execution commands go are
// workflow commands; they name a workflow and no execution. A
// RESUME_WORKFLOW of a workflow no longer in the session gets past the
// check (its pause may outlive the workflow); a PAUSE_WORKFLOW does not.
func TestWorkflowPauseRequestChecks(t *testing.T) {
	uc := &Control{workflows: noWorkflows{}}
	for _, a := range []string{"pause_workflow", "RESUME_WORKFLOW"} {
		_, err := uc.command(t.Context(), ControlRequest{Scope: execution.ScopeExecution, Action: a, ExecutionID: "e"})
		got := violations(t, err)
		if len(got) != 1 || !strings.Contains(got["workflowId"], "is required for action "+strings.ToUpper(a)) {
			t.Errorf("%s without a workflow: %v", a, got)
		}
		_, err = uc.command(t.Context(), ControlRequest{Scope: execution.ScopeWorkflow, Action: a, WorkflowID: "w", ExecutionID: "e"})
		if got := violations(t, err); !strings.Contains(got["executionId"], "must be left out for "+strings.ToUpper(a)) {
			t.Errorf("%s with an execution: %v", a, got)
		}
	}
	if _, err := uc.command(t.Context(), ControlRequest{SessionID: "s", Scope: execution.ScopeWorkflow, Action: "PAUSE_WORKFLOW", WorkflowID: "gone"}); !errors.Is(err, session.ErrWorkflowNotFound) {
		t.Errorf("PAUSE_WORKFLOW of an unknown workflow: %v", err)
	}
	in, err := uc.command(t.Context(), ControlRequest{SessionID: "s", Scope: execution.ScopeExecution, Action: "resume_workflow", WorkflowID: "gone"})
	if err != nil || in.Command.Scope != execution.ScopeWorkflow || in.Command.Action != execution.ActionResumeWorkflow || in.WorkflowID != "gone" {
		t.Errorf("RESUME_WORKFLOW of a removed workflow: %+v %v", in, err)
	}
}

// A start refused for a pause counts once under its source; other errors
// and successes count nothing.
func TestSkippedCountsPausedStarts(t *testing.T) {
	var got []string
	m := skipRecorder(func(s StartSource, r string) { got = append(got, string(s)+"/"+r) })
	p := execution.WorkflowPause{SessionID: "s", WorkflowID: "w", Actor: "a", Channel: "rest"}
	skipped(m, sourceOf(TriggerSchedule), p.RefuseStart("start"))
	skipped(m, sourceOf(TriggerWebhook), p.RefuseStart("start"))
	skipped(m, sourceOf(TriggerManual), p.RefuseStart("start"))
	skipped(m, SourceManual, fault.Newf(fault.ErrConflict, "another conflict"))
	skipped(m, SourceManual, nil)
	skipped(nil, SourceManual, p.RefuseStart("start"))
	if want := "schedule/workflow_paused webhook/workflow_paused manual/workflow_paused"; strings.Join(got, " ") != want {
		t.Errorf("counted %v, want %s", got, want)
	}
}

type skipRecorder func(StartSource, string)

func (f skipRecorder) StartSkipped(s StartSource, r string) { f(s, r) }
