package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/worker"
)

// runWorker runs w until the returned stop is called; stop waits for Run
// and returns its error.
func runWorker(t *testing.T, w *worker.Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("Run did not return within 30 s of its stop")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

type libIn struct {
	N    int    `json:"n"`
	Mode string `json:"mode"`
}

type libOut struct {
	N       int `json:"n"`
	Attempt int `json:"attempt"`
}

// TestGoWorkerLibrary drives the Go worker package against the real
// server: a typed handler's output goes on, with its port, usage and cost
// and log lines; the concurrency limit holds; an error is retried, and a
// Permanent one fails the node at once; a heartbeat that says cancelled
// cancels the handler's context; a stop lets a running handler finish and
// answer within the grace, and cancels one that outlasts it.
func TestGoWorkerLibrary(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_API_KEYS=" + writeKeyFile(t)}})
	e := &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}
	task := `{"queue":"lib","heartbeatTimeout":"1s","timeout":"60s","ports":["odd"],"retry":{"maxAttempts":2,"backoff":"0s"}}`
	e.apply("lib",
		wf("one", []string{nd("start", "MANUAL", ""), nd("work", "TASK", task), nd("out", "RESULT", ""), nd("odd", "RESULT", "")},
			[]string{ed("start", "work", ""), ed("work", "out", ""), ed("work", "odd", "odd")}),
		line("many", nd("start", "MANUAL", ""), nd("split", "SPLIT", `{"field":"items"}`), nd("work", "TASK", task), nd("sink", "LOG", `{"message":"done"}`)))

	var inFlight, peak, brokenCalls atomic.Int32
	cancelled := make(chan error, 1)
	release := make(chan struct{})
	handler := func(ctx context.Context, tk *worker.Task, in libIn) (libOut, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		switch in.Mode {
		case "slow":
			time.Sleep(150 * time.Millisecond)
		case "flaky":
			if tk.Attempt == 1 {
				return libOut{}, errors.New("flaky on the first attempt")
			}
		case "broken":
			brokenCalls.Add(1)
			return libOut{}, worker.Permanent(errors.New("broken for good"))
		case "spend":
			tk.SetUsage(worker.Usage{Input: 120, Output: 30, TokensKnown: true})
			tk.SetCost(worker.Cost{USD: 0.25, USDKnown: true, Provenance: worker.Estimated})
			if err := tk.Log(ctx, "warn", "spent on "+tk.IdempotencyKey); err != nil {
				return libOut{}, err
			}
		case "odd":
			tk.SetPort("odd")
		case "wait-cancel":
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return libOut{}, ctx.Err()
		case "hold":
			<-release
		case "ignore-stop":
			<-ctx.Done()
			return libOut{}, ctx.Err()
		}
		return libOut{N: in.N, Attempt: tk.Attempt}, nil
	}
	started := func() {
		t.Helper()
		for deadline := time.Now().Add(waitLimit); inFlight.Load() != 1; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the handler did not start")
			}
		}
	}
	newWorker := func(cfg worker.Config) *worker.Worker {
		cfg.URL, cfg.Token, cfg.Name, cfg.Logf = s.URL, testKeys["worker"], "lib", t.Logf
		w, err := worker.New(cfg, worker.Handle("lib", handler))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	stop := runWorker(t, newWorker(worker.Config{Concurrency: 3, PollWait: 2 * time.Second}))
	// The concurrency limit: 12 slow tasks, at most 3 at once.
	items := make([]any, 12)
	for i := range items {
		items[i] = map[string]any{"n": i, "mode": "slow"}
	}
	eid := e.start("lib", "many", map[string]any{"items": items})
	e.waitStatus("lib", eid, apiclient.ExecutionStatusSUCCESS)
	if p := peak.Load(); p != 3 {
		t.Errorf("at most %d tasks ran at once with Concurrency 3, want 3", p)
	}
	// Output, port, usage, cost, a log line.
	x := e.waitStatus("lib", e.start("lib", "one", map[string]any{"n": 7, "mode": "spend"}), apiclient.ExecutionStatusSUCCESS)
	if r, _ := x.Result.(map[string]any); r["n"] != float64(7) || r["attempt"] != float64(1) {
		t.Errorf("result: %#v", x.Result)
	}
	db, err := pgxpool.New(e.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var data []byte
	if err := db.QueryRow(e.ctx, `SELECT data FROM events WHERE type = 'TaskCompleted' AND execution_id = $1::uuid`, x.ExecutionId).Scan(&data); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Usage map[string]any `json:"usage"`
		Cost  map[string]any `json:"cost"`
	}
	_ = json.Unmarshal(data, &ev)
	if ev.Usage["input"] != float64(120) || ev.Usage["tokensKnown"] != true || ev.Cost["usd"] != 0.25 || ev.Cost["provenance"] != "estimated" {
		t.Errorf("TaskCompleted data: %s", data)
	}
	var logged int
	if err := db.QueryRow(e.ctx, `SELECT count(*) FROM execution_logs WHERE execution_id = $1::uuid AND node_id = 'work' AND message LIKE 'spent on %'`, x.ExecutionId).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if logged != 1 {
		t.Errorf("%d log lines from the handler, want 1", logged)
	}
	x = e.waitStatus("lib", e.start("lib", "one", map[string]any{"n": 3, "mode": "odd"}), apiclient.ExecutionStatusSUCCESS)
	if c := counts(x); c["odd"][0] != 1 || c["out"][0] != 0 {
		t.Errorf("SetPort(odd): counts %v", c)
	}
	// A plain error is retried; a Permanent one fails the node at once.
	x = e.waitStatus("lib", e.start("lib", "one", map[string]any{"n": 1, "mode": "flaky"}), apiclient.ExecutionStatusSUCCESS)
	if r, _ := x.Result.(map[string]any); r["attempt"] != float64(2) {
		t.Errorf("flaky: result %#v, want attempt 2", x.Result)
	}
	x = e.waitStatus("lib", e.start("lib", "one", map[string]any{"n": 1, "mode": "broken"}), apiclient.ExecutionStatusFAILURE)
	if n := nodeOf(t, x, "work"); !strings.Contains(deref(n.Error), "broken for good") || brokenCalls.Load() != 1 {
		t.Errorf("Permanent: node %+v, want failed after 1 attempt (%d) with the handler's error", n, brokenCalls.Load())
	}
	// A payload that does not decode as In fails permanently.
	x = e.waitStatus("lib", e.start("lib", "one", map[string]any{"n": "seven"}), apiclient.ExecutionStatusFAILURE)
	if n := nodeOf(t, x, "work"); !strings.Contains(deref(n.Error), "does not decode") {
		t.Errorf("a payload of the wrong shape: node error %q", deref(n.Error))
	}
	// A heartbeat that says cancelled cancels the handler's context.
	eid = e.start("lib", "one", map[string]any{"mode": "wait-cancel"})
	started()
	e.mustCtl("lib", eid, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: ptr(apiclient.ExecutionCommandModeCANCEL)})
	select {
	case cause := <-cancelled:
		if cause == nil || !strings.Contains(cause.Error(), "cancelled") {
			t.Errorf("the handler's context ended with %v, want the server's cancellation", cause)
		}
	case <-time.After(waitLimit):
		t.Fatalf("the handler's context was not cancelled within %s of STOP CANCEL", waitLimit)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// A stop lets a running handler finish and answer within the grace.
	stop = runWorker(t, newWorker(worker.Config{Concurrency: 1, Grace: time.Minute}))
	eid = e.start("lib", "one", map[string]any{"n": 5, "mode": "hold"})
	started()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) while its handler was running, within its grace", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	// Answered before Run returned: its TaskCompleted is committed.
	var answered int
	if err := db.QueryRow(e.ctx, `SELECT count(*) FROM events WHERE type = 'TaskCompleted' AND execution_id = $1::uuid`, eid).Scan(&answered); err != nil {
		t.Fatal(err)
	}
	if answered != 1 {
		t.Fatalf("Run returned with the task it finished within the grace unanswered (%d TaskCompleted)", answered)
	}
	e.waitStatus("lib", eid, apiclient.ExecutionStatusSUCCESS)
	// A handler that outlasts the grace is cancelled, and Run returns.
	stop = runWorker(t, newWorker(worker.Config{Concurrency: 1, Grace: 200 * time.Millisecond}))
	e.start("lib", "one", map[string]any{"mode": "ignore-stop"})
	started()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := inFlight.Load(); n != 0 {
		t.Fatalf("Run returned with %d handlers still running", n)
	}
}
