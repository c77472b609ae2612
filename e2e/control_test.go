package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// heldFlow holds the first message in a DELAY of d, then passes it through
// mid to out: a live run a test can act on before anything downstream runs.
func heldFlow(id, d string) string {
	return line(id,
		nd("start", "MANUAL", ""),
		nd("wait", "DELAY", fmt.Sprintf(`{"duration":%q}`, d)),
		nd("mid", "LOG", `{"message":"mid ran"}`),
		nd("out", "RESULT", ""))
}

// startHeld starts a run and returns once its message sits in the DELAY.
func (e *env) startHeld(sid, wid string, payload any) string {
	e.t.Helper()
	id := e.start(sid, wid, payload)
	e.waitNode(sid, id, "start", "SUCCESS", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusSUCCESS })
	return id
}

// splitFlow: a DELAY (so commands can be set up first), a SPLIT of
// payload.items, then the nodes given, chained.
func splitFlow(id, d string, tail ...string) string {
	nodes := append([]string{
		nd("start", "MANUAL", ""),
		nd("wait", "DELAY", fmt.Sprintf(`{"duration":%q}`, d)),
		nd("split", "SPLIT", `{"field":"items"}`),
	}, tail...)
	return line(id, nodes...)
}

func received(t *testing.T, id string, n int64) func(apiclient.Execution) bool {
	return func(x apiclient.Execution) bool { return nodeOf(t, x, id).Received == n }
}

func (e *env) waitReceived(sid, eid, node string, n int64) apiclient.Execution {
	e.t.Helper()
	return e.waitNode(sid, eid, node, fmt.Sprintf("received=%d", n), func(x apiclient.ExecutionNode) bool { return x.Received == n })
}

// waitResult waits until the RESULT node has received n messages and the
// execution's result is want. A message counts as received when it is
// delivered, before the RESULT node has run it, so the count alone can
// come before the result.
func (e *env) waitResult(sid, eid, node string, n int64, want string) apiclient.Execution {
	e.t.Helper()
	return e.waitExec(sid, eid, fmt.Sprintf("%s received=%d and result %s", node, n, want), func(x apiclient.Execution) bool {
		return nodeOf(e.t, x, node).Received == n && sameJSON(x.Result, want)
	})
}

func TestControlExecutionPauseHoldsClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("pause", heldFlow("w", "1s"))
	began := time.Now()
	id := e.startHeld("pause", "w", map[string]any{"k": "v"})
	res := e.mustCtl("pause", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE, Reason: ptr("look first")})
	if res.Status != apiclient.Applied || res.CommandId == "" {
		t.Fatalf("PAUSE: %+v, want applied with a command id", res)
	}
	if x := e.get("pause", id); x.Status != apiclient.ExecutionStatusPAUSED {
		t.Fatalf("after PAUSE the execution is %s", x.Status)
	}
	// Well past the delay, nothing downstream has been claimed.
	e.steady("pause", id, "PAUSED with nothing downstream", time.Until(began.Add(1900*time.Millisecond)), func(x apiclient.Execution) bool {
		return x.Status == apiclient.ExecutionStatusPAUSED && nodeOf(t, x, "mid").Received == 0 && nodeOf(t, x, "out").Received == 0
	})
	e.mustCtl("pause", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESUME})
	x := e.waitStatus("pause", id, apiclient.ExecutionStatusSUCCESS)
	if nodeOf(t, x, "mid").Received != 1 || !jsonEqual(t, x.Result, `{"k":"v"}`) {
		t.Fatalf("after RESUME:\n%s", describe(x))
	}
}

func TestControlNodePauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("npause", heldFlow("w", "1s"))
	id := e.startHeld("npause", "w", map[string]any{"k": 1})
	e.mustCtlNode("npause", id, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE})
	x := e.get("npause", id)
	if m := nodeOf(t, x, "mid"); m.Status != apiclient.NodeStatusPAUSED || !m.Paused {
		t.Fatalf("paused node: %+v", m)
	}
	// The delay passes and delivers to mid, which does not take it.
	e.waitReceived("npause", id, "wait", 1)
	e.steady("npause", id, "mid PAUSED, holding its message", 700*time.Millisecond, func(x apiclient.Execution) bool {
		m := nodeOf(t, x, "mid")
		return x.Status == apiclient.ExecutionStatusRUNNING && m.Status == apiclient.NodeStatusPAUSED && m.Received == 0 && nodeOf(t, x, "out").Received == 0
	})
	e.mustCtlNode("npause", id, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME})
	x = e.waitStatus("npause", id, apiclient.ExecutionStatusSUCCESS)
	if m := nodeOf(t, x, "mid"); m.Received != 1 || m.Paused || nodeOf(t, x, "out").Received != 1 {
		t.Fatalf("after node RESUME:\n%s", describe(x))
	}
}

func TestControlStepReleasesOneMessagePerStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("step", splitFlow("w", "1s", nd("gate", "LOG", `{"message":"gate"}`), nd("out", "RESULT", "")))
	id := e.startHeld("step", "w", map[string]any{"items": []int{1, 2, 3, 4, 5}})
	e.mustCtlNode("step", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPENABLE})
	x := e.waitNode("step", id, "split", "to emit 5", func(n apiclient.ExecutionNode) bool { return n.Emitted == 5 })
	if g := nodeOf(t, x, "gate"); !g.StepMode || g.Status != apiclient.NodeStatusWAITING {
		t.Fatalf("gate in step mode without credit: %+v, want WAITING", g)
	}
	e.steady("step", id, "gate to take nothing without a STEP", 400*time.Millisecond, received(t, "gate", 0))
	for k := int64(1); k <= 3; k++ {
		e.mustCtlNode("step", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP})
		e.waitReceived("step", id, "gate", k)
		e.waitReceived("step", id, "out", k)
		e.steady("step", id, fmt.Sprintf("exactly %d message(s) through gate", k), 400*time.Millisecond, func(x apiclient.Execution) bool {
			return nodeOf(t, x, "gate").Received == k && nodeOf(t, x, "out").Received == k && x.Status == apiclient.ExecutionStatusRUNNING
		})
	}
	e.mustCtlNode("step", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPDISABLE})
	x = e.waitStatus("step", id, apiclient.ExecutionStatusSUCCESS)
	if nodeOf(t, x, "gate").Received != 5 || nodeOf(t, x, "out").Received != 5 || nodeOf(t, x, "gate").StepMode {
		t.Fatalf("after STEP_DISABLE:\n%s", describe(x))
	}
}

func TestControlSkipPassesInputThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("skip", splitFlow("w", "1s",
		nd("gate", "LOG", `{"message":"gate"}`),
		nd("t", "TRANSFORM", `{"expression":"{\"transformed\": payload.id}"}`),
		nd("out", "RESULT", "")))
	id := e.startHeld("skip", "w", map[string]any{"items": []any{map[string]any{"id": "m1", "v": "one"}, map[string]any{"id": "m2"}}})
	e.mustCtlNode("skip", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPENABLE})
	e.mustCtlNode("skip", id, "t", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSKIP})
	if tn := nodeOf(t, e.get("skip", id), "t"); tn.Status != apiclient.NodeStatusSKIPPED || !tn.Skipped {
		t.Fatalf("skipped node: %+v", tn)
	}
	e.waitNode("skip", id, "split", "to emit 2", func(n apiclient.ExecutionNode) bool { return n.Emitted == 2 })

	e.mustCtlNode("skip", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP})
	x := e.waitResult("skip", id, "out", 1, `{"id":"m1","v":"one"}`)
	if !jsonEqual(t, x.Result, `{"id":"m1","v":"one"}`) {
		t.Fatalf("through a skipped TRANSFORM the result is %s, want the input unchanged", mustJSON(x.Result))
	}
	if tn := nodeOf(t, x, "t"); tn.Received != 1 {
		t.Fatalf("skipped node counters: %+v", tn)
	}

	e.mustCtlNode("skip", id, "t", apiclient.NodeCommand{Action: apiclient.NodeCommandActionUNSKIP})
	if tn := nodeOf(t, e.get("skip", id), "t"); tn.Skipped || tn.Status == apiclient.NodeStatusSKIPPED {
		t.Fatalf("unskipped node: %+v", tn)
	}
	e.mustCtlNode("skip", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP})
	x = e.waitStatus("skip", id, apiclient.ExecutionStatusSUCCESS)
	if !jsonEqual(t, x.Result, `{"transformed":"m2"}`) {
		t.Fatalf("after UNSKIP the result is %s, want the TRANSFORM's output", mustJSON(x.Result))
	}
	if tn := nodeOf(t, x, "t"); tn.Received != 2 || tn.Status != apiclient.NodeStatusSUCCESS {
		t.Fatalf("node t at the end: %+v", tn)
	}
}

func TestControlBreakpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("bp", splitFlow("w", "1s", nd("gate", "LOG", `{"message":"gate"}`), nd("a", "LOG", ""), nd("out", "RESULT", "")))
	items := []any{
		map[string]any{"id": "x"},
		map[string]any{"id": "stop", "n": "first"},
		map[string]any{"id": "stop", "n": "second"},
		map[string]any{"id": "y"},
		map[string]any{"id": "z"},
	}
	id := e.startHeld("bp", "w", map[string]any{"items": items})
	e.mustCtlNode("bp", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPENABLE})
	step := func() {
		e.mustCtlNode("bp", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP})
	}

	set, err := e.c.SetBreakpointWithResponse(e.ctx, "bp", id, "a", nil, apiclient.BreakpointRequest{Field: ptr("id"), Equals: "stop"})
	if err != nil || set.JSON200 == nil {
		t.Fatalf("set breakpoint: %v %d %s", err, set.StatusCode(), set.Body)
	}
	// An invalid CEL condition is refused and leaves the breakpoint as it was.
	badCond, err := e.c.SetBreakpointWithResponse(e.ctx, "bp", id, "a", nil, apiclient.BreakpointRequest{Condition: ptr("payload.id ==")})
	if err != nil || badCond.StatusCode() != http.StatusBadRequest || !strings.Contains(problemDetail(badCond.Body), "condition") {
		t.Fatalf("invalid condition: %v %d %s, want 400 naming condition", err, badCond.StatusCode(), badCond.Body)
	}
	notBool, _ := e.c.SetBreakpointWithResponse(e.ctx, "bp", id, "a", nil, apiclient.BreakpointRequest{Condition: ptr(`payload.id + "x"`)})
	if notBool.StatusCode() != http.StatusBadRequest {
		t.Fatalf("non-boolean condition: %d %s, want 400", notBool.StatusCode(), notBool.Body)
	}
	if bp := nodeOf(t, e.get("bp", id), "a").Breakpoint; bp == nil || deref(bp.Field) != "id" || bp.Equals != "stop" || bp.Condition != nil {
		t.Fatalf("breakpoint after refused changes: %+v", bp)
	}
	e.waitNode("bp", id, "split", "to emit 5", func(n apiclient.ExecutionNode) bool { return n.Emitted == 5 })

	// x does not match: it passes.
	step()
	e.waitReceived("bp", id, "out", 1)
	if a := nodeOf(t, e.get("bp", id), "a"); a.Paused || a.Received != 1 {
		t.Fatalf("a non-matching message paused the node: %+v", a)
	}
	// stop matches: the node pauses before it.
	step()
	x := e.waitNode("bp", id, "a", "PAUSED", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusPAUSED })
	if x.Status != apiclient.ExecutionStatusRUNNING {
		t.Fatalf("a breakpoint hit changed the execution to %s", x.Status)
	}
	e.steady("bp", id, "the matching message held before a", 400*time.Millisecond, func(x apiclient.Execution) bool {
		a := nodeOf(t, x, "a")
		return a.Status == apiclient.NodeStatusPAUSED && a.Received == 1 && nodeOf(t, x, "out").Received == 1
	})
	hit := e.findEvent("bp", id, func(ev sseEvent) bool { return ev.Type == "BreakpointHit" && ev.Data["nodeId"] == "a" })
	bpData, _ := hit.Data["data"].(map[string]any)["breakpoint"].(map[string]any)
	if bpData["field"] != "id" || bpData["equals"] != "stop" {
		t.Fatalf("BreakpointHit event data %v", hit.Data)
	}
	// RESUME lets exactly the held message through.
	e.mustCtlNode("bp", id, "a", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME})
	x = e.waitResult("bp", id, "out", 2, `{"id":"stop","n":"first"}`)
	if !jsonEqual(t, x.Result, `{"id":"stop","n":"first"}`) {
		t.Fatalf("after RESUME the result is %s, want the held message", mustJSON(x.Result))
	}

	// Cleared, the next matching message passes.
	clr, err := e.c.ClearBreakpointWithResponse(e.ctx, "bp", id, "a", nil)
	if err != nil || clr.JSON200 == nil {
		t.Fatalf("clear: %v %s", err, clr.Body)
	}
	if bp := nodeOf(t, e.get("bp", id), "a").Breakpoint; bp != nil {
		t.Fatalf("breakpoint still set after BREAKPOINT_CLEAR: %+v", bp)
	}
	step()
	x = e.waitResult("bp", id, "out", 3, `{"id":"stop","n":"second"}`)
	if a := nodeOf(t, x, "a"); a.Paused || !jsonEqual(t, x.Result, `{"id":"stop","n":"second"}`) {
		t.Fatalf("after BREAKPOINT_CLEAR a matching message still paused the node:\n%s", describe(x))
	}

	// A CEL condition works the same way.
	cond, err := e.c.SetBreakpointWithResponse(e.ctx, "bp", id, "a", nil, apiclient.BreakpointRequest{Condition: ptr(`payload.id == "y"`)})
	if err != nil || cond.JSON200 == nil {
		t.Fatalf("condition breakpoint: %v %s", err, cond.Body)
	}
	step()
	e.waitNode("bp", id, "a", "PAUSED on the condition", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusPAUSED })
	if x := e.get("bp", id); nodeOf(t, x, "out").Received != 3 {
		t.Fatalf("condition breakpoint let the message through:\n%s", describe(x))
	}
	e.mustCtlNode("bp", id, "a", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME})
	e.mustCtlNode("bp", id, "gate", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPDISABLE})
	x = e.waitStatus("bp", id, apiclient.ExecutionStatusSUCCESS)
	if nodeOf(t, x, "out").Received != 5 {
		t.Fatalf("end:\n%s", describe(x))
	}
}

