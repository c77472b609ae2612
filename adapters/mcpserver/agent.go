package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// AgentDeps are the calls of the agent API's MCP endpoint
// (POST /api/agent/v1/mcp): the same operations as the agent API's REST
// routes, for an agent that speaks MCP, with the caller's supervisor
// credential (the access gate put its principal on the context).
type AgentDeps struct {
	Supervisors supervisorapp.Reader
	Signals     interface {
		Handle(context.Context, supervisorapp.SignalsInput) (supervisorapp.SignalPage, error)
	}
	// Watched serves read_signals: Signals with the credential and the
	// supervisor read again while it waits (supervisorapp.ReadAgentSignals),
	// the same read as the REST long poll's.
	Watched interface {
		Handle(context.Context, supervisorapp.AgentSignalsInput) (supervisorapp.SignalPage, error)
	}
	Directives interface {
		Handle(context.Context, supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error)
	}
	Reviews interface {
		Handle(context.Context, supervisorapp.AnswerInput) (supervisor.Review, error)
	}
	Runs      supervisorapp.RunDirectory
	Execution interface {
		Handle(ctx context.Context, sessionID, id string) (executionapp.ExecutionView, error)
	}
}

// AgentServerName is the agent MCP endpoint's name in its serverInfo.
const AgentServerName = "yukta-agent"

const agentInstructions = `This is Yukta's agent endpoint: you act for one supervisor, with its credential.
Read your signals with read_signals (pass back the cursor of the last signal you handled as after, and waitSeconds to long-poll); each signal is {cursor, kind, signal}.
Answer REVIEW signals with answer_review (ALLOW, DENY with a reason, REQUIRE_APPROVAL, NO_OPINION).
Send commands with send_directive: a key makes a retry harmless (the same key never acts twice).
Read your units with get_self, list_owned_executions, get_execution and list_open_inputs.`

type agentServer struct {
	d   AgentDeps
	err *server // the error table of the main MCP server
}

// NewAgent returns the handler of the agent MCP endpoint: stateless
// streamable HTTP, JSON answers, no server push (read_signals long-polls).
func NewAgent(d AgentDeps, version string, log *zap.Logger) http.Handler {
	a := &agentServer{d: d, err: &server{log: log}}
	m := mcp.NewServer(&mcp.Implementation{Name: AgentServerName, Title: "Yukta agent API", Version: version},
		&mcp.ServerOptions{Instructions: agentInstructions,
			// Only what it honours: tools, no list changes (it is
			// stateless), no logging (it sends no log messages).
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	// No logging/setLevel (the SDK would answer it), and the same strict
	// reading of arguments as the server's /mcp.
	m.AddReceivingMiddleware(agentMethods, strictArguments)
	addTool(m, &mcp.Tool{Name: "get_self", Annotations: annotated(readOnly, "Who am I"),
		Description: "Your supervisor: id, owned units, parent, allowed commands, the commands you review. Next: read_signals."}, a.self)
	addTool(m, &mcp.Tool{Name: "read_signals", Annotations: annotated(readOnly, "Read signals"),
		Description: "Your signals after a cursor, waiting up to waitSeconds (0–60) for the first. Save the cursor of each signal you handled and pass the last one back as after; the answer's cursor is where to read on."},
		a.signals)
	addTool(m, &mcp.Tool{Name: "list_owned_executions", Annotations: annotated(readOnly, "List owned executions"),
		Description: "The unfinished executions of your units (at most 200). Next: get_execution."}, a.executions)
	addTool(m, &mcp.Tool{Name: "get_execution", Annotations: annotated(readOnly, "Read an execution"),
		Description: "One execution of your units with its node statuses."}, a.execution)
	addTool(m, &mcp.Tool{Name: "list_open_inputs", Annotations: annotated(readOnly, "List open inputs"),
		Description: "Open input requests of your units; answer one with send_directive AnswerInput."}, a.inputs)
	addTool(m, &mcp.Tool{Name: "send_directive", Annotations: annotated(destructive, "Send a directive"),
		Description: `Send {key, cause?, reason?, ifStatus?, command}, command in the directive vocabulary such as {"type": "PauseWorkflow", "target": "execution:<id>"}. The same key returns the first answer and acts once.`},
		a.directive)
	addTool(m, &mcp.Tool{Name: "answer_review", Annotations: annotated(destructive, "Answer a review"),
		Description: "Your verdict on a REVIEW signal: verdict ALLOW, DENY (with reason), REQUIRE_APPROVAL or NO_OPINION."},
		a.review)
	return strictTransport(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: sdkLogger(log), MaxRequestBodyBytes: MaxRequestBodyBytes,
		DisableLocalhostProtection: true,
	}))
}

