package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// scriptAgent plays an agent that knows only what the server tells it at
// run time: the tools it lists (a call to a tool not listed, or with an
// argument its input schema does not declare, fails the test), the answers,
// and the error texts, whose "Use <tool>" it follows. It counts the tool
// calls each task takes.
type scriptAgent struct {
	t     *testing.T
	cs    *mcp.ClientSession
	tools map[string]*mcp.Tool
	task  string
	calls map[string]int
	tasks []string
}

func newScriptAgent(t *testing.T, cs *mcp.ClientSession) *scriptAgent {
	a := &scriptAgent{t: t, cs: cs, tools: map[string]*mcp.Tool{}, calls: map[string]int{}}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		a.tools[tl.Name] = tl
	}
	return a
}

func (a *scriptAgent) begin(task string) {
	a.task = task
	a.tasks = append(a.tasks, task)
}

// offers fails unless the tool's listed description or input schema
// mentions what the agent is about to rely on.
func (a *scriptAgent) offers(tool, what string) {
	a.t.Helper()
	tl := a.tools[tool]
	if tl == nil {
		a.t.Fatalf("%s: the server lists no tool %s", a.task, tool)
	}
	schema, _ := json.Marshal(tl.InputSchema)
	if !strings.Contains(tl.Description, what) && !strings.Contains(string(schema), what) {
		a.t.Fatalf("%s: tool %s does not mention %q in its description or input schema", a.task, tool, what)
	}
}

// call calls a listed tool with arguments its schema declares. It returns
// the structured answer, or the error text of a tool error.
func (a *scriptAgent) call(tool string, args map[string]any) (map[string]any, string) {
	a.t.Helper()
	tl := a.tools[tool]
	if tl == nil {
		a.t.Fatalf("%s: the server lists no tool %s", a.task, tool)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	b, _ := json.Marshal(tl.InputSchema)
	_ = json.Unmarshal(b, &schema)
	for k := range args {
		if _, ok := schema.Properties[k]; !ok {
			a.t.Fatalf("%s: %s declares no argument %q", a.task, tool, k)
		}
	}
	a.calls[a.task]++
	res, err := a.cs.CallTool(a.t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		a.t.Fatalf("%s: %s: protocol error: %v", a.task, tool, err)
	}
	if res.IsError {
		return nil, text(res)
	}
	var out map[string]any
	b, _ = json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		a.t.Fatalf("%s: %s: %v", a.task, tool, err)
	}
	return out, ""
}

// must is call for a call that has to succeed.
func (a *scriptAgent) must(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	out, errText := a.call(tool, args)
	if errText != "" {
		a.t.Fatalf("%s: %s(%v): %s", a.task, tool, args, errText)
	}
	return out
}

var nextTool = regexp.MustCompile(`Use ([a-z_]+)`)

// follow reads the tool an error text names as the next step; it must be a
// listed tool.
func (a *scriptAgent) follow(errText string) string {
	a.t.Helper()
	m := nextTool.FindStringSubmatch(errText)
	if m == nil {
		a.t.Fatalf("%s: the error names no next tool: %s", a.task, errText)
	}
	if a.tools[m[1]] == nil {
		a.t.Fatalf("%s: the error names %s, which is not a listed tool: %s", a.task, m[1], errText)
	}
	return m[1]
}

// until calls a read tool until done holds (the agent's polling loop).
func (a *scriptAgent) until(tool string, args map[string]any, done func(map[string]any) bool) map[string]any {
	a.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := a.must(tool, args)
		if done(out) {
			return out
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("%s: %s never got there: %v", a.task, tool, out)
		}
		time.Sleep(500 * time.Millisecond) // an agent's pace, not a tight loop
	}
}

func str(v any) string { s, _ := v.(string); return s }

