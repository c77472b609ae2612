package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/tools/npmci"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// The official MCP TypeScript SDK client sits under most agent hosts and the
// MCP Inspector, and it is stricter than the go-sdk client the other MCP
// tests use: it validates tools/list against the protocol's schema and every
// structuredContent against the tool's output schema. Once it refused the
// whole tool list, which no Go test saw. TestTSClient drives the real binary
// with it (e2e/tsclient/client.mjs, the SDK pinned exactly in
// package-lock.json).

// tsClientDir holds the Node project of the client.
const tsClientDir = "tsclient"

// tsClient returns the node binary once e2e/tsclient has its packages
// installed as pinned (tools/npmci), the SDK at one exact version.
func tsClient(t *testing.T) string {
	t.Helper()
	return npmci.Node(t, tsClientDir)
}

// pinnedSDKVersion is the exact SDK version package.json asks for.
func pinnedSDKVersion() (string, error) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(tsClientDir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return "", fmt.Errorf("read e2e/tsclient/package.json: %w", err)
	}
	return pkg.Dependencies["@modelcontextprotocol/sdk"], nil
}

// tsSummary is what client.mjs prints.
type tsSummary struct {
	OK              bool   `json:"ok"`
	Step            string `json:"step"`
	Error           string `json:"error"`
	SDKVersion      string `json:"sdkVersion"`
	ProtocolVersion string `json:"protocolVersion"`
	Server          struct {
		Name string `json:"name"`
	} `json:"server"`
	Capabilities          map[string]map[string]any `json:"capabilities"`
	ToolCount             int                       `json:"toolCount"`
	Tools                 []string                  `json:"tools"`
	ToolsWithOutputSchema int                       `json:"toolsWithOutputSchema"`
	Prompts               []string                  `json:"prompts"`
	Resources             []string                  `json:"resources"`
	ResourceTemplates     []string                  `json:"resourceTemplates"`
	Overview              struct {
		Contents           int  `json:"contents"`
		MentionsStatusTool bool `json:"mentionsStatusTool"`
	} `json:"overview"`
	FailPluginDefault any `json:"failPluginDefault"`
	Calls             []struct {
		Tool       string `json:"tool"`
		IsError    bool   `json:"isError"`
		Structured bool   `json:"structured"`
		Validated  bool   `json:"validated"`
	} `json:"calls"`
	WorkflowPause struct {
		Paused      string `json:"paused"`
		Refused     bool   `json:"refused"`
		RefusedText string `json:"refusedText"`
		Resumed     string `json:"resumed"`
	} `json:"workflowPause"`
	APIKey struct {
		SecretPrefix    string `json:"secretPrefix"`
		RotatedDiffers  bool   `json:"rotatedDiffers"`
		Listed          bool   `json:"listed"`
		ListHoldsSecret bool   `json:"listHoldsSecret"`
	} `json:"apiKey"`
	Tasks struct {
		QueueSeen           bool            `json:"queueSeen"`
		SkippedRunStatus    string          `json:"skippedRunStatus"`
		SkippedRunResult    json.RawMessage `json:"skippedRunResult"`
		GuideTeachesWorkers bool            `json:"guideTeachesWorkers"`
		GuideTeachesServer  bool            `json:"guideTeachesServer"`
	} `json:"tasks"`
	Created   bool `json:"created"`
	Replaced  bool `json:"replaced"`
	FailedRun struct {
		ExecutionID      string   `json:"executionId"`
		Status           string   `json:"status"`
		Actor            string   `json:"actor"`
		Channel          string   `json:"channel"`
		FailedNodes      []string `json:"failedNodes"`
		NodeError        string   `json:"nodeError"`
		MatchingLogLines int      `json:"matchingLogLines"`
	} `json:"failedRun"`
	UnknownExecution struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"unknownExecution"`
	Retry struct {
		CommandStatus  string            `json:"commandStatus"`
		NewExecutionID string            `json:"newExecutionId"`
		Status         string            `json:"status"`
		RestartOf      string            `json:"restartOf"`
		FromNodeID     string            `json:"fromNodeId"`
		Result         json.RawMessage   `json:"result"`
		Nodes          map[string]string `json:"nodes"`
	} `json:"retry"`
}

// TestTSClient: the official TypeScript SDK client connects with a bearer
// key, lists and reads the whole catalogue, and plays "debug a failed run":
// create a session whose node fails, run it, poll, read the logs, fix the
// node, RETRY it, poll until SUCCESS. Every successful call's
// structuredContent passed the SDK's validation against its output schema.
func TestTSClient(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	pinned, _ := pinnedSDKVersion()
	const key = "tsclient-mcp-secret-0123456789abcdef"
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{"YUKTA_MCP_API_KEY=" + key}})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", s.URL+"/mcp", key)
	cmd.Dir = tsClientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var sum tsSummary
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("client.mjs: %v; no JSON summary (%v)\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	if runErr != nil || !sum.OK {
		t.Fatalf("the TypeScript SDK client failed at step %q: %s (%v)\nstderr:\n%s", sum.Step, sum.Error, runErr, stderr.String())
	}
	t.Logf("TypeScript SDK %s, protocol %s: %d tools, %d calls; summary: %s", sum.SDKVersion, sum.ProtocolVersion, sum.ToolCount, len(sum.Calls), lines[len(lines)-1])

	if sum.SDKVersion != pinned || sum.Server.Name != "yukta" || sum.ProtocolVersion == "" {
		t.Errorf("SDK %q (pinned %q), server %q, protocol %q", sum.SDKVersion, pinned, sum.Server.Name, sum.ProtocolVersion)
	}
	// Only what a stateless server honours: no listChanged, no logging.
	if got := slices.Sorted(maps.Keys(sum.Capabilities)); !slices.Equal(got, []string{"prompts", "resources", "tools"}) {
		t.Errorf("capabilities %v, want prompts, resources and tools only", sum.Capabilities)
	}
	for name, c := range sum.Capabilities {
		if len(c) != 0 {
			t.Errorf("capability %s declares %v; the stateless server sends no notifications", name, c)
		}
	}
	if want := slices.Sorted(slices.Values(allTools)); sum.ToolCount != len(want) || !slices.Equal(sum.Tools, want) || sum.ToolsWithOutputSchema != len(want) {
		t.Errorf("tools/list: %d tools %v (%d with an output schema), want the %d %v, each with one", sum.ToolCount, sum.Tools, sum.ToolsWithOutputSchema, len(want), want)
	}
	if !slices.Equal(sum.Prompts, []string{"create-session-config", "debug-workflow"}) ||
		!slices.Equal(sum.Resources, []string{"yukta://architecture", "yukta://overview"}) ||
		!slices.Equal(sum.ResourceTemplates, []string{"yukta://sessions/{sessionId}/executions/{executionId}/logs"}) {
		t.Errorf("prompts %v, resources %v, templates %v", sum.Prompts, sum.Resources, sum.ResourceTemplates)
	}
	if sum.Overview.Contents != 1 || !sum.Overview.MentionsStatusTool {
		t.Errorf("yukta://overview: %+v", sum.Overview)
	}
	if sum.FailPluginDefault != "failed on purpose" {
		t.Errorf("get_plugin_details FAIL: message default %v", sum.FailPluginDefault)
	}

	validated := map[string]int{}
	for _, c := range sum.Calls {
		if c.IsError {
			continue
		}
		if !c.Structured || !c.Validated {
			t.Errorf("call %+v: a successful call whose structuredContent did not validate", c)
		}
		validated[c.Tool]++
	}
	for _, tool := range []string{"get_plugin_details", "create_session", "start_workflow", "get_workflow_status", "get_execution_logs", "control_node", "control_workflow", "create_api_key", "list_api_keys", "rotate_api_key", "revoke_api_key"} {
		if validated[tool] == 0 {
			t.Errorf("no validated structuredContent from %s: %v", tool, validated)
		}
	}

	if w := sum.WorkflowPause; w.Paused != "applied" || !w.Refused || !strings.Contains(w.RefusedText, "paused") || w.Resumed != "applied" {
		t.Errorf("workflow pause over the SDK: %+v, want applied, the start refused naming the pause, applied", w)
	}
	if k := sum.APIKey; k.SecretPrefix != "yk_" || !k.RotatedDiffers || !k.Listed || k.ListHoldsSecret {
		t.Errorf("stored key over the SDK: %+v, want a yk_ secret shown once, a new one on rotate, listed without it", k)
	}
	if k := sum.Tasks; !k.QueueSeen || k.SkippedRunStatus != "SUCCESS" || string(k.SkippedRunResult) != `{"v":1}` || !k.GuideTeachesWorkers || !k.GuideTeachesServer {
		t.Errorf("TASK over the SDK: %+v, want the queue in get_control_bus_status, a SKIP passing the message to SUCCESS, a guide to workers and to server", k)
	}
	f := sum.FailedRun
	if !sum.Created || f.Status != "FAILURE" || !slices.Equal(f.FailedNodes, []string{"work"}) ||
		!strings.Contains(f.NodeError, "deploy target unreachable") || f.MatchingLogLines == 0 {
		t.Errorf("failed run: %+v (created %v), want FAILURE at work with its error in the logs", f, sum.Created)
	}
	if !strings.HasPrefix(f.Actor, "key:") || f.Channel != "mcp" {
		t.Errorf("failed run actor %q channel %q, want the key's actor over mcp", f.Actor, f.Channel)
	}
	if u := sum.UnknownExecution; !u.IsError || !strings.HasPrefix(u.Text, "Execution not found: ") {
		t.Errorf("unknown execution: %+v, want the tool error", u)
	}

	r := sum.Retry
	if !sum.Replaced || r.NewExecutionID == "" || r.NewExecutionID == f.ExecutionID || r.RestartOf != f.ExecutionID || r.FromNodeID != "work" {
		t.Errorf("retry: %+v (replaced %v), want a new execution restarting %s from work", r, sum.Replaced, f.ExecutionID)
	}
	if want := map[string]string{"start": "SKIPPED", "work": "SUCCESS", "out": "SUCCESS"}; r.Status != "SUCCESS" || !maps.Equal(r.Nodes, want) {
		t.Errorf("retried run: %s %v, want SUCCESS %v", r.Status, r.Nodes, want)
	}
	var result map[string]any
	if err := json.Unmarshal(r.Result, &result); err != nil || !maps.Equal(result, map[string]any{"version": "1.2.3", "replicas": float64(3)}) {
		t.Errorf("retried run result %s, want the trigger payload", r.Result)
	}
}

// TestTSClientAgentMCP: the official TypeScript SDK client, with a
// supervisor credential, lists the agent MCP endpoint's tools (validating
// their output schemas: the same tools as the agent REST API's operations),
// lists its runs, reads a log and its signals and pauses a run.
func TestTSClientAgentMCP(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	w := newAgentWorld(t)
	w.setup()
	id := w.napping("ci")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "agent.mjs", w.s.URL+"/api/agent/v1/mcp", w.token, id)
	cmd.Dir = tsClientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var sum struct {
		OK         bool
		Step       string
		Error      string
		Tools      []string
		Self       string
		Directive  string
		Executions []string
		Truncated  bool
		Logs       string
		Server     struct{ Name string }
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("agent.mjs: %v; no JSON summary (%v)\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	if runErr != nil || !sum.OK {
		t.Fatalf("the TypeScript SDK agent failed at step %q: %s (%v)\nstderr:\n%s", sum.Step, sum.Error, runErr, stderr.String())
	}
	if sum.Server.Name != "yukta-agent" || sum.Self != "agent" || sum.Directive != "accepted" || !slices.Equal(sum.Tools, agentTools) {
		t.Fatalf("summary: %+v; want the tools %v", sum, agentTools)
	}
	if !slices.Equal(sum.Executions, []string{id}) || sum.Truncated || sum.Logs != id {
		t.Fatalf("the TypeScript agent read executions %v (truncated %v) and the log of %q; want the run %s", sum.Executions, sum.Truncated, sum.Logs, id)
	}
	if s := w.status("ci", id); s != "PAUSED" {
		t.Fatalf("the run is %s after the TypeScript agent paused it", s)
	}
}
