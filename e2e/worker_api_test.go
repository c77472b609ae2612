package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/domain/journal"
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

const taskFlow = `{"queue":"q1","heartbeatTimeout":"4s","timeout":"20s","retry":{"maxAttempts":3,"backoff":"0s"}}`

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
	if task.IdempotencyKey == "" || task.HeartbeatTimeoutMs != 4000 || !task.Deadline.After(task.LeaseUntil) {
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

	// Silent worker: no heartbeat for heartbeatTimeout (4 s) loses the task.
	eid = e.start("ws", "flow", map[string]any{"n": 3})
	task = e.pollOne("q1")
	hb, err := e.w.HeartbeatTaskWithResponse(e.ctx, task.TaskId, apiclient.HeartbeatTaskJSONRequestBody{LeaseToken: task.LeaseToken,
		Progress: map[string]any{"done": 0.5}})
	if err != nil || hb.JSON200 == nil || hb.JSON200.Cancelled {
		t.Fatalf("heartbeat: %v %s", err, hb.Body)
	}
	logs, err := e.c.GetExecutionLogsWithResponse(e.ctx, "ws", eid, nil)
	if err != nil || logs.JSON200 == nil || !strings.Contains(string(logs.Body), `progress: {\"done\":0.5}`) {
		t.Fatalf("the heartbeat's progress in the run's log: %v %s", err, logs.Body)
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

	// What operators see: the queue, its workers and the task latencies.
	if n := metricSum(t, e.s, `yukta_task_attempt_seconds_count{outcome="lapsed"}`); n != 1 {
		t.Errorf("lapsed attempts in /metrics: %v, want 1", n)
	}
	if n := metricSum(t, e.s, `yukta_task_attempt_seconds_count{outcome="completed"}`); n != 3 {
		t.Errorf("completed attempts in /metrics: %v, want 3", n)
	}
	e.start("ws", "flow", map[string]any{"n": 4}) // waits: no one polls
	poll(t, waitLimit, "the waiting task in /metrics", func() bool {
		return metricSum(t, e.s, `yukta_task_queue_waiting{queue="q1"}`) == 1
	})
	sched, err := e.c.GetSchedulerStatusWithResponse(e.ctx)
	if err != nil || sched.JSON200 == nil {
		t.Fatalf("scheduler: %v %s", err, sched.Body)
	}
	qs := sched.JSON200.Queues
	if len(qs) != 1 || qs[0].Queue != "q1" || qs[0].Waiting != 1 || qs[0].Leased != 0 || qs[0].OldestWaitingSince == nil ||
		len(qs[0].Workers) != 1 || qs[0].Workers[0].Worker != "worker:anonymous" {
		t.Fatalf("scheduler queues: %+v", qs)
	}
}

// TestWorkerBadAnswersChangeNothing: an answer the server refuses names the
// field or the state, and the task is still the worker's to answer.
func TestWorkerBadAnswersChangeNothing(t *testing.T) {
	t.Parallel()
	base := newEnv(t, "YUKTA_MAX_MESSAGE_BYTES=1024")
	e := &workerEnv{env: base, w: base.c}
	e.apply("wb", line("flow", nd("start", "MANUAL", ""),
		nd("work", "TASK", `{"queue":"q","ports":["rejected"],"outputSchema":{"type":"object","required":["ok"]},"retry":{"maxAttempts":2,"backoff":"0s"}}`),
		nd("out", "RESULT", "")))
	eid := e.start("wb", "flow", 1)
	other := e.start("wb", "flow", 2)
	tasks := e.poll(5, 2, "q")
	for len(tasks) < 2 {
		tasks = append(tasks, e.poll(5, 2-len(tasks), "q")...)
	}
	mine, theirs := tasks[0], tasks[1]
	if mine.ExecutionId != eid {
		mine, theirs = theirs, mine
	}
	send := func(task apiclient.Task, body apiclient.TaskCompleteRequest) (int, string) {
		res, err := e.w.CompleteTaskWithResponse(e.ctx, task.TaskId, body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode(), string(res.Body)
	}
	for _, c := range []struct {
		name   string
		body   apiclient.TaskCompleteRequest
		status int
		says   string
	}{
		{"an output over the message limit", apiclient.TaskCompleteRequest{LeaseToken: mine.LeaseToken, Output: map[string]any{"ok": strings.Repeat("x", 2000)}}, 400, "output"},
		{"a port the node does not have", apiclient.TaskCompleteRequest{LeaseToken: mine.LeaseToken, Output: map[string]any{"ok": 1}, Port: ptr("nope")}, 400, `port \"nope\" is not a port of node work`},
		{"another task's lease token", apiclient.TaskCompleteRequest{LeaseToken: theirs.LeaseToken, Output: map[string]any{"ok": 1}}, 409, "not leased"},
		{"a lease token that is no number", apiclient.TaskCompleteRequest{LeaseToken: "abc", Output: map[string]any{"ok": 1}}, 400, "leaseToken"},
	} {
		if st, body := send(mine, c.body); st != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, st, body, c.status, c.says)
		}
	}
	if x := e.get("wb", eid); nodeOf(t, x, "work").Received != 0 || x.Status != apiclient.ExecutionStatusRUNNING {
		t.Fatalf("refused answers changed the run:\n%s", describe(x))
	}
	// An output its outputSchema refuses fails the attempt (422), and the
	// retry policy delivers the task again.
	if st, body := send(mine, apiclient.TaskCompleteRequest{LeaseToken: mine.LeaseToken, Output: map[string]any{"no": 1}}); st != http.StatusUnprocessableEntity || !strings.Contains(body, "outputSchema") || !strings.Contains(body, "retrying") {
		t.Fatalf("a refused output: %d %s", st, body)
	}
	again := e.pollOne("q")
	if again.TaskId != mine.TaskId || again.Attempt != 2 {
		t.Fatalf("after a refused output: %+v", again)
	}
	if st, body := send(again, apiclient.TaskCompleteRequest{LeaseToken: again.LeaseToken, Output: map[string]any{"ok": false}, Port: ptr("rejected")}); st != http.StatusOK {
		t.Fatalf("complete on a declared port: %d %s", st, body)
	}
	e.waitStatus("wb", eid, apiclient.ExecutionStatusSUCCESS) // "rejected" is not connected: the message ends there
	// A complete after the run was stopped changes nothing.
	e.mustCtl("wb", other, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP})
	if st, body := send(theirs, apiclient.TaskCompleteRequest{LeaseToken: theirs.LeaseToken, Output: map[string]any{"ok": 1}}); st != http.StatusConflict || !strings.Contains(body, "stopped") {
		t.Fatalf("complete after STOP: %d %s", st, body)
	}
	// A task id that names no task, and one whose node is not a TASK.
	res, err := e.w.HeartbeatTaskWithResponse(e.ctx, "999999", apiclient.HeartbeatTaskJSONRequestBody{LeaseToken: "1"})
	if err != nil || res.StatusCode() != http.StatusNotFound {
		t.Fatalf("heartbeat of no task: %v %d %s", err, res.StatusCode(), res.Body)
	}
}

