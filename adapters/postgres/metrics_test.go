package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
)

// TestQueueDepthCountsLiveItems seeds work items in every state and checks
// the depth query counts each live state exactly and ignores finished rows.
func TestQueueDepthCountsLiveItems(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	q, err := postgres.NewQueue(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)

	d, err := q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, postgres.QueueDepth{}) {
		t.Fatalf("empty queue: depth = %+v, want zeros", d)
	}

	execID := startExecution(t, pool) // its trigger item is ready and due: 1
	seed := func(n int, state, availableAt, leaseUntil string) {
		t.Helper()
		owner := "NULL"
		if leaseUntil != "NULL" {
			owner = "'other-instance'"
		}
		_, err := pool.Exec(ctx, fmt.Sprintf(`
			INSERT INTO work_items (execution_id, node_id, state, available_at, lease_owner, lease_token, lease_until, created_at)
			SELECT $1, 'call', $2, %s, %s, CASE WHEN %s IS NULL THEN NULL ELSE nextval('lease_tokens') END, %s, now()
			  FROM generate_series(1, $3)`, availableAt, owner, owner, leaseUntil), execID, state, n)
		if err != nil {
			t.Fatal(err)
		}
	}
	seed(2, "ready", "now() - interval '1 minute'", "NULL")                     // ready: 1 + 2
	seed(3, "ready", "now() + interval '1 hour'", "NULL")                       // delayed (retry backoff, timer)
	seed(4, "held", "now()", "NULL")                                            // held behind a gate
	seed(1, "parked", "now()", "NULL")                                          // waiting for an input
	seed(2, "ready", "now() - interval '1 second'", "now() + interval '1 min'") // claimed, lease live
	seed(1, "ready", "now() - interval '1 minute'", "now() - interval '1 sec'") // claimed, lease expired, not reaped yet
	seed(5, "done", "now()", "NULL")
	seed(2, "dropped", "now()", "NULL")

	d, err = q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wantD := (postgres.QueueDepth{Ready: 3, Delayed: 3, Held: 4, Running: 3, Parked: 1}); !reflect.DeepEqual(d, wantD) {
		t.Fatalf("depth = %+v, want %+v", d, wantD)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := q.Depth(cancelled); err == nil {
		t.Fatal("depth with a cancelled context: no error")
	}
}

// TestQueueDepthReadsOnlyTheLiveIndex: under the queue pool's planner
// settings the depth query walks the work_items_live partial index, so the
// done rows that pile up forever are never scanned.
func TestQueueDepthReadsOnlyTheLiveIndex(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, p := range []string{"enable_bitmapscan", "enable_seqscan", "enable_sort", "enable_mergejoin", "enable_hashjoin"} {
		if _, err := conn.Exec(ctx, "SET "+p+" = off"); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, `EXPLAIN SELECT count(*) FILTER (WHERE state = 'ready' AND lease_owner IS NULL AND available_at <= now()),
		count(*) FILTER (WHERE state = 'parked') FROM work_items WHERE state IN ('ready', 'held', 'parked')`)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if p := plan.String(); !strings.Contains(p, "work_items_live") || strings.Contains(p, "Seq Scan") {
		t.Fatalf("depth plan does not walk work_items_live:\n%s", p)
	}
}

