package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// TestExecutionReadShowsTaskSpend: the TaskCompleted events of a run, as
// the worker API appends them, fold into the execution read's spend: two
// nodes that reported usage and cost are summed, the one that reported
// nothing is the run's spend gap (not a zero), and events of another run or
// of another type are not its spend.
func TestExecutionReadShowsTaskSpend(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	const doc = `{"name":"spend","workflows":[{"workflowId":"w","nodes":[{"nodeId":"in","type":"MANUAL"}],"edges":[]}]}`
	f := newEngineFixture(t, pool, "spend", doc, nil, func(op string, err error) { t.Errorf("engine %s: %v", op, err) },
		executionapp.EngineConfig{Concurrency: 1, Poll: 20 * time.Millisecond})
	start := func() string {
		res, err := f.start.Handle(t.Context(), executionapp.StartInput{SessionID: "spend", WorkflowID: "w",
			Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
		if err != nil {
			t.Fatal(err)
		}
		return res.ExecutionID
	}
	run, other := start(), start()
	reasoning := int64(40)
	usage := func(in, out int64) map[string]any {
		return execution.Usage{Input: in, Output: out, Reasoning: &reasoning, TokensKnown: true}.ToData()
	}
	cost := func(usd float64) map[string]any {
		return execution.Cost{USD: usd, USDKnown: true, Provenance: execution.ProvenanceReported}.ToData()
	}
	done := func(eid, node string, u, c map[string]any) executionapp.Event {
		d := map[string]any{"itemId": "1", "attempt": 1, "port": "output"}
		if u != nil {
			d["usage"] = u
		}
		if c != nil {
			d["cost"] = c
		}
		return executionapp.Event{Type: execution.EventTaskCompleted, At: time.Now(), SessionID: "spend", WorkflowID: "w",
			ExecutionID: eid, NodeID: node, Actor: "worker:w1", Channel: "worker", Data: d}
	}
	err := postgres.NewExecutionTransactor(pool).WithinTx(t.Context(), func(ctx context.Context, s executionapp.Stores) error {
		return s.Events.Append(ctx, []executionapp.Event{
			done(run, "summarize", usage(1000, 200), cost(0.1)),
			done(run, "summarize", usage(500, 100), cost(0.2)),
			done(run, "classify", usage(10, 1), cost(0.05)),
			done(run, "fetch", nil, nil),
			done(other, "summarize", usage(1, 1), cost(9)),
			{Type: execution.EventTaskCompleted, At: time.Now(), SessionID: "spend", ExecutionID: run, Actor: "worker:w1", Data: map[string]any{"usage": usage(7, 7)}},
			{Type: executionapp.EventNodeStatusChanged, At: time.Now(), SessionID: "spend", ExecutionID: run, NodeID: "in", Actor: "engine",
				Data: map[string]any{"from": "PENDING", "to": "RUNNING", "usage": usage(5, 5)}},
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	reader := postgres.NewReader(pool)
	reports, err := reader.TaskSpend(t.Context(), run)
	if err != nil || len(reports) != 4 || reports[0].NodeID != "summarize" || reports[3].NodeID != "fetch" || reports[3].Usage != nil {
		t.Fatalf("TaskSpend = %+v, %v", reports, err)
	}
	v, err := executionapp.NewGetExecution(reader, reader).Handle(t.Context(), "spend", run)
	if err != nil {
		t.Fatal(err)
	}
	s := v.Spend
	if s == nil || len(s.Nodes) != 3 || !slices.Equal(s.SpendGaps, []string{"fetch"}) || !slices.Equal(s.CostGaps, []string{"fetch"}) {
		t.Fatalf("spend = %+v", s)
	}
	if n := s.Nodes["summarize"]; n.Tasks != 2 || n.Usage.Input != 1500 || n.Usage.Output != 300 || *n.Usage.Reasoning != 80 ||
		n.Cost.USD != 0.3 || n.Cost.Provenance != execution.ProvenanceReported || !n.UsageKnown || !n.CostKnown {
		t.Fatalf("summarize = %+v %+v %+v", n, n.Usage, n.Cost)
	}
	if n := s.Nodes["fetch"]; n.Tasks != 1 || n.Usage != nil || n.Cost != nil || n.UsageKnown || n.CostKnown {
		t.Fatalf("fetch = %+v", n)
	}
	if tot := s.Total; tot.Tasks != 4 || tot.UsageReports != 3 || tot.Usage.Input != 1510 || tot.Cost.USD != 0.35 || tot.UsageKnown || tot.CostKnown {
		t.Fatalf("total = %+v %+v %+v", tot, tot.Usage, tot.Cost)
	}

	// A run without tasks has an empty spend, known to be complete; one of
	// another session is not found, as without spend.
	third := start()
	if v, err := executionapp.NewGetExecution(reader, reader).Handle(t.Context(), "spend", third); err != nil ||
		v.Spend == nil || len(v.Spend.Nodes) != 0 || !v.Spend.Total.UsageKnown || len(v.Spend.SpendGaps) != 0 {
		t.Fatalf("spend of a run without tasks = %+v, %v", v.Spend, err)
	}
	if _, err := executionapp.NewGetExecution(reader, reader).Handle(t.Context(), "elsewhere", run); err == nil {
		t.Fatal("a run read through another session was found")
	}
}

// BenchmarkExecutionReadWithSpend is GetExecution (the status read and the
// spend read) of a run with tasks TaskCompleted events, each with usage and
// cost: what one GET …/executions/{eid} costs as a run's tasks grow.
func BenchmarkExecutionReadWithSpend(b *testing.B) {
	for _, tasks := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			pool := pgtest.NewPool(b)
			const doc = `{"name":"spend","workflows":[{"workflowId":"w","nodes":[{"nodeId":"in","type":"MANUAL"}],"edges":[]}]}`
			f := newEngineFixture(b, pool, "spend", doc, nil, func(string, error) {}, executionapp.EngineConfig{Concurrency: 1})
			res, err := f.start.Handle(b.Context(), executionapp.StartInput{SessionID: "spend", WorkflowID: "w",
				Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
			if err != nil {
				b.Fatal(err)
			}
			events := make([]executionapp.Event, tasks)
			for i := range events {
				events[i] = executionapp.Event{Type: execution.EventTaskCompleted, At: time.Now(), SessionID: "spend", WorkflowID: "w",
					ExecutionID: res.ExecutionID, NodeID: fmt.Sprintf("n%d", i%5), Actor: "worker:w1", Channel: "worker",
					Data: map[string]any{"itemId": i, "attempt": 1, "port": "default",
						"usage": execution.Usage{Input: 1000, Output: 100, TokensKnown: true}.ToData(),
						"cost":  execution.Cost{USD: 0.001, USDKnown: true, Provenance: execution.ProvenanceReported}.ToData()}}
			}
			if tasks > 0 {
				if err := postgres.NewExecutionTransactor(pool).WithinTx(b.Context(), func(ctx context.Context, s executionapp.Stores) error {
					return s.Events.Append(ctx, events)
				}); err != nil {
					b.Fatal(err)
				}
			}
			reader := postgres.NewReader(pool)
			uc := executionapp.NewGetExecution(reader, reader)
			b.ResetTimer()
			for b.Loop() {
				v, err := uc.Handle(b.Context(), "spend", res.ExecutionID)
				if err != nil || v.Spend.Total.Tasks != int64(tasks) {
					b.Fatalf("%+v, %v", v.Spend, err)
				}
			}
		})
	}
}
