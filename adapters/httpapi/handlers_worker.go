package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// WorkerUseCases are the calls of the worker API (/api/worker/v1): remote
// workers taking and answering the tasks of TASK nodes.
type WorkerUseCases struct {
	Poll interface {
		Handle(context.Context, executionapp.PollInput) ([]executionapp.Task, error)
	}
	Heartbeat interface {
		Handle(context.Context, executionapp.HeartbeatInput) (executionapp.HeartbeatAnswer, error)
	}
	Complete interface {
		Handle(context.Context, executionapp.CompleteInput) (executionapp.TaskAnswered, error)
	}
	Fail interface {
		Handle(context.Context, executionapp.FailInput) (executionapp.TaskAnswered, error)
	}
	Logs interface {
		Handle(context.Context, executionapp.TaskLogInput) (int, error)
	}
}

func (u WorkerUseCases) enabled() error {
	if u.Poll == nil || u.Heartbeat == nil || u.Complete == nil || u.Fail == nil || u.Logs == nil {
		return fault.Newf(fault.ErrNotFound, "the worker API is not enabled on this server")
	}
	return nil
}

// worker is the caller as the worker use cases know it.
func worker(ctx context.Context) executionapp.Worker {
	p := authn.PrincipalFrom(ctx)
	name := p.Name()
	if p.Anonymous() {
		name = "anonymous" // open mode: worker:anonymous
	}
	return executionapp.Worker{Name: name, Queues: principalQueues(p), Sessions: p.Sessions()}
}

