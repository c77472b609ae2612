package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// pausedSession: "tick" fires every second into "boom", which always
// fails (the node that keeps failing); a manual or webhook start waits two
// minutes on "nap", so a run is still going when the workflow is paused.
const pausedSession = `{"name":"ci","workflows":[{"workflowId":"flaky","nodes":[
	{"nodeId":"in","type":"MANUAL"},
	{"nodeId":"hook","type":"WEBHOOK"},
	{"nodeId":"tick","type":"SCHEDULE","config":{"cron":"@every 1s"}},
	{"nodeId":"boom","type":"FAIL","config":{"message":"down"}},
	{"nodeId":"nap","type":"DELAY","config":{"duration":"120s"}},
	{"nodeId":"out","type":"RESULT"}],
	"edges":[{"source":"in","target":"nap"},{"source":"hook","target":"nap"},{"source":"nap","target":"out"},{"source":"tick","target":"boom"}]}]}`

// pausedDetail matches the one sentence every door shows for a start of
// the paused workflow: who paused it, since when, why, and the three ways
// to resume it.
var pausedDetail = regexp.MustCompile(`workflow flaky of session ci is paused \(by anonymous through rest since 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ, ` +
	`reason "boom keeps failing"\), so no new run of it starts; nothing was (started|restarted)\. ` +
	`Resume it with POST /api/sessions/ci/workflows/flaky/resume, MCP control_workflow with action RESUME_WORKFLOW, or yukta resume-workflow ci flaky`)

