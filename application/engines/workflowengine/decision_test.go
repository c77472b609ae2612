package workflowengine_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/engines/workflowengine"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// SUCCESS sends the message's commands through the intake, in order, with
// keys made of the signal and the index, the cursor as cause, the
// message's reason and the engine's fence. A refused command is reported;
// the next one still goes.
func TestWorkflowEngineSendsTheDecisionsCommands(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	r.submit.refuse = map[string]bool{"workflow:7:1": true}
	r.handle(t, inputRequested(7, map[string]any{"inputId": "in-1"}))
	r.runs.end("run-1", execution.Success, decision("SUCCESS", "", jsonOf(t, `{"reason": "looks fine", "commands": [
		{"type": "AnswerInput", "inputId": "in-1", "answer": {"approved": true}},
		{"type": "StopWorkflow", "target": "execution:e1"},
		{"type": "PauseWorkflow", "executionId": "e1"}]}`)))
	r.idle(t)
	sent := r.submit.sent()
	if len(sent) != 3 {
		t.Fatalf("%d directives sent, want 3", len(sent))
	}
	for i, in := range sent {
		d := in.Directive
		if d.Key() != workflowengine.DirectiveKey("7", i) || d.Key() != fmt.Sprintf("workflow:7:%d", i) || d.Cause() != "7" ||
			d.Reason() != "looks fine" || in.SupervisorID != "triager" || in.Channel != "supervisor" || in.Fence == nil || *in.Fence != r.fence {
			t.Fatalf("directive %d: %+v (key %s, cause %s, reason %s)", i, in, d.Key(), d.Cause(), d.Reason())
		}
	}
	if sent[0].Directive.Command().Type() != supervisor.AnswerInput || sent[0].Directive.Command().InputID() != "in-1" ||
		!sameJSON(t, sent[0].Directive.Command().Answer(), map[string]any{"approved": true}) || sent[2].Directive.Command().Type() != supervisor.PauseWorkflow {
		t.Fatalf("commands: %v, %v", sent[0].Directive.Command(), sent[2].Directive.Command())
	}
	if !strings.Contains(r.log.text(), "directive workflow:7:1 (StopWorkflow) was refused") {
		t.Fatalf("a refused command is not reported: %q", r.log.text())
	}
	if n := len(r.answer.answers()); n != 0 {
		t.Fatalf("%d verdicts for an EVENT signal", n)
	}
}

// A decision the contract cannot read sends nothing at all, and says
// where it is wrong.
func TestWorkflowEngineSendsNothingForAnUnreadableDecision(t *testing.T) {
	t.Parallel()
	many := make([]any, workflowengine.MaxDecisionCommands+1)
	for i := range many {
		many[i] = map[string]any{"type": "PauseWorkflow", "target": "execution:e1"}
	}
	tests := []struct {
		name    string
		message any
		want    string
	}{
		{"unknown command type", jsonOf(t, `{"commands": [{"type": "AnswerInput", "inputId": "in-1", "answer": {}}, {"type": "Launch"}]}`), "message.commands[1].type"},
		{"missing argument", jsonOf(t, `{"commands": [{"type": "AnswerInput", "answer": {}}]}`), "message.commands[0].inputId"},
		{"a member of no decision", jsonOf(t, `{"command": {"type": "PauseWorkflow", "target": "execution:e1"}}`), "message.command"},
		{"commands not a list", jsonOf(t, `{"commands": {"type": "PauseWorkflow"}}`), "message.commands: must be an array"},
		{"not an object", "approve it", "message: must be an object"},
		{"a verdict on an event", jsonOf(t, `{"verdict": "ALLOW"}`), "message.verdict: answers a REVIEW signal only"},
		{"too many commands", map[string]any{"commands": many}, "at most 100"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newWFRig(t, wfSettings(nil))
			r.handle(t, inputRequested(int64(10+i), map[string]any{"inputId": "in-1"}))
			r.runs.end("run-1", execution.Success, decision("SUCCESS", "", tt.message))
			r.idle(t)
			if n := len(r.submit.sent()); n != 0 {
				t.Fatalf("%d directives sent from a decision that cannot be read", n)
			}
			if log := r.log.text(); !strings.Contains(log, "cannot be read, so nothing was sent") || !strings.Contains(log, tt.want) {
				t.Fatalf("reported %q, want %q", log, tt.want)
			}
		})
	}
}