func (h *handlers) PollTasks(ctx context.Context, req restapi.PollTasksRequestObject) (restapi.PollTasksResponseObject, error) {
	if err := h.uc.Worker.enabled(); err != nil {
		return nil, err
	}
	b := req.Body
	// A server that stops ends its long polls with no task, at once: the
	// worker polls again, here after a restart or on another instance.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopping := make(chan bool, 1)
	go func() {
		select {
		case <-h.done:
			cancel()
			stopping <- true
		case <-pctx.Done():
			stopping <- false
		}
	}()
	tasks, err := h.uc.Worker.Poll.Handle(pctx, executionapp.PollInput{Worker: worker(ctx), Queues: b.Queues,
		Wait: seconds(b.Wait), Max: b.Max})
	cancel()
	if <-stopping && err != nil && ctx.Err() == nil {
		tasks, err = []executionapp.Task{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := restapi.TaskList{Tasks: make([]restapi.Task, len(tasks))}
	for i, t := range tasks {
		out.Tasks[i] = restapi.Task{TaskId: t.TaskID, LeaseToken: t.LeaseToken, Queue: t.Queue, SessionId: t.SessionID,
			WorkflowId: t.WorkflowID, ExecutionId: t.ExecutionID, NodeId: t.NodeID, Attempt: t.Attempt, Payload: t.Payload,
			IdempotencyKey: t.IdempotencyKey, Deadline: t.Deadline.UTC(), LeaseUntil: t.LeaseUntil.UTC(),
			HeartbeatTimeoutMs: int(t.Lease.Milliseconds())}
	}
	return restapi.PollTasks200JSONResponse(out), nil
}

func (h *handlers) HeartbeatTask(ctx context.Context, req restapi.HeartbeatTaskRequestObject) (restapi.HeartbeatTaskResponseObject, error) {
	if err := h.uc.Worker.enabled(); err != nil {
		return nil, err
	}
	a, err := h.uc.Worker.Heartbeat.Handle(ctx, executionapp.HeartbeatInput{Worker: worker(ctx), TaskID: req.TaskId, LeaseToken: req.Body.LeaseToken,
		Progress: req.Body.Progress})
	if err != nil {
		return nil, err
	}
	return restapi.HeartbeatTask200JSONResponse{TaskId: a.TaskID, Cancelled: a.Cancelled, Reason: a.Reason,
		LeaseUntil: a.LeaseUntil.UTC(), Deadline: a.Deadline.UTC()}, nil
}

func (h *handlers) CompleteTask(ctx context.Context, req restapi.CompleteTaskRequestObject) (restapi.CompleteTaskResponseObject, error) {
	if err := h.uc.Worker.enabled(); err != nil {
		return nil, err
	}
	b := req.Body
	a, err := h.uc.Worker.Complete.Handle(ctx, executionapp.CompleteInput{Worker: worker(ctx), TaskID: req.TaskId,
		LeaseToken: b.LeaseToken, Output: b.Output, Port: b.Port, Usage: usageData(b.Usage), Cost: costData(b.Cost)})
	if errors.Is(err, executionapp.ErrOutputRefused) {
		// Applied, as a failure: 422 says so, with what became of the attempt.
		return restapi.CompleteTask422ApplicationProblemPlusJSONResponse{Type: typeInvalid, Title: "Output refused",
			Status: http.StatusUnprocessableEntity, Detail: err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	return restapi.CompleteTask200JSONResponse(taskAnswerToAPI(a)), nil
}

func (h *handlers) FailTask(ctx context.Context, req restapi.FailTaskRequestObject) (restapi.FailTaskResponseObject, error) {
	if err := h.uc.Worker.enabled(); err != nil {
		return nil, err
	}
	b := req.Body
	a, err := h.uc.Worker.Fail.Handle(ctx, executionapp.FailInput{Worker: worker(ctx), TaskID: req.TaskId,
		LeaseToken: b.LeaseToken, Error: b.Error, Retryable: b.Retryable})
	if err != nil {
		return nil, err
	}
	return restapi.FailTask200JSONResponse(taskAnswerToAPI(a)), nil
}

func (h *handlers) AppendTaskLogs(ctx context.Context, req restapi.AppendTaskLogsRequestObject) (restapi.AppendTaskLogsResponseObject, error) {
	if err := h.uc.Worker.enabled(); err != nil {
		return nil, err
	}
	lines := make([]executionapp.LogLine, len(req.Body.Lines))
	for i, l := range req.Body.Lines {
		lines[i] = executionapp.LogLine{Level: string(l.Level), Message: l.Message}
	}
	n, err := h.uc.Worker.Logs.Handle(ctx, executionapp.TaskLogInput{Worker: worker(ctx), TaskID: req.TaskId,
		LeaseToken: req.Body.LeaseToken, Lines: lines})
	if err != nil {
		return nil, err
	}
	return restapi.AppendTaskLogs200JSONResponse{Appended: n}, nil
}

func taskAnswerToAPI(a executionapp.TaskAnswered) restapi.TaskAnswer {
	return restapi.TaskAnswer{TaskId: a.TaskID, Attempt: a.Attempt, Outcome: restapi.TaskAnswerOutcome(a.Outcome)}
}

// usageData is the usage a worker reported, as a JSON object for the use
// case's parser (execution.ParseUsage); nil when absent (absent is not
// zero).
func usageData(u *restapi.TaskUsage) map[string]any {
	if u == nil {
		return nil
	}
	d := map[string]any{"input": u.Input, "output": u.Output, "tokensKnown": u.TokensKnown}
	for name, v := range map[string]*int64{"cacheRead": u.CacheRead, "cacheWrite": u.CacheWrite, "reasoning": u.Reasoning} {
		if v != nil {
			d[name] = *v
		}
	}
	return d
}

// costData is the cost a worker reported, as a JSON object for the use
// case's parser (execution.ParseCost); nil when absent.
func costData(c *restapi.TaskCost) map[string]any {
	if c == nil {
		return nil
	}
	return map[string]any{"usd": c.Usd, "usdKnown": c.UsdKnown, "provenance": string(c.Provenance)}
}

// seconds is a whole number of seconds from the API as a duration.
func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// workerOp is the access operation of the worker API.
const workerOp = access.WorkTasks

// principalQueues is the queue list of the caller's key (nil: every queue).
func principalQueues(p access.Principal) []string { return p.Queues() }
