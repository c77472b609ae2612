package rulesengine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

func ruleSetOf(t *testing.T, doc string) *ruleSet {
	t.Helper()
	c, err := cel.NewConditions()
	if err != nil {
		t.Fatal(err)
	}
	d, err := supervisor.ParseRuleDocument([]byte(doc), c.Check)
	if err != nil {
		t.Fatalf("ParseRuleDocument: %v", err)
	}
	return newRuleSet(d, c)
}

var t0 = time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

// failure is a node FAILURE of a run of a workflow, at t0 + sec seconds.
func failure(workflow, run, node string, sec int) supervisor.EventSignal {
	return supervisor.EventSignal{Seq: int64(sec), At: t0.Add(time.Duration(sec) * time.Second), Type: "NodeStatusChanged",
		SessionID: "ci", WorkflowID: workflow, ExecutionID: run, NodeID: node, Actor: "engine",
		Data: map[string]any{"from": "RUNNING", "to": "FAILURE"}}
}

// feed evaluates events in order, committing windows as the engine does,
// and returns the outcome of rule id for each.
func feed(t *testing.T, rs *ruleSet, id string, evs ...supervisor.EventSignal) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		tr := eventTrigger(ev, func(context.Context) (map[string]any, error) {
			return ExecutionVariable(supervisorapp.RunFacts{RunInfo: supervisorapp.RunInfo{ID: ev.ExecutionID, SessionID: ev.SessionID, WorkflowID: ev.WorkflowID,
				Status: execution.Running, StartedAt: t0}, LastProgressAt: ev.At, ActiveCount: 1}), nil
		}, ev.At)
		evals, changes := rs.evaluate(t.Context(), tr)
		rs.commit(changes, ev.At)
		got := "-"
		for _, e := range evals {
			if e.RuleID == id {
				got = e.Outcome
				if e.Err != nil {
					got += ": " + e.Err.Error()
				}
			}
		}
		out = append(out, got)
	}
	return out
}

const seedRule = `{"rules": [{"id": "guard", "when": {"event": "NodeStatusChanged", "status": "FAILURE", "count": 3, "withinSeconds": 60},
	"then": {"command": "PauseWorkflow"}}]}`

