package supervisorapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
	"github.com/yukta/yukta/domain/supervisor"
)

// The workflow engine is tested with hand-written stand-ins for the use
// cases it drives (start, await, control, the directive intake, reviews),
// each recording what it was asked, and the real CEL conditions. The
// integration test over PostgreSQL, with the real use cases and plugins,
// is adapters/postgres/workflow_engine_test.go.

// wfStarter starts one run per idempotency key, as StartExecution does.
type wfStarter struct {
	mu  sync.Mutex
	ins []executionapp.StartInput
	ids map[string]string
	err error
}

func (s *wfStarter) Handle(_ context.Context, in executionapp.StartInput) (executionapp.StartResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ins = append(s.ins, in)
	if s.err != nil {
		return executionapp.StartResult{}, s.err
	}
	if s.ids == nil {
		s.ids = map[string]string{}
	}
	id, seen := s.ids[in.IdempotencyKey]
	if !seen {
		id = fmt.Sprintf("run-%d", len(s.ids)+1)
		s.ids[in.IdempotencyKey] = id
	}
	return executionapp.StartResult{ExecutionID: id, Status: execution.Running, Created: !seen}, nil
}

func (s *wfStarter) starts() []executionapp.StartInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ins)
}

func (s *wfStarter) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// wfRuns is the awaiter: a run ends when the test (or a stop) says so.
type wfRuns struct {
	mu      sync.Mutex
	ends    map[string]executionapp.RunOutcome
	changed chan struct{}
	waits   []time.Duration
}

func newWFRuns() *wfRuns {
	return &wfRuns{ends: map[string]executionapp.RunOutcome{}, changed: make(chan struct{})}
}

// end ends run id with a status and, when result is not nil, a result.
func (r *wfRuns) end(id string, status execution.Status, result any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := executionapp.ExecutionView{ID: id, Status: status, Result: result, HasResult: result != nil}
	if status == execution.Failure {
		v.Error = "node boom: down"
	}
	r.ends[id] = executionapp.RunOutcome{ExecutionView: v, Ended: true}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *wfRuns) Ended(ctx context.Context, _ string, ids []string, d time.Duration) ([]executionapp.RunOutcome, error) {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		r.mu.Lock()
		out, ok := r.ends[ids[0]]
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return []executionapp.RunOutcome{out}, nil
		}
		select {
		case <-ch:
		case <-t.C:
			return []executionapp.RunOutcome{{ExecutionView: executionapp.ExecutionView{ID: ids[0], Status: execution.Running}}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// wfControl records control requests; a STOP ends the run STOPPED.
type wfControl struct {
	runs *wfRuns
	mu   sync.Mutex
	reqs []executionapp.ControlRequest
}

func (c *wfControl) Handle(_ context.Context, r executionapp.ControlRequest) (executionapp.ControlResult, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r)
	c.mu.Unlock()
	if r.Action == string(execution.ActionStop) {
		c.runs.end(r.ExecutionID, execution.Stopped, nil)
	}
	return executionapp.ControlResult{}, nil
}

func (c *wfControl) requests() []executionapp.ControlRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reqs)
}

// wfSubmit records directives; refuse lists keys the intake refuses.
type wfSubmit struct {
	mu     sync.Mutex
	ins    []supervisorapp.SubmitInput
	refuse map[string]bool
}

func (s *wfSubmit) Handle(_ context.Context, in supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ins = append(s.ins, in)
	if s.refuse[in.Directive.Key()] {
		return supervisorapp.DirectiveResult{Status: supervisorapp.DirectiveRejected},
			fault.Newf(supervisor.ErrDirectiveRefused, "supervisor %q may not send %s", in.SupervisorID, in.Directive.Command().Type())
	}
	return supervisorapp.DirectiveResult{SupervisorID: in.SupervisorID, Key: in.Directive.Key(), Status: supervisorapp.DirectiveAccepted}, nil
}

func (s *wfSubmit) sent() []supervisorapp.SubmitInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ins)
}

// wfAnswer records verdicts.
type wfAnswer struct {
	mu  sync.Mutex
	ins []supervisorapp.AnswerInput
}

func (a *wfAnswer) Handle(_ context.Context, in supervisorapp.AnswerInput) (supervisor.Review, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ins = append(a.ins, in)
	return supervisor.Review{}, nil
}

func (a *wfAnswer) answers() []supervisorapp.AnswerInput {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ins)
}

// wfWorkflows serves one stored workflow definition.
type wfWorkflows struct{ def string }

