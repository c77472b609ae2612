package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/execution"
)

// limitsDoc is a session with a quick workflow (a 50 ms timer) and one that
// holds its slot for an hour. sessionLimits and quickLimits are the
// "limits" members of the session and of the quick workflow ("" for none).
func limitsDoc(sessionLimits, quickLimits string) []byte {
	lim := func(l string) string {
		if l == "" {
			return ""
		}
		return `"limits":` + l + `,`
	}
	return fmt.Appendf(nil, `{"name":"limits",%s"workflows":[
		{"workflowId":"quick",%s"nodes":[{"nodeId":"start","type":"MANUAL"},{"nodeId":"wait","type":"DELAY","config":{"duration":"50ms"}},
		 {"nodeId":"out","type":"RESULT"}],"edges":[{"source":"start","target":"wait"},{"source":"wait","target":"out"}]},
		{"workflowId":"hold","nodes":[{"nodeId":"start","type":"MANUAL"},{"nodeId":"wait","type":"DELAY","config":{"duration":"1h"}},
		 {"nodeId":"out","type":"RESULT"}],"edges":[{"source":"start","target":"wait"},{"source":"wait","target":"out"}]}]}`,
		lim(sessionLimits), lim(quickLimits))
}

// schedInstance is one server's worth of the runtime on its own pool: engine,
// starts, control and the admission loop.
type schedInstance struct {
	pool      *pgxpool.Pool
	tx        *postgres.ExecutionTransactor
	engine    *executionapp.Engine
	start     *executionapp.StartExecution
	control   *executionapp.Control
	admission *executionapp.Admission
	status    *executionapp.GetSchedulerStatus
}

