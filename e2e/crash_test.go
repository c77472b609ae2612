package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// dagSession is a 10-node DAG with DELAY and TRANSFORM nodes and a fan-out
// that joins again, so h and result each receive two messages per run. Both
// paths compute the same value, so the result is deterministic.
const dagSession = `{"name":"crash","workflows":[{"workflowId":"dag","nodes":[
 {"nodeId":"start","type":"MANUAL"},
 {"nodeId":"a","type":"TRANSFORM","config":{"expression":"{\"n\": payload.n + 1}"}},
 {"nodeId":"b","type":"DELAY","config":{"duration":"%s"}},
 {"nodeId":"c","type":"TRANSFORM","config":{"expression":"{\"n\": payload.n * 3}"}},
 {"nodeId":"d","type":"TRANSFORM","config":{"expression":"{\"n\": payload.n + 10}"}},
 {"nodeId":"e","type":"TRANSFORM","config":{"expression":"{\"n\": payload.n + 10}"}},
 {"nodeId":"f","type":"DELAY","config":{"duration":"%s"}},
 {"nodeId":"g","type":"TRANSFORM","config":{"expression":"payload"}},
 {"nodeId":"h","type":"TRANSFORM","config":{"expression":"{\"n\": payload.n * 2}"}},
 {"nodeId":"result","type":"RESULT"}],
 "edges":[{"source":"start","target":"a"},{"source":"a","target":"b"},{"source":"b","target":"c"},
 {"source":"c","target":"d"},{"source":"c","target":"e"},{"source":"d","target":"f"},{"source":"e","target":"g"},
 {"source":"f","target":"h"},{"source":"g","target":"h"},{"source":"h","target":"result"}]}]}`

var dagReceived = map[string]int64{"start": 1, "a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 2, "result": 2}

func dagResult(n int) float64 { return ((float64(n)+1)*3 + 10) * 2 }

func applyDAG(t *testing.T, s *server, delay1, delay2 string) {
	t.Helper()
	doc := fmt.Sprintf(dagSession, delay1, delay2)
	res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), "crash", nil, jsonType, bytes.NewReader([]byte(doc)))
	if err != nil || res.StatusCode() != http.StatusCreated && res.StatusCode() != http.StatusOK {
		t.Fatalf("apply: %v %s", err, res.Body)
	}
}

// startMany starts runs 0..n-1 with payload {"n": i} and an idempotency key
// per run, 8 at a time; it returns the execution id of each i.
func startMany(t *testing.T, s *server, n int) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			key := fmt.Sprintf("run-%d", i)
			res, err := s.Client.StartExecutionWithResponse(context.Background(), "crash", "dag",
				&apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartExecutionJSONRequestBody{Payload: map[string]any{"n": i}})
			if err != nil || res.JSON201 == nil {
				t.Errorf("start %d: %v %v", i, err, res)
				return
			}
			ids[i] = res.JSON201.ExecutionId
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// verifyRuns checks that every run succeeded, every node received exactly
// the messages it should (none lost, none doubled) and the result is right.
func verifyRuns(t *testing.T, s *server, ids []string) {
	t.Helper()
	for i, id := range ids {
		res, err := s.Client.GetExecutionWithResponse(context.Background(), "crash", id)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("run %d: %v", i, err)
		}
		ex := res.JSON200
		if ex.Status != apiclient.ExecutionStatusSUCCESS {
			t.Errorf("run %d (%s): status %s (%v), want SUCCESS", i, id, ex.Status, deref(ex.Error))
			continue
		}
		for _, n := range ex.Nodes {
			if n.Received != dagReceived[n.NodeId] || n.Status != apiclient.NodeStatusSUCCESS {
				t.Errorf("run %d node %s: received %d status %s, want %d SUCCESS", i, n.NodeId, n.Received, n.Status, dagReceived[n.NodeId])
			}
		}
		b, _ := json.Marshal(ex.Result)
		var r struct{ N float64 }
		if err := json.Unmarshal(b, &r); err != nil || math.Abs(r.N-dagResult(i)) > 1e-9 {
			t.Errorf("run %d: result %s, want n=%v", i, b, dagResult(i))
		}
	}
}

