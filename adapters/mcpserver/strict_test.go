package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// rpcAnswer is one JSON-RPC answer to a tools/call.
type rpcAnswer struct {
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func (a rpcAnswer) text() string {
	var b strings.Builder
	if a.Result != nil {
		for _, c := range a.Result.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func rpc(t *testing.T, body string) rpcAnswer {
	t.Helper()
	var a rpcAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("answer is not one JSON-RPC message: %v %.500s", err, body)
	}
	return a
}

// Arguments that are not strict JSON get an isError result naming the
// argument, never a JSON-RPC error, never an internal error, and change
// nothing.
func TestStrictArgumentsAreRefusedNamingTheArgument(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	core, logs := observer.New(zapcore.ErrorLevel)
	h, err := New(env.deps, "test", zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	srv := authenticated(t, h)
	rows := env.rowCounts(t)
	const start = `{"sessionId":"own","workflowId":"build","payload":%s}`
	pl := func(p string) string { return strings.Replace(start, "%s", p, 1) }
	session := `{"session":{"sessionId":"fresh","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"},` +
		`{"nodeId":"l","type":"LOG","config":{"message":"a\u0000b"}}],"edges":[{"source":"t","target":"l"}]}]}}`
	cases := []struct {
		name, tool, args, path, reason string
	}{
		{"payload value escaped NUL", "start_workflow", pl(`{"v":"a\u0000"}`), "payload.v", "U+0000"},
		{"payload value raw NUL", "start_workflow", pl("{\"v\":\"a\x00\"}"), "payload.v", "U+0000"},
		{"payload key escaped NUL", "start_workflow", pl(`{"k\u0000":1}`), `payload["k\x00"]`, "U+0000"},
		{"payload invalid UTF-8", "start_workflow", pl("{\"v\":\"\xff\xfe\"}"), "payload.v", "UTF-8"},
		{"payload lone surrogate", "start_workflow", pl(`{"v":"\ud800"}`), "payload.v", "surrogate"},
		{"payload repeated key", "start_workflow", pl(`{"id":1,"id":2}`), "payload.id", "twice"},
		{"payload 1e400", "start_workflow", pl(`{"n":1e400}`), "payload.n", "out of range"},
		{"payload -1e400", "start_workflow", pl(`[-1e400]`), "payload[0]", "out of range"},
		{"repeated sessionId", "start_workflow", `{"sessionId":"own","sessionId":"foreign","workflowId":"build"}`, "sessionId", "twice"},
		{"idempotency key NUL", "start_workflow", `{"sessionId":"own","workflowId":"build","idempotencyKey":"k\u0000"}`, "idempotencyKey", "U+0000"},
		{"control reason NUL", "control_workflow", `{"sessionId":"own","executionId":"` + liveExecToken + `","action":"PAUSE","reason":"\u0000"}`, "reason", "U+0000"},
		{"control key invalid UTF-8", "control_workflow", "{\"sessionId\":\"own\",\"executionId\":\"" + liveExecToken + "\",\"action\":\"PAUSE\",\"key\":\"\xc3\x28\"}", "key", "UTF-8"},
		{"node control reason NUL", "control_node", `{"sessionId":"own","executionId":"` + liveExecToken + `","nodeId":"boom","action":"PAUSE","reason":"\u0000"}`, "reason", "U+0000"},
		{"breakpoint equals NUL", "set_node_breakpoint", `{"sessionId":"own","executionId":"` + liveExecToken + `","nodeId":"boom","field":"a","equals":"\u0000"}`, "equals", "U+0000"},
		{"breakpoint equals repeated key", "set_node_breakpoint", `{"sessionId":"own","executionId":"` + liveExecToken + `","nodeId":"boom","field":"a","equals":{"x":1,"x":2}}`, "equals.x", "twice"},
		{"session LOG message NUL", "create_session", session, "session.workflows[0].nodes[1].config.message", "U+0000"},
		{"status with a NUL id", "get_workflow_status", `{"sessionId":"own","executionId":"a\u0000"}`, "executionId", "U+0000"},
		{"reason as a big number", "control_workflow", `{"sessionId":"own","executionId":"` + liveExecToken + `","action":"PAUSE","reason":9007199254740993}`, "reason: ", "must be a string, not an integer"},
		{"nodeId as a number", "create_session", `{"session":{"sessionId":"a","name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":1,"type":"MANUAL"}]}]}}`, "session.workflows[].nodes[].nodeId: ", "must be a string"},
		{"arguments not an object", "list_sessions", `[1]`, "the arguments ", "must be one JSON object"},
		{"trailing data", "start_workflow", `{"sessionId":"own","workflowId":"build"}`, "", ""},
	}
	for _, tc := range cases {
		if tc.path == "" {
			continue // the JSON-RPC layer reads trailing data; covered by the fuzz seeds
		}
		body := serve(srv, secretOf("admin"), "", toolCall(tc.tool, env.expand(tc.args)))
		a := rpc(t, body)
		if a.Error != nil || a.Result == nil || !a.Result.IsError {
			t.Errorf("%s: %.400s, want an isError tool result", tc.name, body)
			continue
		}
		txt := a.text()
		want := tc.path
		if !strings.HasSuffix(want, " ") {
			want += ": "
		}
		if !strings.Contains(txt, want) || !strings.Contains(txt, tc.reason) || !strings.Contains(txt, tc.tool) {
			t.Errorf("%s: %q, want a sentence naming %s and %q", tc.name, txt, tc.path, tc.reason)
		}
		for _, g := range []string{"Internal error", "json:", "cannot unmarshal", "interface {}", "strconv.", "e+15", "validating"} {
			if strings.Contains(txt, g) {
				t.Errorf("%s: %q holds %q", tc.name, txt, g)
			}
		}
	}
	env.assertRowsUnchanged(t, rows, "refused tool calls")
	if n := logs.Len(); n != 0 {
		t.Errorf("%d error lines logged for refused calls: %v", n, logs.All())
	}
}

// Numbers keep their exact text through the tools: a start payload as
// stored, a result as get_workflow_status returns it (structured and as
// text), a breakpoint's value, a node config.
func TestStrictNumbersAreExact(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	srv := authenticated(t, h)
	ctx := context.Background()
	const payload = `{"id":9007199254740993,"big":9223372036854775809,"f":0.1000000000000000055511151231257827}`
	digits := []string{"9007199254740993", "9223372036854775809", "0.1000000000000000055511151231257827"}

	a := rpc(t, serve(srv, secretOf("admin"), "", toolCall("start_workflow", `{"sessionId":"own","workflowId":"build","payload":`+payload+`}`)))
	if a.Result == nil || a.Result.IsError {
		t.Fatalf("start_workflow: %+v %s", a.Error, a.text())
	}
	var out StartOut
	if err := json.Unmarshal(a.Result.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := env.admin.QueryRow(ctx, `SELECT payload::text FROM executions WHERE execution_id = $1`, out.ExecutionID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	for _, d := range digits {
		if !strings.Contains(stored, d) {
			t.Errorf("stored payload %s lacks %s", stored, d)
		}
	}

	// A result read back: structured content and its text copy.
	if _, err := env.admin.Exec(ctx, `UPDATE executions SET result = $2::jsonb WHERE execution_id = $1`, out.ExecutionID, payload); err != nil {
		t.Fatal(err)
	}
	a = rpc(t, serve(srv, secretOf("admin"), "", toolCall("get_workflow_status", `{"sessionId":"own","executionId":"`+out.ExecutionID+`"}`)))
	if a.Result == nil || a.Result.IsError {
		t.Fatalf("get_workflow_status: %+v %s", a.Error, a.text())
	}
	for _, d := range digits {
		if !strings.Contains(string(a.Result.StructuredContent), d) || !strings.Contains(a.text(), d) {
			t.Errorf("get_workflow_status lost %s:\nstructured %s\ntext %s", d, a.Result.StructuredContent, a.text())
		}
	}

	// A breakpoint's value.
	a = rpc(t, serve(srv, secretOf("admin"), "", toolCall("set_node_breakpoint",
		`{"sessionId":"own","executionId":"`+out.ExecutionID+`","nodeId":"boom","field":"id","equals":9007199254740993}`)))
	if a.Result == nil || a.Result.IsError {
		t.Fatalf("set_node_breakpoint: %+v %s", a.Error, a.text())
	}
	a = rpc(t, serve(srv, secretOf("admin"), "", toolCall("get_workflow_status", `{"sessionId":"own","executionId":"`+out.ExecutionID+`"}`)))
	if !strings.Contains(string(a.Result.StructuredContent), `"equals":9007199254740993`) {
		t.Errorf("breakpoint read back: %s", a.Result.StructuredContent)
	}

	// A node config, through create_session and get_workflow_details.
	a = rpc(t, serve(srv, secretOf("admin"), "", toolCall("create_session", `{"session":{"sessionId":"exact","name":"n","workflows":[{"workflowId":"w",`+
		`"nodes":[{"nodeId":"t","type":"MANUAL"},{"nodeId":"c","type":"HTTP_REQUEST","config":{"url":"https://api.example.com/x","body":`+payload+`}}],`+
		`"edges":[{"source":"t","target":"c"}]}]}}`)))
	if a.Result == nil || a.Result.IsError {
		t.Fatalf("create_session: %+v %s", a.Error, a.text())
	}
	a = rpc(t, serve(srv, secretOf("admin"), "", toolCall("get_workflow_details", `{"sessionId":"exact","workflowId":"w"}`)))
	if a.Result == nil || a.Result.IsError {
		t.Fatalf("get_workflow_details: %+v %s", a.Error, a.text())
	}
	for _, d := range digits {
		if !strings.Contains(string(a.Result.StructuredContent), d) {
			t.Errorf("get_workflow_details lost %s: %s", d, a.Result.StructuredContent)
		}
	}
}

// A body that is not JSON at all is a JSON-RPC parse error in plain words,
// not the SDK's Go text.
func TestStrictTransportParseError(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	srv := authenticated(t, h)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_plugins","arguments":{"a":"x` + "\x01" + `"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call",`,
		`{"jsonrpc":"2.0","id":1,"method":tools/call}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_plugins","arguments":{}}}}`,
	} {
		res := serve(srv, secretOf("admin"), "", body)
		a := rpc(t, res)
		if a.Error == nil || a.Error.Code != -32700 || !strings.Contains(a.Error.Message, " at byte ") {
			t.Errorf("body %q: %s, want a JSON-RPC parse error saying where", body, res)
		}
		if strings.Contains(res, "json: ") || strings.Contains(res, "invalid character") {
			t.Errorf("body %q: %s holds Go text", body, res)
		}
	}
}

// TestStrictTransportEnvelope: an envelope the SDK would refuse in Go's
// words (an id that is an object or 1e400, params of the wrong shape or
// with members of the wrong type) is refused in ours, naming what is
// wrong, on both MCP endpoints (they share strictTransport).
func TestStrictTransportEnvelope(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	srv := authenticated(t, h)
	for _, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`, -32600, "id must be a string or an integer"},
		{`{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, -32600, "id must be a string or an integer"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, -32600, "id must be a string or an integer"},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, -32600, "method must be a string"},
		{`[{"jsonrpc":"2.0","id":[],"method":"tools/list"}]`, -32600, "id must be"},
		{`5`, -32600, "one JSON object"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, -32602, "params must be a JSON object"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, -32602, "name must be a string, not a number"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, -32602, "protocolVersion must be a string, not a number"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":[],"clientInfo":"x"}}`, -32602, "capabilities must be an object, not an array"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":true}}`, -32602, "cursor must be a string, not a boolean"},
	} {
		res := serve(srv, secretOf("admin"), "", c.body)
		a := rpc(t, res)
		if a.Error == nil || a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.want) {
			t.Errorf("body %s: %s, want error %d saying %q", c.body, res, c.code, c.want)
		}
		for _, g := range []string{"json: ", "cannot unmarshal", "Go struct", "Go value", "interface {}", "malformed payload"} {
			if strings.Contains(res, g) {
				t.Errorf("body %s: %s holds Go text %q", c.body, res, g)
			}
		}
	}
	// A well-formed call still goes through.
	a := rpc(t, serve(srv, secretOf("admin"), "", `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`))
	if a.Error != nil {
		t.Errorf("tools/list with params {}: %+v", a.Error)
	}
}

// TestDecodeRefusalInOurWords: the SDK's refusal of an argument its typed
// decoding cannot take (a number beyond an int) names the argument without
// Go's words.
func TestDecodeRefusalInOurWords(t *testing.T) {
	for _, c := range []struct{ sdk, want string }{
		{`json: cannot unmarshal number 100000000000000000000,"waitSecon... overflows into Go struct field mcpserver.ReadSignalsIn.limit of type int`,
			"limit: is out of range for an integer"},
		{`json: cannot unmarshal string into Go struct field mcpserver.In.command.type of type bool`, "command.type: must be a boolean"},
		{`unmarshaling arguments: json: cannot unmarshal array into Go value of type map[string]interface {}`, "an argument has a value"},
	} {
		r := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: c.sdk}}}
		decodeRefusal("read_signals", r)
		got := r.Content[0].(*mcp.TextContent).Text
		if !strings.Contains(got, c.want) || !strings.Contains(got, "read_signals") || goDecoderText.MatchString(got) {
			t.Errorf("%s\n became %q, want it to say %q in our words", c.sdk, got, c.want)
		}
	}
	// Other tool errors are left as they are.
	r := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "execution x is not in your units"}}}
	decodeRefusal("get_execution", r)
	if got := r.Content[0].(*mcp.TextContent).Text; got != "execution x is not in your units" {
		t.Errorf("a tool's own error was reworded: %q", got)
	}
}
