package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// metricsSession has a workflow that succeeds, one that fails and one that
// naps, limited to one run at a time so the others wait PENDING.
const metricsSession = `{"name":"m","workflows":[
 {"workflowId":"ok","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"out","type":"RESULT"}],
  "edges":[{"source":"in","target":"out"}]},
 {"workflowId":"bad","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"boom","type":"FAIL","config":{"message":"no"}}],
  "edges":[{"source":"in","target":"boom"}]},
 {"workflowId":"nap","limits":{"maxRunning":1},"nodes":[{"nodeId":"in","type":"MANUAL"},
  {"nodeId":"nap","type":"DELAY","config":{"duration":"120s"}},{"nodeId":"out","type":"RESULT"}],
  "edges":[{"source":"in","target":"nap"},{"source":"nap","target":"out"}]}]}`

// scrapeMetrics reads /metrics as Prometheus does.
func scrapeMetrics(t *testing.T, s *server) string {
	t.Helper()
	st, b, _ := call(t, s, "GET", "/metrics", "", nil)
	if st != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", st, b)
	}
	return string(b)
}

// metricValue is the value of one series (labels sorted by name, as the
// text format writes them), or -1 when it is not exported.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

func wantMetric(t *testing.T, body, series string, want float64) {
	t.Helper()
	if got := metricValue(t, body, series); math.Abs(got-want) > 1e-9 {
		name, _, _ := strings.Cut(series, "{")
		t.Errorf("%s = %v, want %v (-1: not exported); exported:\n%s", series, got, want, grepLines(body, name))
	}
}

