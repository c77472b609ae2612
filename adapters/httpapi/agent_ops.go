package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// The agent API's operations, declared once. Both of its doors are made
// from this table: the REST routes under AgentBase (registerAgent) and the
// tools of its MCP endpoint (mcpserver.NewAgent), so the two offer the same
// operations, read the same parameters with the same checks and give the
// same answers (the answer is built here, once, and each door only writes
// it). docs/agent-api.md lists every operation of the table (a test holds
// the doc, the routes and tools/list to it).

// AgentParam is a parameter of an agent operation: a REST path or query
// parameter, and a property of the MCP tool's arguments.
type AgentParam struct {
	Name string
	// In is "path" or "query".
	In string
	// Tool names the argument in MCP when it differs from Name.
	Tool string
	// Type is "string", "integer" or "number".
	Type        string
	Description string
	// Min and Max bound an integer or a number; MaxLength a string.
	Min, Max  float64
	MaxLength int
	// ExecutionID: the value must be an execution id.
	ExecutionID bool
}

// ToolName is the argument's name in MCP.
func (p AgentParam) ToolName() string {
	if p.Tool != "" {
		return p.Tool
	}
	return p.Name
}

// AgentMember is a member of an operation's JSON body (REST) and an
// argument beside the parameters (MCP), which the door gathers into the
// same body.
type AgentMember struct {
	Name string
	// Type is a JSON Schema type ("string", "object"), or "" for any value.
	Type        string
	Description string
	Required    bool
}

// AgentOp is one operation of the agent API.
type AgentOp struct {
	// ID is the operationId in api/openapi.yaml.
	ID string
	// Method and Path are the REST route, Path under AgentBase with
	// {name} for a path parameter.
	Method, Path string
	// Tool is the MCP tool; "" only for Stream, which MCP cannot carry
	// (it has no server push: read_signals long-polls the same signals).
	Tool string
	// Stream: served by REST alone (Server-Sent Events).
	Stream bool
	// Title and Description are the tool's; Description is also the
	// operation's line in docs/agent-api.md.
	Title, Description string
	// ReadOnly: it changes nothing.
	ReadOnly bool
	Params   []AgentParam
	Body     []AgentMember
	call     func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error)
}

// AgentRequest is one call of an operation, as a door read it.
type AgentRequest struct {
	Supervisor supervisor.Supervisor
	// Token is the credential presented (the watched reads ask again
	// whether it still opens the API).
	Token string
	// Values are the parameters given, by Name, in their text form.
	Values map[string]string
	// Body is the JSON body (REST) or the body members of the arguments
	// gathered into one object (MCP); nil when there is none.
	Body []byte
	// Where names a parameter in a violation ("query.limit" on REST,
	// "limit" in MCP).
	Where func(AgentParam) string

	ints map[string]int
	nums map[string]float64
}

// Call checks the parameters and runs the operation: the status and the
// answer to write (the same for both doors), or the error.
func (op AgentOp) Call(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
	if op.call == nil {
		return 0, nil, fault.Newf(fault.ErrUnavailable, "%s is not served here", op.ID)
	}
	if err := op.readParams(r); err != nil {
		return 0, nil, err
	}
	return op.call(ctx, uc, r)
}

// readParams checks each parameter given against its declaration.
func (op AgentOp) readParams(r *AgentRequest) error {
	r.ints, r.nums = map[string]int{}, map[string]float64{}
	var vs []fault.Violation
	for _, p := range op.Params {
		v, ok := r.Values[p.Name]
		if !ok {
			continue
		}
		if msg := p.check(v, r); msg != "" {
			vs = append(vs, fault.Violation{Path: r.Where(p), Message: msg})
		}
	}
	if len(vs) > 0 {
		return &fault.ValidationError{Subject: "request", Violations: vs}
	}
	return nil
}

