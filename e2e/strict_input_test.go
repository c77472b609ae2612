package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// TestStrictInputEveryDoor sends every value PostgreSQL cannot store or
// encoding/json would silently change through every door that takes JSON
// from a client, on the real binary: REST through the generated client, MCP
// through the go-sdk client (raw HTTP where that client cannot send the
// bytes), and the CLI binary. Each cell must either be refused (a 400 problem
// / an MCP tool error / a CLI exit ≠ 0, with a message naming the place) and
// change nothing, or, for the two valid big integers at a door that takes
// any JSON, come back with exactly the digits sent, read through REST, MCP
// and the CLI. No answer is a 500 and the server logs no failed request.
//
// The round-trip workflows have no expression (MANUAL → RESULT, WEBHOOK →
// RESULT, MANUAL → INPUT_REQUEST (answer) → RESULT): numbers are only
// carried, never computed.
func TestStrictInputEveryDoor(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	se := &strictEnv{env: e, db: db, mcp: mustConnect(t, s.URL, "")}

	e.apply("strict",
		line("exact", nd("start", "MANUAL", ""), nd("out", "RESULT", "")),
		line("ask", nd("start", "MANUAL", ""), nd("ask", "INPUT_REQUEST", `{"prompt":"Which v?","mode":"answer"}`), nd("out", "RESULT", "")),
		line("hook", nd("hook", "WEBHOOK", ""), nd("out", "RESULT", "")))
	// The target of commands and breakpoints: a run parked at its input.
	target := se.parkedAsk()

	values := []strictValue{
		{name: "NUL escape", text: func(string) string { return `"a\u0000b"` }, reason: "U+0000", key: `"a\u0000b"`, keyPath: `["a\x00b"]`},
		{name: "NUL raw", text: func(string) string { return "\"a\x00b\"" }, reason: "U+0000", key: "\"a\x00b\"", keyPath: `["a\x00b"]`},
		{name: "invalid UTF-8", text: func(string) string { return "\"a\xffb\"" }, reason: "UTF-8", key: "\"a\xffb\"", keyPath: `["a\xffb"]`},
		{name: "duplicate key", text: func(f string) string { return `"x",` + strconv.Quote(f) + `:"y"` }, reason: "twice", key: `"k":1,"k"`, keyPath: ".k"},
		{name: "1e400", text: func(string) string { return "1e400" }, reason: "out of range"},
		{name: "2^53+1", text: func(string) string { return "9007199254740993" }, exact: "9007199254740993"},
		{name: "2^63+1", text: func(string) string { return "9223372036854775809" }, exact: "9223372036854775809"},
	}

	const logDoc = `{"name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"},` +
		`{"nodeId":"l","type":"LOG","config":{"message":%V}}],"edges":[{"source":"t","target":"l"}]}]}`
	sub := func(tmpl, v string) string { return strings.Replace(tmpl, "%V", v, 1) }
	doors := []strictDoor{
		{name: "REST session PUT name", field: "name", path: "name", stringTyped: true, send: func(v string) strictOutcome {
			return se.rest(e.c.PutSessionWithBodyWithResponse(e.ctx, "fresh", nil, jsonType, strings.NewReader(`{"name":`+v+`,"workflows":[]}`)))
		}},
		{name: "REST session PUT LOG message", field: "message", path: "workflows[0].nodes[1].config.message", stringTyped: true, send: func(v string) strictOutcome {
			return se.rest(e.c.PutSessionWithBodyWithResponse(e.ctx, "fresh", nil, jsonType, strings.NewReader(sub(logDoc, v))))
		}},
		{name: "REST start payload key", path: "body.payload", keyDoor: true, send: func(k string) strictOutcome {
			return se.rest(e.c.StartExecutionWithBodyWithResponse(e.ctx, "strict", "exact", nil, jsonType, strings.NewReader(`{"payload":{`+k+`:1}}`)))
		}},
		{name: "REST start payload value", field: "v", path: "body.payload.v", send: func(v string) strictOutcome {
			return se.rest(e.c.StartExecutionWithBodyWithResponse(e.ctx, "strict", "exact", nil, jsonType, strings.NewReader(`{"payload":{"v":`+v+`}}`)))
		}},
		{name: "REST input answer", field: "v", path: "body.answer.v", prepare: se.parkedAsk, send: func(v string) strictOutcome {
			id, _ := se.openInput(se.prepared)
			out := se.rest(e.c.AnswerInputWithBodyWithResponse(e.ctx, id, nil, jsonType, strings.NewReader(`{"answer":{"v":`+v+`}}`)))
			out.execution = se.prepared
			return out
		}},
		{name: "REST command reason", field: "reason", path: "body.reason", stringTyped: true, send: func(v string) strictOutcome {
			return se.rest(e.c.ControlExecutionWithBodyWithResponse(e.ctx, "strict", target, nil, jsonType, strings.NewReader(`{"action":"PAUSE","reason":`+v+`}`)))
		}},
		{name: "REST command key", field: "key", path: "body.key", stringTyped: true, send: func(v string) strictOutcome {
			return se.rest(e.c.ControlNodeWithBodyWithResponse(e.ctx, "strict", target, "ask", nil, jsonType, strings.NewReader(`{"action":"PAUSE","key":`+v+`}`)))
		}},
		{name: "REST breakpoint equals", field: "equals", path: "body.equals", breakpoint: true, send: func(v string) strictOutcome {
			out := se.rest(e.c.SetBreakpointWithBodyWithResponse(e.ctx, "strict", target, "out", nil, jsonType, strings.NewReader(`{"field":"v","equals":`+v+`}`)))
			out.execution = target
			return out
		}},
		{name: "REST webhook body", field: "v", path: "body.v", send: func(v string) strictOutcome {
			return se.rest(e.c.PostWebhookWithBodyWithResponse(e.ctx, "strict", "hook", nil, jsonType, strings.NewReader(`{"v":`+v+`}`)))
		}},
		{name: "MCP start_workflow payload", field: "v", path: "payload.v", send: func(v string) strictOutcome {
			return se.tool("start_workflow", `{"sessionId":"strict","workflowId":"exact","payload":{"v":`+v+`}}`)
		}},
		{name: "MCP control reason", field: "reason", path: "reason", stringTyped: true, send: func(v string) strictOutcome {
			return se.tool("control_workflow", `{"sessionId":"strict","executionId":"`+target+`","action":"PAUSE","reason":`+v+`}`)
		}},
		{name: "CLI run --payload", field: "v", path: "--payload: v", send: func(v string) strictOutcome {
			return se.cli(`{"v":` + v + `}`)
		}},
	}

	type cell struct{ door, value, result string }
	var cells []cell
	for _, d := range doors {
		for _, v := range values {
			text := v.text(d.field)
			path := d.path
			if d.keyDoor {
				if v.key == "" {
					continue // a number is not a key
				}
				text, path = v.key, d.path+v.keyPath
			}
			name := d.name + " × " + v.name
			if d.prepare != nil {
				se.prepared = d.prepare()
			}
			before := se.snapshot(target)
			out := d.send(text)
			if out.status >= 500 {
				t.Errorf("%s: status %d: %s", name, out.status, out.message)
			}
			switch {
			case v.exact != "" && !d.stringTyped && !d.keyDoor:
				if out.refused {
					t.Errorf("%s: refused (%d %s), want the value taken exactly", name, out.status, out.message)
					cells = append(cells, cell{d.name, v.name, "REFUSED (wrong)"})
					continue
				}
				se.checkExact(name, out, d.breakpoint, v.exact)
				cells = append(cells, cell{d.name, v.name, "exact round trip"})
			default:
				if !out.refused {
					t.Errorf("%s: accepted (%d %s), want a refusal naming %s", name, out.status, out.message, path)
					cells = append(cells, cell{d.name, v.name, "ACCEPTED (wrong)"})
					continue
				}
				if !strings.Contains(out.message, path) {
					t.Errorf("%s: refusal %q does not name %s", name, out.message, path)
				}
				if v.reason != "" && !strings.Contains(out.message, v.reason) {
					t.Errorf("%s: refusal %q does not say %q", name, out.message, v.reason)
				}
				for _, g := range []string{"json: ", "cannot unmarshal", "interface {}", "strconv.", "Internal error", "about:blank"} {
					if strings.Contains(out.message, g) {
						t.Errorf("%s: refusal %q holds %q", name, out.message, g)
					}
				}
				if after := se.snapshot(target); after != before {
					t.Errorf("%s: a refused request changed something:\nbefore %s\nafter  %s", name, before, after)
				}
				cells = append(cells, cell{d.name, v.name, fmt.Sprintf("refused (%s): %.90s", out.how, strings.ReplaceAll(out.message, "\n", " "))})
			}
		}
	}

	// The input of the target was never answered, its run never paused, its
	// node never got a NUL key.
	if id, ok := se.openInput(target); !ok || id == (openapi_types.UUID{}) {
		t.Errorf("the target's input is no longer open")
	}
	x := e.get("strict", target)
	if x.Status != apiclient.ExecutionStatusRUNNING || nodeOf(t, x, "ask").Paused {
		t.Errorf("refused commands changed the target: %s", describe(x))
	}
	if n := se.status500; n != 0 {
		t.Errorf("%d answers with status 500", n)
	}
	for l := range strings.Lines(s.logs.String()) {
		if strings.Contains(l, `"level":"error"`) && (strings.Contains(l, "request failed") || strings.Contains(l, "mcp tool failed")) {
			t.Errorf("server log: %s", l)
		}
	}
	var b strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&b, "\n  %-28s %-14s %q", c.door, c.value, c.result)
	}
	t.Logf("%d cells (%d doors × %d values, numbers not applicable as keys):%s", len(cells), len(doors), len(values), b.String())
}

