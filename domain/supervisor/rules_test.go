package supervisor

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func parseRules(t *testing.T, rules ...any) RuleDocument {
	t.Helper()
	d, err := ParseRuleDocument(mustJSON(t, obj{"schemaVersion": 1, "rules": arr(rules)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseRuleDocumentSeedExample(t *testing.T) {
	t.Parallel()
	d := parseRules(t, seedRule())
	rule := d.Rules()[0]
	w, ok := rule.When()
	if !ok || w.Event() != "NodeStatusChanged" || w.Status() != "FAILURE" || w.Count() != 3 || w.Within() != time.Minute || w.Per() != PerWorkflow {
		t.Fatalf("when: got %+v", w)
	}
	th, ok := rule.Then()
	if !ok || th.Command() != PauseWorkflow || !th.Target().IsZero() {
		t.Fatalf("then: got %+v", th)
	}
	b, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schemaVersion":1,"rules":[{"id":"pause-on-repeated-failure","when":{"event":"NodeStatusChanged","status":"FAILURE","count":3,"withinSeconds":60,"per":"workflow"},"then":{"command":"PauseWorkflow"}}]}`
	if string(b) != want {
		t.Errorf("wire:\n got %s\nwant %s", b, want)
	}
	again, err := ParseRuleDocument(b, nil)
	if err != nil || !reflect.DeepEqual(again, d) {
		t.Errorf("round trip: got %+v %v", again, err)
	}
	settings, err := d.Settings()
	if err != nil || settings["rules"] == nil {
		t.Errorf("Settings: got %v %v", settings, err)
	}
}

func TestParseRuleDocumentViolations(t *testing.T) {
	t.Parallel()
	then := obj{"command": "PauseWorkflow"}
	tests := []struct {
		name string
		doc  any
		want []violation
	}{
		{"not an object", arr{}, []violation{{"", "must be an object"}}},
		{"version", obj{"schemaVersion": 2, "rules": arr{seedRule()}}, []violation{{"schemaVersion", "must be 1 (the only version this server reads), got 2"}}},
		{"no rules", obj{}, []violation{{"rules", "is required"}}},
		{"empty rules", obj{"rules": arr{}}, []violation{{"rules", "must list at least one rule"}}},
		{"unknown member", obj{"rules": arr{seedRule()}, "name": "x"}, []violation{{"name", `unknown field "name"; allowed fields: schemaVersion, rules`}}},
		{"rule shapes", obj{"rules": arr{
			obj{"id": "a"},
			obj{"id": "b", "when": obj{"event": "ExecutionStarted"}},
			obj{"id": "c", "then": then},
			obj{"id": "d", "deny": obj{"command": "StartWorkflow"}, "requireApproval": obj{"command": "StartWorkflow"}},
			obj{"id": "D", "deny": obj{"command": "StartWorkflow"}},
			obj{"id": "d", "deny": obj{"command": "StartWorkflow"}},
			obj{"deny": obj{"command": "StartWorkflow"}, "note": 1},
		}}, []violation{
			{"rules[0]", "needs when and then"}, {"rules[1].then", "is required with when"}, {"rules[2].when", "is required with then"},
			{"rules[3]", "has more than one of"}, {"rules[4].id", `rule id "D" must be lowercase`}, {"rules[5].id", `rule id "d" is already used by rules[3]`},
			{"rules[6].id", "is required"}, {"rules[6].note", `unknown field "note"`}}},
		{"when filters", obj{"rules": arr{
			obj{"id": "a", "when": obj{"event": "Nope"}, "then": then},
			obj{"id": "b", "when": obj{"event": "NodeStatusChanged", "tick": true}, "then": then},
			obj{"id": "c", "when": obj{"tick": false}, "then": then},
			obj{"id": "e", "when": obj{"event": "ExecutionStarted", "status": "RUNNING", "nodeId": "x"}, "then": then},
			obj{"id": "f", "when": obj{"event": "NodeStatusChanged", "status": "DONE", "nodeId": "X"}, "then": then},
			obj{"id": "g", "when": obj{"event": "ExecutionStatusChanged", "status": "WAITING"}, "then": then},
			obj{"id": "h", "when": obj{}, "then": then},
		}}, []violation{
			{"rules[0].when.event", `"Nope" is not an event type`}, {"rules[1].when", "give event or tick, not both"},
			{"rules[2].when.tick", "false never fires"}, {"rules[3].when.status", "ExecutionStarted events have no status to match"},
			{"rules[3].when.nodeId", "ExecutionStarted events name no node"}, {"rules[4].when.status", `"DONE" is not a status of NodeStatusChanged events`},
			{"rules[4].when.nodeId", `"X" is not a node id`}, {"rules[5].when.status", `"WAITING" is not a status of ExecutionStatusChanged events`},
			{"rules[6].when", "needs an event"}}},
		{"window", obj{"rules": arr{
			obj{"id": "a", "when": obj{"event": "NodeStatusChanged", "count": 3}, "then": then},
			obj{"id": "b", "when": obj{"event": "NodeStatusChanged", "withinSeconds": 3}, "then": then},
			obj{"id": "c", "when": obj{"event": "NodeStatusChanged", "count": 0, "withinSeconds": 86401}, "then": then},
			obj{"id": "d", "when": obj{"event": "NodeStatusChanged", "per": "workflow"}, "then": then},
			obj{"id": "e", "when": obj{"event": "NodeStatusChanged", "count": 2, "withinSeconds": 9, "per": "run"}, "then": then},
			obj{"id": "f", "when": obj{"tick": true, "count": 2, "withinSeconds": 9}, "then": then},
		}}, []violation{
			{"rules[0].when.withinSeconds", "is required with count"}, {"rules[1].when.count", "is required with withinSeconds"},
			{"rules[2].when.count", "must be from 1 to 10000, got 0"}, {"rules[2].when.withinSeconds", "must be from 1 to 86400, got 86401"},
			{"rules[3].when.per", "applies only with count and withinSeconds"}, {"rules[4].when.per", `"run" is not a counting scope; use execution, workflow or supervisor`},
			{"rules[5].when", "a tick rule does not count"}}},
		{"then", obj{"rules": arr{
			obj{"id": "a", "when": obj{"event": "InputRequested"}, "then": obj{"command": "AnswerInput"}},
			obj{"id": "b", "when": obj{"event": "InputRequested"}, "then": obj{"command": "PauseWorkflow", "mode": "KILL", "executionId": "e1"}},
			obj{"id": "c", "when": obj{"event": "SessionApplied"}, "then": obj{"command": "PauseWorkflow"}},
			obj{"id": "e", "when": obj{"event": "ExecutionStarted"}, "then": obj{"command": "SkipNode"}},
			obj{"id": "f", "when": obj{"event": "SessionApplied"}, "then": obj{"command": "StartWorkflow"}},
			obj{"id": "g", "when": obj{"tick": true}, "then": obj{"command": "PauseNode", "target": "owned.running"}},
			obj{"id": "h", "when": obj{"event": "NodeStatusChanged"}, "then": obj{"command": "StopWorkflow", "target": "node:e/a"}},
			obj{"id": "i", "when": obj{"event": "NodeStatusChanged"}, "then": obj{"command": "Stop"}},
			obj{"id": "j", "when": obj{"event": "ReviewDecided", "count": 2, "withinSeconds": 5, "per": "execution"}, "then": obj{"command": "PauseWorkflow"}},
			obj{"id": "k", "when": obj{"event": "SessionApplied", "count": 2, "withinSeconds": 5}, "then": obj{"command": "PauseWorkflow"}},
		}}, []violation{
			{"rules[0].then.command", "a rule cannot send AnswerInput"},
			{"rules[1].then.mode", "PauseWorkflow in a rule takes: command, target, reason"}, {"rules[1].then.executionId", `leave "executionId" out`},
			{"rules[2].then.target", "does not always name a run"},
			{"rules[3].then.nodeId", "names no node"},
			{"rules[4].then.target", "names no workflow"},
			{"rules[5].then.nodeId", "PauseNode on owned.running needs the node"},
			{"rules[6].then.target", "StopWorkflow does not take node targets"},
			{"rules[7].then.command", `"Stop" is not a command type`},
			{"rules[8].then.target", "does not always name a run"},
			{"rules[9].then.target", "does not always name a workflow"}}},
		{"gates", obj{"rules": arr{
			obj{"id": "a", "deny": obj{}},
			obj{"id": "b", "requireApproval": obj{"command": "StartWorkflow", "if": ""}},
			obj{"id": "c", "deny": obj{"command": "StartWorkflow", "if": 3, "then": 1}},
		}}, []violation{
			{"rules[0].deny.command", "is required"}, {"rules[1].requireApproval.if", "is empty"},
			{"rules[2].deny.if", "must be a string"}, {"rules[2].deny.then", `unknown field "then"`}}},
		{"variables", obj{"rules": arr{
			obj{"id": "a", "when": obj{"event": "NodeStatusChanged", "if": "execution.lastProgresAt < now"}, "then": then},
			obj{"id": "b", "when": obj{"tick": true, "if": "event.type == 'x'"}, "then": then},
			obj{"id": "c", "deny": obj{"command": "StartWorkflow", "if": "execution.activeCount > 10"}},
			obj{"id": "d", "deny": obj{"command": "StartWorkflow", "if": "actor.name == 'x'"}},
			obj{"id": "e", "when": obj{"event": "NodeStatusChanged", "if": strings.Repeat("x", 4097)}, "then": then},
		}}, []violation{
			{"rules[0].when.if", "reads execution.lastProgresAt, which does not exist; execution has id, sessionId"},
			{"rules[1].when.if", "reads event, which a tick rule cannot read; it can read execution or now"},
			{"rules[2].deny.if", "reads execution, which a deny or requireApproval rule cannot read; it can read command, actor, workflow or now"},
			{"rules[3].deny.if", "reads actor.name, but actor is a string and has no fields"},
			{"rules[4].when.if", "is 4097 characters long; the limit is 4096"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRuleDocument(mustJSON(t, tt.doc), nil)
			checkViolations(t, err, tt.want...)
		})
	}
}

func TestRuleDocumentTooManyRules(t *testing.T) {
	t.Parallel()
	rules := arr{}
	for range MaxRules + 1 {
		rules = append(rules, seedRule())
	}
	_, err := ParseRuleDocument(mustJSON(t, obj{"rules": rules}), nil)
	checkViolations(t, err, violation{"rules", "has 201 rules; the limit is 200"})
}

func TestReferences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want []ref
	}{
		{"now - execution.lastProgressAt > duration('10m')", []ref{{"now", ""}, {"execution", "lastProgressAt"}}},
		{`event.data.items.exists(x, x.qty > 1) && "execution.nope" != 'event.x'`, []ref{{"event", "data"}, {"x", ""}, {"x", "qty"}}},
		{"has(execution.nodes) && size(event.data) > 1.5e3", []ref{{"execution", "nodes"}, {"event", "data"}}},
		{"actor.startsWith('key:') && command . type == 'X'", []ref{{"actor", ""}, {"command", "type"}}},
		{`r'\' + event.type`, []ref{{"event", "type"}}}, // a raw string ends at its quote
		{`'\' + event.type'`, nil}, // an escaped quote does not end a string
		{`'''execution.x''' + """event.y""" + now.getHours()`, []ref{{"now", ""}}},
	}
	for _, tt := range tests {
		if got := references(tt.expr); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("references(%q):\n got %v\nwant %v", tt.expr, got, tt.want)
		}
	}
}

func TestVariables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c    ExprContext
		want []string
	}{
		{EventRule, []string{"event", "execution", "now"}},
		{TickRule, []string{"execution", "now"}},
		{ReviewRule, []string{"command", "actor", "workflow", "now"}},
		{EngineWhen, []string{"event"}},
	}
	for _, tt := range tests {
		if got := VariableNames(tt.c); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.c, got, tt.want)
		}
		for _, v := range Variables(tt.c) {
			if v.Meaning == "" || v.Type == "" {
				t.Errorf("%s.%s has no meaning or type", tt.c, v.Name)
			}
			for _, f := range v.Fields {
				if f.Meaning == "" || f.Type == "" {
					t.Errorf("%s.%s has no meaning or type", v.Name, f.Name)
				}
			}
		}
	}
	vs := Variables(EventRule)
	vs[1].Fields[0].Name = "changed"
	if Variables(EventRule)[1].Fields[0].Name != "id" {
		t.Error("Variables returned shared field slices")
	}
}

