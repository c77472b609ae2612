package supervisor_test

import (
	"testing"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// PauseWorkflow and ResumeWorkflow on a workflow target pause or resume the
// workflow itself; on a run they stay run commands. A review sees the
// workflow commands in the same words.
func TestPauseWorkflowOnAWorkflowTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		directive      string
		scope          execution.Scope
		action         execution.Action
		pausesWorkflow bool
	}{
		{`{"key":"a","command":{"type":"PauseWorkflow","target":"workflow:ci/flaky"}}`, execution.ScopeWorkflow, execution.ActionPauseWorkflow, true},
		{`{"key":"b","command":{"type":"ResumeWorkflow","target":"workflow:ci/flaky"}}`, execution.ScopeWorkflow, execution.ActionResumeWorkflow, true},
		{`{"key":"c","command":{"type":"PauseWorkflow","target":"execution:0197a3b2-0000-7000-8000-000000000001"}}`, execution.ScopeExecution, execution.ActionPause, false},
		{`{"key":"d","command":{"type":"ResumeWorkflow","target":"owned.running"}}`, execution.ScopeExecution, execution.ActionResume, false},
	}
	for _, tt := range tests {
		d, err := supervisor.ParseDirective([]byte(tt.directive))
		if err != nil {
			t.Fatalf("%s: %v", tt.directive, err)
		}
		c := d.Command()
		scope, action, ok := c.Control()
		if !ok || scope != tt.scope || action != tt.action || c.PausesWorkflow() != tt.pausesWorkflow {
			t.Errorf("%s: Control() = %s %s %v, PausesWorkflow %v", tt.directive, scope, action, ok, c.PausesWorkflow())
		}
	}
	for _, a := range []execution.Action{execution.ActionPauseWorkflow, execution.ActionResumeWorkflow} {
		cmd, err := execution.NewCommand(execution.CommandInput{Scope: execution.ScopeWorkflow, Action: string(a)})
		if err != nil {
			t.Fatal(err)
		}
		c, ok := supervisor.ControlCommand(cmd, "ci", "flaky", "")
		want := supervisor.PauseWorkflow
		if a == execution.ActionResumeWorkflow {
			want = supervisor.ResumeWorkflow
		}
		if !ok || c.Type() != want || c.Target().String() != "workflow:ci/flaky" {
			t.Errorf("%s as a review sees it: %v %s %s", a, ok, c.Type(), c.Target())
		}
	}
}
