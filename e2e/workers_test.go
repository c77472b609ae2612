package e2e

// The worker libraries against the real binary, as real processes: the Go
// example (examples/workers/go, on the worker package), the TypeScript
// worker (workers/typescript/example.js) and the Python worker of
// docs/workers.md, run exactly as written there. Each posts every task's
// idempotency key to a loopback effect service the test starts, so the test
// counts effects per key beside what the runs applied.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yukta/yukta/tools/npmci"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// tsWorkerDir is the TypeScript worker's Node project.
const tsWorkerDir = "../workers/typescript"

// workerLoad is how many messages the load tests send through workers.
const workerLoad = 500

// loadLimit bounds one load run.
var loadLimit = 3 * time.Minute

// workerQueues are the load tests' queues.
var workerQueues = []string{"qa", "qb", "qc"}

// ---------------------------------------------------------------------------
// The effect service: what a worker's side effect reaches.
// ---------------------------------------------------------------------------

// effectCall is one effect a worker posted.
type effectCall struct {
	Key        string `json:"key"`
	TaskID     string `json:"taskId"`
	LeaseToken string `json:"leaseToken"`
	Attempt    int    `json:"attempt"`
	Queue      string `json:"queue"`
	Worker     string `json:"worker"`
	Payload    any    `json:"payload"`
}

// effects is a loopback service that counts effects per idempotency key.
// An effect whose payload has "hold": true on attempt 1 is held (the
// worker is mid-task) until release is closed.
type effects struct {
	srv     *httptest.Server
	mu      sync.Mutex
	calls   []effectCall
	perKey  map[string]int
	held    chan effectCall
	release chan struct{}
	gate    chan struct{}   // when not nil, every effect waits for a value on it
	aborted chan effectCall // a held effect whose worker gave up on it
}

func newEffects(t *testing.T) *effects {
	f := &effects{perKey: map[string]int{}, held: make(chan effectCall, 16), release: make(chan struct{}), aborted: make(chan effectCall, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c effectCall
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.perKey[c.Key]++
		gate := f.gate
		f.mu.Unlock()
		if p, _ := c.Payload.(map[string]any); p["hold"] == true && c.Attempt == 1 {
			f.held <- c
			select {
			case <-f.release:
			case <-r.Context().Done():
				f.aborted <- c
				return
			}
		}
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

func (f *effects) URL() string { return f.srv.URL + "/effect" }

// snapshot is a copy of the counts per key and of the calls.
func (f *effects) snapshot() (map[string]int, []effectCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.perKey), slices.Clone(f.calls)
}

// ---------------------------------------------------------------------------
// Worker processes.
// ---------------------------------------------------------------------------

var (
	goWorkerOnce sync.Once
	goWorkerPath string
	goWorkerErr  error
)

// goWorker builds examples/workers/go once per test run.
func goWorker(t *testing.T) string {
	t.Helper()
	goWorkerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "yukta-e2e-goworker-")
		if err != nil {
			goWorkerErr = err
			return
		}
		goWorkerPath = filepath.Join(dir, "goworker")
		cmd := exec.Command("go", "build", "-o", goWorkerPath, "../examples/workers/go")
		if out, err := cmd.CombinedOutput(); err != nil {
			goWorkerErr = fmt.Errorf("go build ./examples/workers/go: %v\n%s", err, out)
		}
	})
	if goWorkerErr != nil {
		t.Fatal(goWorkerErr)
	}
	return goWorkerPath
}

// tsWorker makes sure workers/typescript has its pinned packages
// (tools/npmci) and returns node.
func tsWorker(t *testing.T) string {
	t.Helper()
	return npmci.Node(t, tsWorkerDir)
}

// pythonWorker writes the Python worker of docs/workers.md to a file.
func pythonWorker(t *testing.T) (python, script string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run the worker of docs/workers.md: %v", err)
	}
	body := testedBlocks(t, "docs/workers.md", "TestWorkersExactlyOnceInEffect", 1)[0].Body
	script = filepath.Join(t.TempDir(), "worker.py")
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return python, script
}

