package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/domain/access"
)

// keyHeader adds an API key to every request of an MCP client.
type keyHeader struct {
	key  string
	base http.RoundTripper
}

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return k.base.RoundTrip(r)
}

// mcpConnect connects an MCP client to path (/mcp or /sse) with key ("" for none).
func mcpConnect(ctx context.Context, url, path, key string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             url + path,
		HTTPClient:           &http.Client{Transport: keyHeader{key, http.DefaultTransport}, Timeout: 30 * time.Second},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
}

func mustConnect(t testing.TB, url, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcpConnect(t.Context(), url, "/mcp", key)
	if err != nil {
		t.Fatalf("connect with key %q: %v", key, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and decodes its structured content into out (when the
// call succeeded); it returns the result.
func mcpCall(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if !res.IsError && out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", tool, b, err)
		}
	}
	return res
}

func mustCall(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, out any) {
	t.Helper()
	if res := mcpCall(t, cs, tool, args, out); res.IsError {
		t.Fatalf("%s(%v): %s", tool, args, text(res))
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The annotations the issue asks for, by tool.
var wantHints = map[string]struct{ readOnly, destructive, openWorld bool }{
	"create_session":      {false, true, true},
	"start_workflow":      {false, false, false},
	"set_node_breakpoint": {false, false, false},
	"control_workflow":    {false, true, false},
	"control_node":        {false, true, false},
	"create_credential":   {false, true, false},
	"revoke_credential":   {false, true, false},
	"answer_input":        {false, false, false},
	"decide_approval":     {false, true, false},
	"release_hold":        {false, true, false},
	"create_api_key":      {false, false, false},
	"rotate_api_key":      {false, true, false},
	"revoke_api_key":      {false, true, false},
	"set_api_key_expiry":  {false, true, false},
}

var allTools = []string{"list_sessions", "get_session_details", "get_session_creation_instructions", "create_session",
	"get_workflow_details", "start_workflow", "get_workflow_status", "get_workflow_history", "get_execution_logs",
	"control_workflow", "control_node", "set_node_breakpoint", "list_plugins", "get_plugin_details",
	"get_plugin_creation_guide", "get_control_bus_status", "list_supervisors", "get_supervisor",
	"list_supervisor_engines", "get_supervisor_engine", "list_supervisor_presets", "create_credential", "revoke_credential",
	"list_inputs", "answer_input", "get_execution_journal", "verify_journal", "list_approvals", "decide_approval",
	"list_holds", "release_hold", "create_api_key", "list_api_keys", "rotate_api_key", "set_api_key_expiry", "revoke_api_key"}

func TestMCPToolList(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	for _, path := range []string{"/mcp", "/sse"} {
		cs, err := mcpConnect(t.Context(), s.URL, path, "")
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer cs.Close()
		if got := cs.InitializeResult().ServerInfo.Name; got != "yukta" {
			t.Errorf("%s: server name %q, want yukta", path, got)
		}
		lt, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
			if tl.InputSchema == nil || tl.OutputSchema == nil || tl.Description == "" {
				t.Errorf("%s: tool %s lacks an input schema, output schema or description", path, tl.Name)
			}
			a := tl.Annotations
			if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
				t.Errorf("tool %s: hints not all set: %+v", tl.Name, a)
				continue
			}
			want, write := wantHints[tl.Name]
			if !write {
				want.readOnly = true
			}
			if a.ReadOnlyHint != want.readOnly || *a.DestructiveHint != want.destructive || *a.OpenWorldHint != want.openWorld {
				t.Errorf("tool %s: hints readOnly=%v destructive=%v openWorld=%v, want %+v", tl.Name, a.ReadOnlyHint, *a.DestructiveHint, *a.OpenWorldHint, want)
			}
		}
		slices.Sort(names)
		want := slices.Sorted(slices.Values(allTools))
		if !slices.Equal(names, want) {
			t.Errorf("%s: tools %v, want the 36 %v", path, names, want)
		}
		pr, err := cs.ListPrompts(t.Context(), nil)
		if err != nil || len(pr.Prompts) != 2 {
			t.Errorf("prompts: %v %v", pr, err)
		}
		rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "yukta://overview"})
		if err != nil || !strings.Contains(rr.Contents[0].Text, "get_workflow_status") {
			t.Errorf("overview: %v %v", rr, err)
		}
	}
}

