package mcpserver

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// promptFilter is the filterPattern the debug-workflow prompt tells an agent
// to use.
var promptFilter = regexp.MustCompile(`filterPattern "([^"]+)"`)

// The debug-workflow prompt's filter, applied with get_execution_logs to a
// run whose FAIL node failed (real engine, real store), finds the failure
// line: the filter is matched on "[timestamp] [LEVEL] message".
func TestDebugPromptFilterFindsFailure(t *testing.T) {
	t.Parallel()
	ts, env := newTestServer(t)
	cs := connect(t, ts.URL, secretOf("viewer"))
	pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "debug-workflow", Arguments: map[string]string{"sessionId": "own", "executionId": env.ownExec}})
	if err != nil {
		t.Fatal(err)
	}
	m := promptFilter.FindStringSubmatch(pr.Messages[0].Content.(*mcp.TextContent).Text)
	if m == nil {
		t.Fatal("the debug-workflow prompt names no filterPattern")
	}
	for _, pattern := range []string{m[1], "ERROR|Exception"} {
		var logs ExecutionLogs
		decode(t, callOK(t, cs, "get_execution_logs", map[string]any{"sessionId": "own", "executionId": env.ownExec,
			"filterPattern": pattern, "tailLines": 50}), &logs)
		found := false
		for _, l := range logs.Lines {
			if l.NodeID == "boom" && l.Level == "error" && strings.Contains(l.Message, "failed after") {
				found = true
			}
		}
		if !found || logs.TotalMatched < 1 {
			t.Errorf("filter %q: %+v, want the failure line of node boom", pattern, logs)
		}
	}
}

// get_execution_logs publishes the tailLines cap in its input schema, and a
// call above it is refused; the cap itself is accepted.
func TestLogsToolTailLinesMaximum(t *testing.T) {
	t.Parallel()
	ts, env := newTestServer(t)
	cs := connect(t, ts.URL, secretOf("viewer"))
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			Maximum *float64 `json:"maximum"`
		} `json:"properties"`
	}
	for _, tool := range lt.Tools {
		if tool.Name == "get_execution_logs" {
			b, _ := json.Marshal(tool.InputSchema)
			_ = json.Unmarshal(b, &schema)
		}
	}
	if mx := schema.Properties["tailLines"].Maximum; mx == nil || *mx != 5000 {
		t.Errorf("tailLines maximum %v, want 5000", mx)
	}
	callOK(t, cs, "get_execution_logs", map[string]any{"sessionId": "own", "executionId": env.ownExec, "tailLines": 5000})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_execution_logs",
		Arguments: map[string]any{"sessionId": "own", "executionId": env.ownExec, "tailLines": 5001}})
	if err == nil && !res.IsError {
		t.Error("tailLines 5001 accepted, want it refused")
	}
}