func TestWindowCounting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		evs  []supervisor.EventSignal
		want []string
	}{
		{"the seed's example: three failures within a minute fire once", seedRule,
			[]supervisor.EventSignal{failure("build", "r1", "ship", 0), failure("build", "r2", "ship", 10), failure("build", "r3", "ship", 20)},
			[]string{RuleCounted, RuleCounted, RuleFired}},
		{"the window empties when it fires: the next firing needs three new failures", seedRule,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0), failure("build", "r2", "a", 1), failure("build", "r3", "a", 2),
				failure("build", "r4", "a", 3), failure("build", "r5", "a", 4), failure("build", "r6", "a", 5)},
			[]string{RuleCounted, RuleCounted, RuleFired, RuleCounted, RuleCounted, RuleFired}},
		{"failures spread over more than the window never fire", seedRule,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0), failure("build", "r2", "a", 40), failure("build", "r3", "a", 80),
				failure("build", "r4", "a", 120)},
			[]string{RuleCounted, RuleCounted, RuleCounted, RuleCounted}},
		{"the window slides: the first failure drops out after 60 s", seedRule,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0), failure("build", "r2", "a", 50), failure("build", "r3", "a", 61),
				failure("build", "r4", "a", 70)},
			[]string{RuleCounted, RuleCounted, RuleCounted, RuleFired}},
		{"per workflow (the default): two workflows count apart", seedRule,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0), failure("test", "r2", "a", 1), failure("build", "r3", "a", 2),
				failure("test", "r4", "a", 3), failure("build", "r5", "a", 4)},
			[]string{RuleCounted, RuleCounted, RuleCounted, RuleCounted, RuleFired}},
		{"per execution: only failures of one run count together",
			`{"rules": [{"id": "guard", "when": {"event": "NodeStatusChanged", "status": "FAILURE", "count": 2, "withinSeconds": 60, "per": "execution"},
				"then": {"command": "PauseWorkflow"}}]}`,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0), failure("build", "r2", "a", 1), failure("build", "r1", "b", 2)},
			[]string{RuleCounted, RuleCounted, RuleFired}},
		{"per supervisor: every workflow counts together",
			`{"rules": [{"id": "guard", "when": {"event": "NodeStatusChanged", "status": "FAILURE", "count": 2, "withinSeconds": 60, "per": "supervisor"},
				"then": {"command": "PauseWorkflow"}}]}`,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0), failure("test", "r2", "a", 1)},
			[]string{RuleCounted, RuleFired}},
		{"without a count every match fires",
			`{"rules": [{"id": "guard", "when": {"event": "NodeStatusChanged", "status": "FAILURE"}, "then": {"command": "PauseWorkflow"}}]}`,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0), failure("build", "r2", "a", 1)},
			[]string{RuleFired, RuleFired}},
		{"the if filters before counting",
			`{"rules": [{"id": "guard", "when": {"event": "NodeStatusChanged", "status": "FAILURE", "count": 2, "withinSeconds": 60,
				"if": "event.nodeId == 'ship' && execution.activeCount >= 1 && now >= event.at"}, "then": {"command": "PauseWorkflow"}}]}`,
			[]supervisor.EventSignal{failure("build", "r1", "ship", 0), failure("build", "r2", "lint", 1), failure("build", "r3", "ship", 2)},
			[]string{RuleCounted, RuleConditionFalse, RuleFired}},
		{"an if that cannot be evaluated does not fire and does not count",
			`{"rules": [{"id": "guard", "when": {"event": "NodeStatusChanged", "if": "event.data.missing == 'x'"}, "then": {"command": "PauseWorkflow"}}]}`,
			[]supervisor.EventSignal{failure("build", "r1", "a", 0)},
			[]string{RuleConditionFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := feed(t, ruleSetOf(t, tt.doc), "guard", tt.evs...)
			for i := range tt.want {
				if i >= len(got) || !strings.HasPrefix(got[i], tt.want[i]) {
					t.Fatalf("outcomes: got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestWindowsSurviveARestart: the windows saved with the cursor are the
// windows a new engine goes on with; a failed signal counts once.
func TestWindowsSurviveARestart(t *testing.T) {
	t.Parallel()
	rs := ruleSetOf(t, seedRule)
	feed(t, rs, "guard", failure("build", "r1", "a", 0), failure("build", "r2", "a", 10))
	state, err := rs.state()
	if err != nil {
		t.Fatal(err)
	}
	again := ruleSetOf(t, seedRule)
	if err := again.restore(state); err != nil {
		t.Fatalf("restore %s: %v", state, err)
	}
	// A signal whose directive failed leaves the windows untouched: the
	// evaluation's changes are never committed.
	tr := eventTrigger(failure("build", "r3", "a", 20), func(context.Context) (map[string]any, error) { return nil, nil }, t0)
	if evals, _ := again.evaluate(t.Context(), tr); len(evals) != 1 || evals[0].Outcome != RuleFired {
		t.Fatalf("third failure after a restart: got %+v, want it to fire", evals)
	}
	if got := feed(t, again, "guard", failure("build", "r3", "a", 20)); got[0] != RuleFired {
		t.Fatalf("the same third failure handled again: got %s, want %s (counted once)", got[0], RuleFired)
	}
	// Windows that can no longer fire are not saved.
	feed(t, again, "guard", failure("test", "r9", "a", 30), failure("build", "r4", "a", 200))
	state, err = again.state()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "workflow:ci/test") {
		t.Fatalf("state %s keeps the test workflow's window, which ended 170 s before the newest match", state)
	}
	if !strings.Contains(string(state), "workflow:ci/build") {
		t.Fatalf("state %s lost the build workflow's open window", state)
	}
	// A document without the rule drops its windows.
	other := ruleSetOf(t, `{"rules": [{"id": "other", "when": {"event": "NodeStatusChanged"}, "then": {"command": "PauseWorkflow"}}]}`)
	if err := other.restore(state); err != nil {
		t.Fatal(err)
	}
	if len(other.windows) != 0 {
		t.Fatalf("windows of a rule the document lacks: got %v, want none", other.windows)
	}
}

func TestRuleKeyDerivation(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 64)
	tests := []struct {
		name, rule, on string
		want           string
	}{
		{"rule and event cursor", "guard", "12", "rule:guard:12"},
		{"rule, tick slot and run", "stall", "tick:4711:0197a3c4-1111-7222-8333-944445555666", "rule:stall:tick:4711:0197a3c4-1111-7222-8333-944445555666"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := RuleKey(tt.rule, tt.on); got != tt.want {
				t.Errorf("RuleKey(%q, %q) = %q, want %q", tt.rule, tt.on, got, tt.want)
			}
		})
	}
	k1, k2 := RuleKey(long, "tick:1:"+long), RuleKey(long, "tick:2:"+long)
	if len(k1) > supervisor.MaxKeyLen || k1 == k2 || k1 != RuleKey(long, "tick:1:"+long) {
		t.Errorf("long keys: got %q (%d) and %q, want distinct, stable and at most %d characters", k1, len(k1), k2, supervisor.MaxKeyLen)
	}
	if _, err := supervisor.NewDirective(k1, "c", "", "", mustCommand(t)); err != nil {
		t.Errorf("a derived key is refused as a directive key: %v", err)
	}
	c1, c2 := supervisorapp.ControlKey("guard", "k"), supervisorapp.ControlKey("other", "k")
	if c1 == c2 || c1 != supervisorapp.ControlKey("guard", "k") || c1 == supervisorapp.ControlKey("guard", "k2") {
		t.Errorf("ControlKey: got %q and %q, want one key per supervisor and directive key, stable", c1, c2)
	}
	if n := len(supervisorapp.ControlKey(long, strings.Repeat("k", supervisor.MaxKeyLen))); n > execution.MaxKeyLen {
		t.Errorf("ControlKey length: got %d, want at most %d", n, execution.MaxKeyLen)
	}
}

func mustCommand(t *testing.T) supervisor.Command {
	t.Helper()
	d, err := supervisor.ParseDirective([]byte(`{"key": "k", "command": {"type": "PauseWorkflow", "target": "owned.running"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return d.Command()
}

func FuzzParseWindowState(f *testing.F) {
	f.Add([]byte(`{"windows": {"guard": {"workflow:ci/build": ["2026-03-01T11:00:00Z", "2026-03-01T11:00:10Z"]}}}`))
	f.Add([]byte(`{"windows": {}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"windows": {"a": {"b": []}}}`))
	f.Add([]byte(`{"windows": {"a": {"b": ["not a time"]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := ParseWindowState(data)
		if err != nil {
			return
		}
		for _, byKey := range ws {
			for _, w := range byKey {
				if w.Len() == 0 {
					t.Fatalf("an empty window was kept from %q", data)
				}
			}
		}
	})
}

// TestReviewByRules: deny and requireApproval rules answer reviews with the
// variables command, actor, workflow and now.
func TestReviewByRules(t *testing.T) {
	t.Parallel()
	c, err := cel.NewConditions()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := supervisor.InstantiatePreset("too-many-running", map[string]any{"max": 3}, c.Check)
	if err != nil {
		t.Fatal(err)
	}
	start, err := supervisor.ParseDirective([]byte(`{"key": "k", "command": {"type": "StartWorkflow", "target": "workflow:ci/build", "payload": {"amount": 12000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	in := ReviewInput{Command: start.Command(), Actor: "key:ops", SessionID: "ci", WorkflowID: "build", Now: t0}
	for _, tt := range []struct {
		active int
		want   supervisor.Decision
	}{{2, supervisor.Allow}, {3, supervisor.Deny}} {
		in.ActiveCount = tt.active
		v, rule := ReviewByRules(t.Context(), doc, c, in)
		if v.Decision() != tt.want || (tt.want == supervisor.Deny && rule != "too-many-running") {
			t.Errorf("%d unfinished runs: got %s by %q, want %s", tt.active, v.Decision(), rule, tt.want)
		}
	}
	gate, err := supervisor.ParseRuleDocument([]byte(`{"rules": [
		{"id": "big", "requireApproval": {"command": "StartWorkflow", "if": "command.args.payload.amount > 10000 && actor == 'key:ops'"}},
		{"id": "broken", "deny": {"command": "StopWorkflow", "if": "command.args.payload.amount > 1"}}]}`), c.Check)
	if err != nil {
		t.Fatal(err)
	}
	if v, rule := ReviewByRules(t.Context(), gate, c, in); v.Decision() != supervisor.RequireApproval || rule != "big" {
		t.Errorf("a big start: got %s by %q, want REQUIRE_APPROVAL by big", v.Decision(), rule)
	}
	stop, err := supervisor.ParseDirective([]byte(`{"key": "k", "command": {"type": "StopWorkflow", "target": "execution:r1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := ReviewByRules(t.Context(), gate, c, ReviewInput{Command: stop.Command(), Actor: "key:ops"}); v.Decision() != supervisor.NoOpinion {
		t.Errorf("an if that fails: got %s, want NO_OPINION", v.Decision())
	}
}