func waitAllEnded(t *testing.T, s *server, ids []string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, id := range ids {
		for {
			res, err := s.Client.GetExecutionWithResponse(context.Background(), "crash", id)
			if err == nil && res.JSON200 != nil && res.JSON200.EndedAt != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("execution %s did not end within %s", id, d)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestCrashLosesNothing kills the server with SIGKILL in the middle of 200
// runs, restarts it, and checks that every run finishes exactly as a
// crash-free run does.
func TestCrashLosesNothing(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	opts := serverOptions{DSN: dsn, Env: []string{"YUKTA_LEASE=2s"}}
	s := startServer(t, opts)
	applyDAG(t, s, "300ms", "200ms")
	ids := startMany(t, s, 200)

	// Kill once some runs are done and many are not.
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var done int
	deadline := time.Now().Add(30 * time.Second)
	for done < 5 {
		if time.Now().After(deadline) {
			t.Fatal("no run finished within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE status = 'SUCCESS'`).Scan(&done)
	}
	s.Kill()
	var live int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE status = 'RUNNING'`).Scan(&live)
	t.Logf("killed with %d runs done and %d running", done, live)
	if live == 0 {
		t.Fatal("every run had finished before the kill; the test proves nothing")
	}

	restarted := time.Now()
	s2 := startServer(t, opts)
	waitAllEnded(t, s2, ids, 60*time.Second)
	t.Logf("all 200 runs ended %s after the restart", time.Since(restarted).Round(time.Millisecond))
	verifyRuns(t, s2, ids)
	// Every journal verifies after the crash, with no gap and no torn record,
	// and its projection equals the live status (journal_test.go).
	if c := checkJournals(t, dsn, 30*time.Second); c.settled != len(ids) {
		t.Fatalf("%d settled journals, want %d", c.settled, len(ids))
	}
	assertEveryEventJournaledOnce(t, dsn)

	// Idempotent starts after the crash still map to the same runs.
	again := startManyExisting(t, s2, ids)
	if again != 0 {
		t.Fatalf("%d repeated starts created new runs", again)
	}
}

func startManyExisting(t *testing.T, s *server, ids []string) int {
	created := 0
	for i, id := range ids {
		key := fmt.Sprintf("run-%d", i)
		res, err := s.Client.StartExecutionWithResponse(context.Background(), "crash", "dag",
			&apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartExecutionJSONRequestBody{Payload: map[string]any{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		if res.JSON200 == nil || res.JSON200.ExecutionId != id {
			created++
		}
	}
	return created
}

// TestTwoInstancesShareWork runs two servers on one database: when one is
// busy the other takes work, and a PAUSE sent to one holds a run the other
// is executing.
func TestTwoInstancesShareWork(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer slow.Close()
	dsn := pgtest.NewDatabase(t)
	env := []string{"YUKTA_WORKERS=4", "YUKTA_EGRESS_ALLOWED_HOSTS=" + strings.TrimPrefix(slow.URL, "http://")}
	a := startServer(t, serverOptions{DSN: dsn, Env: env})
	b := startServer(t, serverOptions{DSN: dsn, Env: env})

	// 60 runs of a 100 ms call with 4 workers per instance: more than one
	// instance can do at once, so the other one's polls find work.
	doc := fmt.Sprintf(`{"name":"slow","workflows":[{"workflowId":"call","nodes":[
		{"nodeId":"start","type":"MANUAL"},
		{"nodeId":"get","type":"HTTP_REQUEST","config":{"url":%q}},
		{"nodeId":"out","type":"RESULT"}],
		"edges":[{"source":"start","target":"get"},{"source":"get","target":"out"}]}]}`, slow.URL)
	if res, err := a.Client.PutSessionWithBodyWithResponse(context.Background(), "slow", nil, jsonType, strings.NewReader(doc)); err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v", err)
	}
	var slowIDs []string
	for range 60 {
		res, err := a.Client.StartExecutionWithResponse(context.Background(), "slow", "call", nil, apiclient.StartExecutionJSONRequestBody{})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("start: %v", err)
		}
		slowIDs = append(slowIDs, res.JSON201.ExecutionId)
	}
	for _, id := range slowIDs {
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := b.Client.GetExecutionWithResponse(context.Background(), "slow", id)
			if err == nil && res.JSON200 != nil && res.JSON200.Status == apiclient.ExecutionStatusSUCCESS {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not succeed", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT done_by, count(*) FROM work_items WHERE state = 'done' AND node_id = 'get' GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for rows.Next() {
		var owner string
		var n int
		if err := rows.Scan(&owner, &n); err != nil {
			t.Fatal(err)
		}
		per[owner] = n
	}
	if len(per) != 2 {
		t.Fatalf("work done by %v, want both instances", per)
	}
	t.Logf("items per instance: %v", per)

	// A long run, paused through b while a (or b) executes it.
	applyDAG(t, a, "1s", "1s")
	key := "paused-run"
	st, err := a.Client.StartExecutionWithResponse(context.Background(), "crash", "dag",
		&apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartExecutionJSONRequestBody{Payload: map[string]any{"n": 0}})
	if err != nil || st.JSON201 == nil {
		t.Fatal(err)
	}
	id := st.JSON201.ExecutionId
	time.Sleep(200 * time.Millisecond)
	pr, err := b.Client.ControlExecutionWithResponse(context.Background(), "crash", id, nil, apiclient.ControlExecutionJSONRequestBody{Action: apiclient.ExecutionCommandActionPAUSE})
	if err != nil || pr.JSON200 == nil {
		t.Fatalf("pause: %v %s", err, pr.Body)
	}
	before := receivedTotal(t, a, id)
	time.Sleep(2500 * time.Millisecond) // both delays would have passed
	ex, _ := a.Client.GetExecutionWithResponse(context.Background(), "crash", id)
	if ex.JSON200.Status != apiclient.ExecutionStatusPAUSED {
		t.Fatalf("status %s, want PAUSED", ex.JSON200.Status)
	}
	if after := receivedTotal(t, a, id); after > before+1 { // at most the one in-flight message lands
		t.Fatalf("paused run progressed: received %d -> %d", before, after)
	}
	rr, err := a.Client.ControlExecutionWithResponse(context.Background(), "crash", id, nil, apiclient.ControlExecutionJSONRequestBody{Action: apiclient.ExecutionCommandActionRESUME})
	if err != nil || rr.JSON200 == nil {
		t.Fatalf("resume: %v", err)
	}
	waitAllEnded(t, b, []string{id}, 20*time.Second)
	verifyRuns(t, b, []string{id})
}

func receivedTotal(t *testing.T, s *server, id string) int64 {
	t.Helper()
	res, err := s.Client.GetExecutionWithResponse(context.Background(), "crash", id)
	if err != nil || res.JSON200 == nil {
		t.Fatal(err)
	}
	var n int64
	for _, node := range res.JSON200.Nodes {
		n += node.Received
	}
	return n
}
