package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// loopRunCap is what the issue allows a feedback loop before it stops by
// itself: both loops below must end within it, with no hand action.
const loopRunCap = 20

// defaultLoopDepth is the causal depth bound without configuration.
const defaultLoopDepth = supervisor.DefaultLoopDepth

// settledRuns counts the runs of session until no new run appeared for
// quiet, and fails as soon as they pass loopRunCap (a loop that does not
// stop would otherwise grow until the deadline).
func settledRuns(t *testing.T, w *reviewWorld, session string, quiet time.Duration) int {
	t.Helper()
	count := func() int {
		var n int
		if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE session_id = $1`, session).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	began := time.Now()
	last, since := count(), time.Now()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		n := count()
		if n > loopRunCap {
			t.Fatalf("the loop made %d runs of session %s in %s and goes on; it must stop by itself within %d",
				n, session, time.Since(began).Round(time.Millisecond), loopRunCap)
		}
		if n != last {
			last, since = n, time.Now()
			continue
		}
		if time.Since(since) >= quiet {
			t.Logf("session %s: %d runs, the last %s after the first", session, n, since.Sub(began).Round(time.Millisecond))
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s never settled: %d runs", session, n)
		}
	}
}

// limitEvents counts the SupervisorLimitReached events of a supervisor:
// the signal it receives when the loop bounds refuse its directives.
func limitEvents(t *testing.T, w *reviewWorld, supervisorID, limit string) int {
	t.Helper()
	var n int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'SupervisorLimitReached'
		AND data->>'supervisorId' = $1 AND data->>'limit' = $2`, supervisorID, limit).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRestartLoopStopsByItself: a rules supervisor that restarts every
// failed run of a workflow that always fails (issue 21, hole 7: 172 runs
// in 45 s, stopped by hand) stops by itself: each restart is one causal
// step deeper than the run it restarts, and the restart past the depth
// bound is refused. The refusal is visible: one SupervisorLimitReached
// event (the supervisor's signal), the metric, and one log line.
func TestRestartLoopStopsByItself(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	w.put("/api/sessions/doom", []byte(`{"name":"doom","workflows":[{"workflowId":"fails","nodes":[
		{"nodeId":"in","type":"MANUAL"},{"nodeId":"boom","type":"FAIL","config":{"message":"always"}}],
		"edges":[{"source":"in","target":"boom"}]}]}`))
	w.put("/api/supervisors/restarter", []byte(`{"name":"Restart what fails","owns":["session:doom"],"allowedCommands":["RestartWorkflow"],
		"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[{"id":"again",
		"when":{"event":"ExecutionStatusChanged","status":"FAILURE"},"then":{"command":"RestartWorkflow"}}]}}}`))
	if st, b, _ := call(t, w.s, "POST", "/api/sessions/doom/workflows/fails/executions", "", []byte(`{"payload":{}}`)); st != 201 {
		t.Fatalf("start: %d %s", st, b)
	}
	n := settledRuns(t, w, "doom", 4*time.Second)
	// The run started by hand is depth 0; restarts 1 to the bound apply.
	if n != 1+defaultLoopDepth {
		t.Errorf("the loop stopped after %d runs, want %d (the first run and %d restarts)", n, 1+defaultLoopDepth, defaultLoopDepth)
	}
	var depth int
	var by string
	if err := w.db.QueryRow(context.Background(), `SELECT cause_depth, caused_by FROM executions WHERE session_id = 'doom'
		ORDER BY cause_depth DESC LIMIT 1`).Scan(&depth, &by); err != nil || depth != defaultLoopDepth || by != "restarter" {
		t.Errorf("the deepest run: depth %d caused by %q (%v), want %d by restarter", depth, by, err, defaultLoopDepth)
	}
	if got := limitEvents(t, w, "restarter", "depth"); got != 1 {
		t.Errorf("%d SupervisorLimitReached (depth) events, want 1", got)
	}
	if v := metricSum(t, w.s, `yukta_supervisor_loop_refusals_total{limit="depth",supervisor="restarter"}`); v < 1 {
		t.Errorf("yukta_supervisor_loop_refusals_total{supervisor=restarter,limit=depth} = %v, want ≥ 1", v)
	}
	if c := strings.Count(w.s.logs.String(), "supervisor loop bound"); c != 1 {
		t.Errorf("%d log lines say \"supervisor loop bound\", want 1:\n%s", c, w.s.logs.String())
	}
}

// TestPingPongWorkflowSupervisorsStopByThemselves: two workflow
// supervisors, each starting a run of the workflow the other watches
// (issue 21, hole 7: 103 runs in 20 s, stopped by hand), stop by
// themselves: every start is one causal step deeper than the start it
// reacts to.
func TestPingPongWorkflowSupervisorsStopByThemselves(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	w.put("/api/sessions/pong", []byte(`{"name":"pong","workflows":[
		{"workflowId":"ping","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"out","type":"RESULT"}],"edges":[{"source":"in","target":"out"}]},
		{"workflowId":"pong","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"out","type":"RESULT"}],"edges":[{"source":"in","target":"out"}]}]}`))
	decider := func(id, target string) string {
		return `{"workflowId":"` + id + `","nodes":[
			{"nodeId":"signal","type":"SUPERVISOR_SIGNAL","config":{"kinds":["EVENT"]}},
			{"nodeId":"start","type":"TRANSFORM","config":{"expression":"{\"commands\": [{\"type\": \"StartWorkflow\", \"target\": \"workflow:pong/` + target + `\"}]}"}},
			{"nodeId":"decide","type":"SUPERVISOR_DECISION","config":{"outcome":"SUCCESS"}}],
			"edges":[{"source":"signal","target":"start"},{"source":"start","target":"decide"}]}`
	}
	w.put("/api/sessions/deciders", []byte(`{"name":"deciders","workflows":[`+decider("start-pong", "pong")+`,`+decider("start-ping", "ping")+`]}`))
	sup := func(id, watches, decides string) []byte {
		return []byte(`{"name":"` + id + `","owns":["session:pong"],"allowedCommands":["StartWorkflow"],
			"engine":{"type":"workflow","settings":{"sessionId":"deciders","workflowId":"` + decides + `",
			"events":["ExecutionStarted"],"when":"event.workflowId == \"` + watches + `\""}}}`)
	}
	w.put("/api/supervisors/pinger", sup("pinger", "ping", "start-pong"))
	w.put("/api/supervisors/ponger", sup("ponger", "pong", "start-ping"))
	if st, b, _ := call(t, w.s, "POST", "/api/sessions/pong/workflows/ping/executions", "", []byte(`{"payload":{}}`)); st != 201 {
		t.Fatalf("start: %d %s", st, b)
	}
	n := settledRuns(t, w, "pong", 4*time.Second)
	if n != 1+defaultLoopDepth {
		t.Errorf("the loop stopped after %d runs, want %d", n, 1+defaultLoopDepth)
	}
	// The deciding runs count too: one per start, the last refused.
	if d := settledRuns(t, w, "deciders", time.Second); n+d > loopRunCap {
		t.Errorf("%d runs of pong and %d deciding runs, %d in all; want at most %d", n, d, n+d, loopRunCap)
	}
	if got := limitEvents(t, w, "pinger", "depth") + limitEvents(t, w, "ponger", "depth"); got != 1 {
		t.Errorf("%d SupervisorLimitReached (depth) events, want 1", got)
	}
}
