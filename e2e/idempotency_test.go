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

// TestIdempotencyKeysAreScoped (issue 11, finding 7): a start key belongs to
// its workflow and a command key to its target and action. Reused for the
// same request it answers the first result; for another request in its
// scope it answers 409 naming the conflict; in another scope it is another
// key; on an id the session does not have it answers 404, not the first
// command's result.
func TestIdempotencyKeysAreScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("scope", linearFlow(linearWF), heldFlow("held", "30s"))
	start := func(wf string, payload map[string]any) (*apiclient.StartExecutionResponse, error) {
		key := "start-key"
		return e.c.StartExecutionWithResponse(e.ctx, "scope", wf, &apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartRequest{Payload: payload})
	}
	first, err := start(linearWF, map[string]any{"name": "a"})
	if err != nil || first.JSON201 == nil {
		t.Fatalf("first start: %v %s", err, first.Body)
	}
	again, _ := start(linearWF, map[string]any{"name": "a"})
	if again.StatusCode() != 200 || again.JSON200 == nil || again.JSON200.ExecutionId != first.JSON201.ExecutionId {
		t.Fatalf("same key, same request: %d %s, want 200 with the first execution", again.StatusCode(), again.Body)
	}
	other, _ := start(linearWF, map[string]any{"name": "b"})
	if other.StatusCode() != 409 || !strings.Contains(problemDetail(other.Body), "different payload") {
		t.Fatalf("same key, another payload: %d %s, want 409 naming the conflict", other.StatusCode(), other.Body)
	}
	elsewhere, _ := start("held", map[string]any{"name": "a"})
	if elsewhere.JSON201 == nil || elsewhere.JSON201.ExecutionId == first.JSON201.ExecutionId {
		t.Fatalf("the key on another workflow: %d %s, want a new run", elsewhere.StatusCode(), elsewhere.Body)
	}
	if h := e.history("scope", apiclient.ListExecutionsParams{WorkflowId: ptr(linearWF)}); len(h) != 1 {
		t.Fatalf("%d runs of %s, want 1", len(h), linearWF)
	}

	held := elsewhere.JSON201.ExecutionId
	pause := e.mustCtl("scope", held, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE, Key: ptr("cmd-key")})
	resume := e.mustCtl("scope", held, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESUME, Key: ptr("cmd-key")})
	if resume.CommandId == pause.CommandId {
		t.Fatalf("RESUME with PAUSE's key returned the PAUSE: %+v", resume)
	}
	if x := e.get("scope", held); x.Status != apiclient.ExecutionStatusRUNNING {
		t.Fatalf("after PAUSE and RESUME with one key the run is %s, want RUNNING", x.Status)
	}
	foreign := e.ctl("scope", "01a22ff6-0000-7000-8000-000000000000", apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE, Key: ptr("cmd-key")})
	if foreign.StatusCode() != 404 {
		t.Fatalf("the key on an unknown execution: %d %s, want 404", foreign.StatusCode(), foreign.Body)
	}
	stop := func(mode apiclient.ExecutionCommandMode) *apiclient.ControlExecutionResponse {
		return e.ctl("scope", held, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: &mode, Key: ptr("stop-key")})
	}
	if r := stop(apiclient.ExecutionCommandModeCANCEL); r.StatusCode() != 200 {
		t.Fatalf("STOP CANCEL: %d %s", r.StatusCode(), r.Body)
	}
	if r := stop(apiclient.ExecutionCommandModeKILL); r.StatusCode() != 409 || !strings.Contains(problemDetail(r.Body), "mode CANCEL, not KILL") {
		t.Fatalf("STOP KILL with STOP CANCEL's key: %d %s, want 409 naming both modes", r.StatusCode(), r.Body)
	}
}