// buildSession fails at "compile"; fixedSession replaces it with a LOG.
func buildSession(compileType string, compileConfig map[string]any) map[string]any {
	return map[string]any{"session": map[string]any{
		"sessionId": "ci", "name": "CI", "description": "build pipeline",
		"workflows": []any{map[string]any{
			"workflowId": "build",
			"nodes": []any{
				map[string]any{"nodeId": "start", "type": "MANUAL"},
				map[string]any{"nodeId": "prep", "type": "LOG", "config": map[string]any{"message": "preparing \x1b[31mred\x1b[0m token=supersecretvalue123"}},
				map[string]any{"nodeId": "compile", "type": compileType, "config": compileConfig},
				map[string]any{"nodeId": "out", "type": "RESULT"},
			},
			"edges": []any{
				map[string]any{"source": "start", "target": "prep"},
				map[string]any{"source": "prep", "target": "compile"},
				map[string]any{"source": "compile", "target": "out"},
			},
		}},
	}}
}

func waitTerminal(t *testing.T, cs *mcp.ClientSession, sid, eid string) mcpserver.ExecutionStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st mcpserver.ExecutionStatus
		mustCall(t, cs, "get_workflow_status", map[string]any{"sessionId": sid, "executionId": eid}, &st)
		if st.Terminal {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s not terminal after 30 s: %+v", eid, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMCPScenarios plays the seed's "Create a session and run it" and
// "Debug a failed run" end to end on a real server.
func TestMCPScenarios(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	cs := mustConnect(t, s.URL, "")

	// Create a session and run it: learn the format, apply the guide's own
	// example, start it with a payload, poll, read logs.
	var guide mcpserver.CreationInstructions
	mustCall(t, cs, "get_session_creation_instructions", nil, &guide)
	var plugins mcpserver.PluginList
	mustCall(t, cs, "list_plugins", nil, &plugins)
	if len(plugins.Plugins) == 0 || len(guide.PluginTypes) != len(plugins.Plugins) {
		t.Fatalf("plugins %d, guide lists %d", len(plugins.Plugins), len(guide.PluginTypes))
	}
	var router mcpserver.PluginDetails
	mustCall(t, cs, "get_plugin_details", map[string]any{"type": "ROUTER", "config": map[string]any{"routes": []any{map[string]any{"port": "big", "condition": "payload.amount > 100"}}}}, &router)
	if !slices.Contains(router.Ports, "big") || len(router.ConfigFields) == 0 {
		t.Errorf("ROUTER with a config: ports %v fields %d, want big among the ports", router.Ports, len(router.ConfigFields))
	}
	exArgs, _ := json.Marshal(guide.Example)
	var exMap map[string]any
	_ = json.Unmarshal(exArgs, &exMap)
	var created mcpserver.CreateSessionOut
	mustCall(t, cs, "create_session", exMap, &created)
	var started mcpserver.StartOut
	mustCall(t, cs, "start_workflow", map[string]any{"sessionId": created.SessionID, "workflowId": "greet",
		"payload": map[string]any{"name": "Ada"}, "idempotencyKey": "first"}, &started)
	var again mcpserver.StartOut
	mustCall(t, cs, "start_workflow", map[string]any{"sessionId": created.SessionID, "workflowId": "greet",
		"payload": map[string]any{"name": "Ada"}, "idempotencyKey": "first"}, &again)
	if again.ExecutionID != started.ExecutionID || again.Created {
		t.Errorf("repeated start with the same key: %+v, want %s not created", again, started.ExecutionID)
	}
	st := waitTerminal(t, cs, created.SessionID, started.ExecutionID)
	if st.Status != "SUCCESS" || st.Channel != "mcp" || st.Actor != "anonymous" {
		t.Fatalf("example run: %+v", st)
	}
	if b, _ := json.Marshal(st.Result); !strings.Contains(string(b), "Hello, Ada!") {
		t.Errorf("result %s, want the greeting", b)
	}

	// Debug a failed run.
	mustCall(t, cs, "create_session", buildSession("FAIL", map[string]any{"message": "compile Exception: missing semicolon"}), nil)
	mustCall(t, cs, "start_workflow", map[string]any{"sessionId": "ci", "workflowId": "build"}, &started)
	st = waitTerminal(t, cs, "ci", started.ExecutionID)
	failed := ""
	for _, n := range st.Nodes {
		if n.Status == "FAILURE" {
			failed = n.NodeID
		}
	}
	if st.Status != "FAILURE" || failed != "compile" {
		t.Fatalf("run %+v, want FAILURE at compile", st)
	}
	var logs mcpserver.ExecutionLogs
	mustCall(t, cs, "get_execution_logs", map[string]any{"sessionId": "ci", "executionId": started.ExecutionID,
		"filterPattern": "ERROR|Exception", "tailLines": 50}, &logs)
	if logs.ReturnedLines == 0 || !strings.Contains(logs.Lines[len(logs.Lines)-1].Message, "missing semicolon") {
		t.Fatalf("filtered logs %+v, want the compile failure", logs)
	}
	var all mcpserver.ExecutionLogs
	mustCall(t, cs, "get_execution_logs", map[string]any{"sessionId": "ci", "executionId": started.ExecutionID}, &all)
	joined, _ := json.Marshal(all.Lines)
	if strings.Contains(string(joined), "\x1b") || strings.Contains(string(joined), `\u001b[31m`) || strings.Contains(string(joined), "supersecretvalue123") {
		t.Errorf("log lines reach the agent with raw escapes or secrets: %s", joined)
	}
	if !strings.Contains(string(joined), `\\u001B[31m`) {
		t.Errorf("log lines: want the escape shown as \\u001B, got %s", joined)
	}
	var def mcpserver.WorkflowDetails
	mustCall(t, cs, "get_workflow_details", map[string]any{"sessionId": "ci", "workflowId": "build"}, &def)
	// The agent fixes the node, then retries only it.
	mustCall(t, cs, "create_session", buildSession("LOG", map[string]any{"message": "compiled"}), nil)
	var retry mcpserver.CommandOut
	mustCall(t, cs, "control_node", map[string]any{"sessionId": "ci", "executionId": started.ExecutionID, "nodeId": "compile",
		"action": "RETRY", "key": "retry-1"}, &retry)
	if len(retry.ResultExecutionIDs) != 1 {
		t.Fatalf("RETRY: %+v, want one new execution", retry)
	}
	var retry2 mcpserver.CommandOut
	mustCall(t, cs, "control_node", map[string]any{"sessionId": "ci", "executionId": started.ExecutionID, "nodeId": "compile",
		"action": "RETRY", "key": "retry-1"}, &retry2)
	if !slices.Equal(retry2.ResultExecutionIDs, retry.ResultExecutionIDs) {
		t.Errorf("repeated RETRY with the same key started %v, want %v again", retry2.ResultExecutionIDs, retry.ResultExecutionIDs)
	}
	st = waitTerminal(t, cs, "ci", retry.ResultExecutionIDs[0])
	if st.Status != "SUCCESS" || st.RestartOf != started.ExecutionID {
		t.Fatalf("retried run %+v, want SUCCESS restarting %s", st, started.ExecutionID)
	}

	// Errors name the next tool; unknown and foreign ids read the same.
	unknown := mcpCall(t, cs, "get_workflow_status", map[string]any{"sessionId": "ci", "executionId": "00000000-0000-0000-0000-000000000000"}, nil)
	if !unknown.IsError || text(unknown) != "Execution not found: 00000000-0000-0000-0000-000000000000. Use get_workflow_history to list executions." {
		t.Errorf("unknown execution: %q", text(unknown))
	}
	malformed := mcpCall(t, cs, "get_workflow_status", map[string]any{"sessionId": "ci", "executionId": "run-7"}, nil)
	if !malformed.IsError || !strings.HasPrefix(text(malformed), `Invalid executionId "run-7": an execution id is a UUID`) {
		t.Errorf("malformed execution id: %q", text(malformed))
	}
	foreign := mcpCall(t, cs, "get_workflow_status", map[string]any{"sessionId": created.SessionID, "executionId": started.ExecutionID}, nil)
	if want := fmt.Sprintf("Execution not found: %s. Use get_workflow_history to list executions.", started.ExecutionID); text(foreign) != want {
		t.Errorf("foreign execution: %q, want %q", text(foreign), want)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_session_details", map[string]any{"sessionId": "nope"}, "Session not found: nope. Use list_sessions to see available sessions."},
		{"control_workflow", map[string]any{"sessionId": "ci", "action": "PAUSE"}, "executionId is required for action PAUSE."},
		{"control_workflow", map[string]any{"sessionId": "ci", "action": "RESTART_FROM_NODE", "executionId": started.ExecutionID}, "fromNodeId is required for action RESTART_FROM_NODE."},
		{"control_workflow", map[string]any{"sessionId": "ci", "action": "STOP_ALL"}, "workflowId is required for action STOP_ALL."},
		{"get_execution_logs", map[string]any{"sessionId": "ci", "executionId": started.ExecutionID, "filterPattern": strings.Repeat("a", 201)}, "Regex pattern too long (max 200 characters)."},
		{"get_execution_logs", map[string]any{"sessionId": "ci", "executionId": started.ExecutionID, "filterPattern": "("}, "Invalid regex pattern: "},
		{"get_control_bus_status", map[string]any{"filterType": "jvm"}, "Unsupported filter: jvm. Valid filters: sessions, executions, plugins, health"},
		{"get_plugin_details", map[string]any{"type": "http_request"}, "Plugin not found: http_request"},
		{"get_supervisor", map[string]any{"supervisorId": "s1"}, "Use list_supervisors"},
		{"create_credential", map[string]any{"supervisorId": "s1"}, "Use list_supervisors"},
	} {
		res := mcpCall(t, cs, tc.tool, tc.args, nil)
		if !res.IsError || !strings.HasPrefix(text(res), tc.want) && !strings.Contains(text(res), tc.want) {
			t.Errorf("%s(%v) = %q, want it to contain %q", tc.tool, tc.args, text(res), tc.want)
		}
	}
	var bus mcpserver.ControlBusStatus
	mustCall(t, cs, "get_control_bus_status", nil, &bus)
	if len(bus.Sessions) != 2 || len(bus.RecentExecutions) < 3 || bus.Health == nil || bus.Health.Goroutines == 0 {
		t.Errorf("status %+v", bus)
	}
	var sups mcpserver.SupervisorList
	mustCall(t, cs, "list_supervisors", nil, &sups)
	var engines mcpserver.EngineList
	mustCall(t, cs, "list_supervisor_engines", nil, &engines)
	if len(sups.Supervisors) != 0 || len(engines.Engines) != 4 {
		t.Errorf("supervisors %+v engines %d", sups, len(engines.Engines))
	}
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "yukta://sessions/ci/executions/" + started.ExecutionID + "/logs"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "missing semicolon") {
		t.Errorf("logs resource: %v %v", rr, err)
	}
	pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "debug-workflow", Arguments: map[string]string{"sessionId": "ci", "executionId": started.ExecutionID}})
	if err != nil || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "RETRY") {
		t.Errorf("debug-workflow prompt: %v %v", pr, err)
	}
}

