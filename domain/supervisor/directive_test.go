package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func TestParseDirectiveAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		// wire is the canonical form Marshal writes.
		wire  string
		check func(t *testing.T, d Directive)
	}{
		{"seed shorthand executionId", `{"key":"k1","cause":"42","command":{"type":"PauseWorkflow","executionId":"e-1"}}`,
			`{"key":"k1","cause":"42","command":{"type":"PauseWorkflow","target":"execution:e-1"}}`,
			func(t *testing.T, d Directive) {
				if d.Command().Target().String() != "execution:e-1" || d.Cause() != "42" {
					t.Errorf("got %+v", d)
				}
				if s, a, ok := d.Command().Control(); !ok || s != execution.ScopeExecution || a != execution.ActionPause {
					t.Errorf("Control: got %s %s %v, want execution PAUSE", s, a, ok)
				}
			}},
		{"stop with default mode and ifStatus", `{"key":"k","reason":"why","ifStatus":"running","command":{"type":"StopWorkflow","target":"owned.running"}}`,
			`{"key":"k","reason":"why","ifStatus":"RUNNING","command":{"type":"StopWorkflow","target":"owned.running","mode":"CANCEL"}}`,
			func(t *testing.T, d Directive) {
				if d.Command().Mode() != execution.Cancel || d.IfStatus() != "RUNNING" {
					t.Errorf("got mode %q ifStatus %q, want CANCEL RUNNING", d.Command().Mode(), d.IfStatus())
				}
			}},
		{"stop all", `{"key":"k","command":{"type":"StopAll","target":"workflow:ci/build","mode":"kill"}}`,
			`{"key":"k","command":{"type":"StopAll","target":"workflow:ci/build","mode":"KILL"}}`, nil},
		{"restart from node", `{"key":"k","command":{"type":"RestartFromNode","target":"execution:e1","fromNodeId":"ship"}}`,
			`{"key":"k","command":{"type":"RestartFromNode","target":"execution:e1","fromNodeId":"ship"}}`, nil},
		{"node target", `{"key":"k","ifStatus":"waiting","command":{"type":"StopNode","target":"node:e1/a,e2/b","immediate":true}}`,
			`{"key":"k","ifStatus":"WAITING","command":{"type":"StopNode","target":"node:e1/a,e2/b","immediate":true}}`,
			func(t *testing.T, d Directive) {
				if got := d.Command().Target().ExecutionIDs(); !slices.Equal(got, []string{"e1", "e2"}) {
					t.Errorf("ExecutionIDs: got %v", got)
				}
				if !d.Command().ActsOnNodes() || !d.Command().Immediate() {
					t.Error("StopNode acts on nodes, immediately")
				}
			}},
		{"node command on runs", `{"key":"k","command":{"type":"RetryNode","target":"workflow:ci/build","nodeId":"ship"}}`,
			`{"key":"k","command":{"type":"RetryNode","target":"workflow:ci/build","nodeId":"ship"}}`, nil},
		{"breakpoint on field", `{"key":"k","command":{"type":"SetBreakpoint","executionId":"e1","nodeId":"a","field":"order.status","equals":false}}`,
			`{"key":"k","command":{"type":"SetBreakpoint","target":"execution:e1","nodeId":"a","field":"order.status","equals":false}}`,
			func(t *testing.T, d Directive) {
				bp, ok := d.Command().Breakpoint()
				if !ok || bp.Field != "order.status" || bp.Equals != false {
					t.Errorf("breakpoint: got %+v %v", bp, ok)
				}
			}},
		{"breakpoint on condition", `{"key":"k","command":{"type":"SetBreakpoint","target":"node:e1/a","condition":"payload.qty > 3"}}`,
			`{"key":"k","command":{"type":"SetBreakpoint","target":"node:e1/a","condition":"payload.qty > 3"}}`, nil},
		{"start with payload", `{"key":"k","command":{"type":"StartWorkflow","target":"workflow:ci/build","payload":{"n":1e3,"s":"ü"}}}`,
			`{"key":"k","command":{"type":"StartWorkflow","target":"workflow:ci/build","payload":{"n":1e3,"s":"ü"}}}`, nil},
		{"answer input", `{"key":"k","command":{"type":"AnswerInput","inputId":"in-1","answer":{"approved":true}}}`,
			`{"key":"k","command":{"type":"AnswerInput","inputId":"in-1","answer":{"approved":true}}}`,
			func(t *testing.T, d Directive) {
				if _, _, ok := d.Command().Control(); ok {
					t.Error("AnswerInput is not a control command")
				}
			}},
		{"hold with reason", `{"key":"k","reason":"waiting for the vendor","command":{"type":"Hold","target":"execution:e1"}}`,
			`{"key":"k","reason":"waiting for the vendor","command":{"type":"Hold","target":"execution:e1"}}`, nil},
		{"release held", `{"key":"k","command":{"type":"Release","target":"held"}}`,
			`{"key":"k","command":{"type":"Release","target":"held"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := ParseDirective([]byte(tt.in))
			if err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			b, err := d.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.wire {
				t.Errorf("wire form:\n got %s\nwant %s", b, tt.wire)
			}
			again, err := ParseDirective(b)
			if err != nil || !reflect.DeepEqual(again, d) {
				t.Errorf("round trip: got %+v (%v), want %+v", again, err, d)
			}
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

func TestParseDirectiveViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []violation
	}{
		{"empty body", ``, []violation{{"", "it is empty"}}},
		{"duplicate key", `{"key":"a","key":"b","command":{}}`, []violation{{"key", "appears twice"}}},
		{"unknown envelope member", `{"key":"k","wait":5,"command":{"type":"PauseWorkflow","target":"held"}}`,
			[]violation{{"wait", `unknown field "wait"; allowed fields: key, cause, reason, ifStatus, command`}}},
		{"no key, no command", `{}`, []violation{{"key", "is required"}, {"command", "is required"}}},
		{"long key, cause and reason", fmt.Sprintf(`{"key":%q,"cause":%q,"reason":%q,"command":{"type":"PauseWorkflow","target":"held"}}`,
			strings.Repeat("k", 129), strings.Repeat("c", 257), strings.Repeat("r", 1025)),
			[]violation{{"key", "is 129 characters long; the limit is 128"}, {"cause", "the limit is 256"}, {"reason", "the limit is 1024"}}},
		{"command not an object", `{"key":"k","command":"pause"}`, []violation{{"command", "must be an object"}}},
		{"unknown type", `{"key":"k","command":{"type":"Pause","target":"held","bogus":1}}`,
			[]violation{{"command.type", `"Pause" is not a command type; use one of StartWorkflow`}, {"command.bogus", `unknown field "bogus"`}}},
		{"type in wrong case", `{"key":"k","command":{"type":"pauseworkflow"}}`, []violation{{"command.type", "did you mean PauseWorkflow?"}}},
		{"missing target", `{"key":"k","command":{"type":"PauseWorkflow"}}`,
			[]violation{{"command.target", "is required for PauseWorkflow; use execution:<id>, workflow:<session>/<workflow>, owned.running or held"}}},
		{"target and executionId", `{"key":"k","command":{"type":"PauseWorkflow","target":"held","executionId":"e1"}}`,
			[]violation{{"command.executionId", "give target or executionId, not both"}}},
		{"bad targets", `{"key":"k","command":{"type":"PauseWorkflow","target":"workflow:build"}}`,
			[]violation{{"command.target", "names no session; use workflow:<session>/<workflow>"}}},
		{"node target for a run command", `{"key":"k","command":{"type":"PauseWorkflow","target":"node:e1/a"}}`,
			[]violation{{"command.target", "PauseWorkflow does not take node targets"}}},
		{"argument of another type", `{"key":"k","command":{"type":"PauseWorkflow","target":"held","mode":"KILL","nodeId":"a"}}`,
			[]violation{{"command.mode", `PauseWorkflow does not take "mode" (it belongs to StopWorkflow or StopAll)`},
				{"command.nodeId", `PauseWorkflow does not take "nodeId"`}}},
		{"bad mode", `{"key":"k","command":{"type":"StopWorkflow","target":"held","mode":"HARD"}}`,
			[]violation{{"command.mode", `"HARD" is not a stop mode; use DRAIN`}}},
		{"restart from node without node", `{"key":"k","command":{"type":"RestartFromNode","target":"execution:e1"}}`,
			[]violation{{"command.fromNodeId", "is required"}}},
		{"node command on runs without nodeId", `{"key":"k","command":{"type":"PauseNode","target":"owned.running"}}`,
			[]violation{{"command.nodeId", "is required for PauseNode with target owned.running"}}},
		{"node target and nodeId", `{"key":"k","command":{"type":"PauseNode","target":"node:e1/a","nodeId":"a"}}`,
			[]violation{{"command.nodeId", "already names the nodes"}}},
		{"repeated node", `{"key":"k","command":{"type":"PauseNode","target":"node:e1/a,e1/a"}}`,
			[]violation{{"command.target", "names node e1/a twice"}}},
		{"breakpoint both", `{"key":"k","command":{"type":"SetBreakpoint","target":"node:e1/a","field":"x","equals":1,"condition":"true"}}`,
			[]violation{{"command.condition", "not both"}}},
		{"breakpoint neither", `{"key":"k","command":{"type":"SetBreakpoint","target":"node:e1/a"}}`,
			[]violation{{"command.field", `give either "field" and "equals"`}}},
		{"start elsewhere", `{"key":"k","command":{"type":"StartWorkflow","target":"execution:e1"}}`,
			[]violation{{"command.target", "StartWorkflow does not take execution targets; use workflow:<session>/<workflow>"}}},
		{"answer without answer", `{"key":"k","command":{"type":"AnswerInput","inputId":"bad id"}}`,
			[]violation{{"command.inputId", `"bad id" is not an input id`}, {"command.answer", "is required"}}},
		{"hold needs a reason and not held", `{"key":"k","command":{"type":"Hold","target":"held"}}`,
			[]violation{{"command.target", "Hold does not take held targets"}, {"reason", "is required for Hold"}}},
		{"ifStatus for a run", `{"key":"k","ifStatus":"WAITING","command":{"type":"PauseWorkflow","target":"held"}}`,
			[]violation{{"ifStatus", `"WAITING" is not a status a run can have`}}},
		{"ifStatus for a node", `{"key":"k","ifStatus":"DONE","command":{"type":"PauseNode","target":"node:e1/a"}}`,
			[]violation{{"ifStatus", `"DONE" is not a status a node can have`}}},
		{"ifStatus on a start", `{"key":"k","ifStatus":"RUNNING","command":{"type":"StartWorkflow","target":"workflow:a/b"}}`,
			[]violation{{"ifStatus", "applies only to commands on runs and nodes, not StartWorkflow"}}},
		{"payload too big", `{"key":"k","command":{"type":"StartWorkflow","target":"workflow:a/b","payload":"` + strings.Repeat("x", MaxPayloadBytes) + `"}}`,
			[]violation{{"command.payload", "the limit is 64 KiB"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDirective([]byte(tt.in))
			checkViolations(t, err, tt.want...)
		})
	}
}

func TestNewDirective(t *testing.T) {
	t.Parallel()
	c := Command{typ: Hold, target: OwnedRunning()}
	if _, err := NewDirective("k", "", "", "", c); err == nil {
		t.Fatal("Hold without a reason: got no error")
	}
	d, err := NewDirective("k", "rule:guard", "paused by rule", "paused", c)
	if err != nil {
		t.Fatal(err)
	}
	if d.IfStatus() != "PAUSED" || d.Reason() != "paused by rule" {
		t.Errorf("got %+v", d)
	}
	_, err = NewDirective("k", "", "", "", Command{})
	checkViolations(t, err, violation{"command.type", "is required"})
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"execution:01a2290f-e397-7d61-8cec-9d9c9687fdf2", "workflow:ci/build", "node:e1/a", "node:e1/a,e2/b,e1/c", "owned.running", "held"} {
		tg, err := ParseTarget(in)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", in, err)
			continue
		}
		if tg.String() != in {
			t.Errorf("String: got %q, want %q", tg.String(), in)
		}
	}
	for _, in := range []string{"", "run:1", "execution:", "execution:a b", "execution:e/1", "workflow:a/B", "node:", "node:e1", "node:e1/A", "owned", strings.Repeat("node:e/a,", 1) + strings.Repeat("e/a,", 200) + "e/a"} {
		if _, err := ParseTarget(in); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParseTarget(%q): got %v, want ErrInvalid", in, err)
		}
	}
}

func TestLimitRuns(t *testing.T) {
	t.Parallel()
	runs := make([]string, 0, 202)
	for i := range 200 {
		runs = append(runs, fmt.Sprintf("e%d", i))
	}
	got, err := LimitRuns(OwnedRunning(), append(runs, "e0", "e1"))
	if err != nil || len(got) != 200 || got[0] != "e0" || got[199] != "e199" {
		t.Fatalf("200 distinct runs with repeats: got %d runs, %v", len(got), err)
	}
	_, err = LimitRuns(OwnedRunning(), append(runs, "e200"))
	if !errors.Is(err, ErrTooManyRuns) || !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("201 runs: got %v, want ErrTooManyRuns", err)
	}
	if want := "target owned.running names 201 runs; one directive may touch at most 200."; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message: got %q, want it to start with %q", err, want)
	}
}

func TestCheckDirective(t *testing.T) {
	t.Parallel()
	sup := func(enabled bool, allowed ...CommandType) Supervisor {
		return Restore(Spec{ID: "guard", Name: "G", EngineType: "http", Owns: []string{"session:ci", "workflow:ops/deploy"},
			AllowedCommands: allowed, Enabled: enabled})
	}
	dir := func(in string) Directive {
		d, err := ParseDirective([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pause := dir(`{"key":"k","command":{"type":"PauseWorkflow","target":"execution:e1"}}`)
	stopHeld := dir(`{"key":"k","command":{"type":"StopWorkflow","target":"held","mode":"KILL"}}`)
	start := func(wf string) Directive {
		return dir(`{"key":"k","command":{"type":"StartWorkflow","target":"workflow:` + wf + `"}}`)
	}
	tests := []struct {
		name   string
		s      Supervisor
		d      Directive
		places []Place
		want   string // "" for allowed
	}{
		{"owned run", sup(true, PauseWorkflow), pause, []Place{{SessionID: "ci", WorkflowID: "build"}}, ""},
		{"owned workflow unit", sup(true, PauseWorkflow), pause, []Place{{SessionID: "ops", WorkflowID: "deploy"}}, ""},
		{"disabled", sup(false, PauseWorkflow), pause, []Place{{SessionID: "ci", WorkflowID: "build"}}, `supervisor "guard" is disabled`},
		{"not allowed", sup(true, StopWorkflow, RestartWorkflow), pause, []Place{{SessionID: "ci", WorkflowID: "build"}},
			`supervisor "guard" may not send PauseWorkflow; its allowedCommands are StopWorkflow or RestartWorkflow`},
		{"run outside", sup(true, PauseWorkflow), pause, []Place{{SessionID: "ci", WorkflowID: "build"}, {SessionID: "ops", WorkflowID: "backup"}},
			`target execution:e1 is outside the units supervisor "guard" owns (session:ci, workflow:ops/deploy)`},
		{"workflow target owned", sup(true, StartWorkflow), start("ops/deploy"), nil, ""},
		{"workflow target outside", sup(true, StartWorkflow), start("ops/backup"), nil, "target workflow:ops/backup is outside"},
		{"owned.running of no run", sup(true, PauseWorkflow), dir(`{"key":"k","command":{"type":"PauseWorkflow","target":"owned.running"}}`), nil, ""},
		{"held owned run", sup(true, StopWorkflow), stopHeld, []Place{{SessionID: "ci", WorkflowID: "build", Held: true}}, ""},
		{"held run outside, stopped", sup(true, StopWorkflow), stopHeld, []Place{{SessionID: "ci", WorkflowID: "build", Held: true}, {SessionID: "ops", WorkflowID: "backup", Held: true}},
			`target held reaches a run supervisor "guard" holds outside the units it owns (session:ci, workflow:ops/deploy); outside them a held run may only be released (Release)`},
		{"held run outside, released", sup(true, Release), dir(`{"key":"k","command":{"type":"Release","target":"held"}}`), []Place{{SessionID: "ops", WorkflowID: "backup", Held: true}}, ""},
		{"held run outside, released by execution", sup(true, Release), dir(`{"key":"k","command":{"type":"Release","target":"execution:e1"}}`), []Place{{SessionID: "ops", WorkflowID: "backup", Held: true}}, ""},
		{"run outside not held, released", sup(true, Release), dir(`{"key":"k","command":{"type":"Release","target":"execution:e1"}}`), []Place{{SessionID: "ops", WorkflowID: "backup"}},
			"target execution:e1 is outside"},
		{"owned.running reaching a run outside", sup(true, PauseWorkflow), dir(`{"key":"k","command":{"type":"PauseWorkflow","target":"owned.running"}}`), []Place{{SessionID: "x", WorkflowID: "y"}},
			"target owned.running is outside"},
		{"input outside", sup(true, AnswerInput), dir(`{"key":"k","command":{"type":"AnswerInput","inputId":"i1","answer":1}}`), []Place{{SessionID: "x", WorkflowID: "y"}},
			"input i1 is outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckDirective(tt.s, tt.d, tt.places)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want allowed", err)
				}
				return
			}
			if !errors.Is(err, ErrDirectiveRefused) || !errors.Is(err, fault.ErrForbidden) {
				t.Fatalf("got %v, want ErrDirectiveRefused", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("message: got %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if err := CheckDirective(sup(true, PauseWorkflow), pause, nil); err == nil || errors.Is(err, ErrDirectiveRefused) {
		t.Errorf("execution target without places: got %v, want a caller error", err)
	}
}

func TestCommandTableCoversEveryType(t *testing.T) {
	t.Parallel()
	if len(commands) != len(CommandTypes) || !slices.Equal(Commands, func() []string {
		out := []string{}
		for _, c := range CommandTypes {
			out = append(out, string(c))
		}
		return out
	}()) {
		t.Fatalf("command table has %d rows for %d types", len(commands), len(CommandTypes))
	}
	for _, c := range CommandTypes {
		spec, ok := commands[c]
		if !ok {
			t.Errorf("%s has no row", c)
			continue
		}
		if spec.scope != "" && !slices.Contains(execution.Actions(spec.scope), spec.action) {
			t.Errorf("%s becomes %s %s, which is not a control action of that scope", c, spec.scope, spec.action)
		}
	}
}

func TestCommandJSONIsTheWireForm(t *testing.T) {
	t.Parallel()
	d, err := ParseDirective([]byte(`{"key":"k","command":{"type":"StopNode","target":"node:e/a"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d.Command())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"type":"StopNode","target":"node:e/a"}` {
		t.Errorf("got %s", b)
	}
}
