package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// workerEnv is a server and a client that drives its worker API.
type workerEnv struct {
	*env
	w *apiclient.ClientWithResponses
}

// poll takes up to max tasks of queues, waiting up to wait seconds.
func (e *workerEnv) poll(wait, max int, queues ...string) []apiclient.Task {
	e.t.Helper()
	res, err := e.w.PollTasksWithResponse(e.ctx, apiclient.PollTasksJSONRequestBody{Queues: queues, Wait: &wait, Max: &max})
	if err != nil {
		e.t.Fatal(err)
	}
	if res.JSON200 == nil {
		e.t.Fatalf("poll %v: %d %s", queues, res.StatusCode(), res.Body)
	}
	return res.JSON200.Tasks
}

// pollOne waits for exactly one task.
func (e *workerEnv) pollOne(queue string) apiclient.Task {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if ts := e.poll(5, 1, queue); len(ts) == 1 {
			return ts[0]
		}
	}
	e.t.Fatalf("no task on %s within %s", queue, waitLimit)
	return apiclient.Task{}
}

func (e *workerEnv) complete(t apiclient.Task, output any) (int, []byte) {
	e.t.Helper()
	res, err := e.w.CompleteTaskWithResponse(e.ctx, t.TaskId, apiclient.CompleteTaskJSONRequestBody{LeaseToken: t.LeaseToken, Output: output})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode(), res.Body
}

const taskFlow = `{"queue":"q1","heartbeatTimeout":"1s","timeout":"20s","retry":{"maxAttempts":3,"backoff":"0s"}}`

// TestWorkerTaskRoundTrip: a TASK node's message goes to a worker's poll,
// the worker's output goes on to the next node, a second answer or a stale
// lease token changes nothing, a failure is retried with attempt 2, and a
// worker that goes silent loses its task to the next poll.
func TestWorkerTaskRoundTrip(t *testing.T) {
	base := newEnv(t)
	e := &workerEnv{env: base, w: base.c}
	e.apply("ws", line("flow", nd("start", "MANUAL", ""), nd("work", "TASK", taskFlow), nd("out", "RESULT", "")))

	// Complete: the output is the run's result.
	eid := e.start("ws", "flow", map[string]any{"n": 1})
	task := e.pollOne("q1")
	if task.ExecutionId != eid || task.NodeId != "work" || task.Attempt != 1 || task.Queue != "q1" || task.SessionId != "ws" {
		t.Fatalf("delivery: %+v", task)
	}
	if p, _ := task.Payload.(map[string]any); p["n"] != float64(1) {
		t.Fatalf("payload: %#v", task.Payload)
	}
	if task.IdempotencyKey == "" || task.HeartbeatTimeoutMs != 1000 || !task.Deadline.After(task.LeaseUntil) {
		t.Fatalf("delivery terms: %+v", task)
	}
	if st, body := e.complete(task, map[string]any{"done": true}); st != http.StatusOK {
		t.Fatalf("complete: %d %s", st, body)
	}
	ex := e.waitStatus("ws", eid, apiclient.ExecutionStatusSUCCESS)
	if r, _ := ex.Result.(map[string]any); r["done"] != true {
		t.Fatalf("result: %#v", ex.Result)
	}
	// A second answer with the same lease is refused and changes nothing.
	if st, body := e.complete(task, map[string]any{"done": false}); st != http.StatusConflict {
		t.Fatalf("second complete: %d %s", st, body)
	}

	// Fail (retryable): delivered again with attempt 2, whose complete wins.
	eid = e.start("ws", "flow", map[string]any{"n": 2})
	task = e.pollOne("q1")
	fres, err := e.w.FailTaskWithResponse(e.ctx, task.TaskId, apiclient.FailTaskJSONRequestBody{LeaseToken: task.LeaseToken, Error: "flaky", Retryable: true})
	if err != nil || fres.JSON200 == nil || fres.JSON200.Outcome != apiclient.Retrying {
		t.Fatalf("fail: %v %s", err, fres.Body)
	}
	again := e.pollOne("q1")
	if again.TaskId != task.TaskId || again.Attempt != 2 || again.LeaseToken == task.LeaseToken {
		t.Fatalf("redelivery after a failure: %+v (was %+v)", again, task)
	}
	// The first attempt's lease token matches nothing now.
	if st, body := e.complete(task, "stale"); st != http.StatusConflict {
		t.Fatalf("stale complete: %d %s", st, body)
	}
	if st, body := e.complete(again, "fresh"); st != http.StatusOK {
		t.Fatalf("complete attempt 2: %d %s", st, body)
	}
	if ex := e.waitStatus("ws", eid, apiclient.ExecutionStatusSUCCESS); ex.Result != "fresh" {
		t.Fatalf("result: %#v", ex.Result)
	}

	// Silent worker: no heartbeat for heartbeatTimeout (1 s) loses the task.
	eid = e.start("ws", "flow", map[string]any{"n": 3})
	task = e.pollOne("q1")
	hb, err := e.w.HeartbeatTaskWithResponse(e.ctx, task.TaskId, apiclient.HeartbeatTaskJSONRequestBody{LeaseToken: task.LeaseToken})
	if err != nil || hb.JSON200 == nil || hb.JSON200.Cancelled {
		t.Fatalf("heartbeat: %v %s", err, hb.Body)
	}
	again = e.pollOne("q1") // waits out the lease
	if again.TaskId != task.TaskId || again.Attempt != 2 {
		t.Fatalf("redelivery after silence: %+v", again)
	}
	if st, body := e.complete(task, "late"); st != http.StatusConflict {
		t.Fatalf("the silent worker's late answer: %d %s", st, body)
	}
	hb, err = e.w.HeartbeatTaskWithResponse(e.ctx, task.TaskId, apiclient.HeartbeatTaskJSONRequestBody{LeaseToken: task.LeaseToken})
	if err != nil || hb.JSON200 == nil || !hb.JSON200.Cancelled {
		t.Fatalf("the silent worker's heartbeat: %v %s", err, hb.Body)
	}
	if st, body := e.complete(again, "second"); st != http.StatusOK {
		t.Fatalf("complete: %d %s", st, body)
	}
	e.waitStatus("ws", eid, apiclient.ExecutionStatusSUCCESS)
}
