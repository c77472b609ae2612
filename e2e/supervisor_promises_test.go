package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The engines reference (seed 000) promises, checked on the real binary:
// SUPERVISOR_DECISION's outcome defaults to SUCCESS and a command the
// contract cannot read fails the run; CEL fields answer a SpEL-style
// condition with its CEL form; a workflow supervisor is saved only when its
// session and workflow exist and maxConcurrent fits the reserved pool; and
// every read of a supervisor shows its engine's defaults.

// promiseSession holds two supervisor workflows: "triage" answers the input
// an InputRequested names and ends at a SUPERVISOR_DECISION with no
// outcome (SUCCESS by default); "broken" builds a command of a type the
// contract does not have.
const promiseSession = `{"name": "supervisors", "workflows": [
  {"workflowId": "triage", "nodes": [
    {"nodeId": "signal", "type": "SUPERVISOR_SIGNAL", "config": {"kinds": ["EVENT"]}},
    {"nodeId": "answer", "type": "TRANSFORM", "config": {"expression":
      "{\"commands\": [{\"type\": \"AnswerInput\", \"inputId\": payload.signal.data.inputId, \"answer\": {\"approved\": true}}]}"}},
    {"nodeId": "decide", "type": "SUPERVISOR_DECISION", "config": {}}],
   "edges": [{"source": "signal", "target": "answer"}, {"source": "answer", "target": "decide"}]},
  {"workflowId": "broken", "nodes": [
    {"nodeId": "signal", "type": "SUPERVISOR_SIGNAL", "config": {"kinds": ["EVENT"]}},
    {"nodeId": "answer", "type": "TRANSFORM", "config": {"expression":
      "{\"commands\": [{\"type\": \"ExplodeWorkflow\", \"target\": \"owned.running\"}]}"}},
    {"nodeId": "decide", "type": "SUPERVISOR_DECISION", "config": {"outcome": "SUCCESS"}}],
   "edges": [{"source": "signal", "target": "answer"}, {"source": "answer", "target": "decide"}]}]}`

// decidingSession is a supervisor session whose decision names its
// outcome: the other promise tests need the session to exist, whatever
// the default.
var decidingSession = strings.Replace(promiseSession, `"type": "SUPERVISOR_DECISION", "config": {}`, `"type": "SUPERVISOR_DECISION", "config": {"outcome": "SUCCESS"}`, 1)

// TestDecisionWithoutOutcomeIsSuccess: a SUPERVISOR_DECISION without
// outcome is a SUCCESS: the session saves, and the input is answered
// through it.
func TestDecisionWithoutOutcomeIsSuccess(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	w.put("/api/sessions/ci", []byte(guideSession))
	w.put("/api/sessions/supervisors", []byte(promiseSession))
	w.put("/api/supervisors/triager", []byte(`{"name": "Triage", "owns": ["session:ci"], "allowedCommands": ["AnswerInput"],
	  "engine": {"type": "workflow", "settings": {"sessionId": "supervisors", "workflowId": "triage", "events": ["InputRequested"]}}}`))

	st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/workflows/ask/executions", "", []byte(`{"payload":{}}`))
	var run struct{ ExecutionId string }
	if st != 201 || json.Unmarshal(b, &run) != nil {
		t.Fatalf("start: %d %s", st, b)
	}
	for deadline := time.Now().Add(40 * time.Second); w.status("ci", run.ExecutionId) != "SUCCESS"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the decision without outcome did not answer the input: run %s", w.status("ci", run.ExecutionId))
		}
	}
	var outcome string
	_ = w.db.QueryRow(context.Background(), `SELECT coalesce(result->>'outcome', '') FROM executions
		WHERE session_id = 'supervisors' AND workflow_id = 'triage'`).Scan(&outcome)
	if outcome != "SUCCESS" {
		t.Fatalf("the triage run's outcome is %q, want SUCCESS (the default)", outcome)
	}

}