// workerProc is one running worker process.
type workerProc struct {
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
}

// startWorker starts a worker of lang ("go", "typescript", "python")
// polling queues of the server at url with the key of the access tests'
// key file named "worker" (the role WORKER).
func startWorker(t *testing.T, lang, name, url, effectURL string, concurrency int, queues ...string) *workerProc {
	t.Helper()
	var argv []string
	dir := ""
	switch lang {
	case "go":
		argv = []string{goWorker(t)}
	case "typescript":
		argv = []string{tsWorker(t), "example.js"}
		dir = tsWorkerDir
	case "python":
		python, script := pythonWorker(t)
		argv = []string{python, "-u", script}
	default:
		t.Fatalf("no worker in %q", lang)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "YUKTA_URL=" + url, "YUKTA_API_KEY=" + testKeys["worker"], "WORKER_NAME=" + name,
		"WORKER_QUEUES=" + strings.Join(queues, ","), fmt.Sprintf("WORKER_CONCURRENCY=%d", concurrency), "EFFECT_URL=" + effectURL}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &workerProc{name: name, cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the %s worker: %v", lang, err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("worker %s output:\n%s", name, p.out.String())
		}
	})
	return p
}

// kill is kill -9, and waits for the process to be gone.
func (p *workerProc) kill() {
	_ = p.cmd.Process.Kill()
	err := <-p.exited
	p.exited <- err
}

// stop is SIGTERM (a graceful stop) within d.
func (p *workerProc) stop(t *testing.T, d time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Errorf("worker %s ended with %v after SIGTERM:\n%s", p.name, err, p.out.String())
		}
	case <-time.After(d):
		t.Errorf("worker %s did not stop within %s of SIGTERM", p.name, d)
	}
}

// ---------------------------------------------------------------------------
// The load.
// ---------------------------------------------------------------------------

// loadFlow splits a list of messages, routes each to the TASK node of its
// queue (field q), and joins the three TASK nodes' outputs in one node.
func loadFlow(heartbeat string) string {
	var nodes, edges []string
	nodes = append(nodes, nd("start", "MANUAL", ""), nd("split", "SPLIT", `{"field":"items"}`))
	var routes []string
	for _, q := range workerQueues {
		routes = append(routes, fmt.Sprintf(`{"port":%q,"condition":"payload.q == '%s'"}`, q, q))
	}
	nodes = append(nodes, nd("route", "ROUTER", `{"routes":[`+strings.Join(routes, ",")+`],"fallback":false}`))
	edges = append(edges, ed("start", "split", ""), ed("split", "route", ""))
	for _, q := range workerQueues {
		nodes = append(nodes, nd("task-"+q, "TASK", fmt.Sprintf(`{"queue":%q,"heartbeatTimeout":%q,"timeout":"60s","retry":{"maxAttempts":5,"backoff":"0s"}}`, q, heartbeat)))
		edges = append(edges, ed("route", "task-"+q, q), ed("task-"+q, "joined", ""))
	}
	nodes = append(nodes, nd("joined", "LOG", `{"message":"applied","level":"debug"}`))
	return wf("load", nodes, edges)
}

// loadPayload is workerLoad messages spread over the queues.
func loadPayload() map[string]any {
	items := make([]any, workerLoad)
	for i := range items {
		items[i] = map[string]any{"n": i, "q": workerQueues[i%len(workerQueues)]}
	}
	return map[string]any{"items": items}
}

// startLoadWorkers starts two workers of each language, each polling every
// queue of the load.
func startLoadWorkers(t *testing.T, url, effectURL string) []*workerProc {
	var ws []*workerProc
	for _, lang := range []string{"go", "typescript", "python"} {
		for i := 1; i <= 2; i++ {
			ws = append(ws, startWorker(t, lang, fmt.Sprintf("%s-%d", lang, i), url, effectURL, 3, workerQueues...))
		}
	}
	return ws
}

