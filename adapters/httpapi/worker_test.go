package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
)

// The worker API's use cases as fakes that accept everything the door lets
// through, so the door's own checks are what a test sees.
type (
	fakePoll      struct{}
	fakeHeartbeat struct{}
	fakeComplete  struct{}
	fakeFail      struct{}
	fakeLogs      struct{}
)

func (fakePoll) Handle(context.Context, executionapp.PollInput) ([]executionapp.Task, error) {
	return []executionapp.Task{}, nil
}
func (fakeHeartbeat) Handle(_ context.Context, in executionapp.HeartbeatInput) (executionapp.HeartbeatAnswer, error) {
	return executionapp.HeartbeatAnswer{TaskID: in.TaskID, LeaseUntil: time.Now(), Deadline: time.Now()}, nil
}
func (fakeComplete) Handle(_ context.Context, in executionapp.CompleteInput) (executionapp.TaskAnswered, error) {
	return executionapp.TaskAnswered{TaskID: in.TaskID, Attempt: 1, Outcome: executionapp.TaskCompleted}, nil
}
func (fakeFail) Handle(_ context.Context, in executionapp.FailInput) (executionapp.TaskAnswered, error) {
	return executionapp.TaskAnswered{TaskID: in.TaskID, Attempt: 1, Outcome: executionapp.TaskFailed}, nil
}
func (fakeLogs) Handle(_ context.Context, in executionapp.TaskLogInput) (int, error) {
	return len(in.Lines), nil
}

var fakeWorkerUseCases = WorkerUseCases{Poll: fakePoll{}, Heartbeat: fakeHeartbeat{}, Complete: fakeComplete{}, Fail: fakeFail{}, Logs: fakeLogs{}}

// The worker bodies: each bad member is a 400 that names it, before any use
// case runs; a good body goes through.
func TestWorkerBodies(t *testing.T) {
	t.Parallel()
	srv, _, _ := strictServer(t, Config{BodyLimit: 1 << 16})
	h := srv.Handler()
	for _, c := range []struct {
		target, body string
		status       int
		path         string
	}{
		{"/api/worker/v1/poll", `{"queues":["a"],"wait":30,"max":100}`, 200, ""},
		{"/api/worker/v1/poll", `{"queues":[]}`, 400, "body.queues"},
		{"/api/worker/v1/poll", `{"queues":["A"]}`, 400, "body.queues.0"},
		{"/api/worker/v1/poll", `{"queues":["a"],"wait":31}`, 400, "body.wait"},
		{"/api/worker/v1/poll", `{"queues":["a"],"max":101}`, 400, "body.max"},
		{"/api/worker/v1/poll", `{"queues":["a"],"max":0}`, 400, "body.max"},
		{"/api/worker/v1/poll", `{"queues":["a"],"extra":1}`, 400, "body"},
		{"/api/worker/v1/poll", `{"queues":["a"],"queues":["b"]}`, 400, "body.queues"},
		{"/api/worker/v1/tasks/7/complete", `{"leaseToken":"3","output":{"n":1},"usage":{"input":1,"output":2,"tokensKnown":true},"cost":{"usd":0.1,"usdKnown":true,"provenance":"reported"}}`, 200, ""},
		{"/api/worker/v1/tasks/7/complete", `{"leaseToken":"3"}`, 400, "body.output"},
		{"/api/worker/v1/tasks/7/complete", `{"leaseToken":"3","output":1,"usage":{"input":-1,"output":2,"tokensKnown":true}}`, 400, "body.usage.input"},
		{"/api/worker/v1/tasks/7/complete", `{"leaseToken":"3","output":1,"usage":{"input":1,"output":2}}`, 400, "body.usage.tokensKnown"},
		{"/api/worker/v1/tasks/7/complete", `{"leaseToken":"3","output":1,"cost":{"usd":1,"usdKnown":true}}`, 400, "body.cost.provenance"},
		{"/api/worker/v1/tasks/7/complete", `{"leaseToken":"3","output":1e400}`, 400, "body.output"},
		{"/api/worker/v1/tasks/0/complete", `{"leaseToken":"3","output":1}`, 400, "path.taskId"},
		{"/api/worker/v1/tasks/x/heartbeat", `{"leaseToken":"3"}`, 400, "path.taskId"},
		{"/api/worker/v1/tasks/7/heartbeat", `{}`, 400, "body.leaseToken"},
		{"/api/worker/v1/tasks/7/fail", `{"leaseToken":"3","error":"boom","retryable":true}`, 200, ""},
		{"/api/worker/v1/tasks/7/fail", `{"leaseToken":"3","error":"","retryable":true}`, 400, "body.error"},
		{"/api/worker/v1/tasks/7/fail", `{"leaseToken":"3","error":"boom"}`, 400, "body.retryable"},
		{"/api/worker/v1/tasks/7/logs", `{"leaseToken":"3","lines":[{"message":"hi"}]}`, 200, ""},
		{"/api/worker/v1/tasks/7/logs", `{"leaseToken":"3","lines":[]}`, 400, "body.lines"},
		{"/api/worker/v1/tasks/7/logs", `{"leaseToken":"3","lines":[{"level":"loud","message":"hi"}]}`, 400, "body.lines.0.level"},
		{"/api/worker/v1/tasks/7/logs", `{"leaseToken":"3","lines":[{"message":"` + strings.Repeat("x", 4097) + `"}]}`, 400, "body.lines.0.message"},
	} {
		a := send(h, "POST", c.target, jsonCT, []byte(c.body))
		if a.status != c.status {
			t.Errorf("POST %s %s: %d %s, want %d", c.target, c.body, a.status, a.body, c.status)
			continue
		}
		if c.status == http.StatusBadRequest {
			checkWords(t, c.target, a)
			if paths := a.paths(); len(paths) == 0 || !containsPrefix(paths, c.path) {
				t.Errorf("POST %s %s: violations at %v, want one at %s", c.target, c.body, paths, c.path)
			}
		}
	}
}

func containsPrefix(paths []string, want string) bool {
	for _, p := range paths {
		if strings.HasPrefix(p, want) {
			return true
		}
	}
	return false
}