// me loads the caller's supervisor as stored now.
func (a *agentServer) me(ctx context.Context) (supervisor.Supervisor, error) {
	id := authn.PrincipalFrom(ctx).Supervisor()
	if id == "" {
		return supervisor.Supervisor{}, errors.New("this endpoint takes a supervisor credential")
	}
	s, err := a.d.Supervisors.Supervisor(ctx, id)
	if err != nil {
		return supervisor.Supervisor{}, err
	}
	if !s.Supervisor.Enabled() {
		return supervisor.Supervisor{}, fault.Newf(fault.ErrForbidden, "supervisor %s is disabled; an ADMIN must enable it before its agent may act", id)
	}
	return s.Supervisor, nil
}

// agentMethods refuses logging/setLevel: this endpoint sends no log
// notifications and does not declare the logging capability.
func agentMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "logging/setLevel" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: "logging/setLevel is not supported: this endpoint sends no log notifications (it does not declare the logging capability)"}
		}
		return next(ctx, method, req)
	}
}

// agentMessages is the agent endpoint's table from errors to sentences:
// each names a next step among its own tools (the server's /mcp table
// names tools this endpoint does not have). The first match wins.
var agentMessages = []struct {
	is   error
	text func(err error) string
}{
	{supervisorapp.ErrAgentUnauthenticated, func(err error) string { return sentence(err.Error()) }},
	{executionapp.ErrExecutionNotFound, func(err error) string {
		return sentence(err.Error()) + " Use list_owned_executions to list the runs of your units."
	}},
	{supervisor.ErrReviewNotFound, func(err error) string {
		return sentence(err.Error()) + " Use read_signals: each REVIEW signal carries the reviewId to answer."
	}},
	{supervisor.ErrReviewSettled, func(err error) string {
		return sentence(err.Error()) + " There is nothing to answer; read_signals shows what waits for you."
	}},
	{supervisor.ErrCommandDenied, func(err error) string {
		return sentence(err.Error()) + " Sending the same command again is reviewed again."
	}},
	{fault.ErrInvalid, func(err error) string {
		return sentence(err.Error()) + " Nothing was changed; fix every problem listed and call again."
	}},
	{fault.ErrNotFound, func(err error) string { return sentence(err.Error()) }},
	{fault.ErrConflict, func(err error) string {
		return sentence(err.Error()) + " Use get_execution to see the run as it is now."
	}},
	{fault.ErrForbidden, func(err error) string { return "Forbidden: " + err.Error() }},
	{fault.ErrUnavailable, func(error) string {
		return "The database is unavailable right now; nothing was changed. Retry the same call in a few seconds."
	}},
}

func (a *agentServer) fail(tool string, err error) error {
	for _, m := range agentMessages {
		if errors.Is(err, m.is) {
			return errors.New(sanitizeText(m.text(err), maxErrorText))
		}
	}
	a.err.log.Error("mcp tool failed", zap.String("tool", tool), zap.Error(err))
	//lint:ignore ST1005 the text is the sentence an MCP client shows its user, not an error to wrap
	return fmt.Errorf("Internal error in %s; the server log has the details. Retry later.", tool)
}

// AgentNoInput is the input of a tool that takes none.
type AgentNoInput struct{}

// AgentSelf is get_self's answer.
type AgentSelf struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Engine          string   `json:"engine"`
	Owns            []string `json:"owns"`
	ParentID        string   `json:"parentId,omitempty"`
	AllowedCommands []string `json:"allowedCommands"`
	Reviews         []string `json:"reviews"`
}

func (a *agentServer) self(ctx context.Context, _ *mcp.CallToolRequest, _ AgentNoInput) (*mcp.CallToolResult, AgentSelf, error) {
	sup, err := a.me(ctx)
	if err != nil {
		return nil, AgentSelf{}, a.fail("get_self", err)
	}
	out := AgentSelf{ID: sup.ID(), Name: sup.Name(), Engine: sup.EngineType(), Owns: []string{}, ParentID: sup.ParentID(),
		AllowedCommands: commandNames(sup.AllowedCommands()), Reviews: commandNames(sup.Reviews())}
	for _, u := range sup.Owns() {
		out.Owns = append(out.Owns, u.String())
	}
	return nil, out, nil
}

// ReadSignalsIn is read_signals' input.
type ReadSignalsIn struct {
	After       string  `json:"after,omitempty" jsonschema:"the cursor of the last signal you handled; leave out to start where your supervisor was created"`
	WaitSeconds float64 `json:"waitSeconds,omitempty" jsonschema:"0 to 60 seconds to wait for the first signal"`
	Limit       int     `json:"limit,omitempty" jsonschema:"at most this many signals (1 to 500)"`
}

