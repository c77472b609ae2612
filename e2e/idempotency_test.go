package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// fiveAtOnce runs call five times at the same moment and returns what each
// answered.
func fiveAtOnce(call func() string) []string {
	out := make([]string, 5)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Go(func() { <-start; out[i] = call() })
	}
	close(start)
	wg.Wait()
	return out
}

func allSame(t *testing.T, what string, got []string) string {
	t.Helper()
	for _, g := range got {
		if g != got[0] || g == "" || strings.HasPrefix(g, "error") {
			t.Fatalf("%s: five identical requests answered %q, want one id for all", what, got)
		}
	}
	return got[0]
}

// TestIdempotencyUnderConcurrency (T27): a start over REST and over MCP, and
// a node RETRY over REST and over MCP, each sent five times at once with
// one key and once more afterwards (a client that timed out and retried),
// make exactly one execution, and every caller gets its id.
func TestIdempotencyUnderConcurrency(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	e.apply("idem", wf("w", []string{nd("start", "MANUAL", ""), nd("boom", "FAIL", `{"message":"failed on purpose"}`)},
		[]string{ed("start", "boom", "")}))
	cs := mustConnect(t, s.URL, "")
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	count := func(q string, args ...any) int {
		var n int
		if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	restStart := func() string {
		key := "rest-start"
		res, err := e.c.StartExecutionWithResponse(e.ctx, "idem", "w", &apiclient.StartExecutionParams{IdempotencyKey: &key},
			apiclient.StartRequest{Payload: map[string]any{"n": 1}})
		switch {
		case err != nil:
			return "error " + err.Error()
		case res.JSON201 != nil:
			return res.JSON201.ExecutionId
		case res.JSON200 != nil:
			return res.JSON200.ExecutionId
		}
		return fmt.Sprintf("error %d %s", res.StatusCode(), res.Body)
	}
	restID := allSame(t, "REST start", append(fiveAtOnce(restStart), restStart()))

	mcpStart := func() string {
		var out mcpserver.StartOut
		res := mcpCall(t, cs, "start_workflow", map[string]any{"sessionId": "idem", "workflowId": "w", "payload": map[string]any{"n": 2},
			"idempotencyKey": "mcp-start"}, &out)
		if res.IsError {
			return "error " + text(res)
		}
		return out.ExecutionID
	}
	mcpID := allSame(t, "MCP start_workflow", append(fiveAtOnce(mcpStart), mcpStart()))
	if restID == mcpID {
		t.Fatal("two keys gave one execution")
	}
	if n := count(`SELECT count(*) FROM executions WHERE session_id = 'idem'`); n != 2 {
		t.Fatalf("%d executions after 12 starts with 2 keys, want 2", n)
	}
	e.waitStatus("idem", restID, apiclient.ExecutionStatusFAILURE)
	e.waitStatus("idem", mcpID, apiclient.ExecutionStatusFAILURE)

	restRetry := func() string {
		key := "rest-retry"
		res, err := e.c.ControlNodeWithResponse(e.ctx, "idem", restID, "boom", nil, apiclient.NodeCommand{Action: apiclient.NodeCommandActionRETRY, Key: &key})
		if err != nil || res.JSON200 == nil {
			return fmt.Sprintf("error %v %v", err, res)
		}
		return strings.Join(res.JSON200.ResultExecutionIds, ",")
	}
	allSame(t, "REST RETRY", append(fiveAtOnce(restRetry), restRetry()))
	mcpRetry := func() string {
		var out mcpserver.CommandOut
		res := mcpCall(t, cs, "control_node", map[string]any{"sessionId": "idem", "executionId": mcpID, "nodeId": "boom",
			"action": "RETRY", "key": "mcp-retry"}, &out)
		if res.IsError {
			return "error " + text(res)
		}
		return strings.Join(out.ResultExecutionIDs, ",")
	}
	allSame(t, "MCP RETRY", append(fiveAtOnce(mcpRetry), mcpRetry()))
	if n := count(`SELECT count(*) FROM executions WHERE restart_of IN ($1::uuid, $2::uuid)`, restID, mcpID); n != 2 {
		t.Fatalf("%d retry executions after 12 RETRYs with 2 keys, want 2", n)
	}
	if n := count(`SELECT count(*) FROM commands WHERE key IN ('rest-retry', 'mcp-retry')`); n != 2 {
		t.Fatalf("%d commands stored for 2 keys, want 2", n)
	}
}
