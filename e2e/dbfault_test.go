package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/localpg"
	"github.com/yukta/yukta/api/apiclient"
)

// outageFlow fans out after "a": one path calls the echo server (an effect
// the test can count per message), the other waits, and both end in "out".
func outageFlow(echoURL string) string {
	return wf("flow", []string{
		nd("start", "MANUAL", ""),
		nd("a", "TRANSFORM", `{"expression":"{\"n\": payload.n + 1}"}`),
		nd("call", "HTTP_REQUEST", fmt.Sprintf(`{"url":%q,"method":"POST","body":{"probe":true}}`, echoURL)),
		nd("b", "TRANSFORM", `{"expression":"{\"status\": payload.status}"}`),
		nd("wait", "DELAY", `{"duration":"300ms"}`),
		nd("c", "TRANSFORM", `{"expression":"payload"}`),
		nd("out", "RESULT", ""),
	}, []string{ed("start", "a", ""), ed("a", "call", ""), ed("a", "wait", ""), ed("call", "b", ""),
		ed("b", "out", ""), ed("wait", "c", ""), ed("c", "out", "")})
}

// outageReceived is what each node of outageFlow receives in one run.
var outageReceived = map[string]int64{"start": 1, "a": 1, "call": 1, "b": 1, "wait": 1, "c": 1, "out": 2}

// echoServer answers every call and records when each Idempotency-Key came.
type echoServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string][]time.Time
}

func newEchoServer(t *testing.T) *echoServer {
	e := &echoServer{calls: map[string][]time.Time{}}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		e.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		e.calls[key] = append(e.calls[key], time.Now())
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *echoServer) egress() string {
	return "YUKTA_EGRESS_ALLOWED_HOSTS=" + strings.TrimPrefix(e.srv.URL, "http://")
}

// awaitCalls waits until the echo server has had n calls: work is in flight.
func awaitCalls(t *testing.T, e *echoServer, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.total() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d plugin calls within 30 s, want %d", e.total(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *echoServer) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.calls {
		n += len(c)
	}
	return n
}

// outage is one database fault, from the moment it was caused until /readyz
// answered 200 again.
type outage struct {
	how              string
	began, unready   time.Time // unready: the first 503 seen
	ready            time.Time
	restartAttempt   int // for the embedded cluster: the supervisor's attempt number
	warnsDuringWhole int
}

// checkEffects asserts that no message's plugin ran twice except across a
// database outage: a call is repeated only when the one before it happened
// before an outage ended and the repeat after that outage began (its result
// could not be committed, or its claim or heartbeats were lost with the
// database, and the item ran again once its lease expired). It also checks
// that the calls are exactly one key per run (the HTTP node's one message).
// It returns how many calls were repeats.
func checkEffects(t *testing.T, dsn string, echo *echoServer, ids []string, outages []outage) int {
	t.Helper()
	echo.mu.Lock()
	defer echo.mu.Unlock()
	runs := map[string]bool{}
	for _, id := range ids {
		runs[id] = true
	}
	perRun := map[string]int{}
	repeats := 0
	for key, at := range echo.calls {
		exec, _, _ := strings.Cut(key, ":")
		if !runs[exec] {
			t.Errorf("a call with key %q belongs to no run of this test", key)
			continue
		}
		perRun[exec]++
		for i := 1; i < len(at); i++ {
			repeats++
			if !slices.ContainsFunc(outages, func(o outage) bool { return at[i-1].Before(o.ready) && at[i].After(o.began) }) {
				t.Errorf("key %s was called at %s and again at %s with no database outage in between",
					key, at[i-1].Format("15:04:05.000"), at[i].Format("15:04:05.000"))
			}
		}
	}
	for _, id := range ids {
		if perRun[id] != 1 {
			t.Errorf("run %s made calls under %d keys, want 1; its messages:\n%s", id, perRun[id], workItems(t, dsn, id))
		}
	}
	return repeats
}