// strictValue is one kind of value a client sends. text is the JSON text to
// put where a member named field takes its value; key is the JSON text of a
// key, keyPath the path step it gives.
type strictValue struct {
	name         string
	text         func(field string) string
	reason       string
	exact        string
	key, keyPath string
}

// strictDoor is one place a client's JSON enters.
type strictDoor struct {
	name, field, path string
	// stringTyped: the member takes a string, so a number is refused too.
	stringTyped bool
	// keyDoor: the value is sent as an object key, not a value.
	keyDoor bool
	// breakpoint: an accepted value is read back as the target node's breakpoint.
	breakpoint bool
	prepare    func() string
	send       func(v string) strictOutcome
}

// strictOutcome is what a door answered.
type strictOutcome struct {
	refused   bool
	status    int    // HTTP status (REST, raw MCP)
	how       string // "400", "tool error", "exit 1", …
	message   string // the problem's violations, the tool error, the CLI's stderr
	execution string // the execution an accepted value went into
}

type strictEnv struct {
	*env
	db        *pgxpool.Pool
	mcp       *mcp.ClientSession
	prepared  string
	status500 int
}

// parkedAsk starts a run of "ask" and waits until it waits for its input.
func (se *strictEnv) parkedAsk() string {
	se.t.Helper()
	id := se.start("strict", "ask", map[string]any{"order": 1})
	se.waitNode("strict", id, "ask", "waiting for its input", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusWAITING })
	return id
}

