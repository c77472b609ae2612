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
	// c was left SKIPPED by a run that has ended: it will never run again,
	// so it is done, settled where it became SKIPPED (these events carry no
	// timing, so the events' times stand in).
	if c.Status != StatusDone || c.EngineStatus != "SKIPPED" || c.SettledAt == nil || !c.SettledAt.Equal(t0.Add(4*time.Second)) ||
		c.WallMs == nil || *c.WallMs != 0 || *c.Received != 0 {
		t.Errorf("c: %+v, want done, settled at %v", c, t0.Add(4*time.Second))
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Nodes []map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
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
	// It will not run in this execution: done, settled at the start, and
	// its plugin ran for 0 ms (as the status API shows it).
	if a.Status != StatusDone || a.SettledAt == nil || !a.SettledAt.Equal(t0) || a.WallMs == nil || *a.WallMs != 0 {
		t.Fatalf("a = %+v, want done, settled at %v with wallMs 0", a, t0)
	}
	if b := p.Nodes[1]; b.EngineStatus != "SUCCESS" || b.FirstSequence != 1 || b.LastSequence != 4 || b.EventCount != 1 {
		t.Fatalf("b = %+v", b)
	}
}

// timedChange is a NodeStatusChanged as the engine writes it now: with the
// node's timing as the status API shows it (startedAt, endedAt, wallMs) and
// the latest attempt when the change recorded one.
func timedChange(from, to string, received, emitted int, started, ended *time.Duration, wallMs int64, attempt ...time.Duration) map[string]any {
	d := nodeChange(from, to, received, emitted)
	d["wallMs"] = wallMs
	if started != nil {
		d["startedAt"] = t0.Add(*started).Format(time.RFC3339Nano)
	}
	if ended != nil {
		d["endedAt"] = t0.Add(*ended).Format(time.RFC3339Nano)
	}
	if len(attempt) == 2 {
		d["attemptStartedAt"] = t0.Add(attempt[0]).Format(time.RFC3339Nano)
		d["attemptEndedAt"] = t0.Add(attempt[1]).Format(time.RFC3339Nano)
		d["attemptWallMs"] = (attempt[1] - attempt[0]).Milliseconds()
	}
	return d
}

func dur(d time.Duration) *time.Duration { return &d }

// TestProjectNodeTiming: with timed events the projection shows each node's
// plugin timing, not the times of the events. The failing node's attempts
// ran 50 ms and 80 ms, and its events were committed at one instant (the
// commit), so times taken from the events would say 0.
func TestProjectNodeTiming(t *testing.T) {
	ms := time.Millisecond
	recs := journalOf(t, "e-1",
		ev(1, "ExecutionStarted", "", 0, map[string]any{}),
		ev(2, "ExecutionStatusChanged", "", 0, map[string]any{"from": "PENDING", "to": "RUNNING"}),
		// boom: attempt 1 (100–150 ms) failed and was retried without a
		// status change; attempt 2 (1100–1180 ms) failed for good.
		ev(3, "NodeStatusChanged", "boom", 1200*ms, timedChange("PENDING", "FAILURE", 1, 0, dur(100*ms), dur(1180*ms), 130,
			1100*ms, 1180*ms)),
		// quick: ran for less than a millisecond, then settled.
		ev(4, "NodeStatusChanged", "quick", 1200*ms, timedChange("PENDING", "SUCCESS", 1, 1, dur(10*ms), dur(10*ms+400*time.Microsecond), 0,
			10*ms, 10*ms+400*time.Microsecond)),
		// never: no message reached it; it settled SKIPPED.
		ev(5, "NodeStatusChanged", "never", 1200*ms, timedChange("PENDING", "SKIPPED", 0, 0, nil, dur(1200*ms), 0)),
		// held: SKIP while the run went on: SKIPPED, but live.
		ev(6, "NodeStatusChanged", "held", 300*ms, timedChange("PENDING", "SKIPPED", 0, 0, nil, nil, 0)),
	)
	p := Project(recs)
	if len(p.Nodes) != 4 {
		t.Fatalf("nodes: %+v", p.Nodes)
	}
	boom, held, never, quick := p.Nodes[0], p.Nodes[1], p.Nodes[2], p.Nodes[3]
	if boom.Status != StatusDown || boom.StartedAt == nil || !boom.StartedAt.Equal(t0.Add(100*ms)) ||
		boom.SettledAt == nil || !boom.SettledAt.Equal(t0.Add(1180*ms)) || boom.WallMs == nil || *boom.WallMs != 130 {
		t.Errorf("boom: got %+v; want down, started %v, settled %v (its last attempt's end), wallMs 130",
			boom, t0.Add(100*ms), t0.Add(1180*ms))
	}
	if quick.Status != StatusDone || quick.WallMs == nil || *quick.WallMs != 0 || !quick.SettledAt.Equal(t0.Add(10*ms+400*time.Microsecond)) {
		t.Errorf("quick: got %+v; want done with a measured 0 ms", quick)
	}
	if never.Status != StatusDone || never.StartedAt != nil || never.SettledAt == nil || !never.SettledAt.Equal(t0.Add(1200*ms)) ||
		never.WallMs == nil || *never.WallMs != 0 {
		t.Errorf("never: got %+v; want done (settled SKIPPED), never started, wallMs 0", never)
	}
	if held.Status != StatusRunning || held.EngineStatus != "SKIPPED" || held.SettledAt != nil || held.StartedAt != nil {
		t.Errorf("held: got %+v; want running: a node under SKIP may still be unskipped", held)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Nodes []map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"settledAt", "startedAt"} {
		if _, has := doc.Nodes[1][absent]; has {
			t.Errorf("held's absent %s is in the JSON: %s", absent, raw)
		}
	}
	if w, has := doc.Nodes[2]["wallMs"]; !has || w != 0.0 {
		t.Errorf("never's wallMs 0 is not in the JSON: %s", raw)
	}

	// The run ends: the node under SKIP is cut, and its last event says
	// it ended; the projection follows.
	recs = journalOf(t, "e-1",
		ev(1, "NodeStatusChanged", "held", 300*ms, timedChange("PENDING", "SKIPPED", 0, 0, nil, nil, 0)),
		ev(2, "NodeStatusChanged", "held", 2*time.Second, timedChange("SKIPPED", "SKIPPED", 0, 0, nil, dur(2*time.Second), 0)),
		ev(3, "ExecutionStatusChanged", "", 2*time.Second, map[string]any{"from": "RUNNING", "to": "SUCCESS"}),
	)
	if held := Project(recs).Nodes[0]; held.Status != StatusDone || held.SettledAt == nil || !held.SettledAt.Equal(t0.Add(2*time.Second)) {
		t.Errorf("held after the run: got %+v; want done, settled at %v", held, t0.Add(2*time.Second))
	}
}

