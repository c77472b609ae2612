package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// TestSchedulersNeverFireASlotTwice runs two schedulers (two instances) on
// one database: every slot of an every-second schedule starts exactly one
// execution.
func TestSchedulersNeverFireASlotTwice(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	cat := registry(t)
	ctx := t.Context()
	doc := []byte(`{"name":"cron","workflows":[{"workflowId":"tick","nodes":[
		{"nodeId":"every","type":"SCHEDULE","config":{"cron":"@every 1s"}},
		{"nodeId":"out","type":"RESULT"}],"edges":[{"source":"every","target":"out"}]}]}`)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), cat, time.Now)
	if _, err := apply.Handle(ctx, sessionapp.ApplyInput{ID: "cron", Document: doc}); err != nil {
		t.Fatal(err)
	}
	store := postgres.NewSessionStore(pool)
	start := executionapp.NewStartExecution(postgres.NewExecutionTransactor(pool), rawWorkflows{store}, cat, nil, nil, time.Now)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var errs []error
	var mu sync.Mutex
	begin := time.Now()
	for range 2 {
		s := executionapp.NewScheduler(store, plugins.NewCronClock(), start, time.Now, 100*time.Millisecond,
			func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() })
		wg.Go(func() { s.Run(runCtx) })
	}
	time.Sleep(3500 * time.Millisecond)
	cancel()
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("scheduler errors: %v", errs)
	}
	elapsed := time.Since(begin)
	n, distinct := countExecutions(t, pool)
	if n != distinct {
		t.Fatalf("%d executions for %d distinct slots: a slot fired twice", n, distinct)
	}
	if want := int(elapsed / time.Second); n < want-1 || n > want+1 {
		t.Fatalf("%d executions in %s, want about %d (one per second)", n, elapsed, want)
	}
}

type rawWorkflows struct{ s *postgres.SessionStore }

func (r rawWorkflows) Workflow(ctx context.Context, sid, wid string) (session.Workflow, error) {
	return r.s.Workflow(ctx, sid, wid)
}

func countExecutions(t *testing.T, pool *pgxpool.Pool) (n, distinct int) {
	t.Helper()
	err := pool.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT idempotency_key) FROM executions`).Scan(&n, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	return n, distinct
}

// TestDeleteRefusedWhileRunning: a session with an unfinished execution
// cannot be deleted; once the execution ended it can.
func TestDeleteRefusedWhileRunning(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	cat := registry(t)
	ctx := t.Context()
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), cat, time.Now)
	if _, err := apply.Handle(ctx, sessionapp.ApplyInput{ID: "busy", Document: doc("busy", "w")}); err != nil {
		t.Fatal(err)
	}
	store := postgres.NewSessionStore(pool)
	start := executionapp.NewStartExecution(postgres.NewExecutionTransactor(pool), rawWorkflows{store}, cat, nil, nil, time.Now)
	res, err := start.Handle(ctx, executionapp.StartInput{SessionID: "busy", WorkflowID: "w", Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	err = store.Delete(ctx, "busy")
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "stop them first") {
		t.Fatalf("delete with a running execution: got %v, want a conflict naming the next step", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE executions SET status = 'STOPPED' WHERE execution_id = $1`, res.ExecutionID); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "busy"); err != nil {
		t.Fatalf("delete after the run ended: %v", err)
	}
}