// openInput returns the open input of an execution.
func (se *strictEnv) openInput(eid string) (openapi_types.UUID, bool) {
	se.t.Helper()
	var id openapi_types.UUID
	res, err := se.c.ListInputsWithResponse(se.ctx, &apiclient.ListInputsParams{SessionId: ptr("strict")})
	if err != nil || res.JSON200 == nil {
		se.t.Fatalf("list inputs: %v %s", err, res.Body)
	}
	for _, in := range res.JSON200.Inputs {
		if in.ExecutionId == eid {
			if err := id.UnmarshalText([]byte(in.InputId)); err != nil {
				se.t.Fatal(err)
			}
			return id, true
		}
	}
	return id, false
}

// snapshot is every row count a request could change, and the target run as
// REST shows it.
func (se *strictEnv) snapshot(target string) string {
	se.t.Helper()
	counts := map[string]int64{}
	for _, table := range []string{"sessions", "workflows", "executions", "execution_nodes", "work_items", "commands", "events", "inputs", "execution_logs"} {
		var n int64
		if err := se.db.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			se.t.Fatal(err)
		}
		counts[table] = n
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s=%d ", k, counts[k])
	}
	res, err := se.c.GetExecutionWithResponse(se.ctx, "strict", target)
	if err != nil {
		se.t.Fatal(err)
	}
	b.Write(res.Body)
	return b.String()
}

