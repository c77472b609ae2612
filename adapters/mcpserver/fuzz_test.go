package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/yukta/yukta/domain/jsonvalue"
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
		// Arguments that are not strict JSON: refused before any tool runs.
		toolCall("start_workflow", `{"sessionId":"own","workflowId":"build","payload":{"v":"\u0000"}}`),
		toolCall("start_workflow", "{\"sessionId\":\"own\",\"workflowId\":\"build\",\"payload\":{\"v\":\"\x00\"}}"),
		toolCall("start_workflow", "{\"sessionId\":\"own\",\"workflowId\":\"build\",\"payload\":{\"v\":\"\xff\"}}"),
		toolCall("start_workflow", `{"sessionId":"own","workflowId":"build","payload":{"id":1,"id":2}}`),
		toolCall("start_workflow", `{"sessionId":"foreign","sessionId":"own","workflowId":"build"}`),
		toolCall("start_workflow", `{"sessionId":"own","workflowId":"build","payload":{"n":1e400}}`),
		toolCall("start_workflow", `{"sessionId":"own","workflowId":"build","payload":{"n":9007199254740993,"m":9223372036854775809}}`),
		toolCall("start_workflow", `{"sessionId":"own","workflowId":"build","payload":"\ud800"}`),
		toolCall("control_workflow", `{"sessionId":"own","executionId":"`+ownExecToken+`","action":"RESTART","reason":"\u0000"}`),
		toolCall("set_node_breakpoint", `{"sessionId":"own","executionId":"`+liveExecToken+`","nodeId":"boom","field":"a","equals":1e400}`),
		toolCall("set_node_breakpoint", `{"sessionId":"own","executionId":"`+liveExecToken+`","nodeId":"boom","field":"a","field":"b","equals":1}`),
		toolCall("create_session", `{"session":{"sessionId":"fuzzed","name":"x\u0000","workflows":[{"workflowId":"w","nodes":[{"nodeId":"start","type":"MANUAL"}]}]}}`),
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
		if strings.Contains(res, "Internal error") {
			t.Fatalf("body %q got an internal error: %.500s", body, res)
		}
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
	"answer_input":        `{"inputId":"00000000-0000-4000-8000-000000000001","answer":true}`,
	"decide_approval":     `{"approvalId":"00000000-0000-4000-8000-000000000001","decision":"APPROVE"}`,
	"release_hold":        `{"sessionId":"own","executionId":"` + liveExecToken + `","supervisorId":"guard"}`,
	"create_api_key":      `{"name":"fuzzed","role":"ADMIN"}`,
	"list_api_keys":       `{}`,
	"rotate_api_key":      `{"name":"fuzzed"}`,
	"revoke_api_key":      `{"name":"fuzzed"}`,
	"set_api_key_expiry":  `{"name":"fuzzed","ttl":"1h"}`,
}

// toolCall is the tools/call request of a tool with raw JSON arguments.
func toolCall(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

// FuzzStrictArguments calls start_workflow and set_node_breakpoint as an
// OPERATOR with any argument text. A call never ends in an internal error; a
// call whose arguments are refused (or that the protocol refuses) changes no
// row; and a call that succeeded had arguments domain/jsonvalue accepts, so
// nothing the store cannot keep exactly got through. Run longer with:
// go test ./adapters/mcpserver -run '^$' -fuzz FuzzStrictArguments -fuzztime 5m -fuzzminimizetime 5s
func FuzzStrictArguments(f *testing.F) {
	for _, args := range []string{
		`{"sessionId":"own","workflowId":"build"}`,
		`{"sessionId":"own","workflowId":"build","payload":{"id":9007199254740993,"big":9223372036854775809}}`,
		`{"sessionId":"own","workflowId":"build","payload":{"v":"\u0000"}}`,
		"{\"sessionId\":\"own\",\"workflowId\":\"build\",\"payload\":{\"v\":\"\x00\"}}",
		"{\"sessionId\":\"own\",\"workflowId\":\"build\",\"payload\":{\"v\":\"\xff\"}}",
		`{"sessionId":"own","workflowId":"build","payload":{"k\u0000":1}}`,
		`{"sessionId":"own","workflowId":"build","payload":{"id":1,"id":2}}`,
		`{"sessionId":"own","workflowId":"build","workflowId":"build"}`,
		`{"sessionId":"own","workflowId":"build","payload":1e400}`,
		`{"sessionId":"own","workflowId":"build","payload":"\udc00"}`,
		`{"sessionId":"own","workflowId":"build","idempotencyKey":"\u0000"}`,
		`{"sessionId":"own","workflowId":"build","payload":` + strings.Repeat("[", 129) + strings.Repeat("]", 129) + `}`,
		`{"sessionId":"own","executionId":"` + liveExecToken + `","nodeId":"boom","field":"a","equals":9007199254740993}`,
		`{"sessionId":"own","executionId":"` + liveExecToken + `","nodeId":"boom","field":"a","equals":"\u0000"}`,
		`{"sessionId":"own","executionId":"` + liveExecToken + `","nodeId":"boom","field":"a","equals":{"a":1,"a":1}}`,
	} {
		f.Add(args)
	}
	env := newEnv(f)
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		f.Fatal(err)
	}
	srv := authenticated(f, h)
	f.Fuzz(func(t *testing.T, args string) {
		if len(args) > 1<<14 {
			return
		}
		tool := "start_workflow"
		if strings.Contains(args, `"nodeId"`) {
			tool = "set_node_breakpoint"
		}
		before := env.rowCounts(t)
		body := toolCall(tool, env.expand(args))
		res := serve(srv, secretOf("operator"), "", body)
		if strings.Contains(res, "Internal error") || strings.Contains(res, `"code":-32603`) {
			t.Fatalf("arguments %q: internal error: %.500s", args, res)
		}
		var msg struct {
			Error  json.RawMessage `json:"error"`
			Result *struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(res), &msg); err != nil || msg.Error != nil || msg.Result == nil {
			env.assertRowsUnchanged(t, before, fmt.Sprintf("a call refused by the protocol with arguments %q", args))
			return
		}
		if msg.Result.IsError {
			// Arguments refused as such change nothing. A command the domain
			// refuses (an unknown node) is recorded as rejected, by design.
			if len(msg.Result.Content) == 1 && strings.HasPrefix(msg.Result.Content[0].Text, "Invalid arguments for ") {
				env.assertRowsUnchanged(t, before, fmt.Sprintf("a call with refused arguments %q", args))
			}
			return
		}
		// What the server took as the arguments (args may close the message
		// early): read leniently, then checked strictly.
		var sent struct {
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(body), &sent) != nil || len(sent.Params.Arguments) == 0 {
			t.Fatalf("a call whose message is not JSON was accepted: %q", body)
		}
		if _, err := jsonvalue.Decode(sent.Params.Arguments, ""); err != nil {
			t.Fatalf("arguments %q were accepted although %v", sent.Params.Arguments, err)
		}
	})
}