// TestRunMetrics runs executions with known outcomes through the real
// engine and checks the run metrics from the /metrics text: 4 runs of ok
// succeed (one a RESTART; an idempotent replay is no new run), 2 of bad
// fail, 3 of nap are STOPPED (one by a STOP KILL while it runs, two by stop-all
// while one waits PENDING behind the workflow's limit). The counters match
// the database, each ended series has as many durations, and the live
// gauges show the queue while it is there and nothing after.
func TestRunMetrics(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if st, b, _ := call(t, s, "PUT", "/api/sessions/m", "", []byte(metricsSession)); st != http.StatusCreated {
		t.Fatalf("apply: %d %s", st, b)
	}
	start := func(wf string, header ...string) string {
		t.Helper()
		st, b, _ := call(t, s, "POST", "/api/sessions/m/workflows/"+wf+"/executions", "", []byte(`{"payload":{}}`), header...)
		var out struct{ ExecutionId string }
		if (st != http.StatusCreated && st != http.StatusOK) || json.Unmarshal(b, &out) != nil {
			t.Fatalf("start %s: %d %s", wf, st, b)
		}
		return out.ExecutionId
	}
	status := func(id string) string {
		var st string
		if err := conn.QueryRow(ctx, `SELECT status FROM executions WHERE execution_id = $1`, id).Scan(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	var oks []string
	for range 2 {
		oks = append(oks, start("ok"))
	}
	keyed := start("ok", "Idempotency-Key", "k-1")
	if again := start("ok", "Idempotency-Key", "k-1"); again != keyed {
		t.Fatalf("the idempotent replay started %s, want %s back", again, keyed)
	}
	oks = append(oks, keyed)
	for range 2 {
		start("bad")
	}
	naps := []string{start("nap"), start("nap"), start("nap")}
	waitFor("the first nap to run", func() bool { return status(naps[0]) == "RUNNING" })

	// The queue: one nap runs, two wait.
	body := scrapeMetrics(t, s)
	wantMetric(t, body, `yukta_executions{status="PENDING"}`, 2)
	if v := metricValue(t, body, `yukta_executions{status="RUNNING"}`); v < 1 {
		t.Errorf(`yukta_executions{status="RUNNING"} = %v, want the running nap at least`, v)
	}
	if v := metricValue(t, body, `yukta_scheduler_oldest_waiting_seconds`); v <= 0 {
		t.Errorf("yukta_scheduler_oldest_waiting_seconds = %v, want the wait of the oldest PENDING nap", v)
	}

	// A STOP (KILL) ends the running nap; the scheduler admits the next;
	// stop-all ends it and the one still waiting.
	if st, b, _ := call(t, s, "POST", "/api/sessions/m/executions/"+naps[0]+"/control", "", []byte(`{"action":"STOP","mode":"KILL"}`)); st != http.StatusOK {
		t.Fatalf("STOP: %d %s", st, b)
	}
	waitFor("the second nap to run", func() bool { return status(naps[1]) == "RUNNING" })
	if st, b, _ := call(t, s, "POST", "/api/sessions/m/workflows/nap/stop", "", []byte(`{"mode":"CANCEL"}`)); st != http.StatusOK {
		t.Fatalf("stop-all: %d %s", st, b)
	}
	waitFor("the first ok run to succeed", func() bool { return status(oks[0]) == "SUCCESS" })
	if st, b, _ := call(t, s, "POST", "/api/sessions/m/executions/"+oks[0]+"/control", "", []byte(`{"action":"RESTART"}`)); st != http.StatusOK {
		t.Fatalf("RESTART: %d %s", st, b)
	}
	waitFor("every run to end", func() bool {
		var live int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions WHERE status IN ('PENDING', 'RUNNING', 'PAUSED')`).Scan(&live); err != nil {
			t.Fatal(err)
		}
		return live == 0
	})

	// The database's own count of every (workflow, status) is what the
	// counters say, and what the test meant.
	rows, err := conn.Query(ctx, `SELECT workflow_id, status, count(*) FROM executions GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for rows.Next() {
		var wf, st string
		var n int
		if err := rows.Scan(&wf, &st, &n); err != nil {
			t.Fatal(err)
		}
		stored[wf+"/"+st] = n
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if want := map[string]int{"ok/SUCCESS": 4, "bad/FAILURE": 2, "nap/STOPPED": 3}; fmt.Sprint(stored) != fmt.Sprint(want) {
		t.Fatalf("stored runs %v, want %v", stored, want)
	}
	body = scrapeMetrics(t, s)
	for _, c := range []struct {
		wf, status string
		n          float64
	}{{"ok", "SUCCESS", 4}, {"bad", "FAILURE", 2}, {"nap", "STOPPED", 3}} {
		wantMetric(t, body, fmt.Sprintf(`yukta_executions_started_total{session="m",workflow=%q}`, c.wf), c.n)
		wantMetric(t, body, fmt.Sprintf(`yukta_executions_ended_total{session="m",status=%q,workflow=%q}`, c.status, c.wf), c.n)
		wantMetric(t, body, fmt.Sprintf(`yukta_execution_duration_seconds_count{session="m",status=%q,workflow=%q}`, c.status, c.wf), c.n)
		wantMetric(t, body, fmt.Sprintf(`yukta_execution_duration_seconds_bucket{session="m",status=%q,workflow=%q,le="+Inf"}`, c.status, c.wf), c.n)
	}
	// No run ended with a status it did not have.
	if n := strings.Count(body, "\nyukta_executions_ended_total{"); n != 3 {
		t.Errorf("%d ended series, want 3:\n%s", n, grepLines(body, "yukta_executions_ended_total"))
	}
	// The naps ran (or waited) until they were stopped: none took under
	// 10 ms, and together they took as long as the database says.
	wantMetric(t, body, `yukta_execution_duration_seconds_bucket{session="m",status="STOPPED",workflow="nap",le="0.01"}`, 0)
	var took float64
	if err := conn.QueryRow(ctx, `SELECT sum(extract(epoch FROM ended_at - started_at)) FROM executions WHERE workflow_id = 'nap'`).Scan(&took); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, body, `yukta_execution_duration_seconds_sum{session="m",status="STOPPED",workflow="nap"}`); math.Abs(got-took) > 0.01 {
		t.Errorf("nap durations sum to %v s, the database says %v s", got, took)
	}
	for _, st := range []string{"PENDING", "RUNNING", "PAUSED"} {
		wantMetric(t, body, `yukta_executions{status="`+st+`"}`, 0)
	}
	wantMetric(t, body, `yukta_scheduler_oldest_waiting_seconds`, 0)
}
