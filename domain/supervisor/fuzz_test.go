package supervisor

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

// refusal fails unless err is a *fault.ValidationError whose violations
// all say something.
func refusal(t *testing.T, err error) {
	t.Helper()
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("error: got %T (%v), want *fault.ValidationError", err, err)
	}
	if !errors.Is(err, fault.ErrInvalid) || len(ve.Violations) == 0 {
		t.Fatalf("error %v: want ErrInvalid with at least one violation", err)
	}
	for i, v := range ve.Violations {
		if v.Message == "" {
			t.Fatalf("violation %d (path %q): empty message", i, v.Path)
		}
	}
}

// FuzzParseDirective checks that ParseDirective never panics, refuses only
// with readable violations, and that an accepted directive survives its
// wire form unchanged.
func FuzzParseDirective(f *testing.F) {
	for _, s := range []string{
		`{"key":"k1","cause":"42","command":{"type":"PauseWorkflow","executionId":"e-1"}}`,
		`{"key":"k","reason":"why","ifStatus":"running","command":{"type":"StopWorkflow","target":"owned.running"}}`,
		`{"key":"k","command":{"type":"StopAll","target":"workflow:ci/build","mode":"kill"}}`,
		`{"key":"k","command":{"type":"RestartFromNode","target":"execution:e1","fromNodeId":"ship"}}`,
		`{"key":"k","ifStatus":"WAITING","command":{"type":"StopNode","target":"node:e1/a,e2/b","immediate":true}}`,
		`{"key":"k","command":{"type":"RetryNode","target":"workflow:ci/build","nodeId":"ship"}}`,
		`{"key":"k","command":{"type":"SetBreakpoint","executionId":"e1","nodeId":"a","field":"order.status","equals":null}}`,
		`{"key":"k","command":{"type":"SetBreakpoint","target":"node:e1/a","condition":"payload.qty > 3"}}`,
		`{"key":"k","command":{"type":"StartWorkflow","target":"workflow:ci/build","payload":{"n":-0,"big":123456789012345678901234567890,"s":"\u00fc<>&"}}}`,
		`{"key":"k","command":{"type":"AnswerInput","inputId":"in-1","answer":{"approved":true,"comment":""}}}`,
		`{"key":"k","reason":"r","command":{"type":"Hold","target":"execution:e1"}}`,
		`{"key":"k","command":{"type":"Release","target":"held"}}`,
		`{"key":"k","command":{"type":"pause"}}`,
		`{"key":"","ifStatus":"x","command":{"type":"PauseNode","target":"node:e1/a,e1/a","nodeId":"a","mode":"HARD"}}`,
		`{"key":"k","command":{"type":"StartWorkflow","target":"workflow:a/b","payload":1e400}}`,
		`{"key":"k\u0000","command":{}}`,
		``, `null`, `[]`, `{}`, `{"key":"a","key":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDirective(data)
		if err != nil {
			refusal(t, err)
			return
		}
		b, err := d.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		again, err := ParseDirective(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(again, d) {
			t.Fatalf("round trip changed the directive:\nfirst  %+v\nsecond %+v\nwire %s", d, again, b)
		}
	})
}

// FuzzParseRuleDocument checks that ParseRuleDocument never panics,
// refuses only with readable violations, and that an accepted document
// survives its wire form unchanged.
func FuzzParseRuleDocument(f *testing.F) {
	seed := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	ps, _ := Presets("")
	for _, p := range ps {
		f.Add([]byte(p.Document))
	}
	seed(obj{"schemaVersion": 1, "rules": arr{seedRule()}})
	seed(obj{"rules": arr{
		obj{"id": "a", "description": "d", "when": obj{"event": "NodeStatusChanged", "status": "failure", "nodeId": "ship", "if": "event.data.to == 'FAILURE'"},
			"then": obj{"command": "RetryNode"}},
		obj{"id": "b", "when": obj{"tick": true, "status": "RUNNING"}, "then": obj{"command": "PauseNode", "target": "owned.running", "nodeId": "x"}},
		obj{"id": "c", "when": obj{"event": "ExecutionStatusChanged", "count": 2, "withinSeconds": 9, "per": "supervisor"}, "then": obj{"command": "Hold", "reason": "r"}},
		obj{"id": "d", "when": obj{"event": "InputRequested"}, "then": obj{"command": "StartWorkflow", "target": "workflow:a/b", "payload": arr{1, "x"}}},
		obj{"id": "e", "deny": obj{"command": "StartWorkflow", "if": "workflow.activeCount >= 3", "reason": "r"}},
		obj{"id": "f", "requireApproval": obj{"command": "StopAll"}},
	}})
	seed(obj{"schemaVersion": 2, "rules": arr{obj{"id": "A", "when": obj{"tick": false}, "then": obj{"command": "AnswerInput"}}}})
	for _, s := range []string{``, `{}`, `{"rules":[]}`, `{"rules":[{}]}`, `{"rules":[{"id":"a","deny":{"command":"StartWorkflow","if":"'''"}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseRuleDocument(data, nil)
		if err != nil {
			refusal(t, err)
			return
		}
		b, err := d.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		again, err := ParseRuleDocument(b, nil)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(again, d) {
			t.Fatalf("round trip changed the document:\nfirst  %+v\nsecond %+v\nwire %s", d, again, b)
		}
	})
}

// FuzzParseSupervisor checks that Parse never panics, refuses only with
// readable violations, and that an accepted supervisor survives its
// document form and its storage form (Spec, Restore) unchanged.
func FuzzParseSupervisor(f *testing.F) {
	seed := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(rulesSupervisor(seedRule(), obj{"id": "g", "requireApproval": obj{"command": "RestartWorkflow"}}))
	for _, e := range Engines() {
		var engine any
		_ = json.Unmarshal([]byte(e.Example), &engine)
		seed(obj{"id": "ex-" + e.Type, "name": "Example", "engine": engine, "owns": arr{"workflow:ci/build", "session:ops"}, "parentId": "root"})
	}
	seed(obj{"id": "h", "name": "H", "engine": obj{"type": "http", "settings": obj{"url": "https://a.example.com/x?y=1", "timeoutMs": 10000, "maxConcurrent": 32,
		"headers": obj{"X-Team": "${env.TEAM}"}, "secretHeaders": obj{"Authorization": "Bearer x"}}},
		"owns": arr{"server"}, "allowedCommands": arr{"Hold", "Release", "PauseWorkflow"}, "reviews": arr{"StartWorkflow"}, "enabled": false})
	seed(obj{"id": "w", "name": "W", "engine": obj{"type": "workflow", "settings": obj{"sessionId": "s", "workflowId": "w", "events": arr{"InputRequested"},
		"when": "event.nodeId == 'ask'", "maxConcurrent": 2, "timeout": 600}}, "owns": arr{"session:ci"}, "tickSeconds": 60})
	seed(obj{"id": "G", "engine": obj{"type": "cron"}, "owns": arr{"x", "server", "session:a"}, "tickSeconds": 1.5, "extra": 1})
	for _, s := range []string{``, `{}`, `[]`, `{"id":"a","name":"b","engine":{"type":"rules","settings":{"rules":[]}},"owns":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, ParseOptions{})
		if err != nil {
			refusal(t, err)
			return
		}
		b, err := s.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		again, err := Parse(b, ParseOptions{})
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("round trip changed the supervisor:\nfirst  %+v\nsecond %+v\nwire %s", s, again, b)
		}
		if restored := Restore(s.Spec()); !reflect.DeepEqual(restored, s) {
			t.Fatalf("Restore(Spec()) changed the supervisor:\nfirst  %+v\nsecond %+v", s, restored)
		}
		if _, err := s.Masked().KeepSecrets(&s); err != nil && !strings.Contains(err.Error(), "***") {
			t.Fatalf("KeepSecrets of its own masked form: %v", err)
		}
	})
}

// FuzzParseCommand checks that ParseCommand (how a stored review's command
// is read back, and the verdict wire of ParseVerdict) never panics, refuses
// only with readable violations, and that an accepted command survives its
// wire form unchanged.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		`{"type":"StopWorkflow","target":"execution:e1","mode":"KILL"}`,
		`{"type":"StopAll","target":"workflow:ci/build","mode":"DRAIN"}`,
		`{"type":"StartWorkflow","target":"workflow:ci/build","payload":{"n":1}}`,
		`{"type":"SetBreakpoint","target":"execution:e1","nodeId":"a","field":"x","equals":null}`,
		`{"type":"RestartFromNode","target":"execution:e1","fromNodeId":"n"}`,
		`{"type":"PauseWorkflow"}`, `{"type":"Nope"}`, `{}`, `null`, ``, `{"type":"StopNode","target":"node:e1/a","immediate":"yes"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCommand(data)
		if err != nil {
			refusal(t, err)
			return
		}
		b, err := c.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		again, err := ParseCommand(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip changed the command:\nfirst  %+v\nsecond %+v\nwire %s", c, again, b)
		}
		if _, err := ParseVerdict(data); err != nil {
			refusal(t, err)
		}
	})
}

// FuzzParseCursor checks that ParseCursor never panics, refuses only with
// ErrInvalid, and that every cursor it accepts is the one text of its
// position: writing it back gives the same text (a bare seq stays a bare
// seq).
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "1", "2883", FormatCursor(Position{XID: 812, Seq: 2883}), FormatCursor(Position{XID: 1}),
		"812.2883", "812.2883.0000", "0", "-1", "1.2.3.4", "\x00", "9999999999999999999999.1.abcd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseCursor(s)
		if err != nil {
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("ParseCursor(%q): %v, want ErrInvalid", s, err)
			}
			return
		}
		switch {
		case s == "":
			if !p.IsZero() {
				t.Fatalf(`"" parsed to %+v`, p)
			}
		case p.Legacy():
			if strconv.FormatInt(p.Seq, 10) != s {
				t.Fatalf("legacy %q parsed to %+v", s, p)
			}
		default:
			if FormatCursor(p) != s {
				t.Fatalf("%q parsed to %+v, which writes as %q", s, p, FormatCursor(p))
			}
		}
	})
}