// TestProjectTimingFollowsTheLastEvent: the timing is the node's as of its
// last event, so attempts that changed no status still count once a later
// event carries them; an older event without timing after timed ones (a
// journal that spans a downgrade) does not undo it.
func TestProjectTimingFollowsTheLastEvent(t *testing.T) {
	ms := time.Millisecond
	recs := journalOf(t, "e-1",
		ev(1, "NodeStatusChanged", "a", 60*ms, timedChange("PENDING", "RUNNING", 1, 1, dur(10*ms), nil, 50, 10*ms, 60*ms)),
		ev(2, "NodeStatusChanged", "a", 900*ms, timedChange("RUNNING", "PAUSED", 3, 3, dur(10*ms), nil, 170)),
		ev(3, "NodeStatusChanged", "a", 950*ms, nodeChange("PAUSED", "RUNNING", 3, 3)),
	)
	a := Project(recs).Nodes[0]
	if a.Status != StatusRunning || a.WallMs == nil || *a.WallMs != 170 || !a.StartedAt.Equal(t0.Add(10*ms)) || a.SettledAt != nil {
		t.Errorf("a: got %+v; want running, started %v, wallMs 170, not settled", a, t0.Add(10*ms))
	}
}

// TestProjectSpend: the journal's TaskCompleted events fold into the run's
// spend, through the execution read's fold: two nodes reported usage and
// cost, one reported none and is the run's spend gap, never a zero; a
// TaskCompleted of no node and other events' usage members are not spend.
func TestProjectSpend(t *testing.T) {
	usage := func(in, out int) map[string]any {
		return map[string]any{"input": in, "output": out, "cacheRead": 7, "tokensKnown": true}
	}
	cost := func(usd float64) map[string]any {
		return map[string]any{"usd": usd, "usdKnown": true, "provenance": "reported"}
	}
	done := func(seq int, node string, usage, cost map[string]any) map[string]any {
		d := map[string]any{"itemId": "1", "attempt": 1, "port": "output"}
		if usage != nil {
			d["usage"] = usage
		}
		if cost != nil {
			d["cost"] = cost
		}
		b := ev(seq, "TaskCompleted", node, time.Duration(seq)*time.Second, d)
		b["actor"], b["channel"] = "worker:w1", "worker"
		return b
	}
	recs := journalOf(t, "e-1",
		ev(1, "ExecutionStarted", "", 0, map[string]any{}),
		done(2, "summarize", usage(1000, 200), cost(0.25)),
		done(3, "summarize", usage(500, 100), cost(0.5)),
		done(4, "classify", usage(10, 1), cost(0.01)),
		done(5, "fetch", nil, nil),
		done(6, "", usage(1, 1), cost(1)),
		ev(7, "NodeStatusChanged", "fetch", 7*time.Second, map[string]any{"from": "RUNNING", "to": "SUCCESS", "usage": usage(9, 9)}),
	)
	s := Project(recs).Spend
	if len(s.Nodes) != 3 || s.Total.Tasks != 4 || s.Total.UsageReports != 3 || s.Total.Usage.Input != 1510 ||
		s.Total.Usage.Output != 301 || *s.Total.Usage.CacheRead != 21 || s.Total.Cost.USD != 0.76 || s.Total.UsageKnown || s.Total.CostKnown {
		t.Fatalf("spend = %+v total %+v %+v %+v", s, s.Total, s.Total.Usage, s.Total.Cost)
	}
	if n := s.Nodes["summarize"]; n.Tasks != 2 || n.Usage.Input != 1500 || n.Cost.USD != 0.75 || !n.UsageKnown || !n.CostKnown {
		t.Fatalf("summarize = %+v %+v %+v", n, n.Usage, n.Cost)
	}
	if n := s.Nodes["fetch"]; n.Tasks != 1 || n.Usage != nil || n.Cost != nil || n.UsageKnown {
		t.Fatalf("fetch = %+v", n)
	}
	if len(s.SpendGaps) != 1 || s.SpendGaps[0] != "fetch" || len(s.CostGaps) != 1 || s.CostGaps[0] != "fetch" {
		t.Fatalf("gaps = %v / %v", s.SpendGaps, s.CostGaps)
	}
	// A journal without tasks has an empty, known spend.
	b, err := json.Marshal(Project(recs[:1]).Spend)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"nodes":{},"total":{"tasks":0,"usageReports":0,"costReports":0,"usageKnown":true,"costKnown":true},"spendGaps":[],"costGaps":[]}`; string(b) != want {
		t.Fatalf("empty spend = %s, want %s", b, want)
	}
}