// TestWorkerKeys: only WORKER keys take tasks, a key limited to queues
// takes only theirs, and the worker is the actor of what it completes, in
// the events and in the signed journal.
func TestWorkerKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{"YUKTA_API_KEYS=" + writeKeyFile(t)}})
	admin := &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}
	e := &workerEnv{env: admin, w: keyedClient(t, s, testKeys["worker-q"])}
	e.apply("wk", line("flow", nd("start", "MANUAL", ""), nd("work", "TASK", `{"queue":"build"}`), nd("out", "RESULT", "")))
	eid := e.start("wk", "flow", "src")

	for name, key := range map[string]string{"operator": testKeys["operator"], "admin": testKeys["admin"]} {
		res, err := keyedClient(t, s, key).PollTasksWithResponse(e.ctx, apiclient.PollTasksJSONRequestBody{Queues: []string{"build"}})
		if err != nil || res.StatusCode() != http.StatusForbidden || !strings.Contains(string(res.Body), "WORKER") {
			t.Fatalf("%s polls: %v %d %s", name, err, res.StatusCode(), res.Body)
		}
	}
	res, err := e.w.PollTasksWithResponse(e.ctx, apiclient.PollTasksJSONRequestBody{Queues: []string{"build", "images"}})
	if err != nil || res.StatusCode() != http.StatusForbidden || !strings.Contains(string(res.Body), `queues[1]`) {
		t.Fatalf("a queue the key may not use: %v %d %s", err, res.StatusCode(), res.Body)
	}
	task := e.pollOne("build")
	// Another WORKER key cannot answer it, and the task's lease is kept.
	other := &workerEnv{env: admin, w: keyedClient(t, s, testKeys["worker"])}
	if st, body := other.complete(task, "theirs"); st != http.StatusConflict || !strings.Contains(string(body), "another worker") {
		t.Fatalf("another worker's complete: %d %s", st, body)
	}
	if st, body := e.complete(task, "built"); st != http.StatusOK {
		t.Fatalf("complete: %d %s", st, body)
	}
	e.waitStatus("wk", eid, apiclient.ExecutionStatusSUCCESS)
	if v := e.verifyJournalIn("wk", eid); v.Result != apiclient.VALID {
		t.Fatalf("journal verification: %+v", v)
	}
	j := e.journalEvents("wk", eid)
	var completed, byWorker int
	for _, ev := range j {
		if ev["type"] == "TaskCompleted" && ev["actor"] == "worker:worker-q" && ev["channel"] == "worker" {
			completed++
		}
		if ev["type"] == "NodeStatusChanged" && ev["nodeId"] == "work" && ev["actor"] == "worker:worker-q" {
			byWorker++
		}
	}
	if completed != 1 || byWorker == 0 {
		t.Fatalf("journal: %d TaskCompleted and %d node changes by worker:worker-q, want 1 and some:\n%v", completed, byWorker, j)
	}
}