// checkExactlyOnce checks a finished load: the run succeeded, each TASK node
// received and emitted its share once, the joining node received every
// message once, every completed task was applied once (one TaskCompleted
// event per item), and every applied task's key reached the effect service.
func checkExactlyOnce(t *testing.T, e *env, dsn, eid string, f *effects) {
	t.Helper()
	x := e.get("load", eid)
	c := counts(x)
	var tasks [2]int64
	share := map[string]int64{}
	for i := range workerLoad {
		share[workerQueues[i%len(workerQueues)]]++ // as loadPayload spreads them
	}
	for _, q := range workerQueues {
		got, want := c["task-"+q], share[q]
		if got[0] != want || got[1] != want {
			t.Errorf("node task-%s received %d and emitted %d, want %d each:\n%s", q, got[0], got[1], want, describe(x))
		}
		tasks[0] += got[0]
		tasks[1] += got[1]
	}
	if j := c["joined"]; j[0] != workerLoad || j[1] != workerLoad {
		t.Errorf("the joining node received %d and emitted %d, want %d each (a message applied twice goes on twice)", j[0], j[1], workerLoad)
	}
	db, err := pgxpool.New(e.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(e.ctx, `SELECT node_id, data->>'itemId', count(*), min(actor), max(actor) FROM events
		WHERE type = 'TaskCompleted' AND execution_id = $1::uuid GROUP BY 1, 2`, eid)
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]bool{}
	for rows.Next() {
		var node, item string
		var n int
		var actor, actor2 string
		if err := rows.Scan(&node, &item, &n, &actor, &actor2); err != nil {
			t.Fatal(err)
		}
		if actor != "worker:worker" || actor2 != actor {
			t.Errorf("task %s of %s was completed by %s, want worker:worker (the key's name)", item, node, actor)
		}
		if n != 1 {
			t.Errorf("task %s of %s was applied %d times", item, node, n)
		}
		applied[eid+":"+node+":"+item] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(applied) != workerLoad {
		t.Errorf("%d tasks were applied (TaskCompleted), want %d", len(applied), workerLoad)
	}
	perKey, calls := f.snapshot()
	missing, extra := 0, 0
	for key := range applied {
		if perKey[key] == 0 {
			missing++
		}
	}
	for key, n := range perKey {
		if !applied[key] {
			t.Errorf("the effect service saw key %s, which no applied task has", key)
		}
		extra += n - 1
	}
	if missing > 0 {
		t.Errorf("%d applied tasks never reached the effect service", missing)
	}
	byLang := map[string]int{}
	for _, c := range calls {
		lang, _, _ := strings.Cut(c.Worker, "-")
		byLang[lang]++
	}
	for _, lang := range []string{"go", "typescript", "python"} {
		if byLang[lang] == 0 {
			t.Errorf("no %s worker did any work (effects per language: %v)", lang, byLang)
		}
	}
	t.Logf("%d messages applied once each; %d effects at the service (%d repeated by redelivery); effects per language %v",
		len(applied), len(calls), extra, byLang)
}

// TestWorkersExactlyOnceInEffect: 500 TASK messages across 3 queues and 6
// real worker processes (two Go, two TypeScript, two Python) finish exactly
// once in effect.
func TestWorkersExactlyOnceInEffect(t *testing.T) {
	dsn, keys := pgtest.NewDatabase(t), "YUKTA_API_KEYS="+writeKeyFile(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{keys}})
	e := &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}
	f := newEffects(t)
	e.apply("load", loadFlow("5s"))
	ws := startLoadWorkers(t, s.URL, f.URL())
	began := time.Now()
	eid := e.start("load", "load", loadPayload())
	e.waitExecWithin("load", eid, "status SUCCESS", loadLimit, func(x apiclient.Execution) bool { return x.Status == apiclient.ExecutionStatusSUCCESS })
	t.Logf("%d messages through 6 workers in %s", workerLoad, time.Since(began).Round(time.Millisecond))
	checkExactlyOnce(t, e, dsn, eid, f)
	for _, w := range ws {
		w.stop(t, 15*time.Second)
	}
}