func list(v any) []map[string]any {
	var out []map[string]any
	for _, x := range asSlice(v) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// nodeWith is the first node of a status whose field equals value.
func nodeWith(status map[string]any, field, value string) map[string]any {
	for _, n := range list(status["nodes"]) {
		if str(n[field]) == value {
			return n
		}
	}
	return nil
}

// TestAgentScript plays the ten tasks of an agent's working day through MCP
// on the real server, knowing only the tasks and what the server answers.
// The tool calls per task are written to docs/mcp.md by hand from the log
// line this test prints (and to $YUKTA_AGENT_SCRIPT_OUT when set).
func TestAgentScript(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	a := newScriptAgent(t, mustConnect(t, s.URL, ""))

	// 1. Create a session from the creation instructions: the guide's own
	// complete example.
	a.begin("create a session from the instructions")
	guide := a.must("get_session_creation_instructions", nil)
	created := a.must("create_session", guide["example"].(map[string]any))
	sid := str(created["sessionId"])
	example := guide["example"].(map[string]any)["session"].(map[string]any)
	greet := str(list(example["workflows"])[0]["workflowId"])
	if sid == "" || greet == "" {
		t.Fatalf("created %v from the example %v", created, example)
	}

	// 2. Run it and watch it to the end, as an agent without waitSeconds.
	a.begin("run it (start, then poll the status)")
	started := a.must("start_workflow", map[string]any{"sessionId": sid, "workflowId": greet, "payload": map[string]any{"name": "Ada"}})
	st := a.until("get_workflow_status", map[string]any{"sessionId": sid, "executionId": started["executionId"]},
		func(m map[string]any) bool { return m["terminal"] == true })
	if str(st["status"]) != "SUCCESS" {
		t.Fatalf("the example run: %v", st)
	}

	// 3. Find why a run failed: the task's pipeline fails at a node; the
	// logs filtered with ERROR|Exception say why.
	a.begin("find why a run failed")
	a.offers("get_execution_logs", "ERROR|Exception")
	a.must("create_session", buildSession("FAIL", map[string]any{"message": "compile Exception: missing semicolon"}))
	run := a.must("start_workflow", map[string]any{"sessionId": "ci", "workflowId": "build", "waitSeconds": 30})
	failedRun := run["execution"].(map[string]any)
	failedNode := nodeWith(failedRun, "status", "FAILURE")
	if str(failedRun["status"]) != "FAILURE" || failedNode == nil {
		t.Fatalf("the pipeline run: %v", failedRun)
	}
	logs := a.must("get_execution_logs", map[string]any{"sessionId": "ci", "executionId": run["executionId"], "filterPattern": "ERROR|Exception"})
	lines := list(logs["lines"])
	if len(lines) == 0 || !strings.Contains(str(lines[len(lines)-1]["message"]), "missing semicolon") ||
		str(lines[len(lines)-1]["nodeId"]) != str(failedNode["nodeId"]) {
		t.Fatalf("the filtered logs do not say why %s failed: %v", failedNode["nodeId"], logs)
	}

	// 4. Fix the failing node and RETRY it, waiting for the new run.
	a.begin("fix and RETRY the node")
	a.offers("control_node", "RETRY")
	a.must("create_session", buildSession("LOG", map[string]any{"message": "compiled"}))
	retried := a.must("control_node", map[string]any{"sessionId": "ci", "executionId": run["executionId"],
		"nodeId": failedNode["nodeId"], "action": "RETRY", "wait": 30})
	again := list(retried["executions"])
	if len(again) != 1 || str(again[0]["status"]) != "SUCCESS" || str(again[0]["executionId"]) != str(asSlice(retried["resultExecutionIds"])[0]) {
		t.Fatalf("RETRY with a wait: %v", retried)
	}
	fixedRun := str(again[0]["executionId"])

	// 5. Set a breakpoint and step one message through.
	a.begin("set a breakpoint and step")
	a.must("create_session", stepSession())
	run = a.must("start_workflow", map[string]any{"sessionId": "steps", "workflowId": "orders", "payload": map[string]any{"status": "held"}})
	eid := run["executionId"]
	a.must("set_node_breakpoint", map[string]any{"sessionId": "steps", "executionId": eid, "nodeId": "ship", "field": "status", "equals": "held"})
	a.until("get_workflow_status", map[string]any{"sessionId": "steps", "executionId": eid}, func(m map[string]any) bool {
		n := nodeWith(m, "nodeId", "ship")
		return n != nil && n["paused"] == true
	})
	a.offers("set_node_breakpoint", "STEP_ENABLE and RESUME")
	for _, action := range []string{"STEP_ENABLE", "RESUME", "STEP"} {
		a.must("control_node", map[string]any{"sessionId": "steps", "executionId": eid, "nodeId": "ship", "action": action})
	}
	st = a.until("get_workflow_status", map[string]any{"sessionId": "steps", "executionId": eid},
		func(m map[string]any) bool { return m["terminal"] == true })
	if str(st["status"]) != "SUCCESS" {
		t.Fatalf("after STEP: %v", st)
	}

	// 6. Answer an input; waiting for the end by starting again with the
	// same idempotency key and waitSeconds, as start_workflow's answer
	// suggests.
	a.begin("answer an input")
	a.must("create_session", inputSession())
	a.must("start_workflow", map[string]any{"sessionId": "asks", "workflowId": "approve", "idempotencyKey": "approve-1"})
	open := a.until("list_inputs", map[string]any{"sessionId": "asks"}, func(m map[string]any) bool { return len(list(m["inputs"])) > 0 })
	in := list(open["inputs"])[0]
	a.must("answer_input", map[string]any{"sessionId": "asks", "inputId": in["inputId"], "answer": map[string]any{"approved": true}})
	run = a.must("start_workflow", map[string]any{"sessionId": "asks", "workflowId": "approve", "idempotencyKey": "approve-1", "waitSeconds": 30})
	if run["created"] != false || str(run["execution"].(map[string]any)["status"]) != "SUCCESS" {
		t.Fatalf("after the answer: %v", run)
	}

	// 7. Stop every run of a workflow with DRAIN and check the ids.
	a.begin("stop all with DRAIN and check the ids")
	a.must("create_session", drainSession())
	var runs []string
	for i := range 2 {
		r := a.must("start_workflow", map[string]any{"sessionId": "slow", "workflowId": "nap", "payload": map[string]any{"i": i}})
		runs = append(runs, str(r["executionId"]))
	}
	stopped := a.must("control_workflow", map[string]any{"sessionId": "slow", "workflowId": "nap", "action": "STOP_ALL", "mode": "DRAIN", "wait": 30})
	var ids []string
	for _, id := range asSlice(stopped["resultExecutionIds"]) {
		ids = append(ids, str(id))
	}
	sort.Strings(ids)
	sort.Strings(runs)
	if !slices.Equal(ids, runs) || str(stopped["status"]) != "applied" || len(list(stopped["executions"])) != 2 {
		t.Fatalf("STOP_ALL DRAIN: %v, want ids %v applied", stopped, runs)
	}
	for _, e := range list(stopped["executions"]) {
		if str(e["status"]) != "STOPPED" {
			t.Fatalf("a drained run: %v", e)
		}
	}

	// 8. Verify the fixed run's journal.
	a.begin("verify a journal")
	v := a.until("verify_journal", map[string]any{"sessionId": "ci", "executionId": fixedRun},
		func(m map[string]any) bool { return str(m["result"]) != "UNANCHORED" })
	if str(v["result"]) != "VALID" {
		t.Fatalf("journal of %s: %v", fixedRun, v)
	}

	// 9. Start with waitSeconds: the result in one call.
	a.begin("start with waitSeconds and get the result")
	a.offers("start_workflow", "waitSeconds")
	run = a.must("start_workflow", map[string]any{"sessionId": sid, "workflowId": greet, "payload": map[string]any{"name": "Grace"}, "waitSeconds": 30})
	if b, _ := json.Marshal(run["execution"].(map[string]any)["result"]); !strings.Contains(string(b), "Grace") {
		t.Fatalf("start with waitSeconds: %v", run)
	}

	// 10. Three mistakes, each recovered by the tool its error names.
	a.begin("recover from three mistakes")
	_, errText := a.call("get_workflow_status", map[string]any{"sessionId": "ci", "executionId": "00000000-0000-4000-8000-000000000000"})
	hist := a.must(a.follow(errText), map[string]any{"sessionId": "ci"})
	latest := list(hist["executions"])[0]
	a.must("get_workflow_status", map[string]any{"sessionId": "ci", "executionId": latest["executionId"]})

	_, errText = a.call("control_workflow", map[string]any{"sessionId": "slow", "action": "STOP_ALL", "mode": "KILL"})
	details := a.must(a.follow(errText), map[string]any{"sessionId": "slow"})
	a.must("control_workflow", map[string]any{"sessionId": "slow", "action": "STOP_ALL", "mode": "KILL",
		"workflowId": list(details["workflows"])[0]["workflowId"]})

	_, errText = a.call("control_node", map[string]any{"sessionId": "ci", "executionId": fixedRun, "nodeId": "compiler", "action": "RETRY"})
	status := a.must(a.follow(errText), map[string]any{"sessionId": "ci", "executionId": fixedRun})
	var nodeIDs []string
	for _, n := range list(status["nodes"]) {
		nodeIDs = append(nodeIDs, str(n["nodeId"]))
	}
	closest := ""
	for _, id := range nodeIDs { // the agent's "did you mean": a prefix of what it typed
		if strings.HasPrefix("compiler", id) && len(id) > len(closest) {
			closest = id
		}
	}
	a.must("control_node", map[string]any{"sessionId": "ci", "executionId": fixedRun, "nodeId": closest, "action": "RETRY", "wait": 30})

	var report strings.Builder
	fmt.Fprintf(&report, "| task | tool calls |\n|---|---|\n")
	for i, task := range a.tasks {
		fmt.Fprintf(&report, "| %d. %s | %d |\n", i+1, task, a.calls[task])
	}
	t.Logf("tool calls per task:\n%s", report.String())
	if out := os.Getenv("YUKTA_AGENT_SCRIPT_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.tasks) != 10 {
		t.Fatalf("%d tasks played, want 10", len(a.tasks))
	}
}

// stepSession: the order waits a moment (time to set the breakpoint) before
// "ship".
func stepSession() map[string]any {
	return map[string]any{"session": map[string]any{"sessionId": "steps", "name": "Steps", "workflows": []any{map[string]any{
		"workflowId": "orders",
		"nodes": []any{
			map[string]any{"nodeId": "start", "type": "MANUAL"},
			map[string]any{"nodeId": "hold", "type": "DELAY", "config": map[string]any{"duration": "1s"}},
			map[string]any{"nodeId": "ship", "type": "LOG", "config": map[string]any{"message": "shipping"}},
			map[string]any{"nodeId": "done", "type": "RESULT"},
		},
		"edges": []any{
			map[string]any{"source": "start", "target": "hold"},
			map[string]any{"source": "hold", "target": "ship"},
			map[string]any{"source": "ship", "target": "done"},
		},
	}}}}
}

func inputSession() map[string]any {
	return map[string]any{"session": map[string]any{"sessionId": "asks", "name": "Asks", "workflows": []any{map[string]any{
		"workflowId": "approve",
		"nodes": []any{
			map[string]any{"nodeId": "start", "type": "MANUAL"},
			map[string]any{"nodeId": "ask", "type": "INPUT_REQUEST", "config": map[string]any{"prompt": "Approve the order?", "mode": "approval"}},
			map[string]any{"nodeId": "yes", "type": "RESULT"},
			map[string]any{"nodeId": "no", "type": "FAIL", "config": map[string]any{"message": "rejected"}},
		},
		"edges": []any{
			map[string]any{"source": "start", "target": "ask"},
			map[string]any{"source": "ask", "target": "yes", "sourcePort": "approved"},
			map[string]any{"source": "ask", "target": "no", "sourcePort": "rejected"},
		},
	}}}}
}

func drainSession() map[string]any {
	return map[string]any{"session": map[string]any{"sessionId": "slow", "name": "Slow", "workflows": []any{map[string]any{
		"workflowId": "nap",
		"nodes": []any{
			map[string]any{"nodeId": "start", "type": "MANUAL"},
			map[string]any{"nodeId": "nap", "type": "DELAY", "config": map[string]any{"duration": "1s"}},
			map[string]any{"nodeId": "done", "type": "RESULT"},
		},
		"edges": []any{
			map[string]any{"source": "start", "target": "nap"},
			map[string]any{"source": "nap", "target": "done"},
		},
	}}}}
}