func TestWhenMatches(t *testing.T) {
	t.Parallel()
	d := parseRules(t,
		obj{"id": "a", "when": obj{"event": "NodeStatusChanged", "status": "FAILURE", "nodeId": "ship"}, "then": obj{"command": "PauseWorkflow"}},
		obj{"id": "b", "when": obj{"tick": true, "status": "RUNNING"}, "then": obj{"command": "PauseWorkflow"}},
	)
	node, _ := d.Rules()[0].When()
	tick, _ := d.Rules()[1].When()
	tests := []struct {
		w    When
		o    Occurrence
		want bool
	}{
		{node, Occurrence{Type: "NodeStatusChanged", NodeID: "ship", Status: "FAILURE"}, true},
		{node, Occurrence{Type: "NodeStatusChanged", NodeID: "pack", Status: "FAILURE"}, false},
		{node, Occurrence{Type: "NodeStatusChanged", NodeID: "ship", Status: "SUCCESS"}, false},
		{node, Occurrence{Type: "BreakpointHit", NodeID: "ship", Status: "FAILURE"}, false},
		{node, Occurrence{NodeID: "ship", Status: "FAILURE"}, false},
		{tick, Occurrence{Status: "RUNNING"}, true},
		{tick, Occurrence{Status: "PAUSED"}, false},
		{tick, Occurrence{Type: "ExecutionStarted", Status: "RUNNING"}, false},
	}
	for i, tt := range tests {
		if got := tt.w.Matches(tt.o); got != tt.want {
			t.Errorf("case %d: got %v, want %v", i, got, tt.want)
		}
	}
}