// TestUnreadableDecisionFailsItsRun: a decision whose command the contract
// cannot read ends its run FAILURE, with an error naming the command's
// field and what is wrong, and sends nothing.
func TestUnreadableDecisionFailsItsRun(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	w.put("/api/sessions/ci", []byte(guideSession))
	w.put("/api/sessions/supervisors", []byte(decidingSession))
	w.put("/api/supervisors/breaker", []byte(`{"name": "Breaker", "owns": ["session:ci"], "allowedCommands": ["StopWorkflow"],
	  "engine": {"type": "workflow", "settings": {"sessionId": "supervisors", "workflowId": "broken", "events": ["InputRequested"]}}}`))
	id := w.napping("ci")
	st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/workflows/ask/executions", "", []byte(`{"payload":{}}`))
	if st != 201 {
		t.Fatalf("start: %d %s", st, b)
	}
	var status, errText string
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_ = w.db.QueryRow(context.Background(), `SELECT status, error FROM executions
			WHERE session_id = 'supervisors' AND workflow_id = 'broken' ORDER BY started_at LIMIT 1`).Scan(&status, &errText)
		if status == "SUCCESS" || status == "FAILURE" || status == "STOPPED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broken decision's run is %q", status)
		}
	}
	if status != "FAILURE" || !strings.Contains(errText, "payload.commands[0].type") || !strings.Contains(errText, "ExplodeWorkflow") {
		t.Fatalf("the run of a decision with an unreadable command: %s %q; want FAILURE naming payload.commands[0].type", status, errText)
	}
	if st := w.status("ci", id); st != "RUNNING" {
		t.Fatalf("the napping run is %s: the unreadable decision sent something", st)
	}
}

// TestSpELConditionsGetTheirCELForm: every CEL field of a supervisor (a
// rule's when.if, deny.if and requireApproval.if, the workflow engine's
// when) and a breakpoint condition answer a SpEL-style condition with a
// 400 that says CEL is expected and shows the CEL form.
func TestSpELConditionsGetTheirCELForm(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	w.put("/api/sessions/ci", []byte(guideSession))
	w.put("/api/sessions/supervisors", []byte(decidingSession))
	cases := []struct{ name, path, doc, want string }{
		{"workflow when", "engine.settings.when", `{"name": "T", "owns": ["session:ci"], "engine": {"type": "workflow", "settings": {
		   "sessionId": "supervisors", "workflowId": "triage", "events": ["InputRequested"], "when": "#event.type == 'InputRequested'"}}}`,
			"event.type == 'InputRequested'"},
		{"rule when.if", "engine.settings.rules[0].when.if", `{"name": "T", "owns": ["session:ci"], "engine": {"type": "rules", "settings": {"rules": [
		   {"id": "r", "when": {"event": "NodeStatusChanged", "if": "#event.nodeId matches 'build-.*'"}, "then": {"command": "PauseWorkflow"}}]}}}`,
			"event.nodeId.matches('build-.*')"},
		{"deny if", "engine.settings.rules[0].deny.if", `{"name": "T", "owns": ["session:ci"], "engine": {"type": "rules", "settings": {"rules": [
		   {"id": "r", "deny": {"command": "StopWorkflow", "if": "#command.target == 'held' and #actor != 'key:admin'", "reason": "no"}}]}}}`,
			"command.target == 'held' && actor != 'key:admin'"},
		{"requireApproval if", "engine.settings.rules[0].requireApproval.if", `{"name": "T", "owns": ["session:ci"], "engine": {"type": "rules", "settings": {"rules": [
		   {"id": "r", "requireApproval": {"command": "StopWorkflow", "if": "#root.actor == 'key:ops'"}}]}}}`,
			"actor == 'key:ops'"},
	}
	for _, c := range cases {
		st, b, _ := call(t, w.s, "PUT", "/api/supervisors/spel", "", []byte(c.doc))
		if st != 400 || !strings.Contains(string(b), c.path) || !strings.Contains(string(b), "CEL") || !strings.Contains(string(b), "SpEL") ||
			!strings.Contains(string(b), jsonText(c.want)) {
			t.Errorf("%s: %d %s; want 400 at %s showing the CEL form %s", c.name, st, b, c.path, c.want)
		}
	}
	id := w.napping("ci")
	st, b, _ := call(t, w.s, "PUT", "/api/sessions/ci/executions/"+id+"/nodes/out/breakpoint", "",
		[]byte(`{"condition": "#payload.size > 3"}`))
	if st != 400 || !strings.Contains(string(b), "SpEL") || !strings.Contains(string(b), jsonText("write it as: payload.size > 3")) {
		t.Errorf("breakpoint condition: %d %s; want 400 showing the CEL form payload.size > 3", st, b)
	}
}

