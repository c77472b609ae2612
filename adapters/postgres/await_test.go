package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// countingReader counts the status reads a wait makes.
type countingReader struct {
	*postgres.Reader
	statusReads atomic.Int64
}

func (c *countingReader) Execution(ctx context.Context, sessionID, id string) (executionapp.ExecutionView, error) {
	c.statusReads.Add(1)
	return c.Reader.Execution(ctx, sessionID, id)
}

// A start with a wait returns the run's final status and result in the same
// answer, from the event feed: two status reads per run whatever the wait,
// not one per poll. A wait that runs out answers with the run still going;
// a RETRY with a wait returns the new run's end.
func TestWaitsFollowTheEventFeed(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	const doc = `{"name":"wait","workflows":[
	  {"workflowId":"slow","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"nap","type":"DELAY","config":{"duration":"400ms"}},
	    {"nodeId":"out","type":"RESULT"}],"edges":[{"source":"in","target":"nap"},{"source":"nap","target":"out"}]},
	  {"workflowId":"long","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"nap","type":"DELAY","config":{"duration":"30s"}}],
	    "edges":[{"source":"in","target":"nap"}]},
	  {"workflowId":"bad","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"boom","type":"FAIL","config":{"message":"down"}}],
	    "edges":[{"source":"in","target":"boom"}]}]}`
	f := newEngineFixture(t, pool, "wait", doc, nil, func(op string, err error) { t.Errorf("engine %s: %v", op, err) },
		executionapp.EngineConfig{Concurrency: 4, Poll: 20 * time.Millisecond})
	f.run(t)
	reader := &countingReader{Reader: postgres.NewReader(pool)}
	tx := postgres.NewExecutionTransactor(pool)
	feed := executionapp.NewFeed(reader, executionapp.FeedInterval, func(err error) { t.Errorf("feed: %v", err) })
	tx.OnCommittedEvents(feed.Nudge)
	ctx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); feed.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	await := executionapp.NewAwait(feed, reader)
	cat := registry(t)
	workflows := rawWorkflows{postgres.NewSessionStore(pool)}
	start := executionapp.NewStartExecution(tx, workflows, cat, f.engine, await, time.Now)

	begin := time.Now()
	res, err := start.Handle(t.Context(), executionapp.StartInput{SessionID: "wait", WorkflowID: "slow", Payload: map[string]any{"n": 1},
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest", WaitSecs: 20})
	took := time.Since(begin)
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Waited; w == nil || !w.Ended || w.Status != execution.Success || !w.HasResult || res.Status != execution.Success {
		t.Fatalf("start with a wait: %+v (waited %+v)", res, res.Waited)
	}
	if took < 400*time.Millisecond || took > 10*time.Second {
		t.Fatalf("the wait took %v for a 400ms run", took)
	}
	if n := reader.statusReads.Load(); n != 2 {
		t.Fatalf("%d status reads for one wait of %v; the wait must follow the feed, not poll", n, took)
	}

	begin = time.Now()
	res, err = start.Handle(t.Context(), executionapp.StartInput{SessionID: "wait", WorkflowID: "long",
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest", WaitSecs: 0.3})
	took = time.Since(begin)
	if err != nil || res.Waited == nil || res.Waited.Ended || res.Waited.Status.Terminal() {
		t.Fatalf("a wait that runs out: %+v, %v", res, err)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("a 0.3 s wait took %v", took)
	}

	failed, err := start.Handle(t.Context(), executionapp.StartInput{SessionID: "wait", WorkflowID: "bad",
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest", WaitSecs: 20})
	if err != nil || failed.Status != execution.Failure {
		t.Fatalf("failing run: %+v, %v", failed, err)
	}
	q, err := postgres.NewQueue(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	control := executionapp.NewControl(executionapp.ControlDeps{Tx: tx, Workflows: workflows, Queue: q, Catalog: cat,
		Waker: f.engine, Await: await, Now: time.Now})
	cr, err := control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "wait", ExecutionID: failed.ExecutionID, NodeID: "boom",
		Scope: execution.ScopeNode, Action: "RETRY", WaitSecs: 20, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cr.Waited) != 1 || cr.Waited[0].ID != cr.ResultExecutionIDs[0] || !cr.Waited[0].Ended || cr.Waited[0].Status != execution.Failure {
		t.Fatalf("RETRY with a wait: %+v", cr)
	}
	// A DRAIN with a wait turns "accepted" into "applied" once the run has
	// stopped; the run of "long" sleeps 30 s, so the DRAIN waits for that
	// message and the wait runs out first.
	cr, err = control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "wait", ExecutionID: res.ExecutionID,
		Scope: execution.ScopeExecution, Action: "STOP", Mode: "DRAIN", WaitSecs: 0.2, Actor: "test", Channel: "rest"})
	if err != nil || cr.Status != executionapp.CommandAccepted || len(cr.Waited) != 1 || cr.Waited[0].Ended {
		t.Fatalf("DRAIN of a sleeping run with a short wait: %+v, %v", cr, err)
	}
	cr, err = control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "wait", ExecutionID: res.ExecutionID,
		Scope: execution.ScopeExecution, Action: "STOP", Mode: "KILL", WaitSecs: 20, Actor: "test", Channel: "rest"})
	if err != nil || cr.Status != executionapp.CommandApplied || len(cr.Waited) != 1 || !cr.Waited[0].Ended || cr.Waited[0].Status != execution.Stopped {
		t.Fatalf("KILL with a wait: %+v, %v", cr, err)
	}
}
