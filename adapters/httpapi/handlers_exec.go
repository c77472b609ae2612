package httpapi

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// ExecutionUseCases are the execution calls the REST handlers make.
type ExecutionUseCases struct {
	Start interface {
		Handle(context.Context, executionapp.StartInput) (executionapp.StartResult, error)
	}
	Webhook interface {
		Handle(context.Context, executionapp.WebhookInput) (executionapp.StartResult, error)
	}
	Get interface {
		Handle(context.Context, string, string) (executionapp.ExecutionView, error)
	}
	List interface {
		Handle(context.Context, executionapp.HistoryQuery, string) (executionapp.HistoryPage, error)
	}
	Logs interface {
		Handle(context.Context, executionapp.TailInput) (executionapp.TailResult, error)
	}
	Control interface {
		Handle(context.Context, executionapp.ControlRequest) (executionapp.ControlResult, error)
	}
	Inputs interface {
		Handle(context.Context, executionapp.InputQuery) (executionapp.InputPage, error)
	}
	Answer interface {
		Handle(context.Context, executionapp.AnswerRequest) (executionapp.Input, error)
	}
	Events interface {
		Check(context.Context, string, string) error
		CheckPosition(context.Context, executionapp.EventQuery) error
		Handle(context.Context, executionapp.EventQuery) ([]executionapp.StoredEvent, error)
	}
}

// actor is who sent the request, as the access gate authenticated it:
// "key:<name>", or "anonymous" in open mode.
func actor(ctx context.Context) string { return authn.PrincipalFrom(ctx).Actor() }

// visible is the session filter of the caller: nil when it sees every
// session.
func visible(ctx context.Context) func(string) bool {
	p := authn.PrincipalFrom(ctx)
	if !p.Limited() {
		return nil
	}
	return p.SessionVisible
}

// keySessions is the session list of the caller's key, or nil when it sees
// every session: the scope of event positions and cross-session lists.
func keySessions(ctx context.Context) []string {
	if p := authn.PrincipalFrom(ctx); p.Limited() {
		return p.Sessions()
	}
	return nil
}

// channel is the channel recorded for a REST request. The server knows only
// that it came over REST; a Yukta-Channel the client sends is its own word,
// recorded as a claim (docs/security.md#channels).
func channel(c string) string {
	if c == "cli" {
		return ClaimedCLI
	}
	return "rest"
}

func (h *handlers) StartExecution(ctx context.Context, req restapi.StartExecutionRequestObject) (restapi.StartExecutionResponseObject, error) {
	var payload any
	var wait float64
	if req.Body != nil {
		payload, wait = req.Body.Payload, float64(req.Body.Wait)
	}
	res, err := h.ex.Start.Handle(ctx, executionapp.StartInput{SessionID: req.SessionId, WorkflowID: req.WorkflowId, Payload: payload,
		IdempotencyKey: req.Params.IdempotencyKey, Trigger: executionapp.TriggerManual, Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel)),
		WaitSecs: wait})
	if err != nil {
		return nil, err
	}
	if res.Review != nil && res.ExecutionID == "" {
		return restapi.StartExecution202JSONResponse(ticketToAPI(*res.Review)), nil
	}
	body := restapi.StartResult{ExecutionId: res.ExecutionID, Status: restapi.ExecutionStatus(res.Status)}
	if res.Waited != nil {
		body.Execution = executionToAPI(res.Waited.ExecutionView)
	}
	if res.Created {
		return restapi.StartExecution201JSONResponse(body), nil
	}
	return restapi.StartExecution200JSONResponse(body), nil
}