func newSchedInstance(t *testing.T, dsn, owner string, slots execution.Slots) *schedInstance {
	t.Helper()
	pool, err := postgres.NewPool(dsn, postgres.PoolOptions{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	q, err := postgres.NewQueue(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	runners, err := plugins.NewRunners(plugins.RunnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cat := registry(t)
	tx := postgres.NewExecutionTransactor(pool)
	engine := executionapp.NewEngine(executionapp.EngineDeps{
		Tx: tx, Queue: q, Runners: runners, Signals: quietSignals{}, Catalog: cat, Owner: owner, Now: time.Now,
		OnError: func(op string, err error) { t.Logf("engine %s %s: %v", owner, op, err) },
	}, executionapp.EngineConfig{Concurrency: 16, Poll: 10 * time.Millisecond})
	sched := postgres.NewScheduler(pool)
	adm, err := executionapp.NewAdmission(executionapp.AdmissionDeps{Tx: tx, Waiting: sched, Sources: q, Catalog: cat, Waker: engine, Now: time.Now,
		OnError: func(err error) { t.Errorf("admission %s: %v", owner, err) }}, executionapp.AdmissionConfig{Slots: slots, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tx.OnCommittedStatusChanges(adm.Nudge)
	workflows := rawWorkflows{postgres.NewSessionStore(pool)}
	start := executionapp.NewStartExecution(tx, workflows, cat, engine, nil, time.Now)
	start.UseAdmission(adm)
	return &schedInstance{pool: pool, tx: tx, engine: engine, start: start, admission: adm,
		status:  executionapp.NewGetSchedulerStatus(sched, slots),
		control: executionapp.NewControl(executionapp.ControlDeps{Tx: tx, Workflows: workflows, Queue: q, Catalog: cat, Waker: engine, Now: time.Now})}
}

// run starts the engine and the admission loop until the test ends, and
// joins both then.
func (i *schedInstance) run(t *testing.T) {
	ctx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	var wg sync.WaitGroup
	wg.Go(func() { _ = i.engine.Run(ctx) })
	wg.Go(func() { i.admission.Run(ctx) })
	t.Cleanup(func() { stop(); wg.Wait() })
}

func applyLimits(t *testing.T, pool *pgxpool.Pool, doc []byte) {
	t.Helper()
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), registry(t), time.Now)
	if _, err := apply.Handle(t.Context(), sessionapp.ApplyInput{ID: "limits", Document: doc}); err != nil {
		t.Fatal(err)
	}
}

func (i *schedInstance) startRun(t *testing.T, workflow string, pool execution.Pool) executionapp.StartResult {
	t.Helper()
	res, err := i.start.Handle(t.Context(), executionapp.StartInput{SessionID: "limits", WorkflowID: workflow,
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest", Pool: pool})
	if err != nil {
		t.Fatalf("start %s: %v", workflow, err)
	}
	return res
}

func (i *schedInstance) stopRun(t *testing.T, id string) {
	t.Helper()
	if _, err := i.control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "limits", ExecutionID: id,
		Scope: execution.ScopeExecution, Action: "STOP", Mode: "CANCEL", Actor: "test", Channel: "rest"}); err != nil {
		t.Fatalf("stop %s: %v", id, err)
	}
}

func statuses(t *testing.T, pool *pgxpool.Pool, ids ...string) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		if err := pool.QueryRow(t.Context(), `SELECT status FROM executions WHERE execution_id = $1`, id).Scan(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func wantStatuses(t *testing.T, pool *pgxpool.Pool, ids []string, want ...string) {
	t.Helper()
	if got := statuses(t, pool, ids...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses: got %v, want %v", got, want)
	}
}

// sampleRunning counts RUNNING runs every 5 ms until stop, and reports the
// highest count it saw.
func sampleRunning(t *testing.T, pool *pgxpool.Pool, where string) (stop func() int) {
	t.Helper()
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			var n int64
			if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE status = 'RUNNING' AND `+where).Scan(&n); err == nil && n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() int { close(done); wg.Wait(); return int(peak.Load()) }
}

// waitAllSucceeded waits until n runs of the quick workflow succeeded.
func waitAllSucceeded(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var done, other int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE status = 'SUCCESS'), count(*) FILTER (WHERE status NOT IN ('SUCCESS', 'PENDING', 'RUNNING'))
			FROM executions WHERE workflow_id = 'quick'`).Scan(&done, &other); err != nil {
			t.Fatal(err)
		}
		if other > 0 {
			t.Fatalf("%d runs ended otherwise than SUCCESS", other)
		}
		if done == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs succeeded within 60 s", done, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkStartOrder: runs became RUNNING in start order (admitted_at, stamped
// by the statement that made them RUNNING, never goes back along
// queue_seq).
func checkStartOrder(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT queue_seq, admitted_at FROM executions WHERE workflow_id = 'quick' ORDER BY queue_seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var last time.Time
	var lastSeq int64
	for rows.Next() {
		var seq int64
		var at *time.Time
		if err := rows.Scan(&seq, &at); err != nil {
			t.Fatal(err)
		}
		if at == nil {
			t.Fatalf("run %d never became RUNNING", seq)
		}
		if at.Before(last) {
			t.Errorf("run %d became RUNNING at %s, before run %d (started earlier) at %s", seq, at, lastSeq, last)
		}
		last, lastSeq = *at, seq
	}
}

// TestAdmissionTwoInstancesHoldTheLimit runs two instances (each its own
// pool, engine, starts and admission loop) on one database with a
// server-wide limit of 3: starts through both at once never have more than
// 3 runs RUNNING, every run finishes, and they start in start order.
func TestAdmissionTwoInstancesHoldTheLimit(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	slots := execution.Slots{MaxRunning: 3}
	a, b := newSchedInstance(t, dsn, "a", slots), newSchedInstance(t, dsn, "b", slots)
	applyLimits(t, a.pool, limitsDoc("", ""))
	a.run(t)
	b.run(t)
	stop := sampleRunning(t, a.pool, "true")
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		inst := a
		if i%2 == 1 {
			inst = b
		}
		wg.Go(func() { inst.startRun(t, "quick", execution.PoolNormal) })
	}
	wg.Wait()
	waitAllSucceeded(t, a.pool, n)
	if peak := stop(); peak > slots.MaxRunning || peak < 2 {
		t.Fatalf("at most %d runs RUNNING at once, want between 2 and the limit %d", peak, slots.MaxRunning)
	}
	checkStartOrder(t, a.pool)
}

// TestAdmissionReservedPool: supervisor runs (the reserved pool) start while
// the normal pool is full, up to the reserved size, and do not take the
// normal pool's slots. The status and the metrics count both pools.
func TestAdmissionReservedPool(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	inst := newSchedInstance(t, dsn, "r", execution.Slots{MaxRunning: 2, Reserved: 1})
	applyLimits(t, inst.pool, limitsDoc("", ""))
	// Nothing runs the loops: each Pass is explicit.
	var ids []string
	for _, p := range []execution.Pool{execution.PoolNormal, execution.PoolNormal, execution.PoolNormal, execution.PoolReserved, execution.PoolReserved} {
		ids = append(ids, inst.startRun(t, "hold", p).ExecutionID)
	}
	n1, n3, r1 := ids[0], ids[2], ids[3]
	wantStatuses(t, inst.pool, ids, "RUNNING", "RUNNING", "PENDING", "RUNNING", "PENDING")

	st, err := inst.status.Handle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Running != (executionapp.PoolCounts{Normal: 2, Reserved: 1}) || st.Waiting != (executionapp.PoolCounts{Normal: 1, Reserved: 1}) ||
		st.Slots != (execution.Slots{MaxRunning: 2, Reserved: 1}) || st.OldestWaiting.IsZero() {
		t.Fatalf("status: got %+v, want 2+1 running, 1+1 waiting, the oldest waiting's start", st)
	}
	m := metrics.New(metrics.Options{QueueTimeout: 10 * time.Second, OnSchedulerError: func(err error) { t.Errorf("scheduler scrape: %v", err) },
		SchedulerFunc: func(ctx context.Context) (metrics.SchedulerDepth, error) {
			st, err := inst.status.Handle(ctx)
			return metrics.SchedulerDepth{WaitingNormal: int64(st.Waiting.Normal), WaitingReserved: int64(st.Waiting.Reserved),
				RunningNormal: int64(st.Running.Normal), RunningReserved: int64(st.Running.Reserved),
				LimitNormal: int64(st.Slots.MaxRunning), LimitReserved: int64(st.Slots.Reserved)}, err
		}})
	body := scrapeBody(t, m)
	for series, want := range map[string]float64{
		`yukta_scheduler_waiting{pool="normal"}`: 1, `yukta_scheduler_waiting{pool="reserved"}`: 1,
		`yukta_scheduler_running{pool="normal"}`: 2, `yukta_scheduler_running{pool="reserved"}`: 1,
		`yukta_scheduler_limit{pool="normal"}`: 2, `yukta_scheduler_limit{pool="reserved"}`: 1,
		`yukta_scheduler_errors_total`: 0,
	} {
		metricEquals(t, body, series, want)
	}

	// A reserved slot frees: the waiting supervisor run starts, the normal
	// one still waits.
	inst.stopRun(t, r1)
	if n, err := inst.admission.Pass(t.Context()); err != nil || n != 1 {
		t.Fatalf("Pass: got (%d, %v), want 1 admitted", n, err)
	}
	wantStatuses(t, inst.pool, ids, "RUNNING", "RUNNING", "PENDING", "STOPPED", "RUNNING")
	// A normal slot frees: the waiting normal run starts, and its trigger
	// message is ready for a claim.
	inst.stopRun(t, n1)
	if n, err := inst.admission.Pass(t.Context()); err != nil || n != 1 {
		t.Fatalf("Pass: got (%d, %v), want 1 admitted", n, err)
	}
	wantStatuses(t, inst.pool, ids, "STOPPED", "RUNNING", "RUNNING", "STOPPED", "RUNNING")
	var ready int
	if err := inst.pool.QueryRow(t.Context(), `SELECT count(*) FROM work_items WHERE execution_id = $1 AND state = 'ready'`, n3).Scan(&ready); err != nil || ready != 1 {
		t.Fatalf("ready items of the admitted run: got (%d, %v), want 1", ready, err)
	}
	var events int
	if err := inst.pool.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE execution_id = $1 AND type = 'ExecutionStatusChanged'
		AND data->>'from' = 'PENDING' AND data->>'to' = 'RUNNING' AND actor = 'engine'`, n3).Scan(&events); err != nil || events != 1 {
		t.Fatalf("PENDING -> RUNNING events of the admitted run: got (%d, %v), want 1", events, err)
	}
}

// TestAdmissionQueueSurvivesACrash: starts queued by one instance survive it
// (its pool closes with nothing run, as in a crash after the answers), and
// another instance on the database starts them, in order, within the limit.
func TestAdmissionQueueSurvivesACrash(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	first := newSchedInstance(t, dsn, "first", execution.Slots{})
	applyLimits(t, first.pool, limitsDoc("", `{"maxRunning":2}`))
	var ids []string
	for range 6 {
		ids = append(ids, first.startRun(t, "quick", execution.PoolNormal).ExecutionID)
	}
	wantStatuses(t, first.pool, ids, "RUNNING", "RUNNING", "PENDING", "PENDING", "PENDING", "PENDING")
	var ready int
	if err := first.pool.QueryRow(t.Context(), `SELECT count(*) FROM work_items WHERE execution_id = ANY($1::uuid[]) AND state = 'ready'`, ids[2:]).Scan(&ready); err != nil || ready != 0 {
		t.Fatalf("ready items of waiting runs: got (%d, %v), want none (held until admitted)", ready, err)
	}
	first.pool.Close()

	second := newSchedInstance(t, dsn, "second", execution.Slots{})
	stop := sampleRunning(t, second.pool, "workflow_id = 'quick'")
	second.run(t)
	waitAllSucceeded(t, second.pool, len(ids))
	if peak := stop(); peak > 2 {
		t.Fatalf("%d runs of the workflow RUNNING at once, want at most its limit 2", peak)
	}
	checkStartOrder(t, second.pool)
}

// TestAdmissionCommandsOnWaitingRuns: RESUME refuses a waiting run; a run
// paused while it waited is not admitted, and Admission.Resume puts it back
// in the queue instead of starting it past the limit.
func TestAdmissionCommandsOnWaitingRuns(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	inst := newSchedInstance(t, dsn, "c", execution.Slots{})
	applyLimits(t, inst.pool, limitsDoc(`{"maxRunning":1}`, ""))
	run1 := inst.startRun(t, "hold", execution.PoolNormal).ExecutionID
	run2 := inst.startRun(t, "hold", execution.PoolNormal)
	if run2.Status != execution.Pending {
		t.Fatalf("second start over a session limit of 1: got %s, want PENDING", run2.Status)
	}
	ctl := func(id, action string) error {
		_, err := inst.control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "limits", ExecutionID: id,
			Scope: execution.ScopeExecution, Action: action, Actor: "test", Channel: "rest"})
		return err
	}
	if err := ctl(run2.ExecutionID, "RESUME"); err == nil {
		t.Fatal("RESUME of a waiting run: got nil, want a refusal")
	}
	if err := ctl(run2.ExecutionID, "PAUSE"); err != nil {
		t.Fatal(err)
	}
	inst.stopRun(t, run1)
	if n, err := inst.admission.Pass(t.Context()); err != nil || n != 0 {
		t.Fatalf("Pass with only a paused waiting run: got (%d, %v), want none admitted", n, err)
	}
	// The RESUME a control command would do, through the scheduler.
	err := inst.tx.WithinTx(t.Context(), func(ctx context.Context, st executionapp.Stores) error {
		ex, err := st.Executions.LockOne(ctx, "limits", run2.ExecutionID)
		if err != nil {
			return err
		}
		requeued, err := inst.admission.Resume(ctx, st, ex)
		if err != nil || !requeued {
			return fmt.Errorf("Resume: got (%v, %v), want requeued", requeued, err)
		}
		return st.Executions.Save(ctx, []*execution.Execution{ex})
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, inst.pool, []string{run2.ExecutionID}, "PENDING")
	if n, err := inst.admission.Pass(t.Context()); err != nil || n != 1 {
		t.Fatalf("Pass: got (%d, %v), want the requeued run admitted", n, err)
	}
	wantStatuses(t, inst.pool, []string{run2.ExecutionID}, "RUNNING")
	// Paused after it started, it holds its slot: Resume leaves it to RESUME.
	if err := ctl(run2.ExecutionID, "PAUSE"); err != nil {
		t.Fatal(err)
	}
	err = inst.tx.WithinTx(t.Context(), func(ctx context.Context, st executionapp.Stores) error {
		ex, err := st.Executions.LockOne(ctx, "limits", run2.ExecutionID)
		if err != nil {
			return err
		}
		if requeued, err := inst.admission.Resume(ctx, st, ex); err != nil || requeued {
			return fmt.Errorf("Resume of an admitted run: got (%v, %v), want not requeued", requeued, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := inst.status.Handle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Running.Total() != 1 || len(st.Scopes) != 1 || st.Scopes[0] != (executionapp.ScopeStatus{SessionID: "limits", MaxRunning: 1, Running: 1}) {
		t.Fatalf("status: got %+v, want the paused run holding the session's one slot", st)
	}
}
