package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// AgentServerName is the agent MCP endpoint's name in its serverInfo.
const AgentServerName = "yukta-agent"

const agentInstructions = `This is Yukta's agent endpoint: you act for one supervisor, with its credential. Its tools are the operations of the agent REST API (/api/agent/v1), with the same answers.
Start with get_self and get_snapshot; read your signals with read_signals (pass back the cursor of the last signal you handled as after, and waitSeconds to long-poll); each signal is {cursor, kind, signal}.
Answer REVIEW signals with answer_review (ALLOW, DENY with a reason, REQUIRE_APPROVAL, NO_OPINION), DELEGATED and CONSULTED ones with answer_delegation.
Send commands with send_directive: a key makes a retry harmless (the same key never acts twice).
Read your units with list_owned_executions (follow nextCursor while truncated), get_execution, get_execution_logs, get_workflow, list_open_inputs; your refused directives with list_refusals.`

type agentServer struct {
	uc  httpapi.AgentUseCases
	err *server // the error table of the main MCP server
}

// NewAgent returns the handler of the agent MCP endpoint: stateless
// streamable HTTP, JSON answers, no server push (read_signals long-polls).
// Its tools are the agent API's operation table (httpapi.AgentOperations):
// each calls the same use case as its REST route and answers the same
// value.
func NewAgent(uc httpapi.AgentUseCases, version string, log *zap.Logger) http.Handler {
	a := &agentServer{uc: uc, err: &server{log: log}}
	m := mcp.NewServer(&mcp.Implementation{Name: AgentServerName, Title: "Yukta agent API", Version: version},
		&mcp.ServerOptions{Instructions: agentInstructions,
			// Only what it honours: tools, no list changes (it is
			// stateless), no logging (it sends no log messages).
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	// No logging/setLevel (the SDK would answer it), and the same strict
	// reading of arguments as the server's /mcp.
	m.AddReceivingMiddleware(agentMethods, strictArguments)
	for _, op := range httpapi.AgentOperations() {
		if op.Tool == "" {
			continue // a stream: MCP has no push
		}
		ann := destructive
		if op.ReadOnly {
			ann = readOnly
		}
		m.AddTool(&mcp.Tool{Name: op.Tool, Description: op.Description, Annotations: annotated(ann, op.Title),
			InputSchema: AgentInputSchema(op), OutputSchema: map[string]any{"type": "object"}}, a.tool(op))
	}
	return strictTransport(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: sdkLogger(log), MaxRequestBodyBytes: MaxRequestBodyBytes,
		DisableLocalhostProtection: true,
	}))
}

// AgentInputSchema is the input schema of an operation's tool: its
// parameters and body members, each once, nothing else.
func AgentInputSchema(op httpapi.AgentOp) map[string]any {
	props, required := map[string]any{}, []string{}
	for _, p := range op.Params {
		s := map[string]any{"type": p.Type, "description": p.Description}
		if p.Type != "string" {
			s["minimum"], s["maximum"] = p.Min, p.Max
		} else if p.MaxLength > 0 {
			s["maxLength"] = p.MaxLength
		}
		props[p.ToolName()] = s
		if p.In == "path" {
			required = append(required, p.ToolName())
		}
	}
	for _, b := range op.Body {
		s := map[string]any{"description": b.Description}
		if b.Type != "" {
			s["type"] = b.Type
		}
		props[b.Name] = s
		if b.Required {
			required = append(required, b.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// tool is the MCP door of an operation: its parameters and body members
// from the arguments (the body gathered into one JSON object, each member's
// text as sent), the answer the table built as the structured content.
func (a *agentServer) tool(op httpapi.AgentOp) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sup, err := a.me(ctx)
		if err != nil {
			return a.fail(op.Tool, err), nil
		}
		r, err := agentRequest(op, req)
		if err != nil {
			return a.fail(op.Tool, err), nil
		}
		r.Supervisor = sup
		_, out, err := op.Call(ctx, &a.uc, r)
		if err != nil {
			return a.fail(op.Tool, err), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return a.fail(op.Tool, err), nil
		}
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	}
}

// agentRequest reads a call's arguments as an operation's request.
func agentRequest(op httpapi.AgentOp, req *mcp.CallToolRequest) (*httpapi.AgentRequest, error) {
	var header http.Header
	if req.Extra != nil {
		header = req.Extra.Header
	}
	r := &httpapi.AgentRequest{Token: authn.Presented(&http.Request{Header: header}), Values: map[string]string{},
		Where: func(p httpapi.AgentParam) string { return p.ToolName() }}
	args := map[string]json.RawMessage{}
	if req.Params != nil && len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, &fault.ValidationError{Subject: "arguments", Violations: []fault.Violation{{Message: "must be one JSON object"}}}
		}
	}
	var vs []fault.Violation
	known := map[string]bool{}
	for _, p := range op.Params {
		known[p.ToolName()] = true
		v, ok := args[p.ToolName()]
		if !ok || string(v) == "null" {
			if p.In == "path" {
				vs = append(vs, fault.Violation{Path: p.ToolName(), Message: "is required"})
			}
			continue
		}
		if p.Type == "string" {
			var s string
			if json.Unmarshal(v, &s) != nil {
				vs = append(vs, fault.Violation{Path: p.ToolName(), Message: "must be a string"})
				continue
			}
			r.Values[p.Name] = s
			continue
		}
		var n json.Number
		if json.Unmarshal(v, &n) != nil || len(v) == 0 || v[0] == '"' {
			vs = append(vs, fault.Violation{Path: p.ToolName(), Message: "must be " + map[string]string{"integer": "an integer", "number": "a number"}[p.Type]})
			continue
		}
		r.Values[p.Name] = n.String()
	}
	if len(op.Body) > 0 {
		body := map[string]json.RawMessage{}
		for _, b := range op.Body {
			known[b.Name] = true
			if v, ok := args[b.Name]; ok {
				body[b.Name] = v
			}
		}
		r.Body, _ = json.Marshal(body) // RawMessage values stay as sent
	}
	var names []string
	for k := range known {
		names = append(names, k)
	}
	slices.Sort(names)
	for k := range args {
		if !known[k] {
			vs = append(vs, fault.Violation{Path: k, Message: "is not an argument this tool takes; it takes " + strings.Join(names, ", ")})
		}
	}
	if len(vs) > 0 {
		slices.SortFunc(vs, func(a, b fault.Violation) int { return strings.Compare(a.Path, b.Path) })
		return nil, &fault.ValidationError{Subject: "arguments", Violations: vs}
	}
	return r, nil
}

// me loads the caller's supervisor as stored now (the same use case as the
// REST door's).
func (a *agentServer) me(ctx context.Context) (supervisor.Supervisor, error) {
	return a.uc.Caller.Handle(ctx, authn.PrincipalFrom(ctx).Supervisor())
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

func (a *agentServer) fail(tool string, err error) *mcp.CallToolResult {
	text := fmt.Sprintf("Internal error in %s; the server log has the details. Retry later.", tool)
	matched := false
	for _, m := range agentMessages {
		if errors.Is(err, m.is) {
			text, matched = sanitizeText(m.text(err), maxErrorText), true
			break
		}
	}
	if !matched {
		a.err.log.Error("mcp tool failed", zap.String("tool", tool), zap.Error(err))
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
