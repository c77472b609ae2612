package executionapp

import (
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// A STOP_ALL's command events name no execution; each execution it stopped
// gets the pair again with its id, so its journal holds the decision.
func TestStopAllCommandEventsPerStoppedExecution(t *testing.T) {
	cmd, err := execution.NewCommand(execution.CommandInput{Scope: execution.ScopeWorkflow, Action: "STOP_ALL", Mode: "KILL",
		Reason: "maintenance", Actor: "ops", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	rec := CommandRecord{ID: "c1", SessionID: "s", WorkflowID: "w", Command: cmd, Status: CommandApplied,
		Message: "KILL sent to 2 execution(s) of workflow w", ResultExecutionIDs: []string{"e1", "e2"}}
	evs := commandEvents(rec, time.Unix(0, 0))
	if len(evs) != 6 {
		t.Fatalf("%d events, want the workflow pair and one pair per stopped execution: %+v", len(evs), evs)
	}
	if evs[0].ExecutionID != "" || evs[1].ExecutionID != "" {
		t.Errorf("the workflow-scoped pair names execution %q/%q", evs[0].ExecutionID, evs[1].ExecutionID)
	}
	for i, id := range []string{"e1", "e2"} {
		a, p := evs[2+2*i], evs[3+2*i]
		if a.Type != EventCommandAccepted || p.Type != EventCommandApplied || a.ExecutionID != id || p.ExecutionID != id {
			t.Errorf("events for %s: %s/%s on %s/%s", id, a.Type, p.Type, a.ExecutionID, p.ExecutionID)
		}
		if a.Actor != "ops" || a.Channel != "rest" || a.WorkflowID != "w" || a.Data["commandId"] != "c1" ||
			a.Data["action"] != "STOP_ALL" || a.Data["scope"] != "workflow" || a.Data["reason"] != "maintenance" || p.Data["commandId"] != "c1" {
			t.Errorf("events for %s: %+v %+v", id, a, p)
		}
	}
	if _, ok := evs[0].Data["workflowId"]; ok {
		t.Errorf("the per-execution data leaked into the workflow event: %v", evs[0].Data)
	}
	rec.Status, rec.ResultExecutionIDs = CommandRejected, nil
	if evs := commandEvents(rec, time.Unix(0, 0)); len(evs) != 2 {
		t.Errorf("a refused STOP_ALL: %d events, want 2", len(evs))
	}
}
