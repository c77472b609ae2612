package session_test

import (
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/session"
)

func TestParseSchedulerLimits(t *testing.T) {
	t.Parallel()
	d := docWith(edits(
		set("limits", obj{"maxRunning": 5}),
		set("workflows.0.limits", obj{"maxRunning": 2}),
	))
	s, warns, err := session.Parse(encode(t, d), catalog, session.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := s.Limits(); got != (session.Limits{MaxRunning: 5}) {
		t.Errorf("session limits: got %+v, want maxRunning 5", got)
	}
	w, _ := s.Workflow("wf")
	if got := w.Limits(); got != (session.Limits{MaxRunning: 2}) {
		t.Errorf("workflow limits: got %+v, want maxRunning 2", got)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: got %v, want none", warns)
	}
	// Absent, null and 0 all mean no limit.
	for _, l := range []any{nil, obj{}, obj{"maxRunning": 0}, obj{"maxRunning": nil}} {
		s, _, err := session.Parse(encode(t, docWith(set("limits", l))), catalog, session.ParseOptions{})
		if err != nil || !s.Limits().IsZero() {
			t.Errorf("limits %v: got (%+v, %v), want no limit", l, s.Limits(), err)
		}
	}
	// Limits survive the copies reads and applies make.
	masked := s.Masked(catalog)
	if masked.Limits() != s.Limits() {
		t.Errorf("Masked: got limits %+v, want %+v", masked.Limits(), s.Limits())
	}
}

// TestParseSchedulerLimitsListsEveryProblem: each problem is reported with its JSON
// path, all in one answer, next to the document's other problems.
func TestParseSchedulerLimitsListsEveryProblem(t *testing.T) {
	t.Parallel()
	d := docWith(edits(
		set("limits", obj{"maxRunning": -1, "maxQueued": 3}),
		set("workflows.0.limits", obj{"maxRunning": 2.5}),
		add("workflows", obj{"workflowId": "w2", "limits": arr{}, "nodes": arr{node("s", "MANUAL")}}),
		add("workflows", obj{"workflowId": "w3", "limits": obj{"maxRunning": "5"}, "nodes": arr{node("s", "MANUAL")}}),
		add("workflows", obj{"workflowId": "w4", "limits": obj{"maxRunning": 1000001}, "nodes": arr{node("s", "MANUAL")}}),
		set("name", ""),
	))
	_, _, err := session.Parse(encode(t, d), catalog, session.ParseOptions{})
	checkViolations(t, err, []want{
		{"name", []string{"must not be empty"}},
		{"limits.maxQueued", []string{`unknown field "maxQueued"`, "allowed fields: maxRunning"}},
		{"limits.maxRunning", []string{"is -1", "whole number from 0 (no limit) to 1000000"}},
		{"workflows[0].limits.maxRunning", []string{"is 2.5", "whole number"}},
		{"workflows[1].limits", []string{"must be an object, got an array"}},
		{"workflows[2].limits.maxRunning", []string{"must be a number, got a string"}},
		{"workflows[3].limits.maxRunning", []string{"is 1000001"}},
	})
}

func TestParseSchedulerLimitsWarnAboutAWorkflowAboveItsSession(t *testing.T) {
	t.Parallel()
	d := docWith(edits(set("limits", obj{"maxRunning": 2}), set("workflows.0.limits", obj{"maxRunning": 3})))
	_, warns, err := session.Parse(encode(t, d), catalog, session.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `workflow "wf": limits.maxRunning 3 is above the session's 2, so the session's limit is the one that holds`
	if !slices.Contains(warns, want) {
		t.Errorf("warnings: got %q, want them to contain %q", warns, want)
	}
}

func TestWithLimits(t *testing.T) {
	t.Parallel()
	w, err := session.RestoreWorkflow("w", "", []byte(`{"nodes":[{"nodeId":"a","type":"MANUAL"}],"edges":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	w = w.WithLimits(session.Limits{MaxRunning: 4})
	s := session.RestoreSession("s", "S", "", "", nil, "", []session.Workflow{w}).WithLimits(session.Limits{MaxRunning: 9})
	got, _ := s.Workflow("w")
	if s.Limits().MaxRunning != 9 || got.Limits().MaxRunning != 4 {
		t.Errorf("got session %+v workflow %+v, want 9 and 4", s.Limits(), got.Limits())
	}
}
