package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// TestLogFilter plays the seed's "debug a failed run" log step on a real
// server: a FAIL node fails with a message that says neither ERROR nor
// Exception, and the filter ERROR|Exception still finds its failure line,
// because it is matched on "[timestamp] [LEVEL] message". It does so on the
// REST API and with the filter the MCP debug-workflow prompt gives.
func TestLogFilter(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	cs := mustConnect(t, s.URL, "")
	mustCall(t, cs, "create_session", buildSession("FAIL", map[string]any{"message": "failed on purpose"}), nil)
	var started mcpserver.StartOut
	mustCall(t, cs, "start_workflow", map[string]any{"sessionId": "ci", "workflowId": "build"}, &started)
	st := waitTerminal(t, cs, "ci", started.ExecutionID)
	if st.Status != "FAILURE" {
		t.Fatalf("run %+v, want FAILURE", st)
	}
	isFailure := func(node, level, msg string) bool {
		return node == "compile" && level == "error" && strings.Contains(msg, "failed on purpose")
	}

	// REST.
	pattern, n := "ERROR|Exception", 50
	res, err := s.Client.GetExecutionLogsWithResponse(t.Context(), "ci", started.ExecutionID,
		&apiclient.GetExecutionLogsParams{FilterPattern: &pattern, TailLines: &n})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("REST logs: %v %s", err, res.Body)
	}
	found := false
	for _, l := range res.JSON200.Lines {
		found = found || isFailure(l.NodeId, l.Level, l.Message)
	}
	if !found || res.JSON200.TotalMatched < 1 || res.JSON200.ReturnedLines < 1 {
		t.Errorf("REST filterPattern=%s: %s, want the compile failure line", pattern, res.Body)
	}

	// MCP: the debug-workflow prompt's own filter.
	pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "debug-workflow", Arguments: map[string]string{"sessionId": "ci", "executionId": started.ExecutionID}})
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`filterPattern "([^"]+)"`).FindStringSubmatch(pr.Messages[0].Content.(*mcp.TextContent).Text)
	if m == nil {
		t.Fatal("the debug-workflow prompt names no filterPattern")
	}
	var logs mcpserver.ExecutionLogs
	mustCall(t, cs, "get_execution_logs", map[string]any{"sessionId": "ci", "executionId": started.ExecutionID,
		"filterPattern": m[1], "tailLines": 50}, &logs)
	found = false
	for _, l := range logs.Lines {
		found = found || isFailure(l.NodeID, l.Level, l.Message)
	}
	if !found || logs.TotalMatched < 1 {
		t.Errorf("MCP with the prompt's filter %q: %+v, want the compile failure line", m[1], logs)
	}
}