// journalEvents exports an execution's journal and returns its event bodies.
func (e *env) journalEvents(sid, id string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, rec := range e.journalRecords(sid, id) {
		if rec.Kind == journal.KindEvent {
			out = append(out, rec.Event)
		}
	}
	return out
}

// TestWorkerPollEndsWithTheServer: a stopping server answers its waiting
// long polls with no task at once instead of holding its shutdown for them.
func TestWorkerPollEndsWithTheServer(t *testing.T) {
	t.Parallel()
	base := newEnv(t)
	e := &workerEnv{env: base, w: base.c}
	type answer struct {
		status int
		body   string
		at     time.Time
	}
	got := make(chan answer, 1)
	go func() {
		wait := 30
		res, err := e.w.PollTasksWithResponse(e.ctx, apiclient.PollTasksJSONRequestBody{Queues: []string{"idle"}, Wait: &wait})
		if err != nil {
			got <- answer{status: -1, body: err.Error(), at: time.Now()}
			return
		}
		got <- answer{status: res.StatusCode(), body: string(res.Body), at: time.Now()}
	}()
	// A poll notes its worker as it begins: then it is waiting.
	poll(t, waitLimit, "the poll to be waiting", func() bool {
		res, err := e.c.GetSchedulerStatusWithResponse(e.ctx)
		return err == nil && res.JSON200 != nil && len(res.JSON200.Queues) == 1 && res.JSON200.Queues[0].Queue == "idle"
	})
	stopAt := time.Now()
	if err := e.s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	a := <-got
	if a.status != http.StatusOK || !strings.Contains(a.body, `"tasks":[]`) || a.at.Sub(stopAt) > 5*time.Second {
		t.Fatalf("the waiting poll when the server stopped: %d %s after %s", a.status, a.body, a.at.Sub(stopAt))
	}
	t.Logf("the poll ended %s after the stop began", a.at.Sub(stopAt).Round(time.Millisecond))
}
