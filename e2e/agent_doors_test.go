package e2e

import (
	"encoding/json"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentTools are the agent MCP endpoint's tools: one for each operation of
// the agent REST API but the SSE stream (docs/agent-api.md#operations).
var agentTools = []string{"answer_delegation", "answer_review", "delegate", "get_execution", "get_execution_logs", "get_scheduler",
	"get_self", "get_snapshot", "get_workflow", "list_open_inputs", "list_owned_executions", "list_refusals", "read_signals", "send_directive"}

// TestAgentDoorsAnswerAlike: the agent API's two doors, REST and its MCP
// endpoint (driven by the go-sdk client), offer the same operations and
// give the same answers: the same data for every read, the same first
// answer for a directive or a delegation sent through one door and again
// (same key) through the other, and the same words when they refuse (a run
// of another session reads as one that does not exist, the scheduler of a
// supervisor that does not own the server, a review or delegation that is
// not there). GET /executions pages with a cursor, and so does the tool.
func TestAgentDoorsAnswerAlike(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	w.setup()
	w.put("/api/sessions/other", napSession("other"))
	w.put("/api/supervisors/peer", []byte(`{"name":"Peer","owns":["session:other"],"engine":{"type":"http","settings":{}}}`))
	foreign := w.napping("other")
	var runs []string
	for range 5 {
		runs = append(runs, w.napping("ci"))
	}
	cs, err := mcpConnect(t.Context(), w.s.URL, "/api/agent/v1/mcp", w.token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	// The same operations: tools/list is the REST API but its stream.
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, tl := range lt.Tools {
		tools = append(tools, tl.Name)
	}
	slices.Sort(tools)
	if !slices.Equal(tools, agentTools) {
		t.Errorf("tools/list: %v\nwant        %v", tools, agentTools)
	}

	rest := func(method, path string, body []byte) (int, any, string) {
		t.Helper()
		st, b, _ := w.agent(method, path, body)
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, st, b)
		}
		m, _ := v.(map[string]any)
		detail, _ := m["detail"].(string)
		if errs, _ := m["errors"].([]any); len(errs) > 0 { // a 400: its violation's words
			detail, _ = errs[0].(map[string]any)["message"].(string)
		}
		return st, v, detail
	}
	tool := func(name string, args map[string]any) (any, string) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: protocol error: %v", name, err)
		}
		if res.IsError {
			return nil, text(res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var v any
		_ = json.Unmarshal(b, &v)
		return v, ""
	}
	same := func(what string, restPath string, name string, args map[string]any, drop ...string) any {
		t.Helper()
		st, rv, detail := rest("GET", restPath, nil)
		mv, merr := tool(name, args)
		if st != 200 || merr != "" {
			t.Errorf("%s: REST %d %s; MCP %s", what, st, detail, merr)
			return nil
		}
		for _, k := range drop {
			delete(rv.(map[string]any), k)
			delete(mv.(map[string]any), k)
		}
		if !reflect.DeepEqual(rv, mv) {
			rb, _ := json.Marshal(rv)
			mb, _ := json.Marshal(mv)
			t.Errorf("%s: the doors differ\nREST %s\nMCP  %s", what, rb, mb)
		}
		return rv
	}
	refusedAlike := func(what string, method, restPath string, body []byte, wantStatus int, name string, args map[string]any) {
		t.Helper()
		st, _, detail := rest(method, restPath, body)
		_, merr := tool(name, args)
		if st != wantStatus || detail == "" || !strings.Contains(merr, strings.TrimRight(detail, ". ")) {
			t.Errorf("%s: REST %d %q; MCP %q: want %d and the same words", what, st, detail, merr, wantStatus)
		}
	}

	// A refused directive, for the refusal reads.
	if st, b, _ := w.agent("POST", "/directives", []byte(`{"key":"k-foreign","command":{"type":"PauseWorkflow","target":"execution:`+foreign+`"}}`)); st != 403 {
		t.Fatalf("a directive at a foreign run: %d %s", st, b)
	}

	// Every read, through both doors.
	same("self", "/self", "get_self", map[string]any{})
	same("snapshot", "/snapshot", "get_snapshot", map[string]any{}, "cursor")
	same("signals", "/signals?limit=3", "read_signals", map[string]any{"limit": 3})
	all := same("executions", "/executions", "list_owned_executions", map[string]any{})
	same("execution", "/executions/"+runs[0], "get_execution", map[string]any{"executionId": runs[0]})
	same("logs", "/executions/"+runs[0]+"/logs?tail=20", "get_execution_logs", map[string]any{"executionId": runs[0], "tail": 20})
	same("workflow", "/workflows/ci/nap", "get_workflow", map[string]any{"sessionId": "ci", "workflowId": "nap"})
	same("inputs", "/inputs", "list_open_inputs", map[string]any{})
	same("refusals", "/refusals", "list_refusals", map[string]any{})
	if m, _ := all.(map[string]any); m == nil || len(m["executions"].([]any)) != len(runs) {
		t.Errorf("GET /executions: %v, want the %d runs of ci", all, len(runs))
	}

	// The same refusals, in the same words.
	refusedAlike("foreign run", "GET", "/executions/"+foreign, nil, 404, "get_execution", map[string]any{"executionId": foreign})
	refusedAlike("foreign run's logs", "GET", "/executions/"+foreign+"/logs", nil, 404, "get_execution_logs", map[string]any{"executionId": foreign})
	refusedAlike("foreign workflow", "GET", "/workflows/other/nap", nil, 404, "get_workflow", map[string]any{"sessionId": "other", "workflowId": "nap"})
	refusedAlike("scheduler", "GET", "/scheduler", nil, 403, "get_scheduler", map[string]any{})
	refusedAlike("unknown review", "POST", "/reviews/r-none", []byte(`{"verdict":"ALLOW"}`), 404, "answer_review", map[string]any{"reviewId": "r-none", "verdict": "ALLOW"})
	refusedAlike("unknown delegation", "POST", "/delegations/d-none", []byte(`{"answer":1}`), 404, "answer_delegation", map[string]any{"delegationId": "d-none", "answer": 1})
	refusedAlike("bad page size", "GET", "/executions?limit=0", nil, 400, "list_owned_executions", map[string]any{"limit": 0})

	// Writes: sent through REST, the same key through MCP is the same answer.
	st, first, _ := rest("POST", "/directives", []byte(`{"key":"k-pause","command":{"type":"PauseWorkflow","target":"execution:`+runs[1]+`"}}`))
	again, merr := tool("send_directive", map[string]any{"key": "k-pause", "command": map[string]any{"type": "PauseWorkflow", "target": "execution:" + runs[1]}})
	if st != 202 || merr != "" {
		t.Fatalf("directive: REST %d %v; MCP %s", st, first, merr)
	}
	if again.(map[string]any)["repeated"] != true || !reflect.DeepEqual(first.(map[string]any)["outcomes"], again.(map[string]any)["outcomes"]) {
		t.Errorf("the same directive through MCP: %v, want the first answer %v repeated", again, first)
	}
	st, opened, _ := rest("POST", "/delegations", []byte(`{"kind":"CONSULT","key":"c-1","to":"peer","payload":{"q":1}}`))
	reopened, merr := tool("delegate", map[string]any{"kind": "CONSULT", "key": "c-1", "to": "peer", "payload": map[string]any{"q": 1}})
	if st != 201 || merr != "" || !reflect.DeepEqual(opened, reopened) {
		t.Errorf("delegation: REST %d %v; MCP %v %s", st, opened, reopened, merr)
	}

	// Paging: two a page, through both doors, every run once.
	for _, door := range []string{"REST", "MCP"} {
		var seen []string
		cursor := ""
		for page := 0; ; page++ {
			var v any
			if door == "REST" {
				q := url.Values{"limit": {"2"}}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var st int
				if st, v, _ = rest("GET", "/executions?"+q.Encode(), nil); st != 200 {
					t.Fatalf("%s page %d: %d %v", door, page, st, v)
				}
			} else {
				args := map[string]any{"limit": 2}
				if cursor != "" {
					args["cursor"] = cursor
				}
				var e string
				if v, e = tool("list_owned_executions", args); e != "" {
					t.Fatalf("%s page %d: %s", door, page, e)
				}
			}
			m := v.(map[string]any)
			for _, r := range m["executions"].([]any) {
				seen = append(seen, r.(map[string]any)["executionId"].(string))
			}
			next, _ := m["nextCursor"].(string)
			if (next != "") != (m["truncated"] == true) {
				t.Fatalf("%s page %d: truncated %v with nextCursor %q", door, page, m["truncated"], next)
			}
			if next == "" {
				break
			}
			if page > len(runs) {
				t.Fatalf("%s: more pages than runs", door)
			}
			cursor = next
		}
		got, want := slices.Clone(seen), slices.Clone(runs)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s pages: %v, want each of %v once", door, seen, runs)
		}
	}
	if st, _, detail := rest("GET", "/executions?cursor=bogus", nil); st != 400 || !strings.Contains(detail, "cursor") {
		t.Errorf("a bogus cursor: %d %q", st, detail)
	}
}