func (p AgentParam) check(v string, r *AgentRequest) string {
	switch p.Type {
	case "integer":
		n, err := strconv.Atoi(v)
		if err != nil || float64(n) < p.Min || float64(n) > p.Max {
			return fmt.Sprintf("%q must be an integer from %g to %g", clipID(v), p.Min, p.Max)
		}
		r.ints[p.Name] = n
	case "number":
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || !(n >= p.Min && n <= p.Max) {
			return fmt.Sprintf("%q must be a number from %g to %g", clipID(v), p.Min, p.Max)
		}
		r.nums[p.Name] = n
	default:
		switch {
		case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
			return "must be valid UTF-8 text without U+0000"
		case p.MaxLength > 0 && utf8.RuneCountInString(v) > p.MaxLength:
			return fmt.Sprintf("must be at most %d characters", p.MaxLength)
		case p.ExecutionID && !execution.ValidID(v):
			return fmt.Sprintf("%q is not an execution id (a UUID such as 0193b7a0-0000-7000-8000-000000000000); list the runs with GET %s/executions (MCP: list_owned_executions)", clipID(v), AgentBase)
		}
	}
	return ""
}

func (r *AgentRequest) str(name string) string { return r.Values[name] }

// AgentOperations returns the table.
func AgentOperations() []AgentOp { return append([]AgentOp(nil), agentOps...) }

var (
	executionIDParam = AgentParam{Name: "executionId", In: "path", Type: "string", ExecutionID: true,
		Description: "an execution of your units, from list_owned_executions or a signal"}
	afterParam = AgentParam{Name: "after", In: "query", Type: "string", MaxLength: 48,
		Description: "the cursor of the last signal you handled; leave out to start where your supervisor was created"}
	pageCursorParam = AgentParam{Name: "cursor", In: "query", Type: "string", MaxLength: 200,
		Description: "the nextCursor of the previous page; leave out for the first"}
)

