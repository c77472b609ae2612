package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// FuzzParse checks that Parse never panics, that a refusal is always a
// *fault.ValidationError with readable violations, and that an accepted
// session survives the storage encoding and a rebuild unchanged.
func FuzzParse(f *testing.F) {
	seed := func(d any) {
		b, err := json.Marshal(d)
		if err != nil {
			f.Fatalf("seed: %v", err)
		}
		f.Add(b)
	}
	// Valid documents.
	seed(baseDoc())
	seed(docWith(edits(
		set("workflows.0.nodes.1.config.routes", arr{obj{"port": "big"}, obj{"port": "small"}}),
		set("workflows.0.nodes.1.config.fallback", false),
		set("workflows.0.edges.2.sourcePort", "small"),
		add("workflows.0.edges", portEdge("call", "done", "error")),
		set("workflows.0.nodes.0.config", obj{"payload": obj{"n": json.Number("1e308"), "s": "ünï 🙂"}}),
	)))
	f.Add([]byte(`{"sessionId":"a","name":"A","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`))
	f.Add([]byte(`{"name":"名前","tags":["ü","🙂"],"sessionId":"x-1","workflows":[{"workflowId":"w","description":"Ω","nodes":[{"nodeId":"t","type":"MANUAL","name":"✓","config":null}],"edges":null}]}`))
	// Invalid ones: each rule broken once, and many at once.
	seed(docWith(set("owner", 1)))
	seed(docWith(set("workflows.0.edges.0.target", "ghost")))
	seed(docWith(set("workflows.0.edges.1.sourcePort", "small")))
	seed(docWith(add("workflows.0.edges", edge("done", "start"), edge("start", "start"))))
	seed(docWith(edits(add("workflows.0.nodes", node("p1", "PASS"), node("p2", "PASS")), add("workflows.0.edges", edge("p1", "p2"), edge("p2", "p1")))))
	seed(docWith(edits(del("workflows.0.nodes.2.config.url"), set("workflows.0.nodes.1.config.routes", "x"), set("workflows.0.nodes.0.type", "NOPE"))))
	seed(docWith(edits(set("workflows.0.nodes", obj{}), add("workflows.0.edges", obj{}, nil, 1))))
	seed(docWith(edits(add("workflows.0.nodes", obj{"type": "PASS"}, obj{}, "x"), add("workflows.0.edges", obj{}))))
	seed(docWith(add("workflows", walk(baseDoc(), "workflows.0"))))
	seed(docWith(set("retention", obj{"days": 30, "journals": "delete"})))
	seed(docWith(set("retention", obj{"days": -1, "journals": "x", "hours": 2})))
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{} {}`))
	f.Add([]byte(`{"name":"a"`))
	f.Add([]byte("{\"name\":\"\xff\xfe\",\"sessionId\":\"s\",\"workflows\":[]}"))
	f.Add([]byte(`{"sessionId":"s","name":"n","name":"m","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`))
	// What PostgreSQL cannot store or encoding/json would silently change.
	f.Add([]byte(`{"sessionId":"s","name":"n\u0000","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`))
	f.Add([]byte("{\"sessionId\":\"s\",\"name\":\"n\x00\",\"workflows\":[{\"workflowId\":\"w\",\"nodes\":[{\"nodeId\":\"t\",\"type\":\"MANUAL\"}]}]}"))
	f.Add([]byte(`{"sessionId":"s","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL","config":{"payload":{"a":1,"a":2}}}]}]}`))
	f.Add([]byte(`{"sessionId":"s","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL","config":{"payload":"\ud800\u0041"}}]}]}`))
	f.Add([]byte(`{"sessionId":"s","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL","config":{"payload":[9007199254740993,9223372036854775809,1e400]}}]}]}`))
	// Huge and odd numbers.
	f.Add([]byte(`{"sessionId":"s","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"},{"nodeId":"c","type":"CALL","config":{"url":"http://a.b","attempts":1e400,"timeout":"9999999999h"}}],"edges":[{"source":"t","target":"c"}]}]}`))
	f.Add([]byte(`{"sessionId":"s","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL","config":{"payload":[123456789012345678901234567890123456789,-0,1E-400,0.1e-999999999]}}]}]}`))
	// Deep nesting, inside a config and at the top.
	deep := strings.Repeat(`{"a":[`, 2000) + strings.Repeat(`]}`, 2000)
	f.Add([]byte(`{"sessionId":"s","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL","config":{"payload":` + deep + `}}]}]}`))
	f.Add([]byte(strings.Repeat("[", 20000) + strings.Repeat("]", 20000)))

	f.Add([]byte(`{"sessionId":"Bad Id","name":"","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"},{"nodeId":"c","type":"CALL","config":{"url":"http://a.b","token":"***","x":1}}],"edges":[{"source":"t","target":"c"}]}]}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		s, warns, err := session.Parse(data, catalog, session.ParseOptions{})
		// The one-pass options (a URL id, secrets kept from a stored
		// session) answer the same way: a session or every violation.
		for _, o := range []session.ParseOptions{{ID: "s", KeepSecrets: true}, {ID: "Bad Id", KeepSecrets: true, Stored: &s}} {
			if _, _, err := session.Parse(data, catalog, o); err != nil {
				if ve, ok := errors.AsType[*fault.ValidationError](err); !ok || len(ve.Violations) == 0 {
					t.Fatalf("Parse with %+v: got %v, want a validation error with violations", o, err)
				}
			}
		}
		if err != nil {
			var ve *fault.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error: got %T (%v), want *fault.ValidationError", err, err)
			}
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("errors.Is(err, fault.ErrInvalid): got false, want true")
			}
			if len(ve.Violations) == 0 {
				t.Fatalf("violations: got none, want at least one")
			}
			for i, v := range ve.Violations {
				if v.Message == "" {
					t.Fatalf("violation %d (path %q): got an empty message, want a sentence", i, v.Path)
				}
			}
			return
		}
		for _, w := range warns {
			if w == "" {
				t.Fatalf("warnings: got an empty warning in %q", warns)
			}
		}
		if len(s.Workflows()) == 0 {
			t.Fatalf("accepted session: got no workflows, want at least one")
		}
		for _, w := range s.Workflows() {
			b1, err := session.MarshalDefinition(w)
			if err != nil {
				t.Fatalf("MarshalDefinition(%s): %v", w.ID(), err)
			}
			r, err := session.RestoreWorkflow(w.ID(), w.Description(), b1)
			if err != nil {
				t.Fatalf("RestoreWorkflow(%s): %v", w.ID(), err)
			}
			b2, err := session.MarshalDefinition(r)
			if err != nil {
				t.Fatalf("MarshalDefinition(restored %s): %v", w.ID(), err)
			}
			if !bytes.Equal(b1, b2) {
				t.Fatalf("workflow %s encoding is not stable:\nfirst  %s\nsecond %s", w.ID(), b1, b2)
			}
		}
		again, err := json.Marshal(rebuild(s))
		if err != nil {
			t.Fatalf("encode rebuilt session: %v", err)
		}
		s2, _, err := session.Parse(again, catalog, session.ParseOptions{})
		if err != nil {
			t.Fatalf("re-Parse of the rebuilt session: got %v, want no error\ndocument %s", err, again)
		}
		if got, want := s2.WorkflowIDs(), s.WorkflowIDs(); !slices.Equal(got, want) {
			t.Fatalf("workflow ids after rebuild: got %q, want %q", got, want)
		}
		if s2.Retention() != s.Retention() {
			t.Fatalf("retention after rebuild: got %+v, want %+v", s2.Retention(), s.Retention())
		}
	})
}