func (h *handlers) PostWebhook(ctx context.Context, req restapi.PostWebhookRequestObject) (restapi.PostWebhookResponseObject, error) {
	var body []byte
	if req.Body != nil {
		body = *req.Body
	}
	// The body becomes the run's payload: it must be a value the store keeps
	// exactly (no U+0000, valid UTF-8, no repeated keys, numbers in range).
	if len(bytes.TrimSpace(body)) > 0 {
		if err := jsonvalue.Validate(body, "body"); err != nil {
			return nil, strictError(err)
		}
	}
	res, err := h.ex.Webhook.Handle(ctx, executionapp.WebhookInput{SessionID: req.SessionId, WorkflowID: req.WorkflowId, Body: body,
		Signature: req.Params.XYuktaSignature, Timestamp: req.Params.XYuktaTimestamp, IdempotencyKey: req.Params.IdempotencyKey, Actor: actor(ctx)})
	if errors.Is(err, executionapp.ErrBadSignature) {
		p := restapi.Problem{Detail: err.Error()}
		p.Status, p.Title, p.Type = 401, "Unauthorized", "urn:yukta:problem:bad-signature"
		return restapi.PostWebhook401ApplicationProblemPlusJSONResponse(p), nil
	}
	if err != nil {
		return nil, err
	}
	out := restapi.StartResult{ExecutionId: res.ExecutionID, Status: restapi.ExecutionStatus(res.Status)}
	if res.Created {
		return restapi.PostWebhook201JSONResponse(out), nil
	}
	return restapi.PostWebhook200JSONResponse(out), nil
}

