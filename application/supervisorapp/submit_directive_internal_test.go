package supervisorapp

import (
	"testing"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

func mustDirective(t *testing.T, s string) supervisor.Directive {
	t.Helper()
	d, err := supervisor.ParseDirective([]byte(s))
	if err != nil {
		t.Fatalf("ParseDirective(%s): %v", s, err)
	}
	return d
}

// TestDirectiveEventsRecordEveryArgument: the command an intake event
// records keeps the arguments that decide what it does (a stop's mode, a
// restart's node, a breakpoint), not only its type and target.
func TestDirectiveEventsRecordEveryArgument(t *testing.T) {
	t.Parallel()
	uc := &SubmitDirective{now: time.Now}
	tests := []struct {
		directive string
		want      map[string]any
	}{
		{`{"key":"k","command":{"type":"StopWorkflow","target":"execution:e1","mode":"KILL"}}`,
			map[string]any{"type": "StopWorkflow", "target": "execution:e1", "mode": "KILL"}},
		{`{"key":"k","command":{"type":"RestartFromNode","target":"execution:e1","fromNodeId":"build"}}`,
			map[string]any{"type": "RestartFromNode", "target": "execution:e1", "fromNodeId": "build"}},
		{`{"key":"k","command":{"type":"SetBreakpoint","target":"execution:e1","nodeId":"n","condition":"payload.x > 1"}}`,
			map[string]any{"type": "SetBreakpoint", "target": "execution:e1", "nodeId": "n", "condition": "payload.x > 1"}},
	}
	for _, tt := range tests {
		ev := uc.event(EventDirectiveRejected, "s", mustDirective(t, tt.directive), "agent", step{ExecutionID: "e1"}, "no")
		cmd, _ := ev.Data["command"].(map[string]any)
		if len(cmd) != len(tt.want) {
			t.Errorf("%s: command %v, want %v", tt.directive, cmd, tt.want)
			continue
		}
		for k, v := range tt.want {
			if cmd[k] != v {
				t.Errorf("%s: command %v, want %v", tt.directive, cmd, tt.want)
			}
		}
	}
}

// TestSummaryCountsReviewsApart: a command that went to review is neither
// applied nor rejected yet.
func TestSummaryCountsReviewsApart(t *testing.T) {
	t.Parallel()
	d := mustDirective(t, `{"key":"k","command":{"type":"StopWorkflow","target":"owned.running"}}`)
	tests := []struct {
		outs []Outcome
		want string
	}{
		{[]Outcome{{Status: OutcomeInReview}}, "StopWorkflow: 0 applied, 1 in review, 0 rejected of 1"},
		{[]Outcome{{Status: OutcomeApplied}, {Status: OutcomeAccepted}, {Status: OutcomeRejected}, {Status: OutcomeInReview}},
			"StopWorkflow: 2 applied, 1 in review, 1 rejected of 4"},
		{nil, "StopWorkflow: the target owned.running names no unfinished run; nothing to do"},
	}
	for _, tt := range tests {
		if got := summary(d, tt.outs); got != tt.want {
			t.Errorf("summary(%v) = %q, want %q", tt.outs, got, tt.want)
		}
	}
}