// On a REVIEW signal the message's verdict answers the review, with the
// message's reason (else the decision's); without a verdict the answer is
// NO_OPINION. Commands of the same message still go.
func TestWorkflowEngineAnswersAReviewWithTheVerdict(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(map[string]any{"maxConcurrent": json.Number("3")}))
	r.handle(t, reviewSignal(t, 9, "rv-1", time.Now().Add(time.Minute)))
	r.handle(t, reviewSignal(t, 10, "rv-2", time.Now().Add(time.Minute)))
	r.handle(t, reviewSignal(t, 11, "rv-3", time.Now().Add(time.Minute)))
	if s := r.start.starts(); len(s) != 3 || s[0].Payload.(map[string]any)["kind"] != "REVIEW" {
		t.Fatalf("starts: %+v", s)
	}
	r.runs.end("run-1", execution.Success, decision("SUCCESS", "", jsonOf(t, `{"verdict": "DENY", "reason": "not on Fridays"}`)))
	r.runs.end("run-2", execution.Success, decision("SUCCESS", "policy 7", jsonOf(t, `{"verdict": "require_approval",
		"commands": [{"type": "PauseWorkflow", "target": "execution:e1"}]}`)))
	r.runs.end("run-3", execution.Success, decision("SUCCESS", "", jsonOf(t, `{}`)))
	r.idle(t)
	got := map[string]supervisor.Verdict{}
	for _, a := range r.answer.answers() {
		if a.SupervisorID != "triager" || a.Fence == nil || *a.Fence != r.fence {
			t.Fatalf("answer %+v", a)
		}
		got[a.ReviewID] = a.Verdict
	}
	if v := got["rv-1"]; v.Decision() != supervisor.Deny || v.Reason() != "not on Fridays" {
		t.Fatalf("rv-1: %v", v)
	}
	if v := got["rv-2"]; v.Decision() != supervisor.RequireApproval || v.Reason() != "policy 7" {
		t.Fatalf("rv-2: %v", v)
	}
	if v := got["rv-3"]; v.Decision() != supervisor.NoOpinion || len(got) != 3 {
		t.Fatalf("rv-3: %v (answers %v)", v, got)
	}
	if s := r.submit.sent(); len(s) != 1 || s[0].Directive.Key() != "workflow:10:0" || s[0].Directive.Reason() != "policy 7" {
		t.Fatalf("sent %+v", s)
	}
	if r.log.count() != 0 {
		t.Fatalf("reported: %s", r.log.text())
	}
}

// Without a usable decision a REVIEW gets NO_OPINION, and the engine says
// why unless the workflow itself decided FAILED.
func TestWorkflowEngineGivesNoOpinionWithoutADecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status execution.Status
		result any
		why    string // "" when nothing is reported
	}{
		{"FAILED", execution.Success, decision("FAILED", "cannot tell", map[string]any{}), ""},
		{"ESCALATE", execution.Success, decision("ESCALATE", "", map[string]any{}), "decided ESCALATE, but delegations are not wired here"},
		{"run failed", execution.Failure, nil, "its run run-1 failed: node boom: down"},
		{"no decision", execution.Success, nil, "ended without reaching SUPERVISOR_DECISION"},
		{"a RESULT, not a decision", execution.Success, map[string]any{"greeting": "hi"}, "is not a SUPERVISOR_DECISION's"},
		{"unknown outcome", execution.Success, decision("MAYBE", "", nil), `decided "MAYBE"`},
		{"DENY without a reason", execution.Success, decision("SUCCESS", "", map[string]any{"verdict": "DENY"}), "message.reason: is required with DENY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newWFRig(t, wfSettings(nil))
			r.handle(t, reviewSignal(t, 9, "rv-1", time.Now().Add(time.Minute)))
			r.runs.end("run-1", tt.status, tt.result)
			r.idle(t)
			a := r.answer.answers()
			if len(a) != 1 || a[0].ReviewID != "rv-1" || a[0].Verdict.Decision() != supervisor.NoOpinion {
				t.Fatalf("answers %+v, want one NO_OPINION", a)
			}
			if tt.name == "FAILED" && a[0].Verdict.Reason() != "cannot tell" {
				t.Fatalf("the FAILED decision's reason is lost: %q", a[0].Verdict.Reason())
			}
			log := r.log.text()
			if (tt.why == "") != (log == "") || !strings.Contains(log, tt.why) {
				t.Fatalf("reported %q, want %q", log, tt.why)
			}
			if n := len(r.submit.sent()); n != 0 {
				t.Fatalf("%d directives sent without a decision", n)
			}
		})
	}
}