func (w wfWorkflows) Workflow(_ context.Context, sessionID, workflowID string) (session.Workflow, error) {
	if sessionID != "supervisors" || workflowID != "triage" {
		return session.Workflow{}, fault.Newf(fault.ErrNotFound, "workflow %s/%s does not exist", sessionID, workflowID)
	}
	return session.RestoreWorkflow(workflowID, "", []byte(w.def))
}

// wfLog collects what the engine reports.
type wfLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *wfLog) add(id string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != "triager" {
		err = fmt.Errorf("reported for supervisor %q, not triager: %w", id, err)
	}
	l.errs = append(l.errs, err)
}

func (l *wfLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.errs {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

func (l *wfLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

// wfRig is one workflow engine over the stand-ins.
type wfRig struct {
	start   *wfStarter
	runs    *wfRuns
	control *wfControl
	submit  *wfSubmit
	answer  *wfAnswer
	log     *wfLog
	deps    supervisorapp.WorkflowEngineDeps
	fence   supervisorapp.Fence
	sup     supervisor.Supervisor
	eng     supervisorapp.EngineCloser
}

// wfSettings are the triage settings of the integration example, changed
// by extra.
func wfSettings(extra map[string]any) map[string]any {
	s := map[string]any{"sessionId": "supervisors", "workflowId": "triage", "events": []any{"InputRequested"}}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

func wfSupervisor(settings map[string]any) supervisor.Supervisor {
	return supervisor.Restore(supervisor.Spec{ID: "triager", Name: "Triage", EngineType: "workflow", Settings: settings,
		Owns: []string{"session:ci"}, AllowedCommands: []supervisor.CommandType{supervisor.PauseWorkflow, supervisor.AnswerInput},
		Reviews: []supervisor.CommandType{supervisor.StopWorkflow}, Enabled: true})
}

func newWFRig(t *testing.T, settings map[string]any) *wfRig {
	t.Helper()
	cond, err := cel.NewConditions()
	if err != nil {
		t.Fatal(err)
	}
	r := &wfRig{start: &wfStarter{}, runs: newWFRuns(), submit: &wfSubmit{}, answer: &wfAnswer{}, log: &wfLog{},
		fence: supervisorapp.Fence{SupervisorID: "triager", Owner: "test", Token: 7}, sup: wfSupervisor(settings)}
	r.control = &wfControl{runs: r.runs}
	r.deps = supervisorapp.WorkflowEngineDeps{Start: r.start, Await: r.runs, Control: r.control, Submit: r.submit, Answer: r.answer,
		Conditions: cond, OnError: r.log.add}
	r.eng = r.engine(t, nil)
	return r
}

// engine builds an engine from the rig's deps and a saved state, closed
// when the test ends.
func (r *wfRig) engine(t *testing.T, state []byte) supervisorapp.EngineCloser {
	t.Helper()
	eng, err := supervisorapp.NewWorkflowEngineFactory(r.deps)(t.Context(), r.sup, r.fence, state)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := eng.(supervisorapp.EngineCloser)
	if !ok {
		t.Fatal("the workflow engine has no Close")
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (r *wfRig) handle(t *testing.T, sig supervisor.Signal) {
	t.Helper()
	if err := r.eng.Handle(t.Context(), sig); err != nil {
		t.Fatalf("Handle(%s %s): %v", sig.Kind(), sig.Cursor(), err)
	}
}

// idle waits until the engine follows no run: every decision was carried
// out.
func (r *wfRig) idle(t *testing.T) {
	t.Helper()
	wfWait(t, "the engine to follow no run", func() bool {
		st, err := r.eng.State()
		return err == nil && st == nil
	})
}

func wfWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

var wfAt = time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

// inputRequested is the EVENT signal of an input asked in ci/approve.
func inputRequested(seq int64, data map[string]any) supervisor.Signal {
	return supervisor.NewSignal(strconv.FormatInt(seq, 10), supervisor.EventSignal{Seq: seq, At: wfAt, Type: "InputRequested",
		SessionID: "ci", WorkflowID: "approve", ExecutionID: "e1", NodeID: "ask", Actor: "engine", Data: data})
}

// reviewSignal asks the supervisor for a verdict on a StopWorkflow.
func reviewSignal(t *testing.T, seq int64, reviewID string, deadline time.Time) supervisor.Signal {
	t.Helper()
	d, err := supervisor.ParseDirective([]byte(`{"key": "k", "command": {"type": "StopWorkflow", "target": "execution:e1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return supervisor.NewSignal(strconv.FormatInt(seq, 10), supervisor.ReviewSignal{ReviewID: reviewID, Command: d.Command(),
		Actor: "key:ops", Channel: "rest", SessionID: "ci", WorkflowID: "approve", ExecutionID: "e1", Deadline: deadline})
}

// decision is the result a SUPERVISOR_DECISION node stores.
func decision(outcome, reason string, message any) map[string]any {
	return map[string]any{"outcome": outcome, "reason": reason, "payload": message}
}

// jsonOf decodes a JSON text for comparisons.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func sameJSON(t *testing.T, got, want any) bool {
	t.Helper()
	a, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// A matching event starts one run: the configured workflow, in the
// reserved pool, fed to SUPERVISOR_SIGNAL with the signal's envelope, keyed
// by the supervisor and the cursor. The same signal handed again (while its
// run is followed, or after it ended) starts no other run. Other event
// types and its own runs start nothing (its own directives' events never
// reach it: TestRuntimeHandsAnEngineOnlyWhatItsSupervisorHears).
func TestWorkflowEngineStartsOneRunPerMatchingEvent(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	r.handle(t, supervisor.NewSignal("5", supervisor.EventSignal{Seq: 5, At: wfAt, Type: "NodeStatusChanged", SessionID: "ci", WorkflowID: "approve",
		Actor: "engine", Data: map[string]any{"from": "RUNNING", "to": "WAITING"}}))
	own := inputRequested(6, map[string]any{"inputId": "in-0", "prompt": "Ship it?"})
	body := own.Body().(supervisor.EventSignal)
	body.SessionID, body.WorkflowID = "supervisors", "triage"
	r.handle(t, supervisor.NewSignal("6", body))
	if n := len(r.start.starts()); n != 0 {
		t.Fatalf("%d runs started for signals the engine does not take", n)
	}

	sig := inputRequested(7, map[string]any{"inputId": "in-1", "prompt": "Ship it?"})
	r.handle(t, sig)
	r.handle(t, sig) // handed again while its run is followed
	starts := r.start.starts()
	if len(starts) != 1 {
		t.Fatalf("%d starts, want 1: %+v", len(starts), starts)
	}
	in := starts[0]
	if in.SessionID != "supervisors" || in.WorkflowID != "triage" || in.Trigger != "SUPERVISOR_SIGNAL" || in.Pool != execution.PoolReserved ||
		in.Actor != "supervisor:triager" || in.Channel != "supervisor" || in.IdempotencyKey != "supervisor:triager/signal:7" ||
		in.IdempotencyKey != supervisorapp.WorkflowRunKey("triager", "7", 1) {
		t.Fatalf("start: %+v", in)
	}
	envelope, err := json.Marshal(sig)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, in.Payload, jsonOf(t, string(envelope))) {
		t.Fatalf("payload %v, want the envelope %s", in.Payload, envelope)
	}
	if p := in.Payload.(map[string]any); p["kind"] != "EVENT" || p["cursor"] != "7" {
		t.Fatalf("payload %v is not the signal's envelope", p)
	}
	st, err := r.eng.State()
	if err != nil || !strings.Contains(string(st), `"executionId":"run-1"`) || !strings.Contains(string(st), `"signal":"7"`) {
		t.Fatalf("State while the run is followed: %s, %v", st, err)
	}

	r.runs.end("run-1", execution.Success, decision("SUCCESS", "", map[string]any{"commands": []any{}}))
	r.idle(t)
	r.handle(t, sig) // handed again after a crash: the same key finds the same run
	r.idle(t)
	starts = r.start.starts()
	if len(starts) != 2 || starts[1].IdempotencyKey != starts[0].IdempotencyKey || len(r.start.ids) != 1 {
		t.Fatalf("a signal handed again must ask for its own run by the same key: %+v", starts)
	}
	if r.log.count() != 0 {
		t.Fatalf("reported: %s", r.log.text())
	}
}

// when is a CEL condition over the redacted event: a run starts only when
// it holds; one that cannot be evaluated starts nothing and is reported.
func TestWorkflowEngineWhenFilters(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(map[string]any{"when": `event.data.prompt.startsWith("Ship")`}))
	r.handle(t, inputRequested(7, map[string]any{"inputId": "in-1", "prompt": "Delete prod?"}))
	r.handle(t, inputRequested(8, map[string]any{"inputId": "in-2"}))
	if n := len(r.start.starts()); n != 0 {
		t.Fatalf("%d runs started although when did not hold", n)
	}
	if !strings.Contains(r.log.text(), "signal 8 (InputRequested): engine.settings.when could not be evaluated") {
		t.Fatalf("a when that fails is not reported: %q", r.log.text())
	}
	r.handle(t, inputRequested(9, map[string]any{"inputId": "in-3", "prompt": "Ship it?"}))
	if s := r.start.starts(); len(s) != 1 || s[0].IdempotencyKey != "supervisor:triager/signal:9" {
		t.Fatalf("starts: %+v", s)
	}
}

// At most maxConcurrent runs are followed at once: Handle waits for a slot
// (holding the runtime's cursor back) and gives up when its context ends.
func TestWorkflowEngineHonoursMaxConcurrent(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(map[string]any{"maxConcurrent": json.Number("2")}))
	r.handle(t, inputRequested(1, map[string]any{"inputId": "a"}))
	r.handle(t, inputRequested(2, map[string]any{"inputId": "b"}))
	third := make(chan error, 1)
	go func() { third <- r.eng.Handle(t.Context(), inputRequested(3, map[string]any{"inputId": "c"})) }()
	time.Sleep(150 * time.Millisecond)
	select {
	case err := <-third:
		t.Fatalf("a third signal was handled while two runs were followed: %v", err)
	default:
	}
	if n := len(r.start.starts()); n != 2 {
		t.Fatalf("%d runs started, want 2", n)
	}
	r.runs.end("run-2", execution.Success, decision("FAILED", "", nil))
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if s := r.start.starts(); len(s) != 3 || s[2].IdempotencyKey != "supervisor:triager/signal:3" {
		t.Fatalf("starts: %+v", s)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := r.eng.Handle(ctx, inputRequested(4, map[string]any{"inputId": "d"})); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a signal waiting for a slot past its context: %v, want the context's error", err)
	}
	if n := len(r.start.starts()); n != 3 {
		t.Fatalf("%d runs started, want 3", n)
	}
}

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
		if d.Key() != supervisorapp.WorkflowDirectiveKey("7", i) || d.Key() != fmt.Sprintf("workflow:7:%d", i) || d.Cause() != "7" ||
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
	many := make([]any, supervisorapp.MaxDecisionCommands+1)
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
	if s[1].IdempotencyKey != "supervisor:triager/signal:7/retry" || s[1].IdempotencyKey != supervisorapp.WorkflowRunKey("triager", "7", 2) ||
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

// Close cancels the waits and joins the owners; the runs followed are the
// State, so the next engine follows them to their decision without
// starting them again.
func TestWorkflowEngineCloseJoinsAndTheNextEngineResumes(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	sig := inputRequested(7, map[string]any{"inputId": "in-1"})
	r.handle(t, sig)
	state, err := r.eng.State()
	if err != nil || state == nil {
		t.Fatalf("State: %s, %v", state, err)
	}
	began := time.Now()
	if err := r.eng.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("Close took %s with a run in flight", took)
	}
	if err := r.eng.Handle(t.Context(), inputRequested(8, nil)); err == nil {
		t.Fatal("a closed engine took a signal")
	}
	if n := len(r.submit.sent()); n != 0 {
		t.Fatalf("%d directives sent by a closed engine", n)
	}

	r.eng = r.engine(t, state)
	r.handle(t, sig) // the runtime hands the signal again: its run is followed already
	r.runs.end("run-1", execution.Success, decision("SUCCESS", "", jsonOf(t, `{"commands": [{"type": "AnswerInput", "inputId": "in-1", "answer": {"approved": true}}]}`)))
	r.idle(t)
	if n := len(r.start.starts()); n != 1 {
		t.Fatalf("%d starts, want 1: the next engine follows the run it took over", n)
	}
	if s := r.submit.sent(); len(s) != 1 || s[0].Directive.Key() != "workflow:7:0" {
		t.Fatalf("sent %+v", s)
	}
	if r.log.count() != 0 {
		t.Fatalf("reported: %s", r.log.text())
	}
}

// A run that cannot start for good (no such workflow) is reported and the
// review gets NO_OPINION; a failure to reach the database is returned, so
// the runtime hands the signal again.
func TestWorkflowEngineStartFailures(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	r.start.fail(fault.Newf(fault.ErrNotFound, `workflow "triage" does not exist`))
	r.handle(t, reviewSignal(t, 9, "rv-1", time.Now().Add(time.Minute)))
	if a := r.answer.answers(); len(a) != 1 || a[0].Verdict.Decision() != supervisor.NoOpinion ||
		!strings.Contains(a[0].Verdict.Reason(), "could not start") {
		t.Fatalf("answers %+v", a)
	}
	if !strings.Contains(r.log.text(), `the run of supervisors/triage for signal 9 (REVIEW) could not start`) {
		t.Fatalf("reported %q", r.log.text())
	}
	r.start.fail(fmt.Errorf("connect: %w", fault.ErrUnavailable))
	if err := r.eng.Handle(t.Context(), inputRequested(10, nil)); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("Handle with the database down: %v", err)
	}
	if st, _ := r.eng.State(); st != nil {
		t.Fatalf("a signal that started nothing is followed: %s", st)
	}
	// The slot was given back: two more signals start runs at once.
	r.start.fail(nil)
	r.handle(t, inputRequested(11, nil))
	r.handle(t, inputRequested(12, nil))
}

// The kinds of the workflow's SUPERVISOR_SIGNAL nodes decide which signal
// kinds start a run (the engine's STARTED would otherwise start one each
// time it starts).
func TestWorkflowEngineHonoursTheSignalNodesKinds(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	r.deps.Workflows = wfWorkflows{def: `{"nodes": [{"nodeId": "in", "type": "SUPERVISOR_SIGNAL", "config": {"kinds": ["REVIEW"]}},
		{"nodeId": "out", "type": "SUPERVISOR_DECISION", "config": {"outcome": "FAILED"}}], "edges": [{"source": "in", "target": "out"}]}`}
	r.eng = r.engine(t, nil)
	r.handle(t, inputRequested(7, map[string]any{"inputId": "in-1"}))
	r.handle(t, supervisor.NewSignal("7", supervisor.StartedSignal{At: wfAt, Snapshot: map[string]any{}}))
	if n := len(r.start.starts()); n != 0 {
		t.Fatalf("%d runs started for kinds no SUPERVISOR_SIGNAL node takes", n)
	}
	r.handle(t, reviewSignal(t, 8, "rv-1", time.Now().Add(time.Minute)))
	if s := r.start.starts(); len(s) != 1 || s[0].IdempotencyKey != "supervisor:triager/signal:8" {
		t.Fatalf("starts %+v", s)
	}
}

// Settings the engine cannot run with are refused naming the setting; a
// maxConcurrent above the reserved slots is lowered to them, and said so.
func TestWorkflowEngineSettings(t *testing.T) {
	t.Parallel()
	r := newWFRig(t, wfSettings(nil))
	for _, tt := range []struct {
		settings map[string]any
		want     string
	}{
		{map[string]any{"workflowId": "triage", "events": []any{"InputRequested"}}, "engine.settings.sessionId is required"},
		{wfSettings(map[string]any{"timeout": json.Number("601")}), "engine.settings.timeout must be a whole number of seconds from 1 to 600"},
		{wfSettings(map[string]any{"maxConcurrent": json.Number("0")}), "engine.settings.maxConcurrent"},
		{wfSettings(map[string]any{"events": []any{}}), "engine.settings.events"},
	} {
		_, err := supervisorapp.NewWorkflowEngineFactory(r.deps)(t.Context(), wfSupervisor(tt.settings), r.fence, nil)
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "PUT /api/supervisors/triager") {
			t.Errorf("settings %v: %v, want %q", tt.settings, err, tt.want)
		}
	}

	r.sup = wfSupervisor(wfSettings(map[string]any{"maxConcurrent": json.Number("5")}))
	r.deps.ReservedSlots = 1
	r.eng = r.engine(t, nil)
	if !strings.Contains(r.log.text(), "maxConcurrent 5 is more than the 1 reserved slots") {
		t.Fatalf("reported %q", r.log.text())
	}
	r.handle(t, inputRequested(1, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := r.eng.Handle(ctx, inputRequested(2, nil)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second run with one reserved slot: %v", err)
	}
}

// fakeDelegator records the delegations an engine opens.
type fakeDelegator struct {
	mu  sync.Mutex
	ins []supervisorapp.DelegateInput
}

func (f *fakeDelegator) Handle(_ context.Context, in supervisorapp.DelegateInput) (supervisor.Delegation, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ins = append(f.ins, in)
	return supervisor.Delegation{}, true, nil
}

func (f *fakeDelegator) sent() []supervisorapp.DelegateInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ins)
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
