package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// credential issues a credential for supervisor id and returns an agent
// world speaking with it.
func (w *agentWorld) as(id string) *agentWorld {
	w.t.Helper()
	st, b, _ := call(w.t, w.s, "POST", "/api/supervisors/"+id+"/credential", w.key, nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil || !strings.HasPrefix(c.Token, "yks_") {
		w.t.Fatalf("issue a credential for %s: %d %s", id, st, b)
	}
	return &agentWorld{reviewWorld: w.reviewWorld, token: c.Token}
}

// TestDelegationOverTheAgentAPI: two agents, a child supervisor's and its
// parent's. The child ESCALATEs a request; the parent reads it as a
// DELEGATED signal by long poll and answers it once; the child reads the
// answer as a DELEGATED signal with answer set. The same key opens no
// second delegation, a second answer is a conflict, and a CONSULT names an
// existing supervisor.
func TestDelegationOverTheAgentAPI(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	w.put("/api/sessions/ci", napSession("ci"))
	w.put("/api/supervisors/lead", []byte(`{"name":"Lead","owns":["session:ci"],"engine":{"type":"http","settings":{}}}`))
	w.put("/api/supervisors/worker", []byte(`{"name":"Worker","owns":["session:ci"],"parentId":"lead","engine":{"type":"http","settings":{}}}`))
	lead, worker := w.as("lead"), w.as("worker")

	req := []byte(`{"kind":"ESCALATE","key":"retry-1","payload":{"question":"retry the deploy?"}}`)
	st, b, _ := worker.agent("POST", "/delegations", req)
	var d struct {
		DelegationID, Kind, From, To, Status string
		Answer                               map[string]any
	}
	if st != 201 || json.Unmarshal(b, &d) != nil || d.To != "lead" || d.From != "worker" || d.Status != "OPEN" {
		t.Fatalf("POST /delegations: %d %s", st, b)
	}
	if st, b, _ := worker.agent("POST", "/delegations", req); st != 200 || !strings.Contains(string(b), d.DelegationID) {
		t.Fatalf("the same key again: %d %s, want 200 with %s", st, b, d.DelegationID)
	}
	if st, b, _ := worker.agent("POST", "/delegations", []byte(`{"kind":"CONSULT","key":"c1","to":"nobody","payload":1}`)); st != 400 {
		t.Fatalf("CONSULT of nobody: %d %s, want 400", st, b)
	}
	if st, b, _ := lead.agent("POST", "/delegations", []byte(`{"kind":"ESCALATE","key":"up","payload":1}`)); st != 400 || !strings.Contains(string(b), "no parent") {
		t.Fatalf("ESCALATE from a root: %d %s, want 400", st, b)
	}

	sig, _ := lead.pollUntil("", func(kind string, s map[string]any) bool { return kind == "DELEGATED" })
	if sig["delegationId"] != d.DelegationID || sig["from"] != "worker" || sig["kind"] != "ESCALATE" {
		t.Fatalf("DELEGATED signal %v", sig)
	}
	if r, _ := sig["request"].(map[string]any); r["question"] != "retry the deploy?" {
		t.Fatalf("request %v", sig["request"])
	}
	if st, b, _ := worker.agent("POST", "/delegations/"+d.DelegationID, []byte(`{"answer":"mine"}`)); st != 404 {
		t.Fatalf("the sender answers its own: %d %s, want 404", st, b)
	}
	st, b, _ = lead.agent("POST", "/delegations/"+d.DelegationID, []byte(`{"answer":{"retry":true}}`))
	if st != 200 || json.Unmarshal(b, &d) != nil || d.Status != "ANSWERED" || d.Answer["retry"] != true {
		t.Fatalf("answer: %d %s", st, b)
	}
	if st, b, _ := lead.agent("POST", "/delegations/"+d.DelegationID, []byte(`{"answer":{"retry":false}}`)); st != 409 {
		t.Fatalf("a second answer: %d %s, want 409", st, b)
	}

	back, _ := worker.pollUntil("", func(kind string, s map[string]any) bool { return kind == "DELEGATED" && s["answer"] != nil })
	if back["delegationId"] != d.DelegationID || back["to"] != "lead" || back["from"] != "worker" {
		t.Fatalf("answer signal %v", back)
	}
	if a, _ := back["answer"].(map[string]any); a["retry"] != true {
		t.Fatalf("answer %v", back["answer"])
	}
}
