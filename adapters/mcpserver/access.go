package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
)

// toolOps is the permission table of the MCP surface: every tool and the one
// access operation it performs. A tool missing here is unknown and needs
// ADMIN. Tests compare it with the registered tools.
var toolOps = map[string]access.Operation{
	"list_sessions":                     access.ReadSessions,
	"get_session_details":               access.ReadSessions,
	"get_session_creation_instructions": access.ReadSessions,
	"create_session":                    access.ApplySession,
	"get_workflow_details":              access.ReadSessions,
	"start_workflow":                    access.StartExecution,
	"get_workflow_status":               access.ReadExecutions,
	"get_workflow_history":              access.ReadExecutions,
	"get_execution_logs":                access.ReadLogs,
	"control_workflow":                  access.ControlExecution,
	"control_node":                      access.ControlExecution,
	"set_node_breakpoint":               access.SetBreakpoint,
	"list_plugins":                      access.ReadPlugins,
	"get_plugin_details":                access.ReadPlugins,
	"get_plugin_creation_guide":         access.ReadPlugins,
	"get_control_bus_status":            access.ReadExecutions,
	"list_supervisors":                  access.ReadSupervisors,
	"get_supervisor":                    access.ReadSupervisors,
	"list_supervisor_engines":           access.ReadSupervisors,
	"get_supervisor_engine":             access.ReadSupervisors,
	"list_supervisor_presets":           access.ReadSupervisors,
	"create_credential":                 access.ManageCredentials,
	"revoke_credential":                 access.ManageCredentials,
	"list_inputs":                       access.ReadExecutions,
	"answer_input":                      access.AnswerInput,
	"get_execution_journal":             access.ReadExecutions,
	"verify_journal":                    access.ReadExecutions,
	"list_approvals":                    access.ReadExecutions,
	"decide_approval":                   access.DecideApprovals,
	"list_holds":                        access.ReadExecutions,
	"release_hold":                      access.ManageSupervisors,
	"create_api_key":                    access.ManageAPIKeys,
	"list_api_keys":                     access.ManageAPIKeys,
	"rotate_api_key":                    access.ManageAPIKeys,
	"revoke_api_key":                    access.ManageAPIKeys,
	"set_api_key_expiry":                access.ManageAPIKeys,
}

// ToolOperation returns the operation a tool performs, and false for a tool
// this server does not have.
func ToolOperation(name string) (access.Operation, bool) {
	op, ok := toolOps[name]
	return op, ok
}

// MayCall reports whether p's role lets it call the tool at all (a
// session-limited key must still name its own sessions, which the tool
// checks on the decoded arguments). An unknown tool needs ADMIN. A WORKER
// key may call none.
func MayCall(p access.Principal, tool string) bool {
	op, ok := toolOps[tool]
	if !ok {
		return p.Role().AtLeast(access.Admin)
	}
	return access.Allowed(p.Role(), op)
}

// openMethods may be used by a request without a principal: the handshake
// only. The HTTP layer in front answers 401 before that can happen when keys
// are configured; this is the second fence.
var openMethods = map[string]bool{
	"initialize":                true,
	"notifications/initialized": true,
	"ping":                      true,
}

// codeUnauthenticated is the JSON-RPC error for a request with no principal.
const codeUnauthenticated = -32001

// codeForbidden is the JSON-RPC error for a principal that may use no
// method of this server at all: a WORKER key (the HTTP layer in front
// answers 403 before that can happen; this is the second fence).
const codeForbidden = -32003

// refusedMethods are answered "method not found" for every caller, whatever
// its role, before the SDK sees them. logging/setLevel would set the level of
// the log notifications a session receives: this server sends none, it does
// not declare the logging capability, and it is stateless, so the level would
// be dropped when the request ends. Refusing it leaves no method that changes
// anything outside the permission table, for a VIEWER or anyone else.
var refusedMethods = map[string]string{
	"logging/setLevel": "logging/setLevel is not supported: this server sends no log notifications (it does not declare the logging capability). Read a run's logs with get_execution_logs",
}

// authorize is the receiving middleware that decides, per decoded request,
// what the caller may do. It runs after the SDK has parsed the JSON-RPC
// message (batches included), on the very request value the SDK dispatches,
// so what is checked is what runs.
func authorize(log *zap.Logger) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := authn.PrincipalFrom(ctx)
			if p.IsZero() && !openMethods[method] {
				return nil, &jsonrpc.Error{Code: codeUnauthenticated, Message: "the caller is not authenticated; present an API key as Authorization: Bearer <key> or X-API-Key"}
			}
			if err := access.RefuseWorker(p, "use MCP"); err != nil {
				return nil, &jsonrpc.Error{Code: codeForbidden, Message: err.Error()}
			}
			if msg, refused := refusedMethods[method]; refused {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: msg}
			}
			if ct, ok := req.(*mcp.CallToolRequest); ok {
				name := ct.Params.Name
				if !MayCall(p, name) {
					log.Info("mcp tool refused", zap.String("tool", sanitizeText(name, maxToolName)), zap.String("actor", p.Actor()), zap.Stringer("role", p.Role()))
					return refusal(p, name), nil
				}
			}
			// The SDK detaches the call from its request's end; it still
			// ends when the key that sent it stops being valid.
			ctx, stop := authn.Follow(ctx)
			defer stop()
			res, err := next(ctx, method, req)
			if cause := authn.Ended(ctx); cause != nil {
				// Whatever the call made of its cut context, the answer (if
				// the HTTP layer has not answered 401 already) says why.
				return nil, &jsonrpc.Error{Code: codeUnauthenticated, Message: cause.Error()}
			}
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				kept := make([]*mcp.Tool, 0, len(lt.Tools))
				for _, t := range lt.Tools {
					if MayCall(p, t.Name) {
						kept = append(kept, t)
					}
				}
				lt.Tools = kept
			}
			return res, err
		}
	}
}

// refusal is the isError answer to a tool the caller's role may not call.
func refusal(p access.Principal, tool string) *mcp.CallToolResult {
	op, known := toolOps[tool]
	var msg string
	if known {
		msg = (&access.ForbiddenError{Actor: p.Actor(), Role: p.Role(), Op: op, Need: op.MinRole()}).Error()
		msg = fmt.Sprintf("Forbidden: %s. Nothing was done; tools/list shows the tools this key may call.", msg)
	} else {
		msg = fmt.Sprintf("Forbidden: %s may not call the tool %q; unknown tools need an ADMIN key. tools/list shows the tools this key may call.", p.Actor(), sanitizeText(tool, maxToolName))
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// caller is the principal of ctx and what it records as actor.
func caller(ctx context.Context) access.Principal { return authn.PrincipalFrom(ctx) }

// maxToolName caps an unknown tool's name where it is echoed or logged.
const maxToolName = 128

// Channel is the channel recorded with every command and start made here.
const Channel = "mcp"
