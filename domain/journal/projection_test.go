package journal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// journalOf builds a clean journal from bodies: an event body has "type",
// a decision body is wrapped as {"decision": body}.
func journalOf(t *testing.T, execID string, bodies ...map[string]any) []Record {
	t.Helper()
	var recs []Record
	for i, b := range bodies {
		kind := KindEvent
		if d, ok := b["decision"].(map[string]any); ok {
			kind, b = KindDecision, d
		}
		var prev *Record
		if len(recs) > 0 {
			prev = &recs[len(recs)-1]
		}
		r, err := Next(prev, execID, kind, t0.Add(time.Duration(i)*time.Second+time.Millisecond), b)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return parseLines(t, exportLines(t, recs)) // as a verifier reads them
}

func ev(seq int, typ, node string, at time.Duration, data map[string]any) map[string]any {
	b := map[string]any{"seq": seq, "type": typ, "at": t0.Add(at).Format(time.RFC3339Nano), "sessionId": "s-1",
		"workflowId": "w-1", "executionId": "e-1", "actor": "engine", "data": data}
	if node != "" {
		b["nodeId"] = node
	}
	return b
}

func nodeChange(from, to string, received, emitted int) map[string]any {
	return map[string]any{"from": from, "to": to, "received": received, "emitted": emitted}
}

func TestProjectStoppedRun(t *testing.T) {
	recs := journalOf(t, "e-1",
		ev(1, "ExecutionStarted", "", 0, map[string]any{}),
		ev(2, "ExecutionStatusChanged", "", 0, map[string]any{"from": "PENDING", "to": "RUNNING"}),
		ev(3, "NodeStatusChanged", "a", 100*time.Millisecond, nodeChange("PENDING", "RUNNING", 1, 0)),
		ev(4, "NodeStatusChanged", "b", 150*time.Millisecond, nodeChange("PENDING", "RUNNING", 1, 0)),
		ev(5, "NodeStatusChanged", "a", 2350*time.Millisecond, nodeChange("RUNNING", "SUCCESS", 3, 3)),
		map[string]any{"decision": map[string]any{"type": "OperatorCommand", "command": "PAUSE", "nodeId": "b",
			"actor": "alice", "channel": "rest", "cause": "cmd-1"}},
		ev(6, "BreakpointHit", "b", 3*time.Second, map[string]any{"field": "x"}),
		ev(7, "NodeStatusChanged", "c", 4*time.Second, nodeChange("PENDING", "SKIPPED", 0, 0)),
		map[string]any{"decision": map[string]any{"type": "OperatorCommand", "command": "STOP", "actor": "alice",
			"channel": "cli", "cause": "cmd-2"}},
		ev(8, "NodeStatusChanged", "b", 5*time.Second, map[string]any{"from": "PAUSED", "to": "STOPPED",
			"received": 4, "emitted": 2, "error": "stopped by alice"}),
		ev(9, "ExecutionStatusChanged", "", 5*time.Second, map[string]any{"from": "RUNNING", "to": "STOPPED",
			"error": "stopped by alice"}),
	)
	p := Project(recs)
	run := p.Run
	if p.ExecutionID != "e-1" || run.Status != StatusDown || run.EngineStatus != "STOPPED" || run.Error != "stopped by alice" {
		t.Fatalf("run: %+v", run)
	}
	if run.SettledAt == nil || !run.SettledAt.Equal(t0.Add(5*time.Second)) {
		t.Errorf("run settledAt %v", run.SettledAt)
	}
	if run.FirstSequence != 1 || run.LastSequence != 11 || !run.FirstObservedAt.Equal(recs[0].ObservedAt) ||
		!run.LastObservedAt.Equal(recs[10].ObservedAt) {
		t.Errorf("run span: %+v", run)
	}
	wantCounts(t, "events", run.Events, 9,
		map[string]int{"e-1": 3, "a": 2, "b": 3, "c": 1},
		map[string]int{"ExecutionStarted": 1, "ExecutionStatusChanged": 2, "NodeStatusChanged": 5, "BreakpointHit": 1})
	wantCounts(t, "decisions", run.Decisions, 2, map[string]int{"b": 1, "e-1": 1}, map[string]int{"OperatorCommand": 2})

	if len(p.Nodes) != 3 || p.Nodes[0].ID != "a" || p.Nodes[1].ID != "b" || p.Nodes[2].ID != "c" {
		t.Fatalf("nodes: %+v", p.Nodes)
	}
	a, b, c := p.Nodes[0], p.Nodes[1], p.Nodes[2]
	if a.Status != StatusDone || a.EngineStatus != "SUCCESS" || *a.Received != 3 || *a.Emitted != 3 ||
		!a.StartedAt.Equal(t0.Add(100*time.Millisecond)) || !a.SettledAt.Equal(t0.Add(2350*time.Millisecond)) ||
		a.WallMs == nil || *a.WallMs != 2250 || a.EventCount != 2 || a.FirstSequence != 3 || a.LastSequence != 5 {
		t.Errorf("a: %+v", a)
	}
	if b.Status != StatusDown || b.EngineStatus != "STOPPED" || b.Error != "stopped by alice" || *b.Received != 4 ||
		b.WallMs == nil || *b.WallMs != 4850 || b.EventCount != 3 || b.DecisionCount != 1 ||
		b.FirstSequence != 4 || b.LastSequence != 10 {
		t.Errorf("b: %+v", b)
	}
	// c was skipped: it left PENDING, but SKIPPED is not terminal, so it has
	// no settledAt and no wallMs (not a zero).
	if c.Status != StatusRunning || c.EngineStatus != "SKIPPED" || c.StartedAt == nil || c.SettledAt != nil ||
		c.WallMs != nil || *c.Received != 0 {
		t.Errorf("c: %+v", c)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Nodes []map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if _, has := doc.Nodes[2]["wallMs"]; has {
		t.Errorf("c's absent wallMs is in the JSON: %s", raw)
	}
	if _, has := doc.Nodes[2]["settledAt"]; has {
		t.Errorf("c's absent settledAt is in the JSON: %s", raw)
	}
	if got, _ := doc.Nodes[0]["wallMs"].(float64); got != 2250 {
		t.Errorf("a's wallMs in JSON: %s", raw)
	}
}

func TestProjectRunningAndDone(t *testing.T) {
	running := journalOf(t, "e-1",
		ev(1, "ExecutionStatusChanged", "", 0, map[string]any{"from": "PENDING", "to": "RUNNING"}),
		ev(2, "NodeStatusChanged", "a", time.Second, nodeChange("PENDING", "RUNNING", 1, 0)),
		ev(3, "ExecutionStatusChanged", "", 2*time.Second, map[string]any{"from": "RUNNING", "to": "PAUSED"}),
	)
	p := Project(running)
	if p.Run.Status != StatusRunning || p.Run.EngineStatus != "PAUSED" || p.Run.SettledAt != nil {
		t.Errorf("paused run: %+v", p.Run)
	}
	a := p.Nodes[0]
	if a.StartedAt == nil || a.SettledAt != nil || a.WallMs != nil || a.Status != StatusRunning {
		t.Errorf("running node: %+v", a)
	}

	done := journalOf(t, "e-1",
		ev(1, "NodeStatusChanged", "a", time.Second, nodeChange("PENDING", "RUNNING", 1, 0)),
		ev(2, "NodeStatusChanged", "a", time.Second, nodeChange("RUNNING", "SUCCESS", 1, 1)),
		ev(3, "ExecutionStatusChanged", "", 2*time.Second, map[string]any{"from": "RUNNING", "to": "SUCCESS"}),
	)
	p = Project(done)
	if p.Run.Status != StatusDone || p.Run.Error != "" {
		t.Errorf("done run: %+v", p.Run)
	}
	// Started and settled at the same instant: a measured 0, so present.
	if w := p.Nodes[0].WallMs; w == nil || *w != 0 {
		t.Errorf("same-instant wallMs: %v", w)
	}

	failed := journalOf(t, "e-1",
		ev(1, "ExecutionStatusChanged", "", 0, map[string]any{"from": "RUNNING", "to": "FAILURE", "error": "boom"}),
		ev(2, "ExecutionStatusChanged", "", time.Second, map[string]any{"from": "FAILURE", "to": "FAILURE"}),
	)
	if p := Project(failed); p.Run.Status != StatusDown || p.Run.Error != "boom" || !p.Run.SettledAt.Equal(t0) {
		t.Errorf("failed run: %+v", p.Run)
	}
}

// TestProjectAbsent: nothing recorded, nothing made up.
func TestProjectAbsent(t *testing.T) {
	p := Project(nil)
	if p.Run.Status != StatusRunning || p.Run.FirstSequence != 0 || p.Run.FirstObservedAt != nil ||
		p.Run.LastObservedAt != nil || p.Run.SettledAt != nil || p.Run.Events.Total != 0 || p.Nodes == nil {
		t.Fatalf("empty: %+v", p)
	}
	raw, _ := json.Marshal(p)
	for _, absent := range []string{"firstSequence", "firstObservedAt", "settledAt", "engineStatus", "executionId"} {
		if strings.Contains(string(raw), absent) {
			t.Errorf("%s in %s", absent, raw)
		}
	}
	if !strings.Contains(string(raw), `"nodes":[]`) {
		t.Errorf("nodes not an empty list: %s", raw)
	}

	// A node event without counts, time or status: those stay absent; the
	// record's observedAt stands in for the missing "at".
	recs := journalOf(t, "e-1",
		map[string]any{"type": "NodeStatusChanged", "nodeId": "x", "data": map[string]any{"to": "RUNNING"}},
		map[string]any{"type": "NodeStatusChanged", "nodeId": "y", "data": map[string]any{}},
		map[string]any{"note": "no type"},
	)
	p = Project(recs)
	x, y := p.Nodes[0], p.Nodes[1]
	if x.Received != nil || x.Emitted != nil || x.StartedAt == nil || !x.StartedAt.Equal(recs[0].ObservedAt) {
		t.Errorf("x: %+v", x)
	}
	if y.EngineStatus != "" || y.StartedAt != nil || y.Received != nil {
		t.Errorf("y: %+v", y)
	}
	if p.Run.Events.ByType["unknown"] != 1 {
		t.Errorf("untyped event: %+v", p.Run.Events)
	}
}

func wantCounts(t *testing.T, what string, c Counts, total int, byTarget, byType map[string]int) {
	t.Helper()
	if c.Total != total || !sameCounts(c.ByTarget, byTarget) || !sameCounts(c.ByType, byType) {
		t.Errorf("%s: got %+v; want %d %v %v", what, c, total, byTarget, byType)
	}
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestProjectRestartFromNode: the nodes a restart from a node starts SKIPPED
// come from the start event, with nothing received; a skipped node that
// later runs follows its own events.
func TestProjectRestartFromNode(t *testing.T) {
	recs := journalOf(t, "e-1",
		ev(1, "ExecutionStarted", "", 0, map[string]any{"fromNodeId": "c", "skippedNodes": []any{"a", "b"}}),
		ev(2, "NodeStatusChanged", "c", time.Second, nodeChange("PENDING", "RUNNING", 1, 0)),
		ev(3, "NodeStatusChanged", "c", 2*time.Second, nodeChange("RUNNING", "SUCCESS", 1, 1)),
		ev(4, "NodeStatusChanged", "b", 3*time.Second, nodeChange("SKIPPED", "SUCCESS", 0, 0)),
		ev(5, "ExecutionStatusChanged", "", 3*time.Second, map[string]any{"from": "RUNNING", "to": "SUCCESS"}))
	p := Project(recs)
	if len(p.Nodes) != 3 {
		t.Fatalf("nodes %+v, want a, b, c", p.Nodes)
	}
	a := p.Nodes[0]
	if a.ID != "a" || a.EngineStatus != "SKIPPED" || a.Received == nil || *a.Received != 0 || a.StartedAt != nil || a.FirstSequence != 1 || a.EventCount != 0 {
		t.Fatalf("a = %+v, want SKIPPED from the start event, never started", a)
	}
	if b := p.Nodes[1]; b.EngineStatus != "SUCCESS" || b.FirstSequence != 1 || b.LastSequence != 4 || b.EventCount != 1 {
		t.Fatalf("b = %+v", b)
	}
}
