package supervisor

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSignalEnvelope(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("x", 3600))
	pause, err := ParseDirective([]byte(`{"key":"k","command":{"type":"RestartWorkflow","target":"execution:e1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		body SignalBody
		want string
	}{
		{EventSignal{Seq: 7, At: at, Type: "NodeStatusChanged", SessionID: "ci", WorkflowID: "build", ExecutionID: "e1", NodeID: "ship", Actor: "engine",
			Data: map[string]any{"to": "FAILURE"}},
			`{"cursor":"12","kind":"EVENT","signal":{"seq":7,"at":"2026-03-01T11:00:00.000000005Z","type":"NodeStatusChanged","sessionId":"ci","workflowId":"build","executionId":"e1","nodeId":"ship","actor":"engine","data":{"to":"FAILURE"}}}`},
		{EventSignal{Seq: 8, At: at, Type: "SessionApplied", SessionID: "ci", Actor: "key:ops"},
			`{"cursor":"12","kind":"EVENT","signal":{"seq":8,"at":"2026-03-01T11:00:00.000000005Z","type":"SessionApplied","sessionId":"ci","actor":"key:ops","data":{}}}`},
		{TickSignal{At: at}, `{"cursor":"12","kind":"TICK","signal":{"at":"2026-03-01T11:00:00.000000005Z"}}`},
		{ReviewSignal{ReviewID: "r1", Command: pause.Command(), Actor: "key:ops", Channel: "rest", SessionID: "ci", WorkflowID: "build", ExecutionID: "e1", Deadline: at},
			`{"cursor":"12","kind":"REVIEW","signal":{"reviewId":"r1","command":{"type":"RestartWorkflow","target":"execution:e1"},"actor":"key:ops","channel":"rest","sessionId":"ci","workflowId":"build","executionId":"e1","deadline":"2026-03-01T11:00:00.000000005Z"}}`},
		{StartedSignal{At: at, Snapshot: map[string]any{"executions": []any{}}},
			`{"cursor":"12","kind":"STARTED","signal":{"at":"2026-03-01T11:00:00.000000005Z","snapshot":{"executions":[]}}}`},
		{DelegatedSignal{DelegationID: "d1", From: "child", Request: "help"},
			`{"cursor":"12","kind":"DELEGATED","signal":{"delegationId":"d1","from":"child","kind":"ESCALATE","request":"help"}}`},
		{ConsultedSignal{DelegationID: "d2", From: "peer", Payload: 1},
			`{"cursor":"12","kind":"CONSULTED","signal":{"delegationId":"d2","from":"peer","kind":"CONSULT","payload":1}}`},
	}
	for _, tt := range tests {
		s := NewSignal("12", tt.body)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.body.Kind(), b, tt.want)
		}
		if s.Kind() != tt.body.Kind() || !s.Kind().Valid() || s.Cursor() != "12" {
			t.Errorf("%s: Kind/Cursor got %s %s", tt.body.Kind(), s.Kind(), s.Cursor())
		}
	}
}

func TestSignalKindsMatchCatalogue(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, k := range SignalKinds {
		n := k.CatalogName()
		if n == "" || names[n] {
			t.Errorf("%s: catalogue name %q is empty or repeated", k, n)
		}
		names[n] = true
	}
	for _, e := range Engines() {
		for _, s := range e.Signals {
			if !names[s] {
				t.Errorf("engine %s takes %q, which no signal kind names", e.Type, s)
			}
		}
	}
	if SignalKind("EVENTS").Valid() || SignalKind("EVENTS").CatalogName() != "" {
		t.Error("an unknown kind must be invalid")
	}
}

// TestHearsOnlyWhatTheEngineTakesAndNotItsOwnEffects: the runtime's guard
// in front of every engine. A kind the catalogue does not list for the
// engine is not heard; an EVENT the supervisor itself caused is heard only
// by an engine that hears its own effects (http).
func TestHearsOnlyWhatTheEngineTakesAndNotItsOwnEffects(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	own := NewSignal("1.1.0", EventSignal{Seq: 1, At: at, Type: "ExecutionStarted", SessionID: "ci", Actor: "supervisor:s"})
	other := NewSignal("1.2.0", EventSignal{Seq: 2, At: at, Type: "ExecutionStarted", SessionID: "ci", Actor: "supervisor:t"})
	tick := NewSignal("1.2.0", TickSignal{At: at})
	started := NewSignal("1.2.0", StartedSignal{At: at})
	for _, c := range []struct {
		engine                    string
		own, other, tick, started bool
	}{
		{"rules", false, true, true, false},
		{"workflow", false, true, true, true},
		{"process", false, true, false, true},
		{"http", true, true, false, true},
	} {
		sup := Restore(Spec{ID: "s", Name: "S", EngineType: c.engine, Enabled: true})
		for _, h := range []struct {
			what string
			sig  Signal
			want bool
		}{{"its own effect", own, c.own}, {"another's effect", other, c.other}, {"a TICK", tick, c.tick}, {"STARTED", started, c.started}} {
			if got := sup.Hears(h.sig); got != h.want {
				t.Errorf("%s engine hears %s: %v, want %v", c.engine, h.what, got, h.want)
			}
		}
	}
}