// waitExecWithin is waitExec with its own limit.
func (e *env) waitExecWithin(sid, eid, what string, d time.Duration, cond func(apiclient.Execution) bool) apiclient.Execution {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		x := e.get(sid, eid)
		if cond(x) {
			return x
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("execution %s: %s did not happen within %s; last state:\n%s", eid, what, d, describe(x))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// switchProxy forwards to one server at a time, so that workers keep one
// address while the server behind it is killed and started again.
type switchProxy struct {
	srv    *httptest.Server
	target atomic.Pointer[url.URL]
}

func newSwitchProxy(t *testing.T, to string) *switchProxy {
	p := &switchProxy{}
	p.point(t, to)
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(p.target.Load()) },
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "the server is away: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(func() { p.srv.CloseClientConnections(); p.srv.Close() })
	return p
}

func (p *switchProxy) point(t *testing.T, to string) {
	u, err := url.Parse(to)
	if err != nil {
		t.Fatal(err)
	}
	p.target.Store(u)
}

// TestWorkersSurviveAServerKill: the server is killed with kill -9 in the
// middle of the load and started again on the same database; the workers
// carry on through the same address, and no completed answer is lost or
// applied twice.
func TestWorkersSurviveAServerKill(t *testing.T) {
	dsn, keys := pgtest.NewDatabase(t), "YUKTA_API_KEYS="+writeKeyFile(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{keys}})
	e := &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}
	f := newEffects(t)
	e.apply("load", loadFlow("3s"))
	proxy := newSwitchProxy(t, s.URL)
	ws := startLoadWorkers(t, proxy.srv.URL, f.URL())
	eid := e.start("load", "load", loadPayload())
	// Kill the server once a good part of the load is through.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, calls := f.snapshot(); len(calls) >= workerLoad/3 {
			break
		}
		if time.Now().After(deadline) {
			_, calls := f.snapshot()
			t.Fatalf("only %d effects within 2 min:\n%s", len(calls), describe(e.get("load", eid)))
		}
	}
	s.Kill()
	_, calls := f.snapshot()
	t.Logf("server killed after %d effects", len(calls))
	s2 := startServer(t, serverOptions{DSN: dsn, Env: []string{keys}})
	proxy.point(t, s2.URL)
	e.s, e.c = s2, keyedClient(t, s2, testKeys["admin"])
	e.waitExecWithin("load", eid, "status SUCCESS", loadLimit, func(x apiclient.Execution) bool { return x.Status == apiclient.ExecutionStatusSUCCESS })
	checkExactlyOnce(t, e, dsn, eid, f)
	for _, w := range ws {
		w.stop(t, 15*time.Second)
	}
}

// ---------------------------------------------------------------------------
// A worker killed mid-task; a PAUSE of the TASK node.
// ---------------------------------------------------------------------------