// Keys of the matrix: name, role, sessions, secret.
var matrixKeys = []struct{ name, role, sessions, secret string }{
	{"viewer", "VIEWER", "", "viewer-secret-0123456789abcdef"},
	{"operator", "OPERATOR", "", "operator-secret-0123456789abcdef"},
	{"admin", "ADMIN", "", "admin-secret-0123456789abcdef01"},
	{"limited", "ADMIN", "sessions=own", "limited-secret-0123456789abcdef"},
}

// counts are the rows a denied call must leave unchanged.
func mcpRowCounts(t *testing.T, dsn string) map[string]int64 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	out := map[string]int64{}
	for _, tbl := range []string{"sessions", "workflows", "executions", "commands", "events", "work_items", "supervisors"} {
		var n int64
		if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tbl] = n
	}
	return out
}

// TestMCPToolRoleMatrix checks every tool (and an unknown one) against every
// kind of caller: the permission table in every cell, denied calls without
// side effects, and foreign ids answered like unknown ones.
func TestMCPToolRoleMatrix(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	var file strings.Builder
	for _, k := range matrixKeys {
		fmt.Fprintf(&file, "%s %s %s %s\n", k.name, k.role, k.sessions, k.secret)
	}
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_API_KEYS=" + path}})

	// No key, or a wrong one: 401 before any MCP.
	for _, key := range []string{"", "wrong-secret-0123456789abcdefgh"} {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("key %q: HTTP %d, want 401", key, res.StatusCode)
		}
	}

	admin := mustConnect(t, s.URL, matrixKeys[2].secret)
	for _, sid := range []string{"own", "foreign"} {
		doc := buildSession("LOG", map[string]any{"message": "ok"})
		doc["session"].(map[string]any)["sessionId"] = sid
		mustCall(t, admin, "create_session", doc, nil)
	}
	ids := map[string]string{}
	for _, sid := range []string{"own", "foreign"} {
		var st mcpserver.StartOut
		mustCall(t, admin, "start_workflow", map[string]any{"sessionId": sid, "workflowId": "build"}, &st)
		waitTerminal(t, admin, sid, st.ExecutionID)
		ids[sid] = st.ExecutionID
	}

	args := func(tool, sid string) map[string]any {
		eid := ids[sid]
		switch tool {
		case "get_session_details", "get_workflow_history":
			return map[string]any{"sessionId": sid}
		case "get_workflow_details", "start_workflow":
			return map[string]any{"sessionId": sid, "workflowId": "build"}
		case "create_session":
			d := buildSession("LOG", map[string]any{"message": "again"})
			d["session"].(map[string]any)["sessionId"] = sid
			return d
		case "get_workflow_status", "get_execution_logs", "get_execution_journal", "verify_journal", "list_holds":
			return map[string]any{"sessionId": sid, "executionId": eid}
		case "release_hold":
			return map[string]any{"sessionId": sid, "executionId": eid, "supervisorId": "s1"}
		case "create_api_key":
			return map[string]any{"name": "matrix", "role": "VIEWER"}
		case "rotate_api_key", "revoke_api_key":
			return map[string]any{"name": "matrix"}
		case "set_api_key_expiry":
			return map[string]any{"name": "matrix", "ttl": "1h"}
		case "list_inputs":
			return map[string]any{"sessionId": sid}
		case "answer_input":
			return map[string]any{"sessionId": sid, "inputId": "00000000-0000-4000-8000-000000000001", "answer": true}
		case "list_approvals":
			return map[string]any{"sessionId": sid}
		case "decide_approval":
			return map[string]any{"sessionId": sid, "approvalId": "00000000-0000-4000-8000-000000000001", "decision": "APPROVE"}
		case "control_workflow":
			return map[string]any{"sessionId": sid, "executionId": eid, "action": "RESTART"}
		case "control_node":
			return map[string]any{"sessionId": sid, "executionId": eid, "nodeId": "compile", "action": "RETRY"}
		case "set_node_breakpoint":
			return map[string]any{"sessionId": sid, "executionId": eid, "nodeId": "compile", "field": "x", "equals": 1}
		case "get_plugin_details":
			return map[string]any{"type": "LOG"}
		case "get_supervisor_engine":
			return map[string]any{"type": "rules"}
		case "get_supervisor", "create_credential", "revoke_credential":
			return map[string]any{"supervisorId": "s1"}
		}
		return map[string]any{}
	}
	type caller struct {
		name, key, sid string
		role           access.Role
		limited        bool
	}
	callers := []caller{
		{"VIEWER", matrixKeys[0].secret, "own", access.Viewer, false},
		{"OPERATOR", matrixKeys[1].secret, "own", access.Operator, false},
		{"ADMIN", matrixKeys[2].secret, "own", access.Admin, false},
		{"limited-own", matrixKeys[3].secret, "own", access.Admin, true},
		{"limited-foreign", matrixKeys[3].secret, "foreign", access.Admin, true},
	}
	// Tools whose success depends on state, not on the caller: they fail for
	// everyone allowed (no supervisor exists); allowed means "not refused".
	noSupervisor := map[string]bool{"get_supervisor": true, "create_credential": true, "revoke_credential": true}
	sessionScoped := func(tool string) bool {
		a := args(tool, "own")
		_, ok := a["sessionId"]
		_, doc := a["session"]
		return ok || doc
	}
	// refusedByAccess tells an authorization refusal from a state answer
	// (a breakpoint on a finished execution is a conflict, not a refusal).
	refusedByAccess := func(msg string) bool {
		return strings.HasPrefix(msg, "Forbidden") || strings.HasPrefix(msg, "Session not found")
	}
	for _, c := range callers {
		cs := mustConnect(t, s.URL, c.key)
		lt, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, tl := range lt.Tools {
			listed[tl.Name] = true
		}
		for _, tool := range append(slices.Clone(allTools), "no_such_tool") {
			op, known := mcpserver.ToolOperation(tool)
			roleOK := known && access.Allowed(c.role, op) || !known && c.role == access.Admin
			if known && listed[tool] != roleOK {
				t.Errorf("%s: tools/list shows %s = %v, want %v", c.name, tool, listed[tool], roleOK)
			}
			allowed := roleOK
			foreignSession := c.limited && c.sid == "foreign" && sessionScoped(tool)
			if c.limited && known && !sessionScoped(tool) && op.MinRole() != access.Viewer {
				allowed = false // a limited key's writes must name a session
			}
			if foreignSession {
				allowed = false
			}
			var before map[string]int64
			if !allowed {
				mcpQuiet(t, dsn) // runs an earlier allowed call started must not move the counts
				before = mcpRowCounts(t, dsn)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args(tool, c.sid)})
			if !known {
				if err == nil && !res.IsError {
					t.Errorf("%s: unknown tool answered %v", c.name, res)
				}
				if c.role != access.Admin && (err != nil || !strings.Contains(text(res), "unknown tools need an ADMIN key")) {
					t.Errorf("%s: unknown tool: %v %v, want refused", c.name, err, res)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: protocol error %v", c.name, tool, err)
				continue
			}
			switch {
			case allowed && res.IsError && !noSupervisor[tool] && refusedByAccess(text(res)):
				t.Errorf("%s %s: refused: %s", c.name, tool, text(res))
			case allowed && noSupervisor[tool] && !strings.Contains(text(res), "Supervisor not found"):
				t.Errorf("%s %s: %s, want the supervisor not-found answer", c.name, tool, text(res))
			case !allowed && (!res.IsError || !refusedByAccess(text(res))):
				t.Errorf("%s %s: %q, want refused", c.name, tool, text(res))
			case !allowed:
				if after := mcpRowCounts(t, dsn); !mapsEqual(before, after) {
					t.Errorf("%s %s: denied call changed rows: %v -> %v", c.name, tool, before, after)
				}
				if foreignSession {
					// Foreign must read exactly like unknown.
					unknown := args(tool, "nosuch")
					if _, ok := unknown["session"]; ok {
						unknown["session"].(map[string]any)["sessionId"] = "nosuch"
					}
					ures, _ := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: unknown})
					if got, want := text(res), strings.ReplaceAll(text(ures), "nosuch", "foreign"); got != want {
						t.Errorf("%s %s: foreign %q, unknown %q: want byte-identical", c.name, tool, got, want)
					}
				}
			}
		}
	}
	// Every MCP start and command is recorded with the key as actor and the mcp channel.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE actor = 'key:operator' AND channel = 'mcp'`).Scan(&n); err != nil || n == 0 {
		t.Errorf("events by key:operator over mcp: %d %v, want some", n, err)
	}
	// ... and reaches the executions' journals (the observer appends them
	// from the outbox shortly after the commit).
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM journal_records WHERE line LIKE '%"key:operator"%' AND line LIKE '%"mcp"%'`).Scan(&n)
		if err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("journal records with actor key:operator and channel mcp: %d %v, want some", n, err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mcpQuiet waits until no execution is active, so row counts stay still.
func mcpQuiet(t *testing.T, dsn string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int64
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM executions WHERE status IN ('PENDING', 'RUNNING', 'PAUSED')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d executions still active after 20 s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// heldSession holds each run in a 30 s DELAY before "mid": a live run the
// steering tools can act on.
func heldSession(id string) map[string]any {
	return map[string]any{"session": map[string]any{
		"sessionId": id, "name": "held",
		"workflows": []any{map[string]any{
			"workflowId": "w",
			"nodes": []any{
				map[string]any{"nodeId": "start", "type": "MANUAL"},
				map[string]any{"nodeId": "wait", "type": "DELAY", "config": map[string]any{"duration": "30s"}},
				map[string]any{"nodeId": "mid", "type": "LOG", "config": map[string]any{"message": "mid ran"}},
				map[string]any{"nodeId": "out", "type": "RESULT"},
			},
			"edges": []any{
				map[string]any{"source": "start", "target": "wait"},
				map[string]any{"source": "wait", "target": "mid"},
				map[string]any{"source": "mid", "target": "out"},
			},
		}},
	}}
}

// TestMCPSteer drives a live run through the steering tools: a breakpoint,
// PAUSE with ifStatus, node SKIP, then STOP_ALL with a mode.
func TestMCPSteer(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	cs := mustConnect(t, s.URL, "")
	mustCall(t, cs, "create_session", heldSession("held"), nil)
	var runs []string
	for i := range 2 {
		var st mcpserver.StartOut
		mustCall(t, cs, "start_workflow", map[string]any{"sessionId": "held", "workflowId": "w", "payload": map[string]any{"i": i}}, &st)
		runs = append(runs, st.ExecutionID)
	}
	var bp mcpserver.CommandOut
	mustCall(t, cs, "set_node_breakpoint", map[string]any{"sessionId": "held", "executionId": runs[0], "nodeId": "mid",
		"field": "i", "equals": 0, "key": "bp-1"}, &bp)
	if bp.Status != "applied" {
		t.Errorf("breakpoint: %+v", bp)
	}
	var st mcpserver.ExecutionStatus
	mustCall(t, cs, "get_workflow_status", map[string]any{"sessionId": "held", "executionId": runs[0]}, &st)
	found := false
	for _, n := range st.Nodes {
		if n.NodeID == "mid" && n.Breakpoint != nil && n.Breakpoint.Field == "i" {
			found = true
		}
	}
	if !found {
		t.Errorf("status shows no breakpoint on mid: %+v", st.Nodes)
	}
	// ifStatus that does not hold is a conflict naming the actual status.
	res := mcpCall(t, cs, "control_workflow", map[string]any{"sessionId": "held", "executionId": runs[0], "action": "PAUSE", "ifStatus": "PAUSED"}, nil)
	if !res.IsError || !strings.Contains(text(res), "RUNNING") || !strings.Contains(text(res), "get_workflow_status") {
		t.Errorf("PAUSE ifStatus PAUSED on a running run: %q", text(res))
	}
	var cmd mcpserver.CommandOut
	mustCall(t, cs, "control_workflow", map[string]any{"sessionId": "held", "executionId": runs[0], "action": "PAUSE", "ifStatus": "RUNNING", "reason": "look"}, &cmd)
	mustCall(t, cs, "get_workflow_status", map[string]any{"sessionId": "held", "executionId": runs[0]}, &st)
	if st.Status != "PAUSED" {
		t.Errorf("after PAUSE: %s", st.Status)
	}
	mustCall(t, cs, "control_node", map[string]any{"sessionId": "held", "executionId": runs[1], "nodeId": "mid", "action": "SKIP"}, &cmd)
	mustCall(t, cs, "control_workflow", map[string]any{"sessionId": "held", "action": "STOP_ALL", "workflowId": "w", "mode": "KILL", "key": "stop-all"}, &cmd)
	if !strings.Contains(cmd.Message, "2 execution(s)") {
		t.Errorf("STOP_ALL: %+v, want both runs", cmd)
	}
	for _, id := range runs {
		if st := waitTerminal(t, cs, "held", id); st.Status != "STOPPED" {
			t.Errorf("run %s: %s, want STOPPED", id, st.Status)
		}
	}
	var hist mcpserver.WorkflowHistory
	mustCall(t, cs, "get_workflow_history", map[string]any{"sessionId": "held", "limit": 1}, &hist)
	if len(hist.Executions) != 1 || hist.NextCursor == "" {
		t.Errorf("history page of 1: %+v", hist)
	}
	var next mcpserver.WorkflowHistory
	mustCall(t, cs, "get_workflow_history", map[string]any{"sessionId": "held", "limit": 1, "cursor": hist.NextCursor}, &next)
	if len(next.Executions) != 1 || next.Executions[0].ExecutionID == hist.Executions[0].ExecutionID {
		t.Errorf("second page: %+v", next)
	}
}