// findEvent reads the execution's stream from the start until match.
func (e *env) findEvent(sid, eid string, match func(sseEvent) bool) sseEvent {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	resp, err := e.c.StreamExecutionEvents(ctx, sid, eid, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := readSSE(e.t, resp.Body, 5*time.Second, match)
	if len(evs) == 0 || !match(evs[len(evs)-1]) {
		e.t.Fatalf("no matching event in %v", eventTypes(evs))
	}
	return evs[len(evs)-1]
}

// stopFlow splits three messages into an HTTP call: with one worker, one
// call is in flight and two messages wait in the queue.
func stopFlow(b *backend) string {
	return line("w",
		nd("start", "MANUAL", ""),
		nd("split", "SPLIT", `{"field":"items"}`),
		nd("call", "HTTP_REQUEST", fmt.Sprintf(`{"url":"%s/work","method":"POST"}`, b.srv.URL)),
		nd("out", "RESULT", `{"expression":"payload.body"}`))
}

// startStopRun starts a run of stopFlow on a one-worker server and returns
// once the first call is in flight.
func startStopRun(t *testing.T) (*env, *backend, string) {
	b := newBackend(t, true, 0)
	e := newEnv(t, egressEnv(b), "YUKTA_WORKERS=1")
	e.apply("stop", stopFlow(b))
	id := e.start("stop", "w", map[string]any{"items": []int{1, 2, 3}})
	await(t, b.arrived, "the first HTTP call")
	e.waitNode("stop", id, "split", "to emit 3", func(n apiclient.ExecutionNode) bool { return n.Emitted == 3 })
	return e, b, id
}

func TestControlStopDrain(t *testing.T) {
	t.Parallel()
	e, b, id := startStopRun(t)
	res := e.mustCtl("stop", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: ptr(apiclient.ExecutionCommandModeDRAIN)})
	if res.Status != apiclient.Accepted {
		t.Fatalf("DRAIN answered %s, want accepted (it applies when the queue has drained)", res.Status)
	}
	x := e.get("stop", id)
	if x.Status != apiclient.ExecutionStatusRUNNING || !deref(x.Draining) {
		t.Fatalf("draining execution: %s draining=%v", x.Status, deref(x.Draining))
	}
	b.Release()
	x = e.waitStatus("stop", id, apiclient.ExecutionStatusSTOPPED)
	if calls, done, _, _ := b.stats(); calls != 3 || done != 3 {
		t.Fatalf("backend saw %d calls (%d answered), want all 3 queued messages to finish", calls, done)
	}
	if nodeOf(t, x, "call").Received != 3 || nodeOf(t, x, "out").Received != 3 {
		t.Fatalf("DRAIN did not let the queue finish:\n%s", describe(x))
	}
	// The run has ended: another STOP is refused.
	waited := e.ctl("stop", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: ptr(apiclient.ExecutionCommandModeDRAIN)})
	if waited.StatusCode() != http.StatusConflict {
		t.Fatalf("DRAIN on a stopped run: %d %s, want 409", waited.StatusCode(), waited.Body)
	}
}

func TestControlStopCancel(t *testing.T) {
	t.Parallel()
	e, b, id := startStopRun(t)
	e.mustCtl("stop", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: ptr(apiclient.ExecutionCommandModeCANCEL)})
	if x := e.get("stop", id); x.Status != apiclient.ExecutionStatusSTOPPED {
		t.Fatalf("after CANCEL the execution is %s, want STOPPED at once", x.Status)
	}
	// The running call is not cancelled: it completes when the backend answers.
	e.steady("stop", id, "the in-flight call to keep running", 300*time.Millisecond, func(apiclient.Execution) bool {
		_, _, cancelled, _ := b.stats()
		return cancelled == 0
	})
	b.Release()
	await(t, b.doneCh, "the in-flight call to complete")
	x := e.steady("stop", id, "the completed call's output to be discarded", 700*time.Millisecond, func(x apiclient.Execution) bool {
		return x.Status == apiclient.ExecutionStatusSTOPPED && nodeOf(t, x, "out").Received == 0 && nodeOf(t, x, "call").Received == 0
	})
	if calls, done, cancelled, _ := b.stats(); calls != 1 || done != 1 || cancelled != 0 {
		t.Fatalf("backend: %d calls, %d answered, %d cancelled; want the queued two dropped and the running one finished", calls, done, cancelled)
	}
	if x.Result != nil {
		t.Fatalf("a cancelled run stored a result: %s", mustJSON(x.Result))
	}
}

func TestControlStopKill(t *testing.T) {
	t.Parallel()
	e, b, id := startStopRun(t)
	e.mustCtl("stop", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: ptr(apiclient.ExecutionCommandModeKILL)})
	if x := e.get("stop", id); x.Status != apiclient.ExecutionStatusSTOPPED {
		t.Fatalf("after KILL the execution is %s, want STOPPED at once", x.Status)
	}
	await(t, b.cancelCh, "the in-flight HTTP call to be cancelled")
	x := e.steady("stop", id, "nothing more to run", 500*time.Millisecond, func(x apiclient.Execution) bool {
		return x.Status == apiclient.ExecutionStatusSTOPPED && nodeOf(t, x, "out").Received == 0
	})
	if calls, done, cancelled, _ := b.stats(); calls != 1 || done != 0 || cancelled != 1 {
		t.Fatalf("backend: %d calls, %d answered, %d cancelled; want one cancelled call", calls, done, cancelled)
	}
	for _, n := range x.Nodes {
		if n.Status == apiclient.NodeStatusRUNNING || n.Status == apiclient.NodeStatusPENDING {
			t.Errorf("node %s still %s after KILL", n.NodeId, n.Status)
		}
	}
}