var agentOps = []AgentOp{
	{ID: "agentSelf", Method: http.MethodGet, Path: "/self", Tool: "get_self", Title: "Who am I", ReadOnly: true,
		Description: "Your supervisor: id, name, engine, owned units, parent chain, allowed commands, the commands you review, contract version.",
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Self == nil {
				return unserved("self")
			}
			s, err := uc.Self.Handle(ctx, r.Supervisor)
			if err != nil {
				return 0, nil, err
			}
			sup := s.Supervisor
			owns := make([]string, 0, len(sup.Owns()))
			for _, u := range sup.Owns() {
				owns = append(owns, u.String())
			}
			out := map[string]any{"id": sup.ID(), "name": sup.Name(), "engine": sup.EngineType(), "owns": owns,
				"parentId": sup.ParentID(), "parents": nonNilStrings(s.Parents), "allowedCommands": commandNames(sup.AllowedCommands()),
				"reviews": commandNames(sup.Reviews()), "contract": AgentContract}
			if len(s.Warnings) > 0 {
				out["warnings"] = s.Warnings
			}
			return http.StatusOK, out, nil
		}},
	{ID: "agentSnapshot", Method: http.MethodGet, Path: "/snapshot", Tool: "get_snapshot", Title: "Read a snapshot", ReadOnly: true,
		Description: "The owned unfinished executions, their open inputs, the hold ledger and a cursor to read signals on from: read it when you start.",
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Snapshot == nil {
				return unserved("snapshot")
			}
			s, err := uc.Snapshot.Handle(ctx, r.Supervisor)
			return http.StatusOK, s, err
		}},
	{ID: "agentSignals", Method: http.MethodGet, Path: "/signals", Tool: "read_signals", Title: "Read signals", ReadOnly: true,
		Description: "Your signals after a cursor, waiting up to wait seconds (0 to 60) for the first: {signals, cursor}. Pass the cursor of the last signal you handled back as after.",
		Params: []AgentParam{afterParam,
			{Name: "wait", Tool: "waitSeconds", In: "query", Type: "number", Min: 0, Max: supervisorapp.MaxSignalWait.Seconds(),
				Description: "seconds (0 to 60) to wait for the first signal"},
			{Name: "limit", In: "query", Type: "integer", Min: 1, Max: supervisorapp.MaxSignalBatch, Description: "at most this many signals (1 to 500)"}},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Watched == nil {
				return unserved("signal reads")
			}
			page, err := uc.Watched.Handle(ctx, supervisorapp.AgentSignalsInput{Token: r.Token, After: r.str("after"),
				Wait: time.Duration(r.nums["wait"] * float64(time.Second)), Limit: r.ints["limit"]})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, map[string]any{"signals": page.Signals, "cursor": page.Cursor}, nil
		}},
	{ID: "agentEvents", Method: http.MethodGet, Path: "/events", Stream: true, Title: "Stream signals", ReadOnly: true,
		Description: "The signals of /signals as Server-Sent Events (id = cursor, event = kind, data = the envelope); resume with Last-Event-ID. REST only: MCP has no push, use read_signals.",
		Params:      []AgentParam{afterParam}},
	{ID: "agentExecutions", Method: http.MethodGet, Path: "/executions", Tool: "list_owned_executions", Title: "List owned executions", ReadOnly: true,
		Description: "The unfinished executions of your units, oldest first, one page at a time (200 by default, at most 500): {executions, truncated, nextCursor?}; follow nextCursor while truncated.",
		Params: []AgentParam{{Name: "limit", In: "query", Type: "integer", Min: 1, Max: supervisorapp.MaxAgentRunPage, Description: "page size (1 to 500, default 200)"},
			pageCursorParam},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Executions == nil {
				return unserved("executions")
			}
			page, err := uc.Executions.Handle(ctx, supervisorapp.AgentExecutionsInput{Supervisor: r.Supervisor, Limit: r.ints["limit"], Cursor: r.str("cursor")})
			if err != nil {
				return 0, nil, err
			}
			out := make([]map[string]any, len(page.Runs))
			for i, run := range page.Runs {
				out[i] = map[string]any{"executionId": run.ID, "sessionId": run.SessionID, "workflowId": run.WorkflowID, "status": string(run.Status),
					"startedAt": run.StartedAt.UTC()}
			}
			m := map[string]any{"executions": out, "truncated": page.Truncated}
			if page.NextCursor != "" {
				m["nextCursor"] = page.NextCursor
			}
			return http.StatusOK, m, nil
		}},
	{ID: "agentExecution", Method: http.MethodGet, Path: "/executions/{executionId}", Tool: "get_execution", Title: "Read an execution", ReadOnly: true,
		Description: "One execution of your units with its node statuses; a run outside your units reads as one that does not exist.",
		Params:      []AgentParam{executionIDParam},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Execution == nil {
				return unserved("executions")
			}
			v, err := uc.Execution.Handle(ctx, r.Supervisor, r.str("executionId"))
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, executionToAPI(v), nil
		}},
	{ID: "agentExecutionLogs", Method: http.MethodGet, Path: "/executions/{executionId}/logs", Tool: "get_execution_logs", Title: "Read an execution's log", ReadOnly: true,
		Description: "The newest log lines of an execution of your units (tail, at most 200), secret values removed, control characters escaped.",
		Params: []AgentParam{executionIDParam,
			{Name: "tail", In: "query", Type: "integer", Min: 1, Max: supervisorapp.MaxAgentLogLines, Description: "how many of the newest lines (1 to 200, default 200)"}},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Logs == nil {
				return unserved("logs")
			}
			res, err := uc.Logs.Handle(ctx, supervisorapp.AgentLogsInput{Supervisor: r.Supervisor, ExecutionID: r.str("executionId"), Tail: r.ints["tail"]})
			if err != nil {
				return 0, nil, err
			}
			lines := make([]map[string]any, len(res.Lines))
			for i, l := range res.Lines {
				lines[i] = map[string]any{"seq": l.Seq, "at": l.At.UTC(), "level": l.Level, "nodeId": l.NodeID, "message": escapeControl(l.Message)}
			}
			return http.StatusOK, map[string]any{"executionId": res.ExecutionID, "lines": lines, "totalLines": res.TotalMatched}, nil
		}},
	{ID: "agentWorkflow", Method: http.MethodGet, Path: "/workflows/{sessionId}/{workflowId}", Tool: "get_workflow", Title: "Read a workflow", ReadOnly: true,
		Description: "A workflow of your units: its nodes (id, type) and edges, enough to name nodes in directives; never node settings.",
		Params: []AgentParam{{Name: "sessionId", In: "path", Type: "string", MaxLength: 64, Description: "the session of the workflow"},
			{Name: "workflowId", In: "path", Type: "string", MaxLength: 64, Description: "the workflow"}},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Workflow == nil {
				return unserved("workflows")
			}
			sid, wid := r.str("sessionId"), r.str("workflowId")
			w, err := uc.Workflow.Handle(ctx, r.Supervisor, sid, wid)
			if err != nil {
				return 0, nil, err
			}
			nodes := make([]map[string]any, 0, len(w.Nodes()))
			for _, n := range w.Nodes() {
				nodes = append(nodes, map[string]any{"nodeId": n.ID(), "type": n.Type()})
			}
			edges := make([]map[string]any, 0, len(w.Edges()))
			for _, e := range w.Edges() {
				edges = append(edges, map[string]any{"source": e.Source(), "target": e.Target(), "sourcePort": e.SourcePort()})
			}
			return http.StatusOK, map[string]any{"sessionId": sid, "workflowId": wid, "nodes": nodes, "edges": edges}, nil
		}},
	{ID: "agentScheduler", Method: http.MethodGet, Path: "/scheduler", Tool: "get_scheduler", Title: "Read the scheduler", ReadOnly: true,
		Description: "The scheduler's limits and queue depth; only for a supervisor that owns the server.",
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Scheduler == nil {
				return unserved("the scheduler")
			}
			st, err := uc.Scheduler.Handle(ctx, r.Supervisor)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, SchedulerStatusToAPI(st), nil
		}},
	{ID: "agentInputs", Method: http.MethodGet, Path: "/inputs", Tool: "list_open_inputs", Title: "List open inputs", ReadOnly: true,
		Description: "Open input requests of your units, oldest first (at most 200; truncated says there are more); answer one with an AnswerInput directive.",
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Inputs == nil {
				return unserved("inputs")
			}
			ins, err := uc.Inputs.Handle(ctx, r.Supervisor)
			if err != nil {
				return 0, nil, err
			}
			out := make([]map[string]any, len(ins.Inputs))
			for i, in := range ins.Inputs {
				out[i] = map[string]any{"inputId": in.ID, "sessionId": in.SessionID, "workflowId": in.WorkflowID, "executionId": in.ExecutionID,
					"nodeId": in.NodeID, "prompt": escapeControl(in.Prompt), "createdAt": in.CreatedAt.UTC()}
			}
			return http.StatusOK, map[string]any{"inputs": out, "truncated": ins.Truncated}, nil
		}},
	{ID: "agentRefusals", Method: http.MethodGet, Path: "/refusals", Tool: "list_refusals", Title: "List your refusals", ReadOnly: true,
		Description: "Your refused directives, newest first (50 a page, at most 500): {refusals, nextCursor?}; follow nextCursor.",
		Params: []AgentParam{{Name: "limit", In: "query", Type: "integer", Min: 1, Max: supervisorapp.MaxRefusalPage, Description: "page size (1 to 500, default 50)"},
			pageCursorParam},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Refusals == nil {
				return unserved("refusals")
			}
			page, err := uc.Refusals.Handle(ctx, supervisorapp.RefusalsInput{SupervisorID: r.Supervisor.ID(), Limit: r.ints["limit"], Cursor: r.str("cursor")})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, refusalsToAPI(page), nil
		}},
	{ID: "agentDirective", Method: http.MethodPost, Path: "/directives", Tool: "send_directive", Title: "Send a directive",
		Description: `Send {key, cause?, reason?, ifStatus?, command}, command in the directive vocabulary such as {"type": "PauseWorkflow", "target": "execution:<id>"}; the same key returns the first answer and acts once.`,
		Body: []AgentMember{{Name: "key", Type: "string", Required: true, Description: "idempotency key: the same key acts once and returns the first answer"},
			{Name: "cause", Type: "string", Description: "what you reacted to, such as the signal's cursor"},
			{Name: "reason", Type: "string", Description: "why, recorded in the journal"},
			{Name: "ifStatus", Type: "string", Description: "act only if the target is in this status"},
			{Name: "command", Type: "object", Required: true, Description: `the command, such as {"type": "PauseWorkflow", "target": "execution:<id>"}`}},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Directives == nil {
				return unserved("directives")
			}
			d, err := supervisor.ParseDirective(r.Body)
			if err != nil {
				return 0, nil, err
			}
			res, err := uc.Directives.Handle(ctx, supervisorapp.SubmitInput{SupervisorID: r.Supervisor.ID(), Directive: d, Channel: "agent"})
			if err != nil {
				return 0, nil, err // refused (and recorded with the sender)
			}
			return http.StatusAccepted, res, nil
		}},
	{ID: "agentReview", Method: http.MethodPost, Path: "/reviews/{reviewId}", Tool: "answer_review", Title: "Answer a review",
		Description: "Your verdict on a REVIEW signal: {verdict: ALLOW, DENY (with a reason), REQUIRE_APPROVAL or NO_OPINION, reason?}.",
		Params:      []AgentParam{{Name: "reviewId", In: "path", Type: "string", MaxLength: 64, Description: "the reviewId of the REVIEW signal"}},
		Body: []AgentMember{{Name: "verdict", Type: "string", Required: true, Description: "ALLOW, DENY, REQUIRE_APPROVAL or NO_OPINION"},
			{Name: "reason", Type: "string", Description: "why; required with DENY"}},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Reviews == nil {
				return unserved("reviews")
			}
			v, err := supervisor.ParseVerdict(r.Body)
			if err != nil {
				return 0, nil, err
			}
			rv, err := uc.Reviews.Handle(ctx, supervisorapp.AnswerInput{ReviewID: r.str("reviewId"), SupervisorID: r.Supervisor.ID(), Verdict: v})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, reviewToAPI(rv), nil
		}},
	{ID: "agentDelegate", Method: http.MethodPost, Path: "/delegations", Tool: "delegate", Title: "Delegate",
		Description: "ESCALATE a request to your parent, or CONSULT the supervisor named by to: {kind, key, to?, payload}; 201 with it, 200 with the one the same key opened.",
		Body: []AgentMember{{Name: "kind", Type: "string", Required: true, Description: "ESCALATE or CONSULT"},
			{Name: "key", Type: "string", Required: true, Description: "the same key opens one delegation"},
			{Name: "to", Type: "string", Description: "the supervisor a CONSULT asks"},
			{Name: "payload", Required: true, Description: "what you ask, any JSON value"}},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.Delegate == nil {
				return unserved("delegations")
			}
			var in struct {
				Kind    string          `json:"kind"`
				Key     string          `json:"key"`
				To      string          `json:"to"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := agentBody(r.Body, &in, "kind", "key", "to", "payload"); err != nil {
				return 0, nil, err
			}
			d, created, err := uc.Delegate.Handle(ctx, supervisorapp.DelegateInput{SupervisorID: r.Supervisor.ID(),
				Kind: supervisor.DelegationKind(in.Kind), Key: in.Key, To: in.To, Payload: in.Payload, Channel: "agent"})
			if err != nil {
				return 0, nil, err
			}
			if created {
				return http.StatusCreated, delegationToAPI(d), nil
			}
			return http.StatusOK, delegationToAPI(d), nil
		}},
	{ID: "agentAnswerDelegation", Method: http.MethodPost, Path: "/delegations/{delegationId}", Tool: "answer_delegation", Title: "Answer a delegation",
		Description: "Answer a DELEGATED or CONSULTED signal sent to you: {answer}; once (a second answer is a conflict).",
		Params:      []AgentParam{{Name: "delegationId", In: "path", Type: "string", MaxLength: 64, Description: "the delegationId of the signal"}},
		Body:        []AgentMember{{Name: "answer", Required: true, Description: "your answer, any JSON value"}},
		call: func(ctx context.Context, uc *AgentUseCases, r *AgentRequest) (int, any, error) {
			if uc.AnswerDelegation == nil {
				return unserved("delegations")
			}
			var in struct {
				Answer json.RawMessage `json:"answer"`
			}
			if err := agentBody(r.Body, &in, "answer"); err != nil {
				return 0, nil, err
			}
			d, err := uc.AnswerDelegation.Handle(ctx, supervisorapp.AnswerDelegationInput{DelegationID: r.str("delegationId"),
				SupervisorID: r.Supervisor.ID(), Answer: in.Answer, Channel: "agent"})
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, delegationToAPI(d), nil
		}},
}

func unserved(what string) (int, any, error) {
	return 0, nil, fault.Newf(fault.ErrUnavailable, "%s: not served here", what)
}