func TestWindow(t *testing.T) {
	t.Parallel()
	w, _ := parseRules(t, seedRule()).Rules()[0].When()
	var win Window
	steps := []struct {
		at   time.Duration
		fire bool
		len  int
	}{
		{0, false, 1},
		{30 * time.Second, false, 2},
		{61 * time.Second, false, 2}, // the first fell out of the window
		{70 * time.Second, true, 0},  // three within 60 s: fire and start over
		{71 * time.Second, false, 1},
	}
	for i, s := range steps {
		var fired bool
		win, fired = w.Record(win, t0.Add(s.at))
		if fired != s.fire || win.Len() != s.len {
			t.Errorf("step %d at %s: got fire=%v len=%d, want fire=%v len=%d", i, s.at, fired, win.Len(), s.fire, s.len)
		}
	}
	plain, _ := parseRules(t, obj{"id": "p", "when": obj{"event": "NodeStatusChanged"}, "then": obj{"command": "PauseWorkflow"}}).Rules()[0].When()
	if _, fired := plain.Record(Window{}, t0); !fired {
		t.Error("a rule without a count fires on every match")
	}
	o := Occurrence{SessionID: "ci", WorkflowID: "build", ExecutionID: "e1"}
	if got := w.WindowKey(o); got != "workflow:ci/build" {
		t.Errorf("WindowKey per workflow: got %q", got)
	}
}