// rest reads a generated client's answer: refused when it is a 4xx problem.
func (se *strictEnv) rest(res interface {
	StatusCode() int
}, err error) strictOutcome {
	se.t.Helper()
	if err != nil {
		se.t.Fatalf("REST call: %v", err)
	}
	body := bodyOf(res)
	out := strictOutcome{status: res.StatusCode(), how: strconv.Itoa(res.StatusCode()), message: string(body)}
	if out.status == http.StatusInternalServerError {
		se.status500++
	}
	if out.status >= 400 {
		out.refused = true
		var p apiclient.Problem
		if err := json.Unmarshal(body, &p); err != nil || !strings.HasPrefix(p.Type, "urn:yukta:problem:") {
			se.t.Errorf("refusal %d is not a problem of ours: %s", out.status, body)
		}
		out.message = problemDetail(body)
		return out
	}
	var started struct {
		ExecutionID string `json:"executionId"`
	}
	_ = json.Unmarshal(body, &started)
	out.execution = started.ExecutionID
	return out
}

// bodyOf returns the raw body of a generated client response.
func bodyOf(res any) []byte {
	switch r := res.(type) {
	case *apiclient.PutSessionResponse:
		return r.Body
	case *apiclient.StartExecutionResponse:
		return r.Body
	case *apiclient.AnswerInputResponse:
		return r.Body
	case *apiclient.ControlExecutionResponse:
		return r.Body
	case *apiclient.ControlNodeResponse:
		return r.Body
	case *apiclient.SetBreakpointResponse:
		return r.Body
	case *apiclient.PostWebhookResponse:
		return r.Body
	}
	panic(fmt.Sprintf("bodyOf: %T", res))
}

// tool calls an MCP tool with raw argument text: through the go-sdk client,
// or, for bytes that client cannot put in a JSON-RPC message (a raw NUL), as
// a raw JSON-RPC POST.
func (se *strictEnv) tool(name, args string) strictOutcome {
	se.t.Helper()
	// Bytes the go-sdk client cannot carry (it reads arguments back as
	// float64 and as text): a raw NUL, invalid UTF-8, 1e400. They go as a
	// raw JSON-RPC POST, as any HTTP client can send them.
	var probe any
	if !utf8.ValidString(args) || json.Unmarshal([]byte(args), &probe) != nil {
		return se.rawTool(name, args)
	}
	res, err := se.mcp.CallTool(se.ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		if strings.Contains(err.Error(), "Internal error") {
			se.t.Errorf("%s: %v", name, err)
		}
		return strictOutcome{refused: true, how: "JSON-RPC error", message: err.Error()}
	}
	txt := text(res)
	if res.IsError {
		return strictOutcome{refused: true, how: "tool error", message: txt}
	}
	var out struct {
		ExecutionID string `json:"executionId"`
	}
	_ = json.Unmarshal([]byte(txt), &out)
	return strictOutcome{how: "ok", message: txt, execution: out.ExecutionID}
}

// rawTool posts one tools/call as raw bytes, as any HTTP client can.
func (se *strictEnv) rawTool(name, args string) strictOutcome {
	se.t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
	req, err := http.NewRequest(http.MethodPost, se.s.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		se.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		se.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := strictOutcome{status: res.StatusCode, message: string(b)}
	if res.StatusCode >= 500 {
		se.status500++
	}
	var msg struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		out.refused, out.how = res.StatusCode >= 400, fmt.Sprintf("HTTP %d", res.StatusCode)
		return out
	}
	switch {
	case msg.Error != nil:
		out.refused, out.how, out.message = true, fmt.Sprintf("JSON-RPC error %d", msg.Error.Code), msg.Error.Message
	case msg.Result != nil && msg.Result.IsError:
		out.refused, out.how = true, "tool error"
		out.message = ""
		for _, c := range msg.Result.Content {
			out.message += c.Text
		}
	}
	return out
}

