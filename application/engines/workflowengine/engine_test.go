package workflowengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/engines/workflowengine"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

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
		in.IdempotencyKey != workflowengine.RunKey("triager", "7", 1) {
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
		_, err := workflowengine.NewFactory(r.deps)(t.Context(), wfSupervisor(tt.settings), r.fence, nil)
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