// TestWorkerKilledMidTask: a worker killed with kill -9 while it works on
// a task loses it when the lease runs out; another worker gets it with
// attempt 2 and its answer goes on; the dead worker's late answer, sent
// with its lease token, is refused (409) and changes nothing.
func TestWorkerKilledMidTask(t *testing.T) {
	dsn, keys := pgtest.NewDatabase(t), "YUKTA_API_KEYS="+writeKeyFile(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{keys}})
	e := &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}
	w := keyedClient(t, s, testKeys["worker"])
	f := newEffects(t)
	e.apply("kill", line("flow", nd("start", "MANUAL", ""),
		nd("work", "TASK", `{"queue":"qk","heartbeatTimeout":"2s","timeout":"60s","retry":{"maxAttempts":3,"backoff":"0s"}}`),
		nd("out", "RESULT", "")))
	doomed := startWorker(t, "go", "go-doomed", s.URL, f.URL(), 1, "qk")
	eid := e.start("kill", "flow", map[string]any{"hold": true})
	var first effectCall
	select {
	case first = <-f.held:
	case <-time.After(waitLimit):
		t.Fatalf("the worker did not start the task within %s:\n%s", waitLimit, doomed.out.String())
	}
	if first.Attempt != 1 || first.Worker != "go-doomed" {
		t.Fatalf("first delivery: %+v", first)
	}
	doomed.kill()
	killed := time.Now()
	close(f.release)

	startWorker(t, "python", "python-heir", s.URL, f.URL(), 1, "qk")
	x := e.waitExecWithin("kill", eid, "status SUCCESS", 30*time.Second, func(x apiclient.Execution) bool { return x.Status == apiclient.ExecutionStatusSUCCESS })
	r, _ := x.Result.(map[string]any)
	if r["worker"] != "python-heir" || r["attempt"] != float64(2) || r["key"] != first.Key {
		t.Fatalf("the run's result is %#v, want the heir's answer to attempt 2 of key %s", x.Result, first.Key)
	}
	t.Logf("redelivered and answered %s after the kill (heartbeatTimeout 2s)", time.Since(killed).Round(time.Millisecond))
	perKey, _ := f.snapshot()
	if perKey[first.Key] != 2 {
		t.Errorf("the key %s reached the effect service %d times, want 2 (the dead worker's attempt and the heir's)", first.Key, perKey[first.Key])
	}

	// The dead worker's late answer, with its lease token: refused.
	res, err := w.CompleteTaskWithResponse(e.ctx, first.TaskID, apiclient.CompleteTaskJSONRequestBody{LeaseToken: first.LeaseToken, Output: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != http.StatusConflict {
		t.Fatalf("the dead worker's late complete: %d %s, want 409", res.StatusCode(), res.Body)
	}
	fres, err := w.FailTaskWithResponse(e.ctx, first.TaskID, apiclient.FailTaskJSONRequestBody{LeaseToken: first.LeaseToken, Error: "late", Retryable: true})
	if err != nil || fres.StatusCode() != http.StatusConflict {
		t.Fatalf("the dead worker's late fail: %v %d %s, want 409", err, fres.StatusCode(), fres.Body)
	}
	if after := e.get("kill", eid); after.Status != apiclient.ExecutionStatusSUCCESS || fmt.Sprint(after.Result) != fmt.Sprint(x.Result) {
		t.Fatalf("the late answers changed the run: %s %#v", after.Status, after.Result)
	}
}

// TestWorkerPauseStopsDeliveries: a PAUSE of the TASK node stops new
// deliveries at once (the next poll gets nothing, and a worker that
// finishes its task takes no other), and RESUME lets them flow again.
func TestWorkerPauseStopsDeliveries(t *testing.T) {
	dsn, keys := pgtest.NewDatabase(t), "YUKTA_API_KEYS="+writeKeyFile(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{keys}})
	e := &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}
	w := keyedClient(t, s, testKeys["worker"])
	f := newEffects(t)
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	e.apply("pause", line("flow", nd("start", "MANUAL", ""), nd("split", "SPLIT", `{"field":"items"}`),
		nd("work", "TASK", `{"queue":"qp","heartbeatTimeout":"5s","timeout":"60s"}`), nd("sink", "LOG", `{"message":"done"}`)))
	const n = 6
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"n": i}
	}
	startWorker(t, "typescript", "typescript-1", s.URL, f.URL(), 1, "qp")
	eid := e.start("pause", "flow", map[string]any{"items": items})
	// The worker is on its first task (its effect waits at the gate).
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(20 * time.Millisecond) {
		if _, calls := f.snapshot(); len(calls) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not start its first task")
		}
	}
	e.mustCtlNode("pause", eid, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE})

	// The very next poll gets nothing, though five tasks wait.
	wait, max := 0, 10
	res, err := w.PollTasksWithResponse(e.ctx, apiclient.PollTasksJSONRequestBody{Queues: []string{"qp"}, Wait: &wait, Max: &max})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("poll: %v %d %s", err, res.StatusCode(), res.Body)
	}
	if len(res.JSON200.Tasks) != 0 {
		t.Fatalf("a poll after the PAUSE got %d tasks of the paused node", len(res.JSON200.Tasks))
	}
	// The leased task finishes; the worker takes no other while paused.
	gate <- struct{}{}
	e.waitNode("pause", eid, "work", "emitted 1", func(nd apiclient.ExecutionNode) bool { return nd.Emitted == 1 })
	e.steady("pause", eid, "no delivery while paused", 2*time.Second, func(x apiclient.Execution) bool {
		_, calls := f.snapshot()
		return len(calls) == 1 && nodeOf(t, x, "work").Emitted == 1
	})
	e.mustCtlNode("pause", eid, "work", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME})
	close(gate)
	e.waitStatus("pause", eid, apiclient.ExecutionStatusSUCCESS)
	if perKey, _ := f.snapshot(); len(perKey) != n {
		t.Fatalf("%d keys reached the effect service, want %d", len(perKey), n)
	}
}