// TestPausedWorkflowRefusesStarts: a workflow whose node keeps failing is
// paused over REST on instance A. Then every door refuses a new run with
// 409 and the same sentence (who, since when, how to resume): REST on A
// and on B (a second instance on the database), MCP, the CLI (exit 1, its
// code for a refusal), the webhook and a RESTART; its schedule's fires are
// skipped and counted in yukta_starts_skipped_total, with no new run. A
// start retried with the key of a run that exists still answers that run.
// Re-applying the session keeps the pause; RESUME_WORKFLOW through the CLI
// on B resumes the run the pause paused and lets starts through again.
func TestPausedWorkflowRefusesStarts(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a := startServer(t, serverOptions{DSN: dsn})
	b := startServer(t, serverOptions{DSN: dsn})
	if st, body, _ := call(t, a, "PUT", "/api/sessions/ci", "", []byte(pausedSession)); st != 201 {
		t.Fatalf("apply: %d %s", st, body)
	}
	start := func(s *server, header ...string) (int, []byte, http.Header) {
		return call(t, s, "POST", "/api/sessions/ci/workflows/flaky/executions", "", []byte(`{"payload":{"n":1}}`), header...)
	}
	st, body, _ := start(a, "Idempotency-Key", "k1")
	var first struct{ ExecutionId string }
	if st != 201 || json.Unmarshal(body, &first) != nil {
		t.Fatalf("start before the pause: %d %s", st, body)
	}
	runs := func() map[string]int {
		_, body, _ := call(t, a, "GET", "/api/sessions/ci/executions?workflowId=flaky&limit=200", "", nil)
		var page struct{ Executions []struct{ Status string } }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("list: %v %s", err, body)
		}
		n := map[string]int{}
		for _, e := range page.Executions {
			n[e.Status]++
			n["all"]++
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); runs()["FAILURE"] == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled run failed within 30 s: %v", runs())
		}
	}

	// Pause it through A.
	st, body, _ = call(t, a, "POST", "/api/sessions/ci/workflows/flaky/pause", "", []byte(`{"reason":"boom keeps failing"}`))
	var paused struct {
		Status             string
		Message            string
		ResultExecutionIds []string
	}
	if st != 200 || json.Unmarshal(body, &paused) != nil || paused.Status != "applied" || !slices.Contains(paused.ResultExecutionIds, first.ExecutionId) {
		t.Fatalf("pause: %d %s", st, body)
	}
	if got := execStatus(t, a, first.ExecutionId); got != "PAUSED" {
		t.Fatalf("the run the pause reached is %s, want PAUSED", got)
	}
	refused := func(door string, st int, body []byte, h http.Header) {
		t.Helper()
		var p struct{ Type, Detail string }
		if st != 409 || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") || json.Unmarshal(body, &p) != nil ||
			p.Type != "urn:yukta:problem:conflict" || !pausedDetail.MatchString(p.Detail) {
			t.Fatalf("%s of the paused workflow: %d %s %s", door, st, h.Get("Content-Type"), body)
		}
	}
	// REST, on both instances.
	st, body, h := start(a)
	refused("REST start on A", st, body, h)
	st, body, h = start(b)
	refused("REST start on B", st, body, h)
	// A retried start of a run that exists answers that run.
	st, body, _ = start(b, "Idempotency-Key", "k1")
	var again struct{ ExecutionId string }
	if st != 200 || json.Unmarshal(body, &again) != nil || again.ExecutionId != first.ExecutionId {
		t.Fatalf("idempotent retry while paused: %d %s (want 200 with %s)", st, body, first.ExecutionId)
	}
	// The webhook.
	st, body, h = call(t, b, "POST", "/api/hooks/ci/flaky", "", []byte(`{"n":2}`), "Content-Type", "application/json")
	refused("webhook", st, body, h)
	// RESTART of a run of the paused workflow.
	st, body, h = call(t, a, "POST", "/api/sessions/ci/executions/"+first.ExecutionId+"/control", "", []byte(`{"action":"RESTART"}`))
	refused("RESTART", st, body, h)
	// MCP.
	cs := mustConnect(t, b.URL, "")
	res := mcpCall(t, cs, "start_workflow", map[string]any{"sessionId": "ci", "workflowId": "flaky", "payload": map[string]any{"n": 3}}, nil)
	if !res.IsError || !pausedDetail.MatchString(text(res)) {
		t.Fatalf("MCP start_workflow of the paused workflow: error %v: %s", res.IsError, text(res))
	}
	// Reading the workflow shows the pause, on both doors and instances.
	workflowPause := func(s *server) map[string]any {
		t.Helper()
		st, body, _ := call(t, s, "GET", "/api/sessions/ci/workflows/flaky", "", nil)
		var w struct{ Pause map[string]any }
		if st != 200 || json.Unmarshal(body, &w) != nil {
			t.Fatalf("GET the workflow: %d %s", st, body)
		}
		return w.Pause
	}
	if p := workflowPause(b); p["by"] != "anonymous" || p["via"] != "rest" || p["reason"] != "boom keeps failing" || p["since"] == nil {
		t.Fatalf("GET the paused workflow on B shows pause %v, want by anonymous via rest with the reason and since", p)
	}
	details := mcpCall(t, cs, "get_workflow_details", map[string]any{"sessionId": "ci", "workflowId": "flaky"}, nil)
	if details.IsError || !strings.Contains(text(details), `"pause":{"by":"anonymous","via":"rest"`) || !strings.Contains(text(details), "boom keeps failing") {
		t.Fatalf("MCP get_workflow_details of the paused workflow: %s", text(details))
	}
	// The CLI: exit 1, the code for a refusal, with the same sentence.
	out := yukta(t, a.URL, "run", "ci/flaky", "--payload", `{"n":4}`)
	if out.code != 1 || !strings.Contains(out.stderr, "409") || !pausedDetail.MatchString(out.stderr) {
		t.Fatalf("yukta run of the paused workflow:\n%s", out)
	}

	// The schedule's fires are skipped, counted, and start nothing.
	skips := func() float64 {
		sum := 0.0
		for _, s := range []*server{a, b} {
			sum += metricValue(t, scrapeMetrics(t, s), `yukta_starts_skipped_total{reason="workflow_paused",source="schedule"}`)
		}
		return sum
	}
	before, skipped0 := runs()["all"], skips()
	for deadline := time.Now().Add(30 * time.Second); skips() < skipped0+3; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the schedule's fires were not counted as skipped: %v, then %v", skipped0, skips())
		}
	}
	if after := runs()["all"]; after != before {
		t.Fatalf("the paused workflow's schedule started runs: %d runs before, %d after", before, after)
	}
	mb := scrapeMetrics(t, a) + scrapeMetrics(t, b)
	for _, src := range []string{"manual", "webhook", "restart"} {
		series := `yukta_starts_skipped_total{reason="workflow_paused",source="` + src + `"}`
		if metricValue(t, scrapeMetrics(t, a), series)+metricValue(t, scrapeMetrics(t, b), series) < 1 {
			t.Errorf("%s is not counted; exported:\n%s", series, grepLines(mb, "yukta_starts_skipped_total"))
		}
	}

	// Re-applying the session keeps the pause.
	if st, body, _ := call(t, b, "PUT", "/api/sessions/ci", "", []byte(pausedSession)); st != 200 && st != 201 {
		t.Fatalf("re-apply: %d %s", st, body)
	}
	st, body, h = start(a)
	refused("REST start after re-applying the session", st, body, h)

	// RESUME_WORKFLOW through the CLI, on B: the run the pause paused runs
	// again, and starts go through on both instances.
	out = yukta(t, b.URL, "resume-workflow", "ci", "flaky", "--reason", "boom fixed")
	cliWant(t, out, 0, "status: applied", "resumed-execution: "+first.ExecutionId)
	if p := workflowPause(a); p != nil {
		t.Fatalf("GET the resumed workflow still shows pause %v", p)
	}
	if got := execStatus(t, a, first.ExecutionId); got != "RUNNING" {
		t.Fatalf("the run the pause paused is %s after the resume, want RUNNING", got)
	}
	if st, body, _ := start(a); st != 201 {
		t.Fatalf("start on A after the resume: %d %s", st, body)
	}
	if st, body, _ := start(b); st != 201 {
		t.Fatalf("start on B after the resume: %d %s", st, body)
	}
	// Resuming again changes nothing and says so.
	st, body, _ = call(t, a, "POST", "/api/sessions/ci/workflows/flaky/resume", "", nil)
	if st != 200 || !strings.Contains(string(body), "workflow flaky is not paused; nothing was changed") {
		t.Fatalf("second resume: %d %s", st, body)
	}
}

