package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
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

// toolName finds the tool names a sentence mentions (snake_case words).
var toolName = regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`)

// TestAgentDoorsSpeakTheirOwnWords: the agent API's two doors say what
// they honour and name only what they have. The agent MCP declares no
// logging and refuses logging/setLevel; its errors name only its own
// tools and hold no Go decoder text; both doors' 401 speak of a
// supervisor credential, never an API key; an unknown agent path is 401
// without a credential (404 with one); a long poll the client abandons is
// logged as the client's cancellation, at info at most, never as a 500.
func TestAgentDoorsSpeakTheirOwnWords(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t, "YUKTA_API_KEYS="+writeKeyFile(t))
	w.key = testKeys["admin"]
	w.setup()

	// REST: 401s of the agent API name the supervisor credential.
	for _, c := range []struct{ path, token string }{
		{"/api/agent/v1/self", ""}, {"/api/agent/v1/self", "yks_wrong"}, {"/api/agent/v1/nope", ""},
		{"/api/agent/v1/nope/deeper", ""}, {"/api/agent/v1/mcp", ""},
	} {
		st, b, _ := call(t, w.s, "GET", c.path, c.token, nil)
		if st != 401 || !strings.Contains(string(b), "supervisor credential") || strings.Contains(string(b), "API key") {
			t.Errorf("GET %s with %q: %d %s, want 401 naming the supervisor credential (not an API key)", c.path, c.token, st, b)
		}
	}
	if st, b, _ := w.agent("GET", "/nope", nil); st != 404 {
		t.Errorf("an unknown agent path with a credential: %d %s, want 404", st, b)
	}

	// MCP: no logging; errors name only this door's tools.
	cs, err := mcpConnect(t.Context(), w.s.URL, "/api/agent/v1/mcp", w.token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	//lint:ignore SA1019 the test checks that the endpoint does not declare the deprecated logging capability
	if caps := cs.InitializeResult().Capabilities; caps.Logging != nil {
		t.Errorf("the agent MCP declares logging: %+v", caps)
	}
	st, b, _ := call(t, w.s, "POST", "/api/agent/v1/mcp", w.token, []byte(`{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`),
		"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
	if !strings.Contains(string(b), `"code":-32601`) || !strings.Contains(string(b), "logging/setLevel") || strings.Contains(string(b), `"result"`) {
		t.Errorf("logging/setLevel on the agent MCP: %d %s, want method not found", st, b)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, tl := range tools.Tools {
		have[tl.Name] = true
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"answer_review", map[string]any{"reviewId": "0193b7a0-0000-7000-8000-000000000000", "verdict": "ALLOW"}},
		{"answer_review", map[string]any{"reviewId": "nope", "verdict": "MAYBE"}},
		{"get_execution", map[string]any{"executionId": 5}},
		{"get_execution", map[string]any{"executionId": "0193b7a0-0000-7000-8000-000000000000"}},
		{"read_signals", map[string]any{"limit": "ten"}},
		{"read_signals", map[string]any{"after": "not-a-cursor"}},
		{"send_directive", map[string]any{"key": 5, "command": map[string]any{"type": "PauseWorkflow"}}},
	} {
		res := mcpCall(t, cs, c.tool, c.args, nil)
		msg := text(res)
		if !res.IsError {
			t.Errorf("%s(%v) was not refused: %s", c.tool, c.args, msg)
		}
		for _, g := range agentGoText {
			if strings.Contains(msg, g) {
				t.Errorf("%s(%v) answers Go text %q: %s", c.tool, c.args, g, msg)
			}
		}
		for _, name := range toolName.FindAllString(msg, -1) {
			if !have[name] && isToolLike(name) {
				t.Errorf("%s(%v) points to %s, which the agent MCP does not have: %s", c.tool, c.args, name, msg)
			}
		}
	}

	// A long poll the client abandons.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", w.s.URL+"/api/agent/v1/signals?wait=30", nil)
	req.Header.Set("Authorization", "Bearer "+w.token)
	go func() { time.Sleep(500 * time.Millisecond); cancel() }()
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the long poll answered %d before the client left", res.StatusCode)
	}
	var line map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for line == nil {
		for _, l := range strings.Split(w.s.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["route"] == "/api/agent/v1/signals" && m["msg"] == "http request" && m["status"] != float64(200) {
				line = m
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no access log line of the abandoned long poll within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line["status"] != float64(499) || (line["level"] != "info" && line["level"] != "debug") {
		t.Errorf("the abandoned long poll was logged as %v", line)
	}
	for _, l := range strings.Split(w.s.logs.String(), "\n") {
		if strings.Contains(l, `"level":"error"`) && strings.Contains(l, "/api/agent/v1/signals") {
			t.Errorf("the abandoned long poll logged an error: %s", l)
		}
	}
}

// isToolLike tells tool names from other snake_case words in a sentence
// (none of ours are).
func isToolLike(name string) bool {
	for _, verb := range []string{"get_", "list_", "read_", "send_", "answer_", "create_", "revoke_", "start_", "control_", "set_", "decide_"} {
		if strings.HasPrefix(name, verb) {
			return true
		}
	}
	return false
}
