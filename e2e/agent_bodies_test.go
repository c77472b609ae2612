package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// dbText are fragments of PostgreSQL's own error text that must never
// reach a client.
var dbText = []string{"SQLSTATE", "22P05", "22021", "unsupported Unicode", "invalid byte sequence", "ERROR:", "pgx", "jsonb"}

// agentGoText are fragments of Go's own error text.
var agentGoText = []string{"json: ", "cannot unmarshal", "invalid character", "unexpected end of JSON", "Go value", "interface {}"}

// TestAgentDelegationBodiesAreStrict: POST /delegations and POST
// /delegations/{id} read their bodies as every other body is read: a
// repeated key (a second kind that would turn ESCALATE into CONSULT),
// 1e400, nesting 200 deep, data after the value, NUL, a lone surrogate
// and invalid UTF-8 are each a 400 naming the member and the problem, in
// our words, and nothing is stored.
func TestAgentDelegationBodiesAreStrict(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	w.put("/api/sessions/ci", napSession("ci"))
	w.put("/api/supervisors/lead", []byte(`{"name":"Lead","owns":["session:ci"],"engine":{"type":"http","settings":{}}}`))
	w.put("/api/supervisors/worker", []byte(`{"name":"Worker","owns":["session:ci"],"parentId":"lead","engine":{"type":"http","settings":{}}}`))
	lead, worker := w.as("lead"), w.as("worker")
	st, b, _ := worker.agent("POST", "/delegations", []byte(`{"kind":"ESCALATE","key":"open-1","payload":{"q":1}}`))
	var open struct{ DelegationID string }
	if st != 201 || json.Unmarshal(b, &open) != nil {
		t.Fatalf("open a delegation: %d %s", st, b)
	}
	rows := func() (n int, answered int) {
		_ = w.db.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE answer IS NOT NULL) FROM supervisor_delegations`).Scan(&n, &answered)
		return n, answered
	}
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	for _, c := range []struct {
		name, path, body string
		who              *agentWorld
		want             []string // in the answer: the member and the problem
	}{
		{"repeated kind", "/delegations", `{"kind":"ESCALATE","kind":"CONSULT","key":"k1","to":"lead","payload":1}`, worker, []string{"body.kind", "repeat"}},
		{"1e400", "/delegations", `{"kind":"ESCALATE","key":"k2","payload":1e400}`, worker, []string{"body.payload", "range"}},
		{"nesting 200", "/delegations", `{"kind":"ESCALATE","key":"k3","payload":` + deep + `}`, worker, []string{"body", "128"}},
		{"trailing data", "/delegations", `{"kind":"ESCALATE","key":"k4","payload":1} {"kind":"CONSULT"}`, worker, []string{"body", "after the JSON value"}},
		{"NUL escaped", "/delegations", `{"kind":"ESCALATE","key":"k\u0000","payload":1}`, worker, []string{"body.key", "U+0000"}},
		{"NUL raw", "/delegations", "{\"kind\":\"ESCALATE\",\"key\":\"k5\",\"payload\":\"a\x00b\"}", worker, []string{"body.payload", "U+0000"}},
		{"lone surrogate", "/delegations", `{"kind":"ESCALATE","key":"k6","payload":"\ud800"}`, worker, []string{"body.payload", "surrogate"}},
		{"invalid UTF-8", "/delegations", "{\"kind\":\"ESCALATE\",\"key\":\"k\xff\",\"payload\":1}", worker, []string{"body", "UTF-8"}},
		{"unknown member", "/delegations", `{"kind":"ESCALATE","key":"k7","payload":1,"priority":9}`, worker, []string{"body.priority", "kind, key, to, payload"}},
		{"wrong type", "/delegations", `{"kind":5,"key":"k8","payload":1}`, worker, []string{"body.kind", "a string"}},
		{"answer repeated", "/delegations/" + open.DelegationID, `{"answer":{"ok":true},"answer":{"ok":false}}`, lead, []string{"body.answer", "repeat"}},
		{"answer 1e400", "/delegations/" + open.DelegationID, `{"answer":1e400}`, lead, []string{"body.answer", "range"}},
		{"answer nesting 200", "/delegations/" + open.DelegationID, `{"answer":` + deep + `}`, lead, []string{"body", "128"}},
		{"answer trailing data", "/delegations/" + open.DelegationID, `{"answer":1}x`, lead, []string{"body", "after the JSON value"}},
		{"answer NUL", "/delegations/" + open.DelegationID, `{"answer":"\u0000"}`, lead, []string{"body.answer", "U+0000"}},
		{"answer lone surrogate", "/delegations/" + open.DelegationID, `{"answer":{"t":"\udfff"}}`, lead, []string{"body.answer.t", "surrogate"}},
		{"answer invalid UTF-8", "/delegations/" + open.DelegationID, "{\"answer\":\"\xc3\x28\"}", lead, []string{"body", "UTF-8"}},
		{"answer unknown member", "/delegations/" + open.DelegationID, `{"answer":1,"note":"x"}`, lead, []string{"body.note", "answer"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			beforeRows, beforeAnswered := rows()
			st, b, _ := call(t, c.who.s, "POST", "/api/agent/v1"+c.path, c.who.token, []byte(c.body))
			if st != 400 {
				t.Fatalf("%d %s, want 400", st, b)
			}
			var p struct {
				Errors []struct{ Path, Message string }
			}
			if json.Unmarshal(b, &p) != nil || len(p.Errors) == 0 {
				t.Fatalf("a 400 without violations: %s", b)
			}
			for _, want := range c.want {
				if !strings.Contains(string(b), want) {
					t.Fatalf("the answer does not name %q: %s", want, b)
				}
			}
			for _, bad := range append(dbText, agentGoText...) {
				if strings.Contains(string(b), bad) {
					t.Fatalf("the answer holds %q: %s", bad, b)
				}
			}
			if n, a := rows(); n != beforeRows || a != beforeAnswered {
				t.Fatalf("a refused body changed the delegations: %d rows (%d answered), before %d (%d)", n, a, beforeRows, beforeAnswered)
			}
		})
	}
	// The delegation is still the ESCALATE it was, open.
	st, b, _ = lead.agent("POST", "/delegations/"+open.DelegationID, []byte(`{"answer":{"ok":true}}`))
	if st != 200 || !strings.Contains(string(b), `"kind":"ESCALATE"`) || !strings.Contains(string(b), `"status":"ANSWERED"`) {
		t.Fatalf("a good answer after the refused ones: %d %s", st, b)
	}
}