// cli runs `yukta run strict/exact --payload P --watch`; a payload holding
// a NUL goes through a file (an argument cannot hold one).
func (se *strictEnv) cli(payload string) strictOutcome {
	se.t.Helper()
	arg := payload
	if strings.ContainsRune(payload, 0) {
		f := filepath.Join(se.t.TempDir(), "payload.json")
		if err := os.WriteFile(f, []byte(payload), 0o600); err != nil {
			se.t.Fatal(err)
		}
		arg = "@" + f
	}
	out := yukta(se.t, se.s.URL, "run", "strict/exact", "--payload", arg, "--watch")
	if out.code != 0 {
		return strictOutcome{refused: true, how: fmt.Sprintf("exit %d", out.code), message: out.stderr}
	}
	res := strictOutcome{how: "exit 0", message: out.stdout}
	for l := range strings.Lines(out.stdout) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(l), "execution: "); ok {
			res.execution = id
		}
	}
	return res
}

// checkExact follows an accepted value: the run it started (or the answered
// run) ends with it in its result, or the target node holds it as its
// breakpoint; REST (raw body of the generated client), MCP
// (get_workflow_status) and the CLI (yukta status) all show its digits.
func (se *strictEnv) checkExact(name string, out strictOutcome, breakpoint bool, digits string) {
	se.t.Helper()
	if out.execution == "" {
		se.t.Errorf("%s: accepted but no execution to follow: %s", name, out.message)
		return
	}
	if !breakpoint {
		se.waitStatus("strict", out.execution, apiclient.ExecutionStatusSUCCESS)
	}
	want := `"v":` + digits
	if breakpoint {
		want = `"equals":` + digits
	}
	res, err := se.c.GetExecutionWithResponse(se.ctx, "strict", out.execution)
	if err != nil || res.StatusCode() != http.StatusOK || !bytes.Contains(res.Body, []byte(want)) {
		se.t.Errorf("%s: REST read back %v %s, want %s", name, err, res.Body, want)
	}
	ctx, cancel := context.WithTimeout(se.ctx, 30*time.Second)
	defer cancel()
	mres, err := se.mcp.CallTool(ctx, &mcp.CallToolParams{Name: "get_workflow_status", Arguments: map[string]any{"sessionId": "strict", "executionId": out.execution}})
	if err != nil || mres.IsError || !strings.Contains(text(mres), want) {
		se.t.Errorf("%s: MCP read back %v %s, want %s", name, err, text(mres), want)
	}
	cliOut := yukta(se.t, se.s.URL, "status", "strict", out.execution)
	wantCLI := want
	if breakpoint {
		wantCLI = "breakpoint(v=" + digits + ")"
	}
	if cliOut.code != 0 || !strings.Contains(cliOut.stdout, wantCLI) {
		se.t.Errorf("%s: CLI read back\n%s\nwant %s", name, cliOut, wantCLI)
	}
}

// The Idempotency-Key cap is 255 characters on the real server, on both
// doors that take one, and MCP's idempotencyKey has the same cap.
func TestStrictIdempotencyKeyCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("cap", line("exact", nd("start", "MANUAL", ""), nd("out", "RESULT", "")), line("hook", nd("hook", "WEBHOOK", ""), nd("out", "RESULT", "")))
	for _, key := range []string{strings.Repeat("k", 255), strings.Repeat("é", 255)} {
		long := key + key[:len(key)/255]
		res, err := e.c.StartExecutionWithResponse(e.ctx, "cap", "exact", &apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartRequest{})
		if err != nil || res.StatusCode() != http.StatusCreated {
			t.Fatalf("255-character key: %v %d %s, want 201", err, res.StatusCode(), res.Body)
		}
		again, err := e.c.StartExecutionWithResponse(e.ctx, "cap", "exact", &apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartRequest{})
		if err != nil || again.StatusCode() != http.StatusOK || again.JSON200.ExecutionId != res.JSON201.ExecutionId {
			t.Fatalf("255-character key again: %v %d %s, want 200 with the same execution", err, again.StatusCode(), again.Body)
		}
		before := len(e.history("cap", apiclient.ListExecutionsParams{}))
		over, err := e.c.StartExecutionWithResponse(e.ctx, "cap", "exact", &apiclient.StartExecutionParams{IdempotencyKey: &long}, apiclient.StartRequest{})
		if err != nil || over.StatusCode() != http.StatusBadRequest || !strings.Contains(problemDetail(over.Body), "Idempotency-Key") {
			t.Fatalf("256-character key: %v %d %s, want 400 naming Idempotency-Key", err, over.StatusCode(), over.Body)
		}
		hook, err := e.c.PostWebhookWithBodyWithResponse(e.ctx, "cap", "hook", &apiclient.PostWebhookParams{IdempotencyKey: &long}, jsonType, strings.NewReader(`{}`))
		if err != nil || hook.StatusCode() != http.StatusBadRequest || !strings.Contains(problemDetail(hook.Body), "Idempotency-Key") {
			t.Fatalf("256-character key on the webhook: %v %d %s, want 400 naming Idempotency-Key", err, hook.StatusCode(), hook.Body)
		}
		cs := mustConnect(t, e.s.URL, "")
		mres := mcpCall(t, cs, "start_workflow", map[string]any{"sessionId": "cap", "workflowId": "exact", "idempotencyKey": long}, nil)
		if !mres.IsError || !strings.Contains(text(mres), "Idempotency-Key") || !strings.Contains(text(mres), "255") {
			t.Fatalf("MCP 256-character key: %s, want a tool error naming the cap", text(mres))
		}
		if after := len(e.history("cap", apiclient.ListExecutionsParams{})); after != before {
			t.Fatalf("refused keys started %d executions", after-before)
		}
	}
}