// SignalsOut is read_signals' answer.
type SignalsOut struct {
	Signals []any  `json:"signals"`
	Cursor  string `json:"cursor"`
}

func (a *agentServer) signals(ctx context.Context, req *mcp.CallToolRequest, in ReadSignalsIn) (*mcp.CallToolResult, SignalsOut, error) {
	if _, err := a.me(ctx); err != nil {
		return nil, SignalsOut{}, a.fail("read_signals", err)
	}
	if in.Limit < 0 || in.Limit > supervisorapp.MaxSignalBatch {
		return nil, SignalsOut{}, fmt.Errorf("limit must be from 1 to %d", supervisorapp.MaxSignalBatch)
	}
	if a.d.Watched == nil {
		return nil, SignalsOut{}, a.fail("read_signals", fault.Newf(fault.ErrUnavailable, "signal reads are not served here"))
	}
	var header http.Header
	if req != nil && req.Extra != nil {
		header = req.Extra.Header
	}
	page, err := a.d.Watched.Handle(ctx, supervisorapp.AgentSignalsInput{Token: authn.Presented(&http.Request{Header: header}),
		After: in.After, Limit: in.Limit, Wait: time.Duration(in.WaitSeconds * float64(time.Second))})
	if err != nil {
		return nil, SignalsOut{}, a.fail("read_signals", err)
	}
	out := SignalsOut{Signals: []any{}, Cursor: page.Cursor}
	for _, s := range page.Signals {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, SignalsOut{}, err
		}
		var v any
		_ = json.Unmarshal(b, &v)
		out.Signals = append(out.Signals, v)
	}
	return nil, out, nil
}

// OwnedRun is one run of list_owned_executions.
type OwnedRun struct {
	ExecutionID string `json:"executionId"`
	SessionID   string `json:"sessionId"`
	WorkflowID  string `json:"workflowId"`
	Status      string `json:"status"`
	StartedAt   string `json:"startedAt"`
}

// OwnedRunsOut is list_owned_executions' answer.
type OwnedRunsOut struct {
	Executions []OwnedRun `json:"executions"`
}

func (a *agentServer) executions(ctx context.Context, _ *mcp.CallToolRequest, _ AgentNoInput) (*mcp.CallToolResult, OwnedRunsOut, error) {
	sup, err := a.me(ctx)
	if err != nil {
		return nil, OwnedRunsOut{}, a.fail("list_owned_executions", err)
	}
	out := OwnedRunsOut{Executions: []OwnedRun{}}
	if owns := sup.Owns(); len(owns) > 0 {
		runs, err := a.d.Runs.ActiveRuns(ctx, owns, 200)
		if err != nil {
			return nil, OwnedRunsOut{}, a.fail("list_owned_executions", err)
		}
		for _, r := range runs {
			out.Executions = append(out.Executions, OwnedRun{ExecutionID: r.ID, SessionID: r.SessionID, WorkflowID: r.WorkflowID,
				Status: string(r.Status), StartedAt: ts(r.StartedAt)})
		}
	}
	return nil, out, nil
}

// AgentExecutionIn names one execution.
type AgentExecutionIn struct {
	ExecutionID string `json:"executionId" jsonschema:"an execution of your units, from list_owned_executions or a signal"`
}

func (a *agentServer) execution(ctx context.Context, _ *mcp.CallToolRequest, in AgentExecutionIn) (*mcp.CallToolResult, ExecutionStatus, error) {
	sup, err := a.me(ctx)
	if err != nil {
		return nil, ExecutionStatus{}, a.fail("get_execution", err)
	}
	found, err := a.d.Runs.Runs(ctx, []string{in.ExecutionID})
	if err != nil {
		return nil, ExecutionStatus{}, a.fail("get_execution", err)
	}
	r, ok := found[in.ExecutionID]
	if !ok || !sup.OwnsPlace(r.Place()) {
		return nil, ExecutionStatus{}, fmt.Errorf("execution %s is not among the runs of your units; use list_owned_executions", in.ExecutionID)
	}
	v, err := a.d.Execution.Handle(ctx, r.SessionID, r.ID)
	if err != nil {
		return nil, ExecutionStatus{}, a.fail("get_execution", err)
	}
	return nil, statusOut(v), nil
}

// OpenInput is one input of list_open_inputs.
type OpenInput struct {
	InputID     string `json:"inputId"`
	SessionID   string `json:"sessionId"`
	ExecutionID string `json:"executionId"`
	NodeID      string `json:"nodeId"`
	Prompt      string `json:"prompt"`
}