// RETRY runs the workflow once more, with a key of its own and the same
// payload; the second run decides. A second RETRY is no opinion.
func TestWorkflowEngineRetriesOnce(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	r.handle(t, inputRequested(7, map[string]any{"inputId": "in-1"}))
	r.runs.end("run-1", execution.Success, decision("RETRY", "flaky lookup", nil))
	wfWait(t, "the retry", func() bool { return len(r.start.starts()) == 2 })
	s := r.start.starts()
	if s[1].IdempotencyKey != "supervisor:triager/signal:7/retry" || s[1].IdempotencyKey != workflowengine.RunKey("triager", "7", 2) ||
		!sameJSON(t, s[1].Payload, s[0].Payload) || s[1].Pool != execution.PoolReserved {
		t.Fatalf("retry: %+v", s[1])
	}
	if st, _ := r.eng.State(); !strings.Contains(string(st), `"executionId":"run-2"`) || !strings.Contains(string(st), `"attempt":2`) {
		t.Fatalf("State during the retry: %s", st)
	}
	r.runs.end("run-2", execution.Success, decision("SUCCESS", "", jsonOf(t, `{"commands": [{"type": "AnswerInput", "inputId": "in-1", "answer": {"approved": false}}]}`)))
	r.idle(t)
	if sent := r.submit.sent(); len(sent) != 1 || sent[0].Directive.Key() != "workflow:7:0" {
		t.Fatalf("sent %+v", sent)
	}

	r.handle(t, reviewSignal(t, 8, "rv-1", time.Now().Add(time.Minute)))
	wfWait(t, "the review's run", func() bool { return len(r.start.starts()) == 3 })
	r.runs.end("run-3", execution.Success, decision("RETRY", "", nil))
	wfWait(t, "the review's retry", func() bool { return len(r.start.starts()) == 4 })
	r.runs.end("run-4", execution.Success, decision("RETRY", "", nil))
	r.idle(t)
	if n := len(r.start.starts()); n != 4 {
		t.Fatalf("%d runs, want 4: a signal is retried once", n)
	}
	if a := r.answer.answers(); len(a) != 1 || a[0].Verdict.Decision() != supervisor.NoOpinion {
		t.Fatalf("answers %+v", a)
	}
	if !strings.Contains(r.log.text(), "decided RETRY again; a signal is retried once") {
		t.Fatalf("reported %q", r.log.text())
	}
}

// A run that has not decided within timeout is stopped (KILL) and gives no
// opinion; for a REVIEW the review's deadline stops it earlier.
func TestWorkflowEngineStopsARunPastItsTimeout(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(map[string]any{"timeout": json.Number("1")}))
	began := time.Now()
	r.handle(t, inputRequested(7, map[string]any{"inputId": "in-1"}))
	r.idle(t)
	took := time.Since(began)
	reqs := r.control.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d control requests, want one stop", len(reqs))
	}
	stop := reqs[0]
	if stop.ExecutionID != "run-1" || stop.SessionID != "supervisors" || stop.Action != "STOP" || stop.Mode != "KILL" ||
		stop.Scope != execution.ScopeExecution || stop.Actor != "supervisor:triager" || stop.Cause != "7" || stop.Key == "" {
		t.Fatalf("stop: %+v", stop)
	}
	if took < time.Second || took > 4*time.Second {
		t.Fatalf("the run was stopped after %s; the timeout is 1s", took)
	}
	if !strings.Contains(r.log.text(), "did not decide within 1s and was stopped") {
		t.Fatalf("reported %q", r.log.text())
	}

	r = newWFRig(t, wfSettings(nil)) // timeout 60 s
	began = time.Now()
	r.handle(t, reviewSignal(t, 9, "rv-1", time.Now().Add(200*time.Millisecond)))
	r.idle(t)
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("a review's run was followed %s past the review's deadline", took)
	}
	if a := r.answer.answers(); len(a) != 1 || a[0].Verdict.Decision() != supervisor.NoOpinion || len(r.control.requests()) != 1 {
		t.Fatalf("answers %+v, stops %+v", a, r.control.requests())
	}

	// A review whose deadline passed before its signal came starts nothing.
	r.handle(t, reviewSignal(t, 10, "rv-2", time.Now().Add(-time.Second)))
	if n := len(r.start.starts()); n != 1 {
		t.Fatalf("%d runs, want none for a review past its deadline", n-1)
	}
	if !strings.Contains(r.log.text(), "review rv-2 reached its deadline before the signal was handled") {
		t.Fatalf("reported %q", r.log.text())
	}
}

// ESCALATE opens an ESCALATE to the parent with the message as the
// request, keyed by the signal; the review still gets no opinion.
func TestWorkflowEngineEscalates(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	dl := &fakeDelegator{}
	r.deps.Delegate = dl
	r.eng = r.engine(t, nil)
	r.handle(t, reviewSignal(t, 9, "rv-1", time.Now().Add(time.Minute)))
	r.runs.end("run-1", execution.Success, decision("ESCALATE", "too risky", map[string]any{"ask": "stop?"}))
	r.idle(t)
	sent := dl.sent()
	if len(sent) != 1 || sent[0].Kind != supervisor.Escalate || sent[0].Key != "workflow:9" || string(sent[0].Payload) != `{"ask":"stop?"}` ||
		sent[0].SupervisorID != "triager" {
		t.Fatalf("delegations %+v", sent)
	}
	if a := r.answer.answers(); len(a) != 1 || a[0].Verdict.Decision() != supervisor.NoOpinion {
		t.Fatalf("answers %+v", a)
	}
	if log := r.log.text(); log != "" {
		t.Fatalf("reported %q", log)
	}
}
