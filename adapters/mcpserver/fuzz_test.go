package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// FuzzViewerCannotWrite posts raw JSON-RPC bodies (batches, odd casing,
// escaped method and tool names, duplicate keys, NULs, a BOM, deep params)
// with a VIEWER key and fails if any write use case ran. Authorization runs
// on the request the SDK decoded and dispatches, so there is no second
// parser whose reading could differ. The seed corpus runs with go test; run
// longer with: go test ./adapters/mcpserver -fuzz FuzzViewerCannotWrite -fuzztime 5m
func FuzzViewerCannotWrite(f *testing.F) {
	call := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{"sessionId":"own","workflowId":"build","executionId":"` + ownExec + `","nodeId":"log","action":"RETRY","session":{"sessionId":"own","name":"x","workflows":[]}}}}`
	}
	for _, seed := range []string{
		call("start_workflow"),
		call("create_session"),
		call("control_node"),
		call("control_workflow"),
		call("set_node_breakpoint"),
		call("revoke_credential"),
		call("start\\u005fworkflow"),
		call("START_WORKFLOW"),
		call("start_workflow\\u0000"),
		"[" + call("list_plugins") + "," + strings.Replace(call("start_workflow"), `"id":1`, `"id":2`, 1) + "]",
		`{"jsonrpc":"2.0","id":1,"method":"tools\u002fcall","params":{"name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build"}}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build"}}}`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","method":"tools/list","params":{"name":"start_workflow"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_plugins","name":"start_workflow","arguments":{"sessionId":"own","workflowId":"build"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"start_workflow","name":"list_plugins","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_workflow_status","arguments":{"sessionId":"own","SESSIONID":"foreign","executionId":"` + ownExec + `"}}}`,
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
	fk := &fakes{}
	h, err := New(fk.deps(f), "test", zap.NewNop())
	if err != nil {
		f.Fatal(err)
	}
	srv := authenticated(f, h)
	viewer := secretOf("viewer")
	f.Fuzz(func(t *testing.T, body, version string) {
		if len(body) > 1<<16 {
			return
		}
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+viewer)
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		srv.ServeHTTP(httptest.NewRecorder(), req)
		if n := fk.writes.Load(); n != 0 {
			t.Fatalf("a VIEWER key ran %d write use cases with body %q", n, body)
		}
	})
}
