package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStartWaitVsPolling compares two ways an agent gets the result of
// a 10-node chain over MCP on the real server: one start_workflow call with
// waitSeconds, and start_workflow followed by get_workflow_status every
// 100 ms until terminal. It reports tool calls per task and the time from
// the first call to the result (p50, p99), 100 runs each, one at a time,
// beside the runs' own start-to-end time (run_p50_ms) from their status.
// Run:
//
//	go test ./e2e -run '^$' -bench StartWaitVsPolling -benchtime 1x -v
func BenchmarkStartWaitVsPolling(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		applyDoc(b, s, "chain", linearSession("chain", 10))
		cs, err := mcpConnect(b.Context(), s.URL, "/mcp", "")
		if err != nil {
			b.Fatal(err)
		}
		call := func(tool string, args map[string]any) map[string]any {
			res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %s", tool, err, text(res))
			}
			var out map[string]any
			raw, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(raw, &out)
			return out
		}
		const runs = 100
		var waitLat, pollLat, runLat []time.Duration
		waitCalls, pollCalls := 0, 0
		for i := range runs {
			t0 := time.Now()
			out := call("start_workflow", map[string]any{"sessionId": "chain", "workflowId": "w", "payload": map[string]any{"i": i}, "waitSeconds": 30})
			waitCalls++
			waitLat = append(waitLat, time.Since(t0))
			ex, _ := out["execution"].(map[string]any)
			if ex == nil || ex["status"] != "SUCCESS" {
				b.Fatalf("start with waitSeconds: %v", out)
			}
			began, _ := time.Parse(time.RFC3339Nano, ex["startedAt"].(string))
			ended, _ := time.Parse(time.RFC3339Nano, ex["endedAt"].(string))
			runLat = append(runLat, ended.Sub(began))
		}
		for i := range runs {
			t0 := time.Now()
			out := call("start_workflow", map[string]any{"sessionId": "chain", "workflowId": "w", "payload": map[string]any{"i": i}})
			pollCalls++
			for {
				time.Sleep(100 * time.Millisecond)
				st := call("get_workflow_status", map[string]any{"sessionId": "chain", "executionId": out["executionId"]})
				pollCalls++
				if st["terminal"] == true {
					if st["status"] != "SUCCESS" {
						b.Fatalf("polled run: %v", st)
					}
					break
				}
			}
			pollLat = append(pollLat, time.Since(t0))
		}
		_ = cs.Close()
		_ = s.Stop()
		b.ReportMetric(float64(waitCalls)/runs, "wait_calls/task")
		b.ReportMetric(float64(pollCalls)/runs, "poll_calls/task")
		b.ReportMetric(ms(percentile(waitLat, 0.5)), "wait_p50_ms")
		b.ReportMetric(ms(percentile(waitLat, 0.99)), "wait_p99_ms")
		b.ReportMetric(ms(percentile(pollLat, 0.5)), "poll_p50_ms")
		b.ReportMetric(ms(percentile(pollLat, 0.99)), "poll_p99_ms")
		b.ReportMetric(ms(percentile(runLat, 0.5)), "run_p50_ms")
		b.ReportMetric(ms(percentile(runLat, 0.99)), "run_p99_ms")
		b.ReportMetric(ms(percentile(pollLat, 0.5))/ms(percentile(waitLat, 0.5)), "p50_poll/wait")
		fmt.Printf("start+wait: %d calls for %d runs; start+poll: %d calls\n", waitCalls, runs, pollCalls)
	}
}
