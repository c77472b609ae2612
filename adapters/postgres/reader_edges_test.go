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
