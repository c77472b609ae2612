package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// none checks that no poll of queue delivers anything for d.
func (e *workerEnv) none(queue string, d time.Duration) {
	e.t.Helper()
	if ts := e.poll(int(d.Seconds()), 10, queue); len(ts) != 0 {
		e.t.Fatalf("%s delivered %d task(s), want none: %+v", queue, len(ts), ts)
	}
}

// TestWorkerControlOnTaskNodes: pause, step, skip, breakpoints and the
// three stops act on a TASK node as on every node.
func TestWorkerControlOnTaskNodes(t *testing.T) {
	t.Parallel()
	base := newEnv(t)
	e := &workerEnv{env: base, w: base.c}
	task := func(q string) string {
		return nd("work", "TASK", `{"queue":"`+q+`","heartbeatTimeout":"5s","retry":{"maxAttempts":1}}`)
	}
	e.apply("wc",
		splitFlow("pause", "1s", task("pause"), nd("out", "RESULT", "")),
		splitFlow("step", "1s", task("step"), nd("out", "RESULT", "")),
		splitFlow("skip", "1s", task("skip"), nd("out", "RESULT", "")),
		splitFlow("bp", "1s", task("bp"), nd("out", "RESULT", "")),
		splitFlow("stop", "1s", task("stop"), nd("out", "RESULT", "")))

	t.Run("pause", func(t *testing.T) {
		id := e.startHeld("wc", "pause", map[string]any{"items": []int{1, 2}})
		e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE})
		e.waitNode("wc", id, "split", "to emit 2", func(n apiclient.ExecutionNode) bool { return n.Emitted == 2 })
		e.none("pause", 2*time.Second)
		e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME})
		for range 2 {
			tk := e.pollOne("pause")
			if st, body := e.complete(tk, tk.Payload); st != http.StatusOK {
				t.Fatalf("complete: %d %s", st, body)
			}
		}
		e.waitStatus("wc", id, apiclient.ExecutionStatusSUCCESS)
	})

	t.Run("step", func(t *testing.T) {
		id := e.startHeld("wc", "step", map[string]any{"items": []int{1, 2, 3}})
		e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPENABLE})
		e.waitNode("wc", id, "split", "to emit 3", func(n apiclient.ExecutionNode) bool { return n.Emitted == 3 })
		e.none("step", time.Second)
		for k := 1; k <= 2; k++ {
			e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEP})
			tk := e.pollOne("step")
			e.none("step", time.Second) // one STEP, one delivery
			if st, body := e.complete(tk, k); st != http.StatusOK {
				t.Fatalf("complete: %d %s", st, body)
			}
		}
		e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPDISABLE})
		tk := e.pollOne("step")
		e.complete(tk, 3)
		x := e.waitStatus("wc", id, apiclient.ExecutionStatusSUCCESS)
		if n := nodeOf(t, x, "work"); n.Received != 3 || n.Emitted != 3 {
			t.Fatalf("work after its steps: %+v", n)
		}
	})

	t.Run("skip", func(t *testing.T) {
		id := e.startHeld("wc", "skip", map[string]any{"items": []string{"a"}})
		e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSKIP})
		x := e.waitStatus("wc", id, apiclient.ExecutionStatusSUCCESS)
		if x.Result != "a" {
			t.Fatalf("a skipped TASK passes its input through: result %#v", x.Result)
		}
		e.none("skip", 0)
	})

	t.Run("skip while leased", func(t *testing.T) {
		id := e.startHeld("wc", "skip", map[string]any{"items": []string{"b"}})
		tk := e.pollOne("skip")
		e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSKIP})
		hb, err := e.w.HeartbeatTaskWithResponse(e.ctx, tk.TaskId, apiclient.HeartbeatTaskJSONRequestBody{LeaseToken: tk.LeaseToken})
		if err != nil || hb.JSON200 == nil || !hb.JSON200.Cancelled || hb.JSON200.Reason == nil || !strings.Contains(*hb.JSON200.Reason, "skipped") {
			t.Fatalf("heartbeat after SKIP: %v %s", err, hb.Body)
		}
		if st, body := e.complete(tk, "worked"); st != http.StatusConflict || !strings.Contains(string(body), "skipped") {
			t.Fatalf("complete after SKIP: %d %s", st, body)
		}
		if x := e.waitStatus("wc", id, apiclient.ExecutionStatusSUCCESS); x.Result != "b" {
			t.Fatalf("a task skipped while leased passes its message on unchanged: result %#v", x.Result)
		}
	})

	t.Run("breakpoint", func(t *testing.T) {
		id := e.startHeld("wc", "bp", map[string]any{"items": []string{"go", "stop"}})
		set, err := e.c.SetBreakpointWithResponse(e.ctx, "wc", id, "work", nil, apiclient.BreakpointRequest{Condition: ptr(`payload == "stop"`)})
		if err != nil || set.StatusCode() != http.StatusOK {
			t.Fatalf("set breakpoint: %v %s", err, set.Body)
		}
		tk := e.pollOne("bp")
		if tk.Payload != "go" {
			t.Fatalf("the breakpoint let %v through", tk.Payload)
		}
		e.complete(tk, "went")
		// A TASK node's breakpoint is checked where a worker would take the
		// message: the poll delivers nothing and the node pauses.
		e.none("bp", time.Second)
		e.waitNode("wc", id, "work", "paused at its breakpoint", func(n apiclient.ExecutionNode) bool { return n.Paused })
		e.none("bp", time.Second)
		e.mustCtlNode("wc", id, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME})
		tk = e.pollOne("bp")
		if tk.Payload != "stop" {
			t.Fatalf("after RESUME: %v", tk.Payload)
		}
		e.complete(tk, "stopped")
		e.waitStatus("wc", id, apiclient.ExecutionStatusSUCCESS)
	})

	t.Run("stops", func(t *testing.T) {
		for _, mode := range []apiclient.ExecutionCommandMode{apiclient.ExecutionCommandModeDRAIN, apiclient.ExecutionCommandModeCANCEL, apiclient.ExecutionCommandModeKILL} {
			id := e.startHeld("wc", "stop", map[string]any{"items": []int{1}})
			tk := e.pollOne("stop")
			m := mode
			e.mustCtl("wc", id, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: &m})
			hb, err := e.w.HeartbeatTaskWithResponse(e.ctx, tk.TaskId, apiclient.HeartbeatTaskJSONRequestBody{LeaseToken: tk.LeaseToken})
			if err != nil || hb.JSON200 == nil {
				t.Fatalf("%s heartbeat: %v %s", mode, err, hb.Body)
			}
			st, body := e.complete(tk, "late")
			if mode == apiclient.ExecutionCommandModeDRAIN {
				// DRAIN lets leased work finish.
				if hb.JSON200.Cancelled || st != http.StatusOK {
					t.Fatalf("DRAIN: heartbeat %+v, complete %d %s", hb.JSON200, st, body)
				}
				x := e.waitExec("wc", id, "to end after draining", func(x apiclient.Execution) bool { return x.Status == apiclient.ExecutionStatusSTOPPED })
				if n := nodeOf(t, x, "work"); n.Emitted != 1 {
					t.Fatalf("DRAIN applied the leased task's output: %+v", n)
				}
				continue
			}
			if !hb.JSON200.Cancelled || hb.JSON200.Reason == nil || st != http.StatusConflict {
				t.Fatalf("%s: heartbeat %+v, complete %d %s", mode, hb.JSON200, st, body)
			}
			e.waitStatus("wc", id, apiclient.ExecutionStatusSTOPPED)
		}
	})
}