func execStatus(t *testing.T, s *server, id string) string {
	t.Helper()
	_, body, _ := call(t, s, "GET", "/api/sessions/ci/executions/"+id, "", nil)
	var out struct{ Status string }
	_ = json.Unmarshal(body, &out)
	return out.Status
}

// TestAgentDirectivesMeetAPausedWorkflow: a supervisor's PauseWorkflow on
// its workflow, sent over the agent API, pauses the workflow; then a
// person's start over REST and the supervisor's own StartWorkflow are both
// refused with the pause's sentence (the directive's outcome is rejected),
// until its ResumeWorkflow lifts it.
func TestAgentDirectivesMeetAPausedWorkflow(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	w.setup()
	run := w.napping("ci")
	directive := func(body string) map[string]any {
		t.Helper()
		st, b, _ := w.agent("POST", "/directives", []byte(body))
		var res struct {
			Status   string
			Outcomes []map[string]any
		}
		if st != 202 || json.Unmarshal(b, &res) != nil || len(res.Outcomes) != 1 {
			t.Fatalf("directive %s: %d %s", body, st, b)
		}
		return res.Outcomes[0]
	}
	out := directive(`{"key":"pause-nap","reason":"nap keeps failing","command":{"type":"PauseWorkflow","target":"workflow:ci/nap"}}`)
	if out["status"] != "applied" || !strings.Contains(out["message"].(string), "workflow nap paused: 1 active execution(s) paused") {
		t.Fatalf("PauseWorkflow on the workflow: %v", out)
	}
	if s := w.status("ci", run); s != "PAUSED" {
		t.Fatalf("the run is %s after the workflow's pause, want PAUSED", s)
	}
	want := `workflow nap of session ci is paused (by supervisor:agent through agent since `
	st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/workflows/nap/executions", w.key, []byte(`{}`))
	if st != 409 || !strings.Contains(string(b), want) || !strings.Contains(string(b), `reason \"nap keeps failing\"`) {
		t.Fatalf("a person's start of the paused workflow: %d %s", st, b)
	}
	out = directive(`{"key":"start-nap","command":{"type":"StartWorkflow","target":"workflow:ci/nap"}}`)
	if msg, _ := out["message"].(string); out["status"] != "rejected" || !strings.Contains(msg, want) || !strings.Contains(msg, "yukta resume-workflow ci nap") {
		t.Fatalf("the supervisor's StartWorkflow of the paused workflow: %v", out)
	}
	out = directive(`{"key":"resume-nap","command":{"type":"ResumeWorkflow","target":"workflow:ci/nap"}}`)
	if out["status"] != "applied" {
		t.Fatalf("ResumeWorkflow on the workflow: %v", out)
	}
	if s := w.status("ci", run); s != "RUNNING" {
		t.Fatalf("the run is %s after the workflow's resume, want RUNNING", s)
	}
	if out := directive(`{"key":"start-nap-2","command":{"type":"StartWorkflow","target":"workflow:ci/nap"}}`); out["status"] != "applied" {
		t.Fatalf("StartWorkflow after the resume: %v", out)
	}
}