func TestControlNodeStopLetsTheRunningCallFinish(t *testing.T) {
	t.Parallel()
	e, b, id := startStopRun(t)
	e.mustCtlNode("stop", id, "call", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTOP, Immediate: ptr(false)})
	if c := nodeOf(t, e.get("stop", id), "call"); c.Status != apiclient.NodeStatusSTOPPED {
		t.Fatalf("node after STOP: %+v", c)
	}
	e.steady("stop", id, "the in-flight call not to be cancelled", 400*time.Millisecond, func(apiclient.Execution) bool {
		_, _, cancelled, _ := b.stats()
		return cancelled == 0
	})
	b.Release()
	await(t, b.doneCh, "the in-flight call to complete")
	x := e.steady("stop", id, "the stopped node's queue to stay dropped", 600*time.Millisecond, func(x apiclient.Execution) bool {
		return nodeOf(t, x, "call").Status == apiclient.NodeStatusSTOPPED && nodeOf(t, x, "out").Received == 0
	})
	if calls, _, cancelled, _ := b.stats(); calls != 1 || cancelled != 0 {
		t.Fatalf("backend: %d calls, %d cancelled; want the queue dropped and the running call finished", calls, cancelled)
	}
	if x.Status == apiclient.ExecutionStatusRUNNING || x.Status == apiclient.ExecutionStatusPAUSED {
		t.Fatalf("the execution did not end after its only busy node stopped:\n%s", describe(x))
	}
}

func TestControlNodeStopImmediateCancelsTheRunningCall(t *testing.T) {
	t.Parallel()
	e, b, id := startStopRun(t)
	e.mustCtlNode("stop", id, "call", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTOP, Immediate: ptr(true)})
	await(t, b.cancelCh, "the in-flight HTTP call to be cancelled")
	x := e.steady("stop", id, "the stopped node to take nothing more", 500*time.Millisecond, func(x apiclient.Execution) bool {
		return nodeOf(t, x, "call").Status == apiclient.NodeStatusSTOPPED && nodeOf(t, x, "out").Received == 0
	})
	if calls, done, cancelled, _ := b.stats(); calls != 1 || done != 0 || cancelled != 1 {
		t.Fatalf("backend: %d calls, %d answered, %d cancelled", calls, done, cancelled)
	}
	if x.Status == apiclient.ExecutionStatusRUNNING {
		t.Fatalf("execution still RUNNING:\n%s", describe(x))
	}
	// A node command on the stopped node is refused.
	if r := e.ctlNode("stop", id, "call", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME}); r.StatusCode() != http.StatusConflict {
		t.Fatalf("RESUME of a stopped node: %d %s, want 409", r.StatusCode(), r.Body)
	}
}

func TestControlStopAllStopsOneWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("fleet", heldFlow("a", "30s"), heldFlow("b", "30s"))
	e.apply("other", heldFlow("a", "30s"))
	a1 := e.startHeld("fleet", "a", map[string]any{"n": 1})
	a2 := e.startHeld("fleet", "a", map[string]any{"n": 2})
	b1 := e.startHeld("fleet", "b", map[string]any{"n": 3})
	o1 := e.startHeld("other", "a", map[string]any{"n": 4})

	res, err := e.c.StopWorkflowWithResponse(e.ctx, "fleet", "a", nil, apiclient.StopAllRequest{Mode: ptr(apiclient.StopAllRequestModeKILL), Reason: ptr("maintenance")})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("STOP_ALL: %v %d %s", err, res.StatusCode(), res.Body)
	}
	if !strings.Contains(res.JSON200.Message, "2 execution") || !strings.Contains(res.JSON200.Message, "KILL") {
		t.Fatalf("STOP_ALL message %q, want it to name the mode and count 2", res.JSON200.Message)
	}
	for _, id := range []string{a1, a2} {
		if x := e.get("fleet", id); x.Status != apiclient.ExecutionStatusSTOPPED {
			t.Errorf("fleet/a run %s is %s, want STOPPED", id, x.Status)
		}
	}
	if x := e.get("fleet", b1); x.Status != apiclient.ExecutionStatusRUNNING {
		t.Errorf("fleet/b run is %s: STOP_ALL reached another workflow", x.Status)
	}
	if x := e.get("other", o1); x.Status != apiclient.ExecutionStatusRUNNING {
		t.Errorf("other/a run is %s: STOP_ALL reached another session", x.Status)
	}
	// Nothing left to stop: a second STOP_ALL says so and changes nothing.
	again, _ := e.c.StopWorkflowWithResponse(e.ctx, "fleet", "a", nil, apiclient.StopAllRequest{})
	if again.JSON200 == nil || !strings.Contains(again.JSON200.Message, "no active execution") {
		t.Fatalf("second STOP_ALL: %s", again.Body)
	}
	if r, _ := e.c.StopWorkflowWithResponse(e.ctx, "fleet", "ghost", nil, apiclient.StopAllRequest{}); r.StatusCode() != http.StatusNotFound {
		t.Fatalf("STOP_ALL of an unknown workflow: %d %s, want 404", r.StatusCode(), r.Body)
	}
}

func TestControlRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("rs", linearFlow(linearWF))
	src := e.start("rs", linearWF, map[string]any{"name": "again"})
	e.waitStatus("rs", src, apiclient.ExecutionStatusSUCCESS)
	res := e.mustCtl("rs", src, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESTART})
	if len(res.ResultExecutionIds) != 1 || res.ResultExecutionIds[0] == src {
		t.Fatalf("RESTART: %+v, want one new execution id", res)
	}
	nid := res.ResultExecutionIds[0]
	x := e.waitStatus("rs", nid, apiclient.ExecutionStatusSUCCESS)
	if deref(x.RestartOf) != src || !jsonEqual(t, x.Result, `{"greeting":"hello again"}`) {
		t.Fatalf("restarted run: restartOf=%q result=%s, want lineage and the same payload's result", deref(x.RestartOf), mustJSON(x.Result))
	}
	h := e.history("rs", apiclient.ListExecutionsParams{})
	if len(h) != 2 || h[0].ExecutionId != nid || deref(h[0].RestartOf) != src {
		t.Fatalf("history %+v, want the restart first with restartOf", h)
	}
}

func TestControlRestartFromNodeAndRetryRefeedInputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("rfn", line("w",
		nd("start", "MANUAL", ""),
		nd("split", "SPLIT", `{"field":"items"}`),
		nd("a", "LOG", ""), // logs each payload as JSON
		nd("out", "RESULT", "")))
	items := []any{map[string]any{"i": "one"}, map[string]any{"i": "two"}, map[string]any{"i": "three"}}
	src := e.start("rfn", "w", map[string]any{"items": items})
	x := e.waitStatus("rfn", src, apiclient.ExecutionStatusSUCCESS)
	if nodeOf(t, x, "a").Received != 3 {
		t.Fatalf("source run:\n%s", describe(x))
	}
	check := func(how, nid string) {
		t.Helper()
		x := e.waitStatus("rfn", nid, apiclient.ExecutionStatusSUCCESS)
		if deref(x.RestartOf) != src || deref(x.FromNodeId) != "a" {
			t.Fatalf("%s: restartOf=%q fromNodeId=%q", how, deref(x.RestartOf), deref(x.FromNodeId))
		}
		want := map[string]apiclient.NodeStatus{"start": "SKIPPED", "split": "SKIPPED", "a": "SUCCESS", "out": "SUCCESS"}
		if got := statuses(x); !maps.Equal(got, want) {
			t.Fatalf("%s: statuses %v, want %v", how, got, want)
		}
		if c := counts(x); c["start"] != [2]int64{0, 0} || c["split"] != [2]int64{0, 0} || c["a"] != [2]int64{3, 3} || c["out"][0] != 3 {
			t.Fatalf("%s: counts %v, want a to re-receive exactly its 3 inputs", how, c)
		}
		logs, err := e.c.GetExecutionLogsWithResponse(e.ctx, "rfn", nid, &apiclient.GetExecutionLogsParams{FilterPattern: ptr(`\] \{"i":`)})
		if err != nil || logs.JSON200 == nil {
			t.Fatalf("%s: logs %v", how, err)
		}
		var got []string
		for _, l := range logs.JSON200.Lines {
			got = append(got, l.Message)
		}
		slices.Sort(got)
		if want := []string{`{"i":"one"}`, `{"i":"three"}`, `{"i":"two"}`}; !slices.Equal(got, want) {
			t.Fatalf("%s: node a received %v, want the source run's inputs %v", how, got, want)
		}
	}
	res := e.mustCtl("rfn", src, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESTARTFROMNODE, FromNodeId: ptr("a")})
	if len(res.ResultExecutionIds) != 1 {
		t.Fatalf("RESTART_FROM_NODE: %+v", res)
	}
	check("RESTART_FROM_NODE", res.ResultExecutionIds[0])

	retry := e.mustCtlNode("rfn", src, "a", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRETRY})
	if len(retry.ResultExecutionIds) != 1 || retry.ResultExecutionIds[0] == res.ResultExecutionIds[0] {
		t.Fatalf("node RETRY: %+v, want a new execution id", retry)
	}
	check("node RETRY", retry.ResultExecutionIds[0])
	if h := e.history("rfn", apiclient.ListExecutionsParams{}); len(h) != 3 {
		t.Fatalf("history has %d executions, want the source and two restarts", len(h))
	}
}

func TestControlIdempotentKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("keys", linearFlow(linearWF), heldFlow("held", "30s"))
	src := e.start("keys", linearWF, map[string]any{"name": "k"})
	e.waitStatus("keys", src, apiclient.ExecutionStatusSUCCESS)
	cmd := apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESTART, Key: ptr("restart-once")}
	first := e.mustCtl("keys", src, cmd)
	second := e.mustCtl("keys", src, cmd)
	if first.CommandId != second.CommandId || !slices.Equal(first.ResultExecutionIds, second.ResultExecutionIds) || len(first.ResultExecutionIds) != 1 {
		t.Fatalf("same key twice: %+v then %+v, want the same answer", first, second)
	}
	e.waitStatus("keys", first.ResultExecutionIds[0], apiclient.ExecutionStatusSUCCESS)
	if h := e.history("keys", apiclient.ListExecutionsParams{WorkflowId: ptr(linearWF)}); len(h) != 2 {
		t.Fatalf("history has %d executions, want the source and ONE restart", len(h))
	}
	// Another key is another command.
	third := e.mustCtl("keys", src, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESTART, Key: ptr("restart-twice")})
	if third.CommandId == first.CommandId || third.ResultExecutionIds[0] == first.ResultExecutionIds[0] {
		t.Fatalf("a different key returned the first answer: %+v", third)
	}

	// Node commands too: STEP with one key twice gives one credit.
	held := e.startHeld("keys", "held", map[string]any{})
	e.mustCtlNode("keys", held, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPENABLE})
	s1 := e.mustCtlNode("keys", held, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP, Key: ptr("one-step")})
	s2 := e.mustCtlNode("keys", held, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP, Key: ptr("one-step")})
	if s1.CommandId != s2.CommandId {
		t.Fatalf("STEP with one key: %s then %s", s1.CommandId, s2.CommandId)
	}
	if m := nodeOf(t, e.get("keys", held), "mid"); deref(m.StepCredits) != 1 {
		t.Fatalf("STEP twice with one key left %d credits, want 1", deref(m.StepCredits))
	}
}

func TestControlIfStatusMismatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("ifs", heldFlow("w", "30s"))
	id := e.startHeld("ifs", "w", map[string]any{})
	before := describe(e.get("ifs", id))

	r := e.ctl("ifs", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE, IfStatus: ptr("PAUSED")})
	if r.StatusCode() != http.StatusConflict || !strings.Contains(problemDetail(r.Body), "RUNNING") {
		t.Fatalf("PAUSE ifStatus=PAUSED on a running run: %d %s, want 409 naming RUNNING", r.StatusCode(), r.Body)
	}
	n := e.ctlNode("ifs", id, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE, IfStatus: ptr("RUNNING")})
	if n.StatusCode() != http.StatusConflict || !strings.Contains(problemDetail(n.Body), "PENDING") {
		t.Fatalf("node PAUSE ifStatus=RUNNING on a pending node: %d %s, want 409 naming PENDING", n.StatusCode(), n.Body)
	}
	if after := describe(e.get("ifs", id)); after != before {
		t.Fatalf("a refused command changed the run:\n%s\nwas\n%s", after, before)
	}
	// The matching status applies.
	e.mustCtl("ifs", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE, IfStatus: ptr("RUNNING")})
	if x := e.get("ifs", id); x.Status != apiclient.ExecutionStatusPAUSED {
		t.Fatalf("PAUSE ifStatus=RUNNING: %s", x.Status)
	}
	// The refusal was recorded as a rejected command.
	e.findEvent("ifs", id, func(ev sseEvent) bool { return ev.Type == "CommandRejected" })
}

func TestControlBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("bad", heldFlow("w", "30s"), linearFlow(linearWF))
	live := e.startHeld("bad", "w", map[string]any{"k": 1})
	done := e.start("bad", linearWF, map[string]any{"name": "done"})
	e.waitStatus("bad", done, apiclient.ExecutionStatusSUCCESS)
	snapshot := func() string {
		return describe(e.get("bad", live)) + describe(e.get("bad", done)) + strconv.Itoa(len(e.history("bad", apiclient.ListExecutionsParams{})))
	}
	before := snapshot()
	ctlPath := "/api/sessions/bad/executions/" + live + "/control"

	cases := []struct {
		name   string
		call   func() (int, []byte)
		status int
		want   string
	}{
		{"unknown action", func() (int, []byte) {
			r, b := e.s.do(t, "POST", ctlPath, jsonType, []byte(`{"action":"EXPLODE"}`))
			return r.StatusCode, b
		}, 400, "action"},
		{"missing fromNodeId", func() (int, []byte) {
			r := e.ctl("bad", done, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESTARTFROMNODE})
			return r.StatusCode(), r.Body
		}, 400, "fromNodeId is required for action RESTART_FROM_NODE."},
		{"unknown fromNodeId", func() (int, []byte) {
			r := e.ctl("bad", done, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESTARTFROMNODE, FromNodeId: ptr("ghost")})
			return r.StatusCode(), r.Body
		}, 404, "ghost"},
		{"mode on PAUSE", func() (int, []byte) {
			r := e.ctl("bad", live, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE, Mode: ptr(apiclient.ExecutionCommandModeKILL)})
			return r.StatusCode(), r.Body
		}, 400, "mode"},
		{"command on a finished run", func() (int, []byte) {
			r := e.ctl("bad", done, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE})
			return r.StatusCode(), r.Body
		}, 409, "SUCCESS"},
		{"node command on a finished run", func() (int, []byte) {
			r := e.ctlNode("bad", done, "out", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE})
			return r.StatusCode(), r.Body
		}, 409, "RETRY"},
		{"unknown node", func() (int, []byte) {
			r := e.ctlNode("bad", live, "ghost", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE})
			return r.StatusCode(), r.Body
		}, 404, "ghost"},
		{"STEP without step mode", func() (int, []byte) {
			r := e.ctlNode("bad", live, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP})
			return r.StatusCode(), r.Body
		}, 409, "STEP_ENABLE"},
		{"malformed start payload", func() (int, []byte) {
			r, err := e.c.StartExecutionWithBodyWithResponse(e.ctx, "bad", linearWF, nil, jsonType, strings.NewReader(`{"payload":{"name":`))
			if err != nil {
				t.Fatal(err)
			}
			return r.StatusCode(), r.Body
		}, 400, `"path":"body"`},
		{"unknown start field", func() (int, []byte) {
			r, _ := e.c.StartExecutionWithBodyWithResponse(e.ctx, "bad", linearWF, nil, jsonType, strings.NewReader(`{"payload":{},"extra":1}`))
			return r.StatusCode(), r.Body
		}, 400, "extra"},
		{"regex over the length cap", func() (int, []byte) {
			r, _ := e.c.GetExecutionLogsWithResponse(e.ctx, "bad", done, &apiclient.GetExecutionLogsParams{FilterPattern: ptr(strings.Repeat("a", 201))})
			return r.StatusCode(), r.Body
		}, 400, "Regex pattern too long"},
		{"regex that does not compile", func() (int, []byte) {
			r, _ := e.c.GetExecutionLogsWithResponse(e.ctx, "bad", done, &apiclient.GetExecutionLogsParams{FilterPattern: ptr("(unclosed")})
			return r.StatusCode(), r.Body
		}, 400, "Invalid regex"},
		{"regex over the instruction cap", func() (int, []byte) {
			r, _ := e.c.GetExecutionLogsWithResponse(e.ctx, "bad", done, &apiclient.GetExecutionLogsParams{FilterPattern: ptr("x{300}")})
			return r.StatusCode(), r.Body
		}, 400, "too expensive"},
		{"invalid CEL in a session", func() (int, []byte) {
			doc := `{"name":"e2e bad","workflows":[` + line(linearWF,
				nd("start", "MANUAL", ""),
				nd("greet", "TRANSFORM", `{"expression":"payload.name +"}`),
				nd("out", "RESULT", "")) + `]}`
			r, _ := e.c.PutSessionWithBodyWithResponse(e.ctx, "bad", nil, jsonType, strings.NewReader(doc))
			return r.StatusCode(), r.Body
		}, 400, "payload.name +"},
	}
	for _, c := range cases {
		status, body := c.call()
		if status != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s\n    want %d mentioning %q", c.name, status, body, c.status, c.want)
		}
	}
	// The invalid session named the node.
	doc := `{"name":"e2e bad","workflows":[` + line(linearWF, nd("start", "MANUAL", ""), nd("greet", "TRANSFORM", `{"expression":"payload.name +"}`),
		nd("out", "RESULT", "")) + `]}`
	r, _ := e.c.PutSessionWithBodyWithResponse(e.ctx, "bad", nil, jsonType, strings.NewReader(doc))
	if r.ApplicationproblemJSON400 == nil {
		t.Fatalf("invalid CEL: %s", r.Body)
	}
	named := false
	for _, v := range deref(r.ApplicationproblemJSON400.Errors) {
		if v.Path == "workflows[0].nodes[1].config.expression" && strings.Contains(v.Message, `node "greet"`) && strings.Contains(v.Message, `"payload.name +"`) {
			named = true
		}
	}
	if !named {
		t.Errorf("invalid CEL violation does not name node greet and its expression: %s", r.Body)
	}
	wfAfter, _ := e.c.GetWorkflowWithResponse(e.ctx, "bad", "w")
	if wfAfter.JSON200 == nil {
		t.Fatalf("a refused apply removed workflow w: %s", wfAfter.Body)
	}
	if after := snapshot(); after != before {
		t.Fatalf("bad input changed state:\n%s\nwas\n%s", after, before)
	}
}