func (h *handlers) ListExecutions(ctx context.Context, req restapi.ListExecutionsRequestObject) (restapi.ListExecutionsResponseObject, error) {
	page, err := h.ex.List.Handle(ctx, executionapp.HistoryQuery{SessionID: req.SessionId, WorkflowID: req.Params.WorkflowId,
		Status: execution.Status(req.Params.Status), Limit: req.Params.Limit}, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if len(page.Executions) == 0 {
		// An empty history of an unknown session must not pass for an empty one.
		if _, err := h.uc.GetSession.Handle(ctx, req.SessionId); err != nil {
			return nil, err
		}
	}
	out := restapi.ListExecutions200JSONResponse{Executions: make([]restapi.ExecutionSummary, len(page.Executions)), NextCursor: page.NextCursor}
	for i, e := range page.Executions {
		out.Executions[i] = restapi.ExecutionSummary{ExecutionId: e.ID, WorkflowId: e.WorkflowID, Status: restapi.ExecutionStatus(e.Status),
			StartedAt: e.StartedAt.UTC(), EndedAt: utc(e.EndedAt), RestartOf: e.RestartOf, Actor: e.Actor, Channel: e.Channel}
	}
	return out, nil
}

func (h *handlers) GetExecution(ctx context.Context, req restapi.GetExecutionRequestObject) (restapi.GetExecutionResponseObject, error) {
	v, err := h.ex.Get.Handle(ctx, req.SessionId, req.ExecutionId)
	if err != nil {
		return nil, err
	}
	return restapi.GetExecution200JSONResponse(executionToAPI(v)), nil
}

func (h *handlers) GetExecutionLogs(ctx context.Context, req restapi.GetExecutionLogsRequestObject) (restapi.GetExecutionLogsResponseObject, error) {
	res, err := h.ex.Logs.Handle(ctx, executionapp.TailInput{SessionID: req.SessionId, ExecutionID: req.ExecutionId,
		TailLines: req.Params.TailLines, FilterPattern: req.Params.FilterPattern})
	if err != nil {
		return nil, err
	}
	out := restapi.GetExecutionLogs200JSONResponse{ExecutionId: res.ExecutionID, TotalMatched: res.TotalMatched,
		ReturnedLines: res.ReturnedLines, Complete: res.Complete, Lines: make([]restapi.LogLine, len(res.Lines))}
	for i, l := range res.Lines {
		out.Lines[i] = restapi.LogLine{Seq: l.Seq, At: l.At.UTC(), Level: l.Level, NodeId: l.NodeID, Message: l.Message}
	}
	return out, nil
}

// control applies a command; the use case checks it, records it and waits.
// A command a supervisor reviews comes back as its review's ticket (202)
// until the review has settled.
func (h *handlers) control(ctx context.Context, r executionapp.ControlRequest) (restapi.CommandResult, *restapi.ReviewTicket, error) {
	r.Actor = actor(ctx)
	res, err := h.ex.Control.Handle(ctx, r)
	if err != nil {
		return restapi.CommandResult{}, nil, err
	}
	if res.Status == executionapp.CommandInReview && res.Review != nil {
		t := ticketToAPI(*res.Review)
		return restapi.CommandResult{}, &t, nil
	}
	out := restapi.CommandResult{CommandId: res.CommandID, Status: restapi.CommandResultStatus(res.Status),
		ResultExecutionIds: nonNilStrings(res.ResultExecutionIDs), Message: res.Message}
	for _, o := range res.Waited {
		out.Executions = append(out.Executions, executionToAPI(o.ExecutionView))
	}
	return out, nil, nil
}

func (h *handlers) ControlExecution(ctx context.Context, req restapi.ControlExecutionRequestObject) (restapi.ControlExecutionResponseObject, error) {
	b := req.Body
	res, held, err := h.control(ctx, executionapp.ControlRequest{SessionID: req.SessionId, ExecutionID: req.ExecutionId,
		Scope: execution.ScopeExecution, Action: string(b.Action), Mode: string(b.Mode), FromNodeID: b.FromNodeId, Reason: b.Reason,
		Key: b.Key, IfStatus: b.IfStatus, WaitSecs: float64(b.Wait), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	if held != nil {
		return restapi.ControlExecution202JSONResponse(*held), nil
	}
	return restapi.ControlExecution200JSONResponse(res), nil
}

func (h *handlers) ControlNode(ctx context.Context, req restapi.ControlNodeRequestObject) (restapi.ControlNodeResponseObject, error) {
	b := req.Body
	res, held, err := h.control(ctx, executionapp.ControlRequest{SessionID: req.SessionId, ExecutionID: req.ExecutionId,
		Scope: execution.ScopeNode, Action: string(b.Action), NodeID: req.NodeId, Immediate: b.Immediate, Reason: b.Reason,
		Key: b.Key, IfStatus: b.IfStatus, WaitSecs: float64(b.Wait), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	if held != nil {
		return restapi.ControlNode202JSONResponse(*held), nil
	}
	return restapi.ControlNode200JSONResponse(res), nil
}

func (h *handlers) SetBreakpoint(ctx context.Context, req restapi.SetBreakpointRequestObject) (restapi.SetBreakpointResponseObject, error) {
	b := req.Body
	res, held, err := h.control(ctx, executionapp.ControlRequest{SessionID: req.SessionId, ExecutionID: req.ExecutionId,
		Scope: execution.ScopeNode, Action: string(execution.ActionBreakpoint), NodeID: req.NodeId,
		Breakpoint: &executionapp.BreakpointRequest{Field: b.Field, Equals: b.Equals, HasEquals: b.Equals != nil, Condition: b.Condition},
		Reason:     b.Reason, Key: b.Key, Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	if held != nil {
		return restapi.SetBreakpoint202JSONResponse(*held), nil
	}
	return restapi.SetBreakpoint200JSONResponse(res), nil
}

func (h *handlers) ClearBreakpoint(ctx context.Context, req restapi.ClearBreakpointRequestObject) (restapi.ClearBreakpointResponseObject, error) {
	res, held, err := h.control(ctx, executionapp.ControlRequest{SessionID: req.SessionId, ExecutionID: req.ExecutionId,
		Scope: execution.ScopeNode, Action: string(execution.ActionBreakpointClear), NodeID: req.NodeId,
		Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	if held != nil {
		return restapi.ClearBreakpoint202JSONResponse(*held), nil
	}
	return restapi.ClearBreakpoint200JSONResponse(res), nil
}

func (h *handlers) StopWorkflow(ctx context.Context, req restapi.StopWorkflowRequestObject) (restapi.StopWorkflowResponseObject, error) {
	var b restapi.StopAllRequest
	if req.Body != nil {
		b = *req.Body
	}
	res, held, err := h.control(ctx, executionapp.ControlRequest{SessionID: req.SessionId, WorkflowID: req.WorkflowId,
		Scope: execution.ScopeWorkflow, Action: string(execution.ActionStopAll), Mode: string(b.Mode), Reason: b.Reason, Key: b.Key,
		WaitSecs: float64(b.Wait), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	if held != nil {
		return restapi.StopWorkflow202JSONResponse(*held), nil
	}
	return restapi.StopWorkflow200JSONResponse(res), nil
}

func (h *handlers) ListInputs(ctx context.Context, req restapi.ListInputsRequestObject) (restapi.ListInputsResponseObject, error) {
	q := executionapp.InputQuery{SessionID: req.Params.SessionId, Sessions: keySessions(ctx), OnlyOpen: req.Params.Status != "all",
		Limit: req.Params.Limit, Cursor: req.Params.Cursor}
	if req.Params.ExecutionId != "" {
		q.ExecutionID = req.Params.ExecutionId
		if q.SessionID == "" {
			return nil, &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "query.sessionId", Message: "is required with executionId"}}}
		}
	}
	if q.SessionID != "" {
		if _, err := h.uc.GetSession.Handle(ctx, q.SessionID); err != nil {
			return nil, err
		}
	}
	page, err := h.ex.Inputs.Handle(ctx, q)
	if err != nil {
		return nil, err
	}
	out := restapi.ListInputs200JSONResponse{Inputs: make([]restapi.Input, 0, len(page.Inputs)), NextCursor: page.NextCursor}
	see := visible(ctx)
	for _, in := range page.Inputs {
		if see == nil || see(in.SessionID) {
			out.Inputs = append(out.Inputs, inputToAPI(in))
		}
	}
	return out, nil
}

// AnswerInput answers an input of whichever session it belongs to
// (scopeResource): the role is checked here, before anything is looked up,
// and the use case answers an input outside the key's sessions, or outside
// the sessionId the caller named, exactly as one that does not exist.
func (h *handlers) AnswerInput(ctx context.Context, req restapi.AnswerInputRequestObject) (restapi.AnswerInputResponseObject, error) {
	if err := authorizeScoped(ctx, "answerInput"); err != nil {
		return nil, err
	}
	in, err := h.ex.Answer.Handle(ctx, executionapp.AnswerRequest{InputID: req.InputId.String(), SessionID: req.Params.SessionId,
		Answer: req.Body.Answer, Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel)), SessionAllowed: visible(ctx)})
	if err != nil {
		return nil, err
	}
	return restapi.AnswerInput200JSONResponse(inputToAPI(in)), nil
}

func inputToAPI(in executionapp.Input) restapi.Input {
	return restapi.Input{InputId: in.ID, SessionId: in.SessionID, ExecutionId: in.ExecutionID, NodeId: in.NodeID, Prompt: in.Prompt,
		Schema: in.Schema, Status: restapi.InputStatus(in.Status), Answer: in.Answer, AnsweredBy: in.AnsweredBy,
		CreatedAt: in.CreatedAt.UTC(), AnsweredAt: utc(in.AnsweredAt)}
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (h *handlers) PauseWorkflow(ctx context.Context, req restapi.PauseWorkflowRequestObject) (restapi.PauseWorkflowResponseObject, error) {
	res, held, err := h.workflowPause(ctx, req.SessionId, req.WorkflowId, execution.ActionPauseWorkflow, req.Body, string(req.Params.YuktaChannel))
	switch {
	case err != nil:
		return nil, err
	case held != nil:
		return restapi.PauseWorkflow202JSONResponse(*held), nil
	}
	return restapi.PauseWorkflow200JSONResponse(res), nil
}

func (h *handlers) ResumeWorkflow(ctx context.Context, req restapi.ResumeWorkflowRequestObject) (restapi.ResumeWorkflowResponseObject, error) {
	res, held, err := h.workflowPause(ctx, req.SessionId, req.WorkflowId, execution.ActionResumeWorkflow, req.Body, string(req.Params.YuktaChannel))
	switch {
	case err != nil:
		return nil, err
	case held != nil:
		return restapi.ResumeWorkflow202JSONResponse(*held), nil
	}
	return restapi.ResumeWorkflow200JSONResponse(res), nil
}

// workflowPause sends PAUSE_WORKFLOW or RESUME_WORKFLOW through Control.
func (h *handlers) workflowPause(ctx context.Context, sid, wid string, action execution.Action, body *restapi.WorkflowPauseRequest,
	ch string) (restapi.CommandResult, *restapi.ReviewTicket, error) {
	var b restapi.WorkflowPauseRequest
	if body != nil {
		b = *body
	}
	return h.control(ctx, executionapp.ControlRequest{SessionID: sid, WorkflowID: wid, Scope: execution.ScopeWorkflow,
		Action: string(action), Reason: b.Reason, Key: b.Key, Channel: channel(ch)})
}
