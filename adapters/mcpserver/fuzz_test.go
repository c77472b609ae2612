package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// FuzzViewerCannotWrite posts raw JSON-RPC bodies (batches, odd casing,
// escaped method and tool names, duplicate keys, NULs, a BOM, deep params)
// with a VIEWER key to the server over a real seeded database, and fails if
// any row was added or removed or the answer holds a successful write
// result. The seeds carry valid arguments naming things that exist
// (writeArgs), so a write that got through would succeed and show.
// Authorization runs on the request the SDK decoded and dispatches, so there
// is no second parser whose reading could differ.
//
// The database is seeded once per process, not per input. Execution ids
// differ between processes, so bodies name the seeded executions by tokens
// (ownExecToken, liveExecToken), replaced before each request. The seed
// corpus runs with go test; run longer with:
// go test ./adapters/mcpserver -fuzz FuzzViewerCannotWrite -fuzztime 5m
func FuzzViewerCannotWrite(f *testing.F) {
	call := func(tool string) string { return toolCall(tool, writeArgs[tool]) }
	// callAs names the tool differently but passes start_workflow's arguments.
	callAs := func(name string) string { return toolCall(name, writeArgs["start_workflow"]) }
	for _, seed := range []string{
		call("start_workflow"),
		call("create_session"),
		call("control_node"),
		call("control_workflow"),
		call("set_node_breakpoint"),
		call("revoke_credential"),
		callAs("start\\u005fworkflow"),
		callAs("START_WORKFLOW"),
		callAs("start_workflow\\u0000"),
		"[" + call("list_plugins") + "," + strings.Replace(call("start_workflow"), `"id":1`, `"id":2`, 1) + "]",
		`{"jsonrpc":"2.0","id":1,"method":"tools\u002fcall","params":{"name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build"}}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build"}}}`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","method":"tools/list","params":{"name":"start_workflow"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_plugins","name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"start_workflow","name":"list_plugins","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_workflow_status","arguments":{"sessionId":"own","SESSIONID":"foreign","executionId":"` + ownExecToken + `"}}}`,
		"\ufeff" + call("start_workflow"),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build","payload":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}},` + call("start_workflow") + `]`,
	} {
		f.Add(seed, "")
		f.Add(seed, "2025-06-18")
		f.Add(seed, "2025-03-26")
	}
	env := newEnv(f)
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		f.Fatal(err)
	}
	srv := authenticated(f, h)
	keys := writeOnlyKeys(f, srv)
	rows := env.rowCounts(f)
	viewer := secretOf("viewer")
	f.Fuzz(func(t *testing.T, body, version string) {
		if len(body) > 1<<16 {
			return
		}
		res := serve(srv, viewer, version, env.expand(body))
		if w := successfulWrites(res, keys); len(w) > 0 {
			t.Fatalf("a VIEWER key got a successful write result (%v) with body %q: %.500s", w, body, res)
		}
		env.assertRowsUnchanged(t, rows, fmt.Sprintf("a VIEWER request with body %q", body))
	})
}

// writeArgs are valid arguments of each write tool on the seeded database:
// a call that got past authorization would succeed and add rows
// (TestFuzzOracleSeesWrites shows it with OPERATOR and ADMIN keys). Credentials belong
// to supervisors, of which none exist, so the credential tools cannot succeed.
var writeArgs = map[string]string{
	"start_workflow": `{"sessionId":"own","workflowId":"build"}`,
	"create_session": `{"session":{"sessionId":"fuzzed","name":"x","workflows":[{"workflowId":"w","nodes":[{"nodeId":"start","type":"MANUAL"},` +
		`{"nodeId":"out","type":"RESULT"}],"edges":[{"source":"start","target":"out"}]}]}}`,
	"control_node":        `{"sessionId":"own","executionId":"` + ownExecToken + `","nodeId":"boom","action":"RETRY"}`,
	"control_workflow":    `{"sessionId":"own","executionId":"` + ownExecToken + `","action":"RESTART"}`,
	"set_node_breakpoint": `{"sessionId":"own","executionId":"` + liveExecToken + `","nodeId":"boom","field":"order.status","equals":"held"}`,
	"create_credential":   `{"supervisorId":"s1"}`,
	"revoke_credential":   `{"supervisorId":"s1"}`,
	"list_plugins":        `{}`,
}

// toolCall is the tools/call request of a tool with raw JSON arguments.
func toolCall(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}
