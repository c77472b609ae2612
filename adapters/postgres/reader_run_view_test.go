package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
)

// TestExecutionReadHasItsOwnEdges: the execution read carries the edges of
// the definition the run started with (a port left out reads default), and
// a workflow replaced since does not change them.
func TestExecutionReadHasItsOwnEdges(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	const doc = `{"name":"shape","workflows":[{"workflowId":"w","nodes":[{"nodeId":"in","type":"MANUAL"},
	    {"nodeId":"route","type":"ROUTER","config":{"routes":[{"port":"big","condition":"payload.n > 1"}]}},{"nodeId":"wait","type":"DELAY","config":{"duration":"30s"}}],
	    "edges":[{"source":"in","target":"route"},{"source":"route","target":"wait","sourcePort":"big"}]}]}`
	f := newEngineFixture(t, pool, "shape", doc, nil, func(op string, err error) { t.Errorf("engine %s: %v", op, err) },
		executionapp.EngineConfig{Concurrency: 2, Poll: 20 * time.Millisecond})
	start := executionapp.NewStartExecution(postgres.NewExecutionTransactor(pool), rawWorkflows{postgres.NewSessionStore(pool)}, registry(t), f.engine, nil, time.Now)
	res, err := start.Handle(t.Context(), executionapp.StartInput{SessionID: "shape", WorkflowID: "w", Payload: map[string]any{"n": 1},
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	want := []executionapp.EdgeView{{Source: "in", Target: "route", SourcePort: "default"}, {Source: "route", Target: "wait", SourcePort: "big"}}
	reader := postgres.NewReader(pool)
	read := func() []executionapp.EdgeView {
		t.Helper()
		v, err := reader.Execution(t.Context(), "shape", res.ExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		return v.Edges
	}
	if got := read(); !reflect.DeepEqual(got, want) {
		t.Fatalf("edges %+v, want %+v", got, want)
	}
	// The workflow loses its edges (as a session applied without them would):
	// the run keeps its own.
	if _, err := pool.Exec(context.Background(), `UPDATE workflows SET definition = jsonb_set(definition, '{edges}', '[]') WHERE session_id = 'shape'`); err != nil {
		t.Fatal(err)
	}
	if got := read(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the workflow changed the run's edges read %+v, want %+v", got, want)
	}
}

// TestExecutionReadCountsAttempts: a node's attempts are the times its plugin
// started on a message (a retried failure counts twice), and read unknown
// once retention has pruned the run's messages.
func TestExecutionReadCountsAttempts(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	const doc = `{"name":"tries","workflows":[{"workflowId":"w","nodes":[{"nodeId":"in","type":"MANUAL"},
	    {"nodeId":"split","type":"SPLIT"},{"nodeId":"log","type":"LOG"},
	    {"nodeId":"boom","type":"FAIL","config":{"message":"no","retry":{"maxAttempts":2,"backoff":"1ms"}}}],
	    "edges":[{"source":"in","target":"split"},{"source":"split","target":"log"},{"source":"log","target":"boom"}]}]}`
	f := newEngineFixture(t, pool, "tries", doc, nil, func(string, error) {},
		executionapp.EngineConfig{Concurrency: 2, Poll: 20 * time.Millisecond})
	f.run(t)
	start := executionapp.NewStartExecution(postgres.NewExecutionTransactor(pool), rawWorkflows{postgres.NewSessionStore(pool)}, registry(t), f.engine, nil, time.Now)
	res, err := start.Handle(t.Context(), executionapp.StartInput{SessionID: "tries", WorkflowID: "w", Payload: []any{1, 2, 3},
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	reader := postgres.NewReader(pool)
	deadline := time.Now().Add(20 * time.Second)
	var v executionapp.ExecutionView
	for {
		if v, err = reader.Execution(t.Context(), "tries", res.ExecutionID); err != nil {
			t.Fatal(err)
		}
		if v.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish: %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := map[string]int64{}
	for _, n := range v.Nodes {
		if !n.AttemptsKnown {
			t.Fatalf("node %s: attempts unknown before any pruning", n.NodeID)
		}
		got[n.NodeID] = n.Attempts
	}
	// in and split run once; log ran on the split's messages until boom
	// failed the run; boom's first message was tried twice.
	if got["in"] != 1 || got["split"] != 1 || got["log"] < 1 || got["boom"] < 2 {
		t.Fatalf("attempts %v: want in 1, split 1, log ≥ 1, boom ≥ 2 (a retried failure counts twice)", got)
	}
	if _, err := pool.Exec(context.Background(), `UPDATE executions SET items_pruned = true WHERE execution_id = $1`, res.ExecutionID); err != nil {
		t.Fatal(err)
	}
	if v, err = reader.Execution(t.Context(), "tries", res.ExecutionID); err != nil {
		t.Fatal(err)
	}
	for _, n := range v.Nodes {
		if n.AttemptsKnown || n.Attempts != 0 {
			t.Fatalf("node %s after pruning: attempts %d known %v, want unknown", n.NodeID, n.Attempts, n.AttemptsKnown)
		}
	}
}
