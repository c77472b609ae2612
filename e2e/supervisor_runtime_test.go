package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// flakySession: runs started with {"fail": true} fail at "boom"; the others
// wait two minutes on "nap", so the test has failing and unfinished runs.
const flakySession = `{"name":"ci","workflows":[{"workflowId":"flaky","nodes":[
	{"nodeId":"in","type":"MANUAL"},
	{"nodeId":"gate","type":"FILTER","config":{"condition":"payload.fail == true"}},
	{"nodeId":"boom","type":"FAIL","config":{"message":"down"}},
	{"nodeId":"nap","type":"DELAY","config":{"duration":"120s"}},
	{"nodeId":"out","type":"RESULT"}],
	"edges":[{"source":"in","target":"gate"},{"source":"gate","target":"boom"},{"source":"in","target":"nap"},{"source":"nap","target":"out"}]}]}`

// TestSeedRuleOnTheRealServer: the seed's example rules supervisor, applied
// over REST, pauses the workflow's unfinished runs after the third node
// FAILURE (not before), as supervisor:guard; the dry run of one failed run
// reports the rule counted, without sending anything.
func TestSeedRuleOnTheRealServer(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	guard := strings.Replace(seedGuard, `,
  "parentId": "ops"`, "", 1)
	failed := pausesAfterThreeFailures(t, s, guard)
	// Dry run of one failed run: the rule counts its failure, 1 of 3, and
	// sends nothing (no new command).
	req, _ := json.Marshal(map[string]any{"sessionId": "ci", "executionId": failed,
		"ruleDocument": map[string]any{"schemaVersion": 1, "rules": []any{map[string]any{"id": "once",
			"when": map[string]any{"event": "NodeStatusChanged", "status": "FAILURE"}, "then": map[string]any{"command": "PauseWorkflow"}}}}})
	st, b, _ := call(t, s, "POST", "/api/supervisor-engines/rules/dry-run", "", req)
	var rep struct {
		Events int
		Fired  []map[string]any
	}
	if st != 200 || json.Unmarshal(b, &rep) != nil || rep.Events == 0 || len(rep.Fired) != 1 || rep.Fired[0]["ruleId"] != "once" {
		t.Fatalf("dry run: %d %s", st, b)
	}
	st, b, _ = call(t, s, "POST", "/api/supervisor-engines/rules/dry-run", "", []byte(`{"sessionId":"ci","executionId":"`+failed+`","ruleDocument":{"schemaVersion":1,"rules":[{"id":"x","when":{"event":"Nope"}}]}}`))
	if st != 400 || !strings.Contains(string(b), "rules") {
		t.Fatalf("dry run of an invalid document: %d %s", st, b)
	}
}

// TestFailureGuardPresetOnTheRealServer: the failure-guard preset, taken as
// the catalogue serves it (every parameter at its default: 3 failures within
// 60 s, per workflow), has the same effect.
func TestFailureGuardPresetOnTheRealServer(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	st, b, _ := call(t, s, "GET", "/api/supervisor-engines/rules/presets", "", nil)
	var list struct {
		Presets []struct {
			Name     string
			Settings map[string]any
		}
	}
	if st != 200 || json.Unmarshal(b, &list) != nil {
		t.Fatalf("presets: %d %s", st, b)
	}
	var settings map[string]any
	for _, p := range list.Presets {
		if p.Name == "failure-guard" {
			settings = p.Settings
		}
	}
	if settings == nil {
		t.Fatalf("no failure-guard preset in %s", b)
	}
	doc, _ := json.Marshal(map[string]any{"name": "Failure guard preset", "engine": map[string]any{"type": "rules", "settings": settings},
		"owns": []string{"session:ci"}})
	pausesAfterThreeFailures(t, s, string(doc))
}

// pausesAfterThreeFailures applies the flaky session and supervisor doc as
// "guard", starts two runs that wait and then three that fail, and checks
// that the waiting runs stay RUNNING after one and two failures and are
// PAUSED by supervisor:guard after the third. It returns the last failed run.
func pausesAfterThreeFailures(t *testing.T, s *server, doc string) string {
	t.Helper()
	if st, b, _ := call(t, s, "PUT", "/api/sessions/ci", "", []byte(flakySession)); st != 201 {
		t.Fatalf("apply session: %d %s", st, b)
	}
	if st, b, _ := call(t, s, "PUT", "/api/supervisors/guard", "", []byte(doc)); st != 201 {
		t.Fatalf("apply supervisor: %d %s", st, b)
	}
	start := func(fail bool) string {
		body, _ := json.Marshal(map[string]any{"payload": map[string]any{"fail": fail}, "wait": 0})
		st, b, _ := call(t, s, "POST", "/api/sessions/ci/workflows/flaky/executions", "", body)
		var out struct{ ExecutionId string }
		if st != 201 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("start: %d %s", st, b)
		}
		return out.ExecutionId
	}
	status := func(id string) string {
		_, b, _ := call(t, s, "GET", "/api/sessions/ci/executions/"+id, "", nil)
		var out struct{ Status, Actor string }
		_ = json.Unmarshal(b, &out)
		return out.Status
	}
	waitFor := func(want string, ids ...string) {
		deadline := time.Now().Add(30 * time.Second)
		for _, id := range ids {
			for status(id) != want {
				if time.Now().After(deadline) {
					t.Fatalf("execution %s is %s, want %s", id, status(id), want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	waiting := []string{start(false), start(false)}
	waitFor("RUNNING", waiting...)
	var failed string
	for i := 1; i <= 3; i++ {
		failed = start(true)
		// A wait on the failed run's end, then time for the runtime to
		// read the event: before the third failure nothing may pause.
		waitFor("FAILURE", failed)
		if i < 3 {
			time.Sleep(time.Second)
			for _, id := range waiting {
				if st := status(id); st != "RUNNING" {
					t.Fatalf("after %d failure(s) %s is %s; the rule needs 3", i, id, st)
				}
			}
		}
	}
	waitFor("PAUSED", waiting...)
	// PauseWorkflow on the workflow paused the workflow itself: a new run
	// of it is refused, naming the supervisor, until someone resumes it.
	body, _ := json.Marshal(map[string]any{"payload": map[string]any{"fail": false}})
	st, b, _ := call(t, s, "POST", "/api/sessions/ci/workflows/flaky/executions", "", body)
	if st != 409 || !strings.Contains(string(b), "workflow flaky of session ci is paused (by supervisor:guard") ||
		!strings.Contains(string(b), "yukta resume-workflow ci flaky") {
		t.Fatalf("a start after the guard paused the workflow: %d %s", st, b)
	}
	// The observer journals behind the commit: the PAUSE appears in the
	// run's journal as a decision by supervisor:guard shortly after.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, b, _ := call(t, s, "GET", "/api/sessions/ci/executions/"+waiting[0]+"/journal", "", nil)
		if strings.Contains(string(b), `"kind":"decision"`) && strings.Contains(string(b), `supervisor:guard`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal of a paused run has no decision by supervisor:guard: %.2000s", b)
		}
	}
	return failed

}
