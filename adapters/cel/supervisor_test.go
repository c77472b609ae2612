package cel_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/domain/supervisor"
)

func conditions(t *testing.T) *cel.Conditions {
	t.Helper()
	c, err := cel.NewConditions()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConditionsCheck(t *testing.T) {
	t.Parallel()
	c := conditions(t)
	tests := []struct {
		name, expr string
		ctx        supervisor.ExprContext
		wantErr    string
	}{
		{"event rule", `event.type == "NodeStatusChanged" && event.data.to == "FAILURE"`, supervisor.EventRule, ""},
		{"timestamps subtract", `now - execution.lastProgressAt > duration('10m')`, supervisor.TickRule, ""},
		{"counts are ints", `workflow.activeCount >= 10 && actor.startsWith("supervisor:")`, supervisor.ReviewRule, ""},
		{"a variable of another context", `command.type == "StartWorkflow"`, supervisor.EventRule, "undeclared reference to 'command'"},
		{"not a bool", `execution.activeCount + 1`, supervisor.TickRule, "must evaluate to a bool"},
		{"a syntax error", `event.type ==`, supervisor.EngineWhen, "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := c.Check(tt.expr, supervisor.VariableNames(tt.ctx))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check(%q): got %v, want nil", tt.expr, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Check(%q): got %v, want an error containing %q", tt.expr, err, tt.wantErr)
			}
		})
	}
}

func TestConditionsEvalBool(t *testing.T) {
	t.Parallel()
	c := conditions(t)
	at := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	vars := map[string]any{
		"event": map[string]any{"seq": int64(7), "at": at, "type": "NodeStatusChanged", "nodeId": "ship",
			"data": map[string]any{"to": "FAILURE", "received": json.Number("3")}},
		"execution": map[string]any{"id": "r1", "status": "RUNNING", "startedAt": at.Add(-time.Hour), "lastProgressAt": at.Add(-20 * time.Minute),
			"activeCount": int64(2), "nodes": map[string]any{"ship": "FAILURE"}},
		"now": at,
	}
	tests := []struct {
		expr    string
		want    bool
		wantErr string
	}{
		{`event.data.to == "FAILURE" && event.data.received > 2`, true, ""},
		{`now - execution.lastProgressAt > duration('10m')`, true, ""},
		{`event.at < now`, false, ""},
		{`execution.nodes.ship == "FAILURE" && execution.activeCount == 2`, true, ""},
		{`event.data.missing == "x"`, false, "no such key"},
	}
	for _, tt := range tests {
		got, err := c.EvalBool(t.Context(), tt.expr, vars)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("EvalBool(%q): got %v, %v; want an error containing %q", tt.expr, got, err, tt.wantErr)
			}
		case err != nil || got != tt.want:
			t.Errorf("EvalBool(%q): got %v, %v; want %v", tt.expr, got, err, tt.want)
		}
	}
}