func startExecution(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	cat := registry(t)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), cat, time.Now)
	if _, err := apply.Handle(t.Context(), sessionapp.ApplyInput{ID: "depth", Document: doc("depth", "w")}); err != nil {
		t.Fatal(err)
	}
	start := executionapp.NewStartExecution(postgres.NewExecutionTransactor(pool), rawWorkflows{postgres.NewSessionStore(pool)}, cat, nil, nil, time.Now)
	res, err := start.Handle(t.Context(), executionapp.StartInput{SessionID: "depth", WorkflowID: "w",
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	return res.ExecutionID
}

// TestEngineMovesTheMetrics runs two small executions through a real engine
// and checks the claim, commit and outcome counters by scraping them: one
// run of three nodes that succeeds, and one whose FAIL node is retried once
// and then fails the run.
func TestEngineMovesTheMetrics(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	cat := registry(t)
	ctx := t.Context()
	session := []byte(`{"sessionId":"m","name":"metrics","workflows":[
		{"workflowId":"ok","nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"say","type":"LOG","config":{"message":"hello"}},
			{"nodeId":"out","type":"RESULT"}],
		 "edges":[{"source":"start","target":"say"},{"source":"say","target":"out"}]},
		{"workflowId":"bad","nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"boom","type":"FAIL","config":{"retry":{"maxAttempts":2,"backoff":"10ms"}}},
			{"nodeId":"out","type":"RESULT"}],
		 "edges":[{"source":"start","target":"boom"},{"source":"boom","target":"out"}]}]}`)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), cat, time.Now)
	if _, err := apply.Handle(ctx, sessionapp.ApplyInput{ID: "m", Document: session}); err != nil {
		t.Fatal(err)
	}
	q, err := postgres.NewQueue(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	m := metrics.New(metrics.Options{QueueDepthFunc: func(ctx context.Context) (metrics.QueueDepth, error) {
		d, err := q.Depth(ctx)
		return metrics.QueueDepth{Ready: d.Ready, Delayed: d.Delayed, Held: d.Held, Running: d.Running, Parked: d.Parked}, err
	}})
	runners, err := plugins.NewRunners(plugins.RunnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tx := postgres.NewExecutionTransactor(pool)
	engine := executionapp.NewEngine(executionapp.EngineDeps{
		Tx: tx, Queue: q, Runners: runners, Signals: quietSignals{}, Catalog: cat, Owner: "metrics-test", Now: time.Now,
		OnError: func(op string, err error) { t.Errorf("engine %s: %v", op, err) },
		Metrics: m,
	}, executionapp.EngineConfig{Concurrency: 4, Poll: 20 * time.Millisecond})
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = engine.Run(runCtx) }()
	defer func() { stop(); <-stopped }()

	start := executionapp.NewStartExecution(tx, rawWorkflows{postgres.NewSessionStore(pool)}, cat, engine, nil, time.Now)
	var ids []string
	for _, wf := range []string{"ok", "bad"} {
		res, err := start.Handle(ctx, executionapp.StartInput{SessionID: "m", WorkflowID: wf, Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ExecutionID)
	}
	if got := waitEnded(t, pool, ids); got[ids[0]] != "SUCCESS" || got[ids[1]] != "FAILURE" {
		t.Fatalf("statuses = %v, want ok SUCCESS and bad FAILURE", got)
	}
	stop()
	<-stopped

	body := scrapeBody(t, m)
	st := engine.Stats()
	// ok: start, say, out. bad: start, boom (attempt 1), boom (attempt 2).
	metricEquals(t, body, "yukta_engine_claimed_total", 6)
	metricEquals(t, body, "yukta_engine_committed_results_total", 6)
	metricEquals(t, body, `yukta_node_results_total{outcome="succeeded"}`, 4)
	metricEquals(t, body, `yukta_node_results_total{outcome="retried"}`, 1)
	metricEquals(t, body, `yukta_node_results_total{outcome="failed"}`, 1)
	metricEquals(t, body, `yukta_node_results_total{outcome="lost"}`, 0)
	// Commits batch whatever arrived together, so their number depends on
	// timing: at least one per step of the longer chain, at most one per item.
	commits := metricValue(t, body, "yukta_engine_commits_total")
	if commits < 3 || commits > 6 || commits != float64(st.Commits) {
		t.Fatalf("commits = %v (engine stats %d), want 3…6 and equal to the stats", commits, st.Commits)
	}
	metricEquals(t, body, "yukta_engine_commit_duration_seconds_count", commits)
	if st.Claimed != 6 || st.Committed != 6 {
		t.Fatalf("engine stats = %+v, disagree with the metrics", st)
	}
	// Both runs ended, so nothing is left in the queue.
	for _, g := range []string{"yukta_queue_ready", "yukta_queue_delayed", "yukta_queue_held", "yukta_queue_running", "yukta_queue_parked"} {
		metricEquals(t, body, g, 0)
	}
}

type quietSignals struct{}

func (quietSignals) Wakeups() <-chan struct{}                  { return nil }
func (quietSignals) Cancels() <-chan executionapp.CancelSignal { return nil }

func waitEnded(t *testing.T, pool *pgxpool.Pool, ids []string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]string{}
		rows, err := pool.Query(t.Context(), `SELECT execution_id::text, status FROM executions WHERE execution_id = ANY($1::uuid[])`, ids)
		if err != nil {
			t.Fatal(err)
		}
		ended := 0
		for rows.Next() {
			var id, status string
			if err := rows.Scan(&id, &status); err != nil {
				t.Fatal(err)
			}
			got[id] = status
			if status == "SUCCESS" || status == "FAILURE" || status == "STOPPED" {
				ended++
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if ended == len(ids) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("executions did not end within 20 s: %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func scrapeBody(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("%s is not in the scrape", series)
	return 0
}

func metricEquals(t *testing.T, body, series string, want float64) {
	t.Helper()
	if got := metricValue(t, body, series); got != want {
		t.Fatalf("%s = %v, want %v", series, got, want)
	}
}
