package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// limitedSession is a workflow limited to 5 runs at once, each waiting
// 100 ms on a timer so that runs overlap.
const limitedSession = `{"name":"limited","workflows":[{"workflowId":"w","limits":{"maxRunning":5},"nodes":[
 {"nodeId":"start","type":"MANUAL"},
 {"nodeId":"wait","type":"DELAY","config":{"duration":"100ms"}},
 {"nodeId":"result","type":"RESULT"}],
 "edges":[{"source":"start","target":"wait"},{"source":"wait","target":"result"}]}]}`

// TestSchedulerLimitPerWorkflow starts 50 runs of a workflow limited to 5
// running at once: sampled every 10 ms straight from the database, never
// more than 5 are RUNNING; all 50 finish; and they become RUNNING in the
// order they were started. GET /api/scheduler and /metrics show the queue
// while it is there, and the server-wide settings.
func TestSchedulerLimitPerWorkflow(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_MAX_RUNNING=200", "YUKTA_RESERVED_SUPERVISOR_SLOTS=3"}})
	ctx := context.Background()
	res, err := s.Client.PutSessionWithBodyWithResponse(ctx, "limited", nil, jsonType, strings.NewReader(limitedSession))
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v %s", err, res.Body)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sampler, err := pgx.Connect(ctx, dsn) // a connection runs one query at a time
	if err != nil {
		t.Fatal(err)
	}
	defer sampler.Close(ctx)

	var peak atomic.Int64
	var samples atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			var n int64
			if err := sampler.QueryRow(ctx, `SELECT count(*) FROM executions WHERE workflow_id = 'w' AND status = 'RUNNING'`).Scan(&n); err != nil {
				t.Errorf("sample: %v", err)
				return
			}
			samples.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	stopSampling := func() { close(done); wg.Wait() }

	const n = 50
	ids := make([]string, n)
	pending := 0
	for i := range n {
		r, err := s.Client.StartExecutionWithResponse(ctx, "limited", "w", nil, apiclient.StartExecutionJSONRequestBody{Payload: map[string]any{"i": i}})
		if err != nil || r.JSON201 == nil {
			stopSampling()
			t.Fatalf("start %d: %v %s", i, err, r.Body)
		}
		ids[i] = r.JSON201.ExecutionId
		if r.JSON201.Status == apiclient.ExecutionStatusPENDING {
			pending++
		}
	}
	if pending == 0 {
		t.Errorf("no start answered PENDING, want the starts over the limit to wait")
	}

	// The queue as the status and the metrics show it, while it lasts.
	sr, err := s.Client.GetSchedulerStatusWithResponse(ctx)
	if err != nil || sr.JSON200 == nil {
		stopSampling()
		t.Fatalf("GET /api/scheduler: %v %s", err, sr.Body)
	}
	st := sr.JSON200
	if st.MaxRunning != 200 || st.ReservedSupervisorSlots != 3 {
		t.Errorf("scheduler settings: got maxRunning %d, reserved %d, want 200 and 3 (from the environment)", st.MaxRunning, st.ReservedSupervisorSlots)
	}
	var wf *apiclient.SchedulerScope
	for i, sc := range st.Scopes {
		if sc.SessionId == "limited" && deref(sc.WorkflowId) == "w" {
			wf = &st.Scopes[i]
		}
	}
	if wf == nil || wf.MaxRunning != 5 || wf.Running > 5 || wf.Waiting == 0 || st.Waiting.Total != wf.Waiting || st.Running.Total > 5 {
		t.Errorf("GET /api/scheduler: got %+v (workflow %+v), want workflow w with maxRunning 5, at most 5 running and runs waiting", st, wf)
	}
	mr, body := s.do(t, http.MethodGet, "/metrics", "", nil)
	if mr.StatusCode != http.StatusOK || !strings.Contains(string(body), `yukta_scheduler_limit{pool="normal"} 200`) ||
		!strings.Contains(string(body), `yukta_scheduler_waiting{pool="normal"}`) {
		t.Errorf("/metrics: got %d without the scheduler gauges:\n%s", mr.StatusCode, grepLines(string(body), "yukta_scheduler"))
	}

	deadline := time.Now().Add(90 * time.Second)
	for {
		var succeeded, failed int
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'SUCCESS'), count(*) FILTER (WHERE status IN ('FAILURE', 'STOPPED'))
			FROM executions WHERE workflow_id = 'w'`).Scan(&succeeded, &failed); err != nil {
			stopSampling()
			t.Fatal(err)
		}
		if failed > 0 {
			stopSampling()
			t.Fatalf("%d runs failed or stopped", failed)
		}
		if succeeded == n {
			break
		}
		if time.Now().After(deadline) {
			stopSampling()
			t.Fatalf("%d of %d runs succeeded within 90 s", succeeded, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopSampling()
	if p := peak.Load(); p > 5 || p < 2 {
		t.Errorf("at most %d runs RUNNING at once over %d samples, want between 2 and the limit 5", p, samples.Load())
	}

	// Start order: the n-th start became RUNNING no earlier than the one
	// before it (admitted_at is stamped by the statement that made a run
	// RUNNING; admissions are serialized, so the stamps follow them).
	var last time.Time
	for i, id := range ids {
		var at time.Time
		if err := conn.QueryRow(ctx, `SELECT admitted_at FROM executions WHERE execution_id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if at.Before(last) {
			t.Errorf("start %d became RUNNING at %s, before start %d at %s", i, at.Format(time.RFC3339Nano), i-1, last.Format(time.RFC3339Nano))
		}
		last = at
	}
	// Every run that waited has the PENDING -> RUNNING change in its events.
	var promoted int
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT execution_id) FROM events WHERE workflow_id = 'w' AND type = 'ExecutionStatusChanged'
		AND data->>'from' = 'PENDING' AND data->>'to' = 'RUNNING'`).Scan(&promoted); err != nil {
		t.Fatal(err)
	}
	if promoted != pending {
		t.Errorf("runs with a PENDING -> RUNNING event: got %d, want the %d that started PENDING", promoted, pending)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return fmt.Sprint(out)
}
