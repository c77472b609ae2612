package session_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/session"
)

// A session document is read strictly: what PostgreSQL cannot store (U+0000)
// and what encoding/json would change without a word (invalid UTF-8, lone
// surrogates, repeated keys, numbers beyond a double) is refused with the
// path of the place, and a valid document keeps every number's exact text.
func TestParseRefusesWhatCannotBeStoredFaithfully(t *testing.T) {
	t.Parallel()
	// The second node is a trigger too, so that each document has exactly
	// the one flaw: the whole document is checked, not only the flaw.
	const logNode = `{"nodeId":"log","type":"MANUAL","config":{"payload":%s}}`
	doc := func(name, start, second string) string {
		return `{"sessionId":"s1","name":` + name + `,"workflows":[{"workflowId":"wf","nodes":[` +
			`{"nodeId":"start","type":"MANUAL","config":` + start + `},` + second + `]}]}`
	}
	msg := func(m string) string { return strings.Replace(logNode, "%s", m, 1) }
	cases := []struct {
		name, body, path, reason string
	}{
		{"escaped NUL in the name", doc(`"a\u0000b"`, `{}`, msg(`"hi"`)), "name", "U+0000"},
		{"raw NUL in the name", doc("\"a\x00b\"", `{}`, msg(`"hi"`)), "name", "U+0000"},
		{"escaped NUL in a node's config", doc(`"n"`, `{}`, msg(`"x\u0000"`)), "workflows[0].nodes[1].config.payload", "U+0000"},
		{"invalid UTF-8 in a node's config", doc(`"n"`, `{}`, msg("\"\xff\xfe\"")), "workflows[0].nodes[1].config.payload", "UTF-8"},
		{"lone surrogate in a node's config", doc(`"n"`, `{}`, msg(`"\ud800"`)), "workflows[0].nodes[1].config.payload", "surrogate"},
		{"NUL in a key", doc(`"n"`, `{"payload":{"k\u0000":1}}`, msg(`"hi"`)), `workflows[0].nodes[0].config.payload["k\x00"]`, "U+0000"},
		{"a repeated top-level key", doc(`"a","name":"b"`, `{}`, msg(`"hi"`)), "name", "appears twice"},
		{"a repeated key in a config", doc(`"n"`, `{"payload":{"id":1,"id":2}}`, msg(`"hi"`)), "workflows[0].nodes[0].config.payload.id", "appears twice"},
		{"a number beyond a double", doc(`"n"`, `{"payload":{"n":1e400}}`, msg(`"hi"`)), "workflows[0].nodes[0].config.payload.n", "out of range"},
		{"nesting deeper than 128", doc(`"n"`, `{"payload":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}`, msg(`"hi"`)), "", "deeper than 128"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := session.Parse([]byte(tc.body), catalog, session.ParseOptions{})
			vs := violations(t, err)
			if len(vs) != 1 {
				t.Fatalf("got %d violations %s, want 1", len(vs), describe(vs))
			}
			if tc.path != "" && vs[0].Path != tc.path || tc.path == "" && !strings.HasPrefix(vs[0].Path, "workflows[0].nodes[0].config.payload[0]") {
				t.Errorf("path: got %q, want %q", vs[0].Path, tc.path)
			}
			if !strings.Contains(vs[0].Message, tc.reason) {
				t.Errorf("message: got %q, want it to mention %q", vs[0].Message, tc.reason)
			}
			for _, goText := range []string{"json:", "interface {}", "strconv.", "Go value"} {
				if strings.Contains(vs[0].Message, goText) {
					t.Errorf("message %q holds Go decoder text %q", vs[0].Message, goText)
				}
			}
		})
	}
	// The same documents without the flaw are accepted.
	payload := func(p string) string { return `{"nodeId":"log","type":"MANUAL","config":{"payload":` + p + `}}` }
	for _, ok := range []string{
		doc(`"a b"`, `{}`, payload(`{"message":"x\u0001 \ud83d\ude00 ü"}`)),
		doc(`"n"`, `{"payload":{"id":1,"id2":2}}`, payload(`"hi"`)),
		doc(`"n"`, `{"payload":{"n":1e308}}`, payload(`[[[["deep enough"]]]]`)),
	} {
		if _, _, err := session.Parse([]byte(ok), catalog, session.ParseOptions{}); err != nil {
			t.Errorf("valid document %s: got %v, want no error", ok, err)
		}
	}
}

// TestParseReportsStrictJSONWithTheRest: a repeated key or a U+0000 no
// longer hides the document's other problems (before, the strict read
// stopped at the first and answered only it); a problem at a place the
// strict read reported is not said twice.
func TestParseReportsStrictJSONWithTheRest(t *testing.T) {
	t.Parallel()
	body := `{"sessionId":"s1","name":"a","name":"b","workflows":[{"workflowId":"wf","nodes":[` +
		`{"nodeId":"start","type":"MANUAL"},{"nodeId":"b\u0000d","type":"NOPE"}]}]}`
	_, _, err := session.Parse([]byte(body), catalog, session.ParseOptions{})
	checkViolations(t, err, []want{
		{"name", []string{"appears twice"}},
		{"workflows[0].nodes[1].nodeId", []string{"U+0000"}},
		{"workflows[0].nodes[1].type", []string{`unknown plugin type "NOPE"`}},
	})
}

func TestParseKeepsExactNumbers(t *testing.T) {
	t.Parallel()
	const body = `{"sessionId":"s1","name":"n","workflows":[{"workflowId":"wf","nodes":[` +
		`{"nodeId":"start","type":"MANUAL","config":{"payload":{"a":9007199254740993,"b":9223372036854775809,"c":0.1000000000000000055511151231257827,"d":-0}}}]}]}`
	s, _ := mustParse(t, []byte(body), session.ParseOptions{})
	p, _ := s.Workflows()[0].Nodes()[0].Config()["payload"].(map[string]any)
	want := map[string]string{"a": "9007199254740993", "b": "9223372036854775809", "c": "0.1000000000000000055511151231257827", "d": "-0"}
	for k, w := range want {
		if n, ok := p[k].(json.Number); !ok || string(n) != w {
			t.Errorf("payload.%s: got %#v, want json.Number(%s)", k, p[k], w)
		}
	}
	def, err := session.MarshalDefinition(s.Workflows()[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(def), w) {
			t.Errorf("stored definition %s lacks %s", def, w)
		}
	}
}

// TestUnknownTypeMayBeTheTrigger: a workflow whose only trigger has a
// mistyped type gets one violation, the type, not also "no trigger node".
func TestUnknownTypeMayBeTheTrigger(t *testing.T) {
	t.Parallel()
	body := `{"sessionId":"s1","name":"n","workflows":[{"workflowId":"wf","nodes":[{"nodeId":"start","type":"MANUL"}]}]}`
	_, _, err := session.Parse([]byte(body), catalog, session.ParseOptions{})
	checkViolations(t, err, []want{{"workflows[0].nodes[0].type", []string{`unknown plugin type "MANUL"`}}})
}
