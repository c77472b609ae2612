package workflowengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/application/engines/workflowengine"
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
	deps    workflowengine.Deps
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
	r.deps = workflowengine.Deps{Start: r.start, Await: r.runs, Control: r.control, Submit: r.submit, Answer: r.answer,
		Conditions: cond, OnError: r.log.add}
	r.eng = r.engine(t, nil)
	return r
}

// engine builds an engine from the rig's deps and a saved state, closed
// when the test ends.
func (r *wfRig) engine(t *testing.T, state []byte) supervisorapp.EngineCloser {
	t.Helper()
	eng, err := workflowengine.NewFactory(r.deps)(t.Context(), r.sup, r.fence, state)
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