// OpenInputsOut is list_open_inputs' answer.
type OpenInputsOut struct {
	Inputs []OpenInput `json:"inputs"`
}

func (a *agentServer) inputs(ctx context.Context, _ *mcp.CallToolRequest, _ AgentNoInput) (*mcp.CallToolResult, OpenInputsOut, error) {
	sup, err := a.me(ctx)
	if err != nil {
		return nil, OpenInputsOut{}, a.fail("list_open_inputs", err)
	}
	out := OpenInputsOut{Inputs: []OpenInput{}}
	if owns := sup.Owns(); len(owns) > 0 {
		ins, err := a.d.Runs.OpenInputs(ctx, owns, 200)
		if err != nil {
			return nil, OpenInputsOut{}, a.fail("list_open_inputs", err)
		}
		for _, i := range ins {
			out.Inputs = append(out.Inputs, OpenInput{InputID: i.ID, SessionID: i.SessionID, ExecutionID: i.ExecutionID, NodeID: i.NodeID,
				Prompt: sanitizeText(i.Prompt, MaxLogLineBytes)})
		}
	}
	return nil, out, nil
}

// DirectiveIn is send_directive's input: the directive envelope.
type DirectiveIn struct {
	Key      string         `json:"key" jsonschema:"idempotency key: the same key acts once and returns the first answer"`
	Cause    string         `json:"cause,omitempty" jsonschema:"what you reacted to, such as the signal's cursor"`
	Reason   string         `json:"reason,omitempty" jsonschema:"why, recorded in the journal"`
	IfStatus string         `json:"ifStatus,omitempty" jsonschema:"act only if the target is in this status"`
	Command  map[string]any `json:"command" jsonschema:"the command, such as {\"type\": \"PauseWorkflow\", \"target\": \"execution:<id>\"}"`
}

// DirectiveOut is send_directive's answer.
type DirectiveOut struct {
	Status   string `json:"status"`
	Message  string `json:"message,omitempty"`
	Outcomes []any  `json:"outcomes"`
	Repeated bool   `json:"repeated,omitempty"`
}

func (a *agentServer) directive(ctx context.Context, _ *mcp.CallToolRequest, in DirectiveIn) (*mcp.CallToolResult, DirectiveOut, error) {
	sup, err := a.me(ctx)
	if err != nil {
		return nil, DirectiveOut{}, a.fail("send_directive", err)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, DirectiveOut{}, err
	}
	d, err := supervisor.ParseDirective(raw)
	if err != nil {
		return nil, DirectiveOut{}, a.fail("send_directive", err)
	}
	res, err := a.d.Directives.Handle(ctx, supervisorapp.SubmitInput{SupervisorID: sup.ID(), Directive: d, Channel: "agent"})
	if err != nil {
		return nil, DirectiveOut{}, a.fail("send_directive", err)
	}
	out := DirectiveOut{Status: res.Status, Message: res.Message, Outcomes: []any{}, Repeated: res.Repeated}
	for _, o := range res.Outcomes {
		b, _ := json.Marshal(o)
		var v any
		_ = json.Unmarshal(b, &v)
		out.Outcomes = append(out.Outcomes, v)
	}
	return nil, out, nil
}

// VerdictIn is answer_review's input.
type VerdictIn struct {
	ReviewID string `json:"reviewId" jsonschema:"the reviewId of the REVIEW signal"`
	Verdict  string `json:"verdict" jsonschema:"ALLOW, DENY, REQUIRE_APPROVAL or NO_OPINION"`
	Reason   string `json:"reason,omitempty" jsonschema:"why; required with DENY"`
}

// VerdictOut is answer_review's answer.
type VerdictOut struct {
	ReviewID string `json:"reviewId"`
	Status   string `json:"status"`
	Asking   string `json:"asking,omitempty"`
}

func (a *agentServer) review(ctx context.Context, _ *mcp.CallToolRequest, in VerdictIn) (*mcp.CallToolResult, VerdictOut, error) {
	sup, err := a.me(ctx)
	if err != nil {
		return nil, VerdictOut{}, a.fail("answer_review", err)
	}
	v, err := supervisor.NewVerdict(supervisor.Decision(in.Verdict), in.Reason)
	if err != nil {
		return nil, VerdictOut{}, a.fail("answer_review", err)
	}
	r, err := a.d.Reviews.Handle(ctx, supervisorapp.AnswerInput{ReviewID: in.ReviewID, SupervisorID: sup.ID(), Verdict: v})
	if err != nil {
		return nil, VerdictOut{}, a.fail("answer_review", err)
	}
	return nil, VerdictOut{ReviewID: r.ID(), Status: string(r.Status()), Asking: r.Asking()}, nil
}