// Every refusal the real server makes itself, before any use case, is a
// problem of a type of ours in plain words.
func TestStrictProblemTypes(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	big := append([]byte(`{"payload":"`), bytes.Repeat([]byte("a"), 1<<20)...)
	big = append(big, `"}`...)
	cases := []struct {
		name, method, path, ctype string
		body                      []byte
		header                    []string
		status                    int
		typ                       string
	}{
		{"unknown route", "GET", "/api/nothing", "", nil, nil, 404, "urn:yukta:problem:not-found"},
		{"wrong method", "DELETE", "/api/sessions", "", nil, nil, 405, "urn:yukta:problem:method-not-allowed"},
		{"wrong content type", "POST", "/api/sessions/a/workflows/w/executions", "text/plain", []byte("x"), nil, 415, "urn:yukta:problem:unsupported-media-type"},
		{"body over the cap", "POST", "/api/sessions/a/workflows/w/executions", jsonType, big, nil, 413, "urn:yukta:problem:too-large"},
		{"input id not a UUID", "POST", "/api/inputs/not-a-uuid", jsonType, []byte(`{"answer":1}`), nil, 400, "urn:yukta:problem:invalid"},
		{"1e400 in a payload", "POST", "/api/sessions/a/workflows/w/executions", jsonType, []byte(`{"payload":1e400}`), nil, 400, "urn:yukta:problem:invalid"},
		{"NUL in an execution id", "GET", "/api/sessions/a/executions/x%00", "", nil, nil, 400, "urn:yukta:problem:invalid"},
		{"invalid UTF-8 in a cursor", "GET", "/api/sessions?cursor=%FF", "", nil, nil, 400, "urn:yukta:problem:invalid"},
		{"invalid UTF-8 in Last-Event-ID", "GET", "/api/events", "", nil, []string{"Last-Event-ID", "1\xff"}, 400, "urn:yukta:problem:invalid"},
		{"cross-site", "GET", "/api/sessions", "", nil, []string{"Origin", "https://attacker.example"}, 403, "urn:yukta:problem:forbidden"},
	}
	for _, c := range cases {
		res, body := s.do(t, c.method, c.path, c.ctype, c.body, c.header...)
		var p apiclient.Problem
		_ = json.Unmarshal(body, &p)
		if res.StatusCode != c.status || p.Type != c.typ || res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s %s, want %d of type %s", c.name, res.StatusCode, res.Header.Get("Content-Type"), body, c.status, c.typ)
		}
		for _, g := range []string{"about:blank", "json: ", "cannot unmarshal", "interface {}", "strconv.", "uuid.UUID", "Unmarshal type error"} {
			if bytes.Contains(body, []byte(g)) {
				t.Errorf("%s: answer holds %q: %s", c.name, g, body)
			}
		}
	}
}