// workItems describes an execution's messages, to explain a failure.
func workItems(t *testing.T, dsn, id string) string {
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		return err.Error()
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT item_id, node_id, state, attempt, coalesce(done_by, ''), created_at
		FROM work_items WHERE execution_id = $1 ORDER BY item_id`, id)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for rows.Next() {
		var item int64
		var node, state, by string
		var attempt int
		var at time.Time
		if err := rows.Scan(&item, &node, &state, &attempt, &by, &at); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "  item %d node %s %s attempt %d by %s created %s\n", item, node, state, attempt, by, at.Format("15:04:05.000"))
	}
	return b.String()
}

// startOutageRuns starts runs from..to-1 of outageFlow with an idempotency
// key each, retrying while the database is away: a start whose answer was
// lost is found again by its key, so every run is created exactly once.
func startOutageRuns(t *testing.T, s *server, sid string, from, to int) []string {
	t.Helper()
	ids := make([]string, to-from)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := from; i < to; i++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			key := fmt.Sprintf("run-%d", i)
			deadline := time.Now().Add(60 * time.Second)
			for {
				res, err := s.Client.StartExecutionWithResponse(context.Background(), sid, "flow",
					&apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartRequest{Payload: map[string]any{"n": i}})
				switch {
				case err == nil && res.JSON201 != nil:
					ids[i-from] = res.JSON201.ExecutionId
					return
				case err == nil && res.JSON200 != nil:
					ids[i-from] = res.JSON200.ExecutionId
					return
				case time.Now().After(deadline):
					t.Errorf("start %d: %v %v", i, err, res)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// verifyOutageRuns checks that every run succeeded once, each node received
// exactly what the flow sends it, and no run was created twice.
func verifyOutageRuns(t *testing.T, s *server, sid string, ids []string, dsn string) {
	t.Helper()
	for i, id := range ids {
		res, err := s.Client.GetExecutionWithResponse(context.Background(), sid, id)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("run %d: %v", i, err)
		}
		ex := res.JSON200
		if ex.Status != apiclient.ExecutionStatusSUCCESS {
			t.Errorf("run %d (%s): %s (%v), want SUCCESS", i, id, ex.Status, deref(ex.Error))
			continue
		}
		for _, n := range ex.Nodes {
			if n.Received != outageReceived[n.NodeId] || n.Status != apiclient.NodeStatusSUCCESS {
				t.Errorf("run %d node %s: received %d %s, want %d SUCCESS", i, n.NodeId, n.Received, n.Status, outageReceived[n.NodeId])
			}
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM executions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ids) {
		t.Errorf("%d executions in the database, want %d", n, len(ids))
	}
}

// waitOutageRunsEnded waits until every run has ended.
func waitOutageRunsEnded(t *testing.T, s *server, sid string, ids []string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, id := range ids {
		for {
			res, err := s.Client.GetExecutionWithResponse(context.Background(), sid, id)
			if err == nil && res.JSON200 != nil && res.JSON200.EndedAt != nil {
				break
			}
			if time.Now().After(deadline) {
				state := ""
				if err == nil && res.JSON200 != nil {
					state = describe(*res.JSON200)
				}
				t.Fatalf("run %s did not end within %s:\n%s", id, d, state)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// readyStatus is /readyz's status code, 0 if there was no answer.
func readyStatus(s *server) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := s.Client.GetReadyWithResponse(ctx)
	if err != nil {
		return 0
	}
	return res.StatusCode()
}

// awaitReady polls /readyz every 10 ms until it answers want; it returns
// when it did.
func awaitReady(t *testing.T, s *server, want int, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if readyStatus(s) == want {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not answer %d within %s", want, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clusterUser is the OS account that owns (and runs) the cluster in pgdata:
// nil when it is us.
func clusterUser(t *testing.T, pgdata string) *syscall.Credential {
	t.Helper()
	fi, err := os.Stat(pgdata)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) == os.Geteuid() {
		return nil
	}
	return &syscall.Credential{Uid: st.Uid, Gid: st.Gid, Groups: []uint32{}}
}

// pgCtlImmediateStop runs `pg_ctl stop -m immediate` on pgdata as its owner
// (pg_ctl refuses root). -W: pg_ctl would wait for postmaster.pid to go, but
// a supervised server is back with a new one at once.
func pgCtlImmediateStop(t *testing.T, pgdata string) {
	t.Helper()
	bin, err := localpg.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "pg_ctl"), "-D", pgdata, "stop", "-m", "immediate", "-W")
	cmd.Dir = pgdata
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: clusterUser(t, pgdata)}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop -m immediate: %v\n%s", err, out)
	}
}

// readyPostmaster waits until postmaster.pid names a running server that
// reports itself ready, and returns its PID.
func readyPostmaster(t *testing.T, pgdata string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
		lines := strings.Split(string(b), "\n")
		if len(lines) > 7 && strings.TrimSpace(lines[7]) == "ready" {
			if pid, err := strconv.Atoi(strings.TrimSpace(lines[0])); err == nil && syscall.Kill(pid, 0) == nil {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready postmaster in %s within 30 s", pgdata)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logLines are the server's JSON log lines from index from on.
func logLines(s *server, from int) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for i := 0; sc.Scan(); i++ {
		if i < from {
			continue
		}
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func logCount(s *server) int { return strings.Count(s.logs.String(), "\n") }

// embeddedDataDir makes a data folder the postgres OS user can reach when
// the tests run as root.
func embeddedDataDir(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("", "yukta-e2e-dbf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "data")
}

// TestEmbeddedDatabaseFaults (T18): the server on its embedded cluster,
// under a load of 200 runs, while its postmaster is killed (kill -9) five
// times and stopped with `pg_ctl stop -m immediate` five times, in pairs:
// the second fault of a pair comes as soon as the database is back, so the
// supervisor counts it as the second attempt of one series. Each time
// /readyz goes 503 and back to 200 while the server process lives on. In the
// end every run finished once with SUCCESS and the node counts of the flow,
// no plugin ran twice for one message (the outages are shorter than the
// default lease, claims commit synchronously and commits wait for the
// database, so nothing is claimed again), and every journal is VALID.
func TestEmbeddedDatabaseFaults(t *testing.T) {
	t.Parallel()
	began := time.Now()
	dataDir := embeddedDataDir(t)
	pgdata := filepath.Join(dataDir, "pgdata")
	dsn := fmt.Sprintf("host=%s port=5432 user=postgres dbname=yukta sslmode=disable", filepath.Join(dataDir, "run"))
	echo := newEchoServer(t)
	settings := append([]string{echo.egress()}, journalKeyEnv(dsn, nil)...)
	s := startServer(t, serverOptions{DataDir: dataDir, Env: settings})
	awaitReady(t, s, http.StatusOK, 30*time.Second)
	pid := s.cmd.Process.Pid
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	e.apply("dbf", outageFlow(echo.srv.URL))

	kill := func(t *testing.T) {
		if err := syscall.Kill(readyPostmaster(t, pgdata), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(t *testing.T) { readyPostmaster(t, pgdata); pgCtlImmediateStop(t, pgdata) }
	faults := []struct {
		how string
		do  func(*testing.T)
	}{{"kill -9", kill}, {"pg_ctl stop -m immediate", stop}}

	var ids []string
	var outages []outage
	for i := range 10 {
		f := faults[(i+i/2)%2] // pairs: kill+stop, stop+kill, ...
		second := i%2 == 1
		if !second {
			// A wave of runs, and the fault while they are in flight.
			calls := echo.total()
			ids = append(ids, startOutageRuns(t, s, "dbf", len(ids), len(ids)+40)...)
			awaitCalls(t, echo, calls+5)
		}
		mark := logCount(s)
		o := outage{how: f.how, began: time.Now()}
		f.do(t)
		o.unready = awaitReady(t, s, http.StatusServiceUnavailable, 10*time.Second)
		// Ready again once the supervisor has brought the database back (a
		// backend that outlives its postmaster may answer a ping before).
		reasons := map[string]bool{}
		deadline := time.Now().Add(60 * time.Second)
		for o.restartAttempt == 0 {
			time.Sleep(10 * time.Millisecond)
			o.ready = awaitReady(t, s, http.StatusOK, time.Until(deadline))
			for _, l := range logLines(s, mark) {
				switch l["msg"] {
				case "embedded PostgreSQL restarted":
					o.restartAttempt = int(l["attempt"].(float64))
				case "not ready":
					reasons[fmt.Sprint(l["error"])] = true
				}
			}
		}
		for _, l := range logLines(s, mark) {
			if l["level"] == "warn" {
				o.warnsDuringWhole++
			}
		}
		if !s.running() || s.cmd.Process.Pid != pid {
			t.Fatalf("outage %d (%s): the server process did not survive", i+1, f.how)
		}
		want := 1
		if second {
			want = 2 // within a series: the first restart was not up long enough
		}
		if o.restartAttempt != want {
			t.Errorf("outage %d (%s): restarted as attempt %d, want %d", i+1, f.how, o.restartAttempt, want)
		}
		if !reasons[fmt.Sprintf("the embedded PostgreSQL is restarting (attempt %d of 5)", o.restartAttempt)] {
			t.Errorf("outage %d (%s): /readyz's reasons %v do not name the restart", i+1, f.how, slices.Sorted(maps.Keys(reasons)))
		}
		outages = append(outages, o)
		t.Logf("outage %2d %-25s 503 after %5v, 200 after %5v (attempt %d, %d warnings logged)", i+1, f.how,
			o.unready.Sub(o.began).Round(time.Millisecond), o.ready.Sub(o.began).Round(time.Millisecond), o.restartAttempt, o.warnsDuringWhole)
		if second {
			// Let the series end (RestartPolicy.Stable) while the runs go on.
			time.Sleep(time.Until(o.ready.Add(5500 * time.Millisecond)))
		}
	}
	if len(ids) != 200 {
		t.Fatalf("%d runs started, want 200", len(ids))
	}
	waitOutageRunsEnded(t, s, "dbf", ids, 60*time.Second)
	verifyOutageRuns(t, s, "dbf", ids, dsn)
	if repeats := checkEffects(t, dsn, echo, ids, outages); repeats != 0 {
		t.Errorf("%d plugin calls were repeated; with outages shorter than the lease none may be", repeats)
	}
	c := checkJournals(t, dsn, 30*time.Second)
	if c.settled != len(ids) {
		t.Errorf("%d settled journals, want %d", c.settled, len(ids))
	}
	events, _ := assertEveryEventJournaledOnce(t, dsn)
	t.Logf("200 runs, 10 outages: %d plugin calls; %d journal records for %d events; %v in all",
		echo.total(), c.records, events, time.Since(began).Round(time.Second))
	if err := s.Stop(); err != nil {
		t.Fatalf("SIGTERM after the outages: %v", err)
	}
}

// TestExternalDatabaseOutage: the server on a database it does not own,
// which is stopped (`pg_ctl stop -m immediate`) under load and started again
// by its operator seconds later, longer than the lease. The server waits,
// /readyz says why it is not ready, and once the database is back every run
// finishes exactly as without the outage, and new work is taken.
func TestExternalDatabaseOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, err := localpg.StartEphemeral(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	if err := postgres.EnsureDatabase(ctx, cluster.DSN("postgres"), "yukta"); err != nil {
		t.Fatal(err)
	}
	// The throwaway cluster runs with synchronous_commit off for speed, so an
	// immediate stop could lose commits the server was told had landed; a
	// production database never does (the server warns at boot). Commits
	// to this database wait for the WAL write, which survives the stop.
	admin, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER DATABASE yukta SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close(ctx)
	dsn := cluster.DSN("yukta")
	pgdata := filepath.Join(filepath.Dir(cluster.SocketDir()), "pgdata")
	echo := newEchoServer(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_LEASE=2s", echo.egress()}})
	awaitReady(t, s, http.StatusOK, 30*time.Second)
	e := &env{t: t, s: s, c: s.Client, ctx: ctx}
	e.apply("ext", outageFlow(echo.srv.URL))

	ids := startOutageRuns(t, s, "ext", 0, 40)
	awaitCalls(t, echo, 5)
	mark := logCount(s)
	o := outage{how: "pg_ctl stop -m immediate", began: time.Now()}
	pgCtlImmediateStop(t, pgdata)
	o.unready = awaitReady(t, s, http.StatusServiceUnavailable, 10*time.Second)
	// Down for longer than the lease: leases run out while nobody can renew them.
	for time.Since(o.began) < 3*time.Second {
		if got := readyStatus(s); got != http.StatusServiceUnavailable {
			t.Fatalf("/readyz answered %d while the database was down", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !s.running() {
		t.Fatal("the server exited when its database went away")
	}
	reasons := map[string]bool{}
	warns := map[string]int{}
	for _, l := range logLines(s, mark) {
		if l["msg"] == "not ready" {
			reasons[fmt.Sprint(l["error"])] = true
		}
		if l["level"] == "warn" {
			warns[fmt.Sprint(l["logger"], " ", l["msg"], " ", l["op"])]++
		}
	}
	if !slices.ContainsFunc(slices.Collect(maps.Keys(reasons)), func(r string) bool { return strings.HasPrefix(r, "the database is unreachable: ") }) {
		t.Errorf("/readyz's reasons %v do not say the database is unreachable", reasons)
	}
	for r := range reasons {
		if strings.Contains(r, cluster.SocketDir()) || strings.Contains(r, "user=") {
			t.Errorf("a readiness reason shows the connection settings: %q", r)
		}
	}
	t.Logf("readiness reasons while down: %v; warnings in %v: %v", slices.Sorted(maps.Keys(reasons)), time.Since(o.began).Round(time.Millisecond), warns)

	if err := cluster.Restart(ctx); err != nil {
		t.Fatalf("restarting the database: %v", err)
	}
	restarted := time.Now()
	o.ready = awaitReady(t, s, http.StatusOK, 30*time.Second)
	t.Logf("503 %v after the stop; 200 %v after the database was back", o.unready.Sub(o.began).Round(time.Millisecond),
		o.ready.Sub(restarted).Round(time.Millisecond))
	ids = append(ids, startOutageRuns(t, s, "ext", 40, 60)...) // new work after the outage
	waitOutageRunsEnded(t, s, "ext", ids, 60*time.Second)
	verifyOutageRuns(t, s, "ext", ids, dsn)
	repeats := checkEffects(t, dsn, echo, ids, []outage{o})
	if c := checkJournals(t, dsn, 30*time.Second); c.settled != len(ids) {
		t.Errorf("%d settled journals, want %d", c.settled, len(ids))
	}
	assertEveryEventJournaledOnce(t, dsn)
	t.Logf("%d runs: %d plugin calls, %d repeats across the outage", len(ids), echo.total(), repeats)
}

// TestEmbeddedRestartsExhausted: when the embedded cluster cannot be brought
// back, the server retries with growing delays, then stops with an error
// that says so (exit status 1), instead of running without a database.
func TestEmbeddedRestartsExhausted(t *testing.T) {
	t.Parallel()
	dataDir := embeddedDataDir(t)
	pgdata := filepath.Join(dataDir, "pgdata")
	s := startServer(t, serverOptions{DataDir: dataDir})
	awaitReady(t, s, http.StatusOK, 30*time.Second)

	// A setting the server refuses at start: every restart fails.
	f, err := os.OpenFile(filepath.Join(pgdata, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("shared_buffers = 'plenty'\n"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	began := time.Now()
	if err := syscall.Kill(readyPostmaster(t, pgdata), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	select {
	case exitErr = <-s.exited:
		s.exited <- exitErr
	case <-time.After(60 * time.Second):
		t.Fatal("the server still runs a minute after its database became impossible to start")
	}
	took := time.Since(began)
	if ee, ok := exitErr.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1", exitErr)
	}
	logs := s.logs.String()
	for _, want := range []string{"yukta serve: localpg: PostgreSQL keeps going down: gave up after 5 restarts in a row", `shared_buffers`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the server's output does not say %q", want)
		}
	}
	attempts := 0
	for _, l := range logLines(s, 0) {
		if l["msg"] == "embedded PostgreSQL is down; restarting it" {
			attempts++
		}
	}
	if attempts != 5 {
		t.Errorf("%d restart attempts logged, want 5", attempts)
	}
	// 0.25 + 0.5 + 1 + 2 + 4 s of delays before the attempts.
	if took < 7750*time.Millisecond {
		t.Errorf("gave up after %v: the delays did not grow", took)
	}
	t.Logf("gave up after %v and %d attempts", took.Round(time.Millisecond), attempts)
}

// TestFirstStartRace: two servers started at once on one empty data folder.
// One creates the cluster and serves; the other stops at once and says who
// holds the folder, instead of failing inside initdb.
func TestFirstStartRace(t *testing.T) {
	t.Parallel()
	dataDir := embeddedDataDir(t)
	type proc struct {
		cmd    *exec.Cmd
		stderr *syncBuffer
		url    chan string
		exited chan error
	}
	var procs [2]*proc
	for i := range procs {
		cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--log-format", "json")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "YUKTA_DATA_DIR=" + dataDir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		p := &proc{cmd: cmd, stderr: &syncBuffer{}, url: make(chan string, 1), exited: make(chan error, 1)}
		cmd.Stderr = p.stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = p
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
			}
		}()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if u, ok := strings.CutPrefix(sc.Text(), "yukta serving on "); ok {
					p.url <- u
				}
			}
			p.exited <- cmd.Wait() // after stdout is drained, as Wait requires
		}()
	}
	var winner, loser *proc
	select {
	case err := <-procs[0].exited:
		procs[0].exited <- err
		winner, loser = procs[1], procs[0]
	case err := <-procs[1].exited:
		procs[1].exited <- err
		winner, loser = procs[0], procs[1]
	case <-time.After(60 * time.Second):
		t.Fatal("neither server stopped: both run on one data folder")
	}
	err := <-loser.exited
	loser.exited <- err
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("loser exit: %v, want status 1\n%s", err, loser.stderr.String())
	}
	want := fmt.Sprintf("yukta serve: localpg: the data directory %s is being initialized or used by another yukta (pid %d); use another --data-dir or stop that one",
		dataDir, winner.cmd.Process.Pid)
	if !strings.Contains(loser.stderr.String(), want) {
		t.Fatalf("loser said:\n%s\nwant it to say:\n%s", loser.stderr.String(), want)
	}
	select {
	case <-winner.url:
	case err := <-winner.exited:
		winner.exited <- err
		t.Fatalf("the winner exited too: %v\n%s", err, winner.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the winner did not serve within 60 s")
	}
	t.Logf("loser: %s", strings.TrimSpace(want))
}