// jsonText is s as it reads inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestWorkflowSupervisorSaveChecksAndDefaults: a workflow supervisor whose
// session or workflow does not exist, or whose maxConcurrent is more than
// the reserved pool, is refused naming the setting; a saved one reads back
// over REST and MCP with every engine default explicit, as
// do http and rules supervisors.
func TestWorkflowSupervisorSaveChecksAndDefaults(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t, "YUKTA_RESERVED_SUPERVISOR_SLOTS=3")
	w.put("/api/sessions/supervisors", []byte(decidingSession))
	doc := func(settings string) []byte {
		return []byte(`{"name": "T", "owns": ["session:ci"], "engine": {"type": "workflow", "settings": {"events": ["InputRequested"], ` + settings + `}}}`)
	}
	refusals := []struct{ name, settings, path, want string }{
		{"no session", `"sessionId": "nope", "workflowId": "triage"`, "engine.settings.sessionId", "PUT /api/sessions/nope"},
		{"no workflow", `"sessionId": "supervisors", "workflowId": "nope"`, "engine.settings.workflowId", "GET /api/sessions/supervisors"},
		{"too many at once", `"sessionId": "supervisors", "workflowId": "triage", "maxConcurrent": 4`, "engine.settings.maxConcurrent", "3 reserved slots"},
	}
	for _, r := range refusals {
		st, b, _ := call(t, w.s, "PUT", "/api/supervisors/triager", "", doc(r.settings))
		if st != 400 || !strings.Contains(string(b), r.path) || !strings.Contains(string(b), r.want) {
			t.Errorf("%s: %d %s; want 400 at %s saying %q", r.name, st, b, r.path, r.want)
		}
	}
	if st, _, _ := call(t, w.s, "GET", "/api/supervisors/triager", "", nil); st != 404 {
		t.Fatalf("a refused supervisor was stored: GET %d", st)
	}
	w.put("/api/supervisors/triager", doc(`"sessionId": "supervisors", "workflowId": "triage", "maxConcurrent": 3`))
	w.put("/api/supervisors/plain", doc(`"sessionId": "supervisors", "workflowId": "triage"`))
	w.put("/api/supervisors/agent", []byte(`{"name": "Agent", "owns": ["session:ci"], "engine": {"type": "http", "settings": {}}}`))
	w.put("/api/supervisors/guard", []byte(`{"name": "Guard", "owns": ["session:ci"], "engine": {"type": "rules", "settings": {"rules": [
	  {"id": "r", "when": {"event": "NodeStatusChanged", "status": "FAILURE"}, "then": {"command": "PauseWorkflow"}}]}}}`))
	want := map[string]map[string]float64{
		"triager": {"maxConcurrent": 3, "timeout": 60},
		"plain":   {"maxConcurrent": 2, "timeout": 60},
		"agent":   {"timeoutMs": 3000, "maxConcurrent": 4},
		"guard":   {"schemaVersion": 1},
	}
	check := func(where, id string, settings map[string]any) {
		t.Helper()
		for k, v := range want[id] {
			if got, ok := settings[k].(float64); !ok || got != v {
				t.Errorf("%s %s: engine.settings.%s is %v, want %v shown explicitly (settings %v)", where, id, k, settings[k], v, settings)
			}
		}
	}
	// The list carries no settings (a summary per supervisor); it holds
	// the four.
	var list struct {
		Supervisors []struct {
			ID string `json:"id"`
		} `json:"supervisors"`
	}
	if st, b, _ := call(t, w.s, "GET", "/api/supervisors", "", nil); st != 200 || json.Unmarshal(b, &list) != nil || len(list.Supervisors) != 4 {
		t.Fatalf("list: %d %s", st, b)
	}
	cs := mustConnect(t, w.s.URL, "")
	for id := range want {
		var one struct {
			Engine struct {
				Settings map[string]any `json:"settings"`
			} `json:"engine"`
		}
		st, b, _ := call(t, w.s, "GET", "/api/supervisors/"+id, "", nil)
		if st != 200 || json.Unmarshal(b, &one) != nil {
			t.Fatalf("get %s: %d %s", id, st, b)
		}
		check("GET /api/supervisors/{id}", id, one.Engine.Settings)
		var det struct {
			Settings map[string]any `json:"settings"`
		}
		mustCall(t, cs, "get_supervisor", map[string]any{"supervisorId": id}, &det)
		check("MCP get_supervisor", id, det.Settings)
	}
}
