package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/access"
)

// LogsTemplate is the URI template of an execution's log.
const LogsTemplate = "yukta://sessions/{sessionId}/executions/{executionId}/logs"

const overview = `Yukta is a self-hosted workflow orchestration server. A session holds workflows; a workflow is a DAG of plugin nodes
(triggers, processors, terminals) joined by edges from an output port to a node. Starting a workflow creates an execution
whose messages move through the nodes durably (PostgreSQL): a crash or restart loses nothing.

Typical agent flow:
  list_sessions -> get_session_details -> start_workflow (payload, idempotencyKey)
  -> poll get_workflow_status until terminal -> get_execution_logs (filterPattern "ERROR")
  -> control_node RETRY / control_workflow RESTART_FROM_NODE -> poll again.
Author: get_session_creation_instructions -> list_plugins -> get_plugin_details -> create_session.
Steer: control_workflow (PAUSE, RESUME, STOP, STOP_ALL, RESTART, RESTART_FROM_NODE, PAUSE_WORKFLOW, RESUME_WORKFLOW), control_node (PAUSE, RESUME, STOP,
STEP_ENABLE, STEP, STEP_DISABLE, SKIP, UNSKIP, RETRY, BREAKPOINT_CLEAR), set_node_breakpoint.
Reviews: a command or start a supervisor reviews answers status review (nothing applied yet); follow it with
list_approvals (approvalId), or resend it with the same key and a wait. An ADMIN decides approvals with decide_approval.
The server pushes nothing: poll. Every call is authorized by the key's role (VIEWER reads, OPERATOR also starts and
controls, ADMIN also creates sessions and manages credentials); a session-limited key sees only its sessions.`

const architecture = `Architecture of Yukta

- Sessions and workflows: a session document lists workflows; each workflow is nodes {nodeId, type, config} and edges
  {source, target, sourcePort}. Applying a session validates everything at once (ids, DAG rules, plugin configs, ports).
- Executions: starting a workflow snapshots its definition; each message for a node is a row in a durable work queue.
  Workers claim rows (FOR UPDATE SKIP LOCKED) under a lease, run the node's plugin outside any transaction, and commit
  its output messages, log lines and status changes in one transaction. A lost worker's lease expires and the message runs again.
- Control: every command (pause, resume, stop with DRAIN/CANCEL/KILL, restart, restart from a node, node step, skip,
  retry, breakpoints) is validated, recorded with its actor and channel (key:<name>, mcp), journaled and applied in one
  transaction. A key makes a command idempotent; ifStatus makes it conditional.
- Logs: plugins write log lines per node; readers get the tail, optionally filtered by an RE2 pattern (linear time,
  at most 200 characters). Agents receive lines with control characters escaped and secret config values masked.
- Plugins: node types are compiled in (adapters/plugins): a descriptor (fields, ports) plus a runner.
- Surfaces: REST (/api), MCP (/mcp, stateless), CLI; one access model (roles and session lists) for all.`

func (s *server) addResources(m *mcp.Server) {
	m.AddResource(&mcp.Resource{URI: "yukta://overview", Name: "overview", Title: "Yukta overview", MIMEType: "text/plain",
		Description: "What Yukta is and the typical tool flow."}, staticText(overview))
	m.AddResource(&mcp.Resource{URI: "yukta://architecture", Name: "architecture", Title: "Yukta architecture", MIMEType: "text/plain",
		Description: "Sessions, the durable DAG engine, control, logs and plugins."}, staticText(architecture))
	m.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: LogsTemplate, Name: "execution-logs", Title: "Execution log", MIMEType: "text/plain",
		Description: "The last 5000 lines of an execution's log, one per row, escaped and redacted as get_execution_logs returns them."}, s.readLogs)
}

func staticText(text string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
	}
}

// parseLogsURI reads the two ids of a logs URI.
func parseLogsURI(uri string) (sid, eid string, ok bool) {
	rest, ok := strings.CutPrefix(uri, "yukta://sessions/")
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, "/logs")
	if !ok {
		return "", "", false
	}
	sid, eid, ok = strings.Cut(rest, "/executions/")
	if !ok || sid == "" || eid == "" || strings.Contains(sid, "/") || strings.Contains(eid, "/") {
		return "", "", false
	}
	return sid, eid, true
}

func (s *server) readLogs(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	sid, eid, ok := parseLogsURI(req.Params.URI)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	subj := subject{Session: sid, Execution: eid}
	fail := func(err error) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: s.toolError("execution-logs resource", err, subj).Error()}
	}
	if err := caller(ctx).Can(access.ReadLogs, sid); err != nil {
		return nil, fail(err)
	}
	res, err := s.d.Logs.Handle(ctx, executionapp.TailInput{SessionID: sid, ExecutionID: eid, TailLines: executionapp.MaxTailLines})
	if err != nil {
		return nil, fail(err)
	}
	var b strings.Builder
	for _, l := range logsOut(res).Lines {
		fmt.Fprintf(&b, "[%s] [%s] [%s] %s\n", l.At, strings.ToUpper(l.Level), l.NodeID, l.Message)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: b.String()}}}, nil
}