// ---------------------------------------------------------------------------
// The TypeScript worker's generated client.
// ---------------------------------------------------------------------------

// TestTSWorkerClientIsGenerated: workers/typescript/api.d.ts is what
// openapi-typescript (pinned) generates from api/openapi.yaml today, and the
// worker and its example type-check against it with tsc --strict.
func TestTSWorkerClientIsGenerated(t *testing.T) {
	node := tsWorker(t)
	out := filepath.Join(t.TempDir(), "api.d.ts")
	cmd := exec.Command(node, "node_modules/openapi-typescript/bin/cli.js", "../../api/openapi.yaml", "-o", out)
	cmd.Dir = tsWorkerDir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(tsWorkerDir, "api.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("workers/typescript/api.d.ts differs from a generation from api/openapi.yaml; run `npm run generate` in workers/typescript and commit it")
	}
	cmd = exec.Command(node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	cmd.Dir = tsWorkerDir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
}

// TestWorkersStopOnCancel: a STOP CANCEL of the run reaches a Go and a
// TypeScript worker in the middle of a task through their next heartbeat,
// which cancels the handler (the Go context, the TypeScript AbortSignal):
// each abandons its effect call instead of finishing work that will not be
// applied.
func TestWorkersStopOnCancel(t *testing.T) {
	dsn, keys := pgtest.NewDatabase(t), "YUKTA_API_KEYS="+writeKeyFile(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{keys}})
	e := &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}
	f := newEffects(t)
	for _, lang := range []string{"go", "typescript"} {
		e.apply("cancel-"+lang, line("flow", nd("start", "MANUAL", ""),
			nd("work", "TASK", `{"queue":"qc-`+lang+`","heartbeatTimeout":"2s","timeout":"60s"}`), nd("out", "RESULT", "")))
		startWorker(t, lang, lang+"-1", s.URL, f.URL(), 1, "qc-"+lang)
		eid := e.start("cancel-"+lang, "flow", map[string]any{"hold": true})
		var held effectCall
		select {
		case held = <-f.held:
		case <-time.After(waitLimit):
			t.Fatalf("the %s worker did not start the task within %s", lang, waitLimit)
		}
		e.mustCtl("cancel-"+lang, eid, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP, Mode: ptr(apiclient.ExecutionCommandModeCANCEL)})
		select {
		case c := <-f.aborted:
			if c.Key != held.Key {
				t.Fatalf("the %s worker abandoned %s, want %s", lang, c.Key, held.Key)
			}
		case <-time.After(waitLimit):
			t.Fatalf("the %s worker did not abandon its task within %s of STOP CANCEL", lang, waitLimit)
		}
		e.waitStatus("cancel-"+lang, eid, apiclient.ExecutionStatusSTOPPED)
	}
}