func TestThenBuild(t *testing.T) {
	t.Parallel()
	build := func(rule obj, o Occurrence) (string, error) {
		th, _ := parseRules(t, rule).Rules()[0].Then()
		c, err := th.Build(o)
		if err != nil {
			return "", err
		}
		b, _ := c.MarshalJSON()
		return string(b), nil
	}
	ev := Occurrence{Type: "NodeStatusChanged", SessionID: "ci", WorkflowID: "build", ExecutionID: "e1", NodeID: "ship", Status: "FAILURE"}
	node := obj{"event": "NodeStatusChanged"}
	tests := []struct {
		rule obj
		o    Occurrence
		want string
	}{
		{obj{"id": "a", "when": node, "then": obj{"command": "PauseWorkflow"}}, ev, `{"type":"PauseWorkflow","target":"execution:e1"}`},
		{seedRule(), ev, `{"type":"PauseWorkflow","target":"workflow:ci/build"}`},
		{obj{"id": "a", "when": obj{"event": "NodeStatusChanged", "count": 2, "withinSeconds": 5, "per": "supervisor"}, "then": obj{"command": "Hold"}}, ev,
			`{"type":"Hold","target":"owned.running"}`},
		{obj{"id": "a", "when": node, "then": obj{"command": "RetryNode"}}, ev, `{"type":"RetryNode","target":"node:e1/ship"}`},
		{obj{"id": "a", "when": node, "then": obj{"command": "SkipNode", "nodeId": "pack"}}, ev, `{"type":"SkipNode","target":"execution:e1","nodeId":"pack"}`},
		{obj{"id": "a", "when": node, "then": obj{"command": "PauseNode", "target": "owned.running"}}, ev, `{"type":"PauseNode","target":"owned.running","nodeId":"ship"}`},
		{obj{"id": "a", "when": node, "then": obj{"command": "StopAll", "mode": "DRAIN"}}, ev, `{"type":"StopAll","target":"workflow:ci/build","mode":"DRAIN"}`},
		{obj{"id": "a", "when": node, "then": obj{"command": "StartWorkflow", "target": "workflow:ops/alert", "payload": obj{"n": 1}}}, ev,
			`{"type":"StartWorkflow","target":"workflow:ops/alert","payload":{"n":1}}`},
		{obj{"id": "a", "when": obj{"tick": true}, "then": obj{"command": "StopWorkflow"}}, Occurrence{SessionID: "ci", WorkflowID: "build", ExecutionID: "e2", Status: "RUNNING"},
			`{"type":"StopWorkflow","target":"execution:e2","mode":"CANCEL"}`},
	}
	for i, tt := range tests {
		got, err := build(tt.rule, tt.o)
		if err != nil || got != tt.want {
			t.Errorf("case %d: got %s %v, want %s", i, got, err, tt.want)
		}
	}
	if _, err := build(obj{"id": "a", "when": node, "then": obj{"command": "PauseWorkflow"}}, Occurrence{Type: "NodeStatusChanged"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("an occurrence without a run: got %v, want ErrInvalid", err)
	}
	r := parseRules(t, obj{"id": "guard", "when": node, "then": obj{"command": "Hold"}}).Rules()[0]
	if r.DirectiveReason() != "rule guard matched" {
		t.Errorf("default reason: got %q", r.DirectiveReason())
	}
}

func TestReview(t *testing.T) {
	t.Parallel()
	d := parseRules(t,
		obj{"id": "night", "deny": obj{"command": "RestartWorkflow", "if": "now.getHours() < 6", "reason": "no restarts at night"}},
		obj{"id": "gate", "requireApproval": obj{"command": "RestartWorkflow"}},
		obj{"id": "cap", "deny": obj{"command": "StartWorkflow", "if": "workflow.activeCount >= 3"}},
		obj{"id": "seed", "when": obj{"event": "NodeStatusChanged"}, "then": obj{"command": "PauseWorkflow"}},
	)
	holds := func(results map[string]bool, fail bool) func(string) (bool, error) {
		return func(expr string) (bool, error) {
			if fail {
				return false, errors.New("no such key: activeCount")
			}
			return results[expr], nil
		}
	}
	tests := []struct {
		t      CommandType
		eval   func(string) (bool, error)
		want   Decision
		rule   string
		reason string
	}{
		{RestartWorkflow, holds(map[string]bool{"now.getHours() < 6": true}, false), Deny, "night", "no restarts at night"},
		{RestartWorkflow, holds(nil, false), RequireApproval, "gate", "rule gate requires an ADMIN's approval for RestartWorkflow"},
		{StartWorkflow, holds(map[string]bool{"workflow.activeCount >= 3": true}, false), Deny, "cap", "rule cap denies StartWorkflow"},
		{StartWorkflow, holds(nil, false), Allow, "", ""},
		{StartWorkflow, holds(nil, true), NoOpinion, "cap", "rule cap: its if could not be evaluated: no such key: activeCount"},
		{PauseWorkflow, holds(nil, false), Allow, "", ""},
	}
	for i, tt := range tests {
		v, rule := d.Review(tt.t, tt.eval)
		if v.Decision() != tt.want || rule != tt.rule || v.Reason() != tt.reason {
			t.Errorf("case %d: got %s %q by %q, want %s %q by %q", i, v.Decision(), v.Reason(), rule, tt.want, tt.reason, tt.rule)
		}
	}
}

func TestPresetTemplates(t *testing.T) {
	t.Parallel()
	ps, err := Presets("rules")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			var calls int
			check := func(expr string, vars []string) error {
				calls++
				return nil
			}
			doc, err := ParseRuleDocument([]byte(p.Document), check)
			if err != nil {
				t.Fatalf("the default document is invalid: %v", err)
			}
			viaParams, err := InstantiatePreset(p.Name, nil, nil)
			if err != nil || !reflect.DeepEqual(viaParams, doc) {
				t.Fatalf("InstantiatePreset with defaults: got %+v %v, want the Document", viaParams, err)
			}
			// Every expression is checked against the variables of its
			// context, so a preset reading an undefined variable or
			// field fails above; count that the checker saw each one.
			want := 0
			for _, r := range doc.Rules() {
				if w, ok := r.When(); ok && w.If() != "" {
					want++
				}
				if g := r.gate(); g != nil && g.If() != "" {
					want++
				}
			}
			if calls != want {
				t.Errorf("checker calls: got %d, want %d", calls, want)
			}
			// A supervisor built on the preset (with what it needs) is valid.
			settings, err := doc.Settings()
			if err != nil {
				t.Fatal(err)
			}
			spec := Spec{ID: "p", Name: "P", EngineType: "rules", Settings: settings, Owns: []string{"session:ci"}, Enabled: true}
			if p.Needs != "" {
				spec.TickSeconds = 60
			}
			if _, err := New(spec, nil); err != nil {
				t.Errorf("a supervisor with the preset: %v", err)
			}
			for _, prm := range p.Parameters {
				if prm.Description == "" || prm.Default == "" || (prm.Type != "integer" && prm.Type != "string") {
					t.Errorf("parameter %s: incomplete %+v", prm.Name, prm)
				}
			}
		})
	}
}

