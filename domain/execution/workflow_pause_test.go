package execution_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func TestWorkflowPauseRefusesStart(t *testing.T) {
	t.Parallel()
	p := execution.WorkflowPause{SessionID: "demo", WorkflowID: "orders", Actor: "key:ops", Channel: "rest",
		Reason: "charge keeps failing", Since: time.Date(2026, 12, 2, 1, 2, 3, 0, time.FixedZone("x", 3600))}
	err := fmt.Errorf("wrapped: %w", p.RefuseStart("start"))
	if !errors.Is(err, execution.ErrWorkflowPaused) || !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("the refusal is not a workflow-paused conflict: %v", err)
	}
	got, ok := execution.IsPaused(err)
	if !ok || got.Actor != "key:ops" {
		t.Fatalf("IsPaused = %+v, %v", got, ok)
	}
	want := `workflow orders of session demo is paused (by key:ops through rest since 2026-12-02T00:02:03Z, reason "charge keeps failing"), ` +
		`so no new run of it starts; nothing was started. Resume it with POST /api/sessions/demo/workflows/orders/resume, ` +
		`MCP control_workflow with action RESUME_WORKFLOW, or yukta resume-workflow demo orders`
	if got := p.RefuseStart("start").Error(); got != want {
		t.Errorf("text\n got %s\nwant %s", got, want)
	}
	p.Reason = ""
	if got := p.RefuseStart("restart").Error(); got != `workflow orders of session demo is paused (by key:ops through rest since 2026-12-02T00:02:03Z), `+
		`so no new run of it starts; nothing was restarted. Resume it with POST /api/sessions/demo/workflows/orders/resume, `+
		`MCP control_workflow with action RESUME_WORKFLOW, or yukta resume-workflow demo orders` {
		t.Errorf("restart text: %s", got)
	}
	if _, ok := execution.IsPaused(fault.Newf(fault.ErrConflict, "other")); ok {
		t.Error("another conflict reads as a pause")
	}
}

func TestWorkflowCommands(t *testing.T) {
	t.Parallel()
	c, err := execution.NewCommand(execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "pause_workflow", Reason: "r"})
	if err != nil || c.Action != execution.ActionPauseWorkflow || c.Mode != "" {
		t.Fatalf("PAUSE_WORKFLOW: %+v %v", c, err)
	}
	_, err = execution.NewCommand(execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "RESUME_WORKFLOW", Mode: "KILL", IfStatus: "PAUSED"})
	want := "command is invalid: mode: applies only to STOP and STOP_ALL, not RESUME_WORKFLOW; leave it out; " +
		"ifStatus: applies only to execution and node commands; leave it out for RESUME_WORKFLOW"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
