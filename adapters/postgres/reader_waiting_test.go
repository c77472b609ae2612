package postgres_test

import (
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
)

// TestExecutionReadShowsWhatANodeHolds: a DELAY holding three messages
// reads waiting 3 with the time the first is due, though it has received
// and emitted nothing yet (it read PENDING 0 0 with nothing else before).
func TestExecutionReadShowsWhatANodeHolds(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	const doc = `{"name":"hold","workflows":[{"workflowId":"nap","nodes":[{"nodeId":"in","type":"MANUAL"},
	    {"nodeId":"split","type":"SPLIT"},{"nodeId":"wait","type":"DELAY","config":{"duration":"30s"}}],
	    "edges":[{"source":"in","target":"split"},{"source":"split","target":"wait"}]}]}`
	f := newEngineFixture(t, pool, "hold", doc, nil, func(op string, err error) { t.Errorf("engine %s: %v", op, err) },
		executionapp.EngineConfig{Concurrency: 4, Poll: 20 * time.Millisecond})
	f.run(t)
	start := executionapp.NewStartExecution(postgres.NewExecutionTransactor(pool), rawWorkflows{postgres.NewSessionStore(pool)}, registry(t), f.engine, nil, time.Now)
	res, err := start.Handle(t.Context(), executionapp.StartInput{SessionID: "hold", WorkflowID: "nap", Payload: []any{1, 2, 3},
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	reader := postgres.NewReader(pool)
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := reader.Execution(t.Context(), "hold", res.ExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		n := v.Nodes[2]
		if n.Waiting == 3 && !n.DueAt.IsZero() {
			if n.Received != 0 || n.Emitted != 0 || time.Until(n.DueAt) < 20*time.Second {
				t.Fatalf("wait node: %+v, want nothing received or emitted and the first due in about 30 s", n)
			}
			if v.Nodes[1].Waiting != 0 || !v.Nodes[1].DueAt.IsZero() {
				t.Fatalf("split node: %+v, want nothing held", v.Nodes[1])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DELAY never read waiting 3 with a due time: %+v", v.Nodes)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