func TestInstantiatePreset(t *testing.T) {
	t.Parallel()
	d, err := InstantiatePreset("failure-guard", map[string]any{"count": 5, "withinSeconds": jsonNumber("120"), "per": "execution"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := d.Rules()[0].When()
	if w.Count() != 5 || w.Within() != 2*time.Minute || w.Per() != PerExecution {
		t.Errorf("got %+v", w)
	}
	d, err = InstantiatePreset("stall-watchdog", map[string]any{"minutes": 30, "mode": "KILL"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ = d.Rules()[0].When()
	th, _ := d.Rules()[0].Then()
	if w.If() != "now - execution.lastProgressAt > duration('30m')" || th.Mode() != execution.Kill {
		t.Errorf("got if %q mode %q", w.If(), th.Mode())
	}
	d, err = InstantiatePreset("too-many-running", map[string]any{"max": 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := d.Rules()[0].Deny(); g.If() != "workflow.activeCount >= 4" {
		t.Errorf("got %q", g.If())
	}
	d, err = InstantiatePreset("approval-gate", map[string]any{"command": "StopAll"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := d.Rules()[0].RequireApproval(); g.Command() != StopAll {
		t.Errorf("got %q", g.Command())
	}

	_, err = InstantiatePreset("failure-guard", map[string]any{"count": 0, "per": "run", "within": 3, "withinSeconds": "60"}, nil)
	checkViolations(t, err, violation{"parameters.count", "must be from 1 to 10000, got 0"},
		violation{"parameters.per", `"run" is not allowed; use execution, workflow or supervisor`},
		violation{"parameters.within", `preset failure-guard has no parameter "within"; its parameters are count, withinSeconds, per`},
		violation{"parameters.withinSeconds", "must be a whole number"})
	_, err = InstantiatePreset("nope", nil, nil)
	if !errors.Is(err, ErrPresetNotFound) || !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown preset: got %v", err)
	}
}
