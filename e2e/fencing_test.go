package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// T19: lease fencing between two instances on one database, with SIGSTOP
// standing in for a partition. An instance frozen while it holds claimed
// items loses them to the other once its leases expire; when it thaws, the
// results it then tries to commit are refused and counted as lost, so every
// transition happens exactly once even though the plugin's effect ran
// twice. A frozen instance must not hold the other one up either, even when
// it froze in the middle of a commit.

// fenceConns caps each instance's database pool: two instances per test,
// and tests in parallel, share the harness cluster's 100 connections.
const fenceConns = "YUKTA_DB_MAX_CONNS=8"

// fenceLease is the lease both instances use: short, so the tests are
// quick, and long enough that a live instance on a loaded machine (go test
// ./... on two cores) still renews its leases in time, so that the only
// takeovers are the frozen instance's.
const fenceLease = 3 * time.Second

// gatedEcho is a loopback endpoint that counts the requests per
// Idempotency-Key and holds them behind two gates, one for the first
// request of a key and one for repeats, so the test decides when the
// instances' plugin calls (and their re-runs) finish.
type gatedEcho struct {
	first, repeat gate

	mu      sync.Mutex
	byKey   map[string]int
	waiting [2]int // behind first, behind repeat
}

// gate is a channel closed once, to let everything behind it through.
type gate struct {
	ch   chan struct{}
	once *sync.Once
}

func newGate() gate  { return gate{make(chan struct{}), &sync.Once{}} }
func (g gate) open() { g.once.Do(func() { close(g.ch) }) }

func newGatedEcho() *gatedEcho {
	return &gatedEcho{first: newGate(), repeat: newGate(), byKey: map[string]int{}}
}

func (e *gatedEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	e.mu.Lock()
	e.byKey[key]++
	which := min(e.byKey[key]-1, 1)
	e.waiting[which]++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.waiting[which]--
		e.mu.Unlock()
	}()
	g := []gate{e.first, e.repeat}[which]
	select {
	case <-g.ch:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"key":%q}`, key)
}

// held returns how many first requests and repeats wait behind the gates.
func (e *gatedEcho) held() (first, repeats int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.waiting[0], e.waiting[1]
}

func (e *gatedEcho) counts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.byKey))
	for k, n := range e.byKey {
		out[k] = n
	}
	return out
}

// fenceSession calls the echo endpoint once per run and stores its answer.
func fenceSession(url string) string {
	return fmt.Sprintf(`{"name":"fence","workflows":[{"workflowId":"call","nodes":[
		{"nodeId":"start","type":"MANUAL"},
		{"nodeId":"call","type":"HTTP_REQUEST","config":{"url":%q}},
		{"nodeId":"shape","type":"TRANSFORM","config":{"expression":"{\"key\": payload.body.key}"}},
		{"nodeId":"out","type":"RESULT"}],
		"edges":[{"source":"start","target":"call"},{"source":"call","target":"shape"},{"source":"shape","target":"out"}]}]}`, url)
}

var fenceNodes = []string{"start", "call", "shape", "out"}

// fenceEmitted is what each node emits in one run: a terminal emits nothing.
var fenceEmitted = map[string]int64{"start": 1, "call": 1, "shape": 1, "out": 0}

// engineOwner is the lease owner an instance's engine claims under, from
// its "engine started" log line.
func engineOwner(t *testing.T, s *server) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sc := bufio.NewScanner(strings.NewReader(s.logs.String()))
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		for sc.Scan() {
			var l struct{ Msg, Owner string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "engine started" && l.Owner != "" {
				return l.Owner
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no \"engine started\" log line with an owner")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metricSum sums the samples of the server's /metrics whose series starts
// with prefix, e.g. `yukta_node_results_total{outcome="lost"}` or the
// whole family with `yukta_node_results_total{`.
func metricSum(t *testing.T, s *server, prefix string) float64 {
	t.Helper()
	res, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, b)
	}
	var sum float64
	for l := range strings.Lines(string(b)) {
		series, value, ok := strings.Cut(strings.TrimSpace(l), " ")
		if !ok || !strings.HasPrefix(series, prefix) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		sum += v
	}
	return sum
}

// poll calls cond until it returns true, failing the test after d.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > d {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(began)
}

// leasedItem is a work item and its lease (owner "" when none) at one moment.
type leasedItem struct {
	id, token                int64
	owner, execution, nodeID string
}

// leases lists the work items matching where, in item order.
func leases(t *testing.T, conn *pgx.Conn, where string, args ...any) []leasedItem {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT item_id, coalesce(lease_token, 0), coalesce(lease_owner, ''),
		execution_id::text, node_id FROM work_items WHERE `+where+` ORDER BY item_id`, args...)
	if err != nil {
		t.Fatal(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (leasedItem, error) {
		var it leasedItem
		return it, r.Scan(&it.id, &it.token, &it.owner, &it.execution, &it.nodeID)
	})
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func leasedBy(t *testing.T, conn *pgx.Conn, owner string) []leasedItem {
	t.Helper()
	return leases(t, conn, "lease_owner = $1", owner)
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestFencingStoppedInstanceLosesItsLeases freezes instance A with SIGSTOP
// for twice the lease while each of its workers waits on an HTTP call. B
// must take A's items over within lease + 5 s. A then thaws while B is still
// re-running them: every result A tries to commit must be refused (and
// counted as "lost"), B's must land, and each run must have each transition
// exactly once although the call reached the endpoint twice.
func TestFencingStoppedInstanceLosesItsLeases(t *testing.T) {
	t.Parallel()
	const runs = 24
	echo := newGatedEcho()
	srv := httptest.NewServer(echo)
	defer srv.Close()
	// Never leave a handler blocked when the test fails.
	defer echo.repeat.open()
	defer echo.first.open()
	dsn := pgtest.NewDatabase(t)
	env := []string{fenceConns, "YUKTA_EGRESS_ALLOWED_HOSTS=" + strings.TrimPrefix(srv.URL, "http://")}
	// A's lease sets the takeover time. B has room for all of A's items
	// besides its own, and a longer lease: a late heartbeat on a loaded
	// machine must not hand B's items around too, which would blur what
	// the test counts.
	a := startServer(t, serverOptions{DSN: dsn, Env: append(env, "YUKTA_WORKERS=4", "YUKTA_LEASE="+fenceLease.String())})
	b := startServer(t, serverOptions{DSN: dsn, Env: append(env, "YUKTA_WORKERS=12", "YUKTA_LEASE="+(2*fenceLease).String())})
	ownerA, ownerB := engineOwner(t, a), engineOwner(t, b)
	res, err := a.Client.PutSessionWithBodyWithResponse(context.Background(), "fence", nil, jsonType, strings.NewReader(fenceSession(srv.URL)))
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v %v", err, res)
	}
	ids := make([]string, runs)
	for i := range ids {
		st, err := a.Client.StartExecutionWithResponse(context.Background(), "fence", "call", nil, apiclient.StartRequest{Payload: map[string]any{"i": i}})
		if err != nil || st.JSON201 == nil {
			t.Fatalf("start %d: %v %v", i, err, st)
		}
		ids[i] = st.JSON201.ExecutionId
	}

	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Both instances busy, and every item either holds is a call waiting
	// on the endpoint: nothing is between running and committing.
	var held []leasedItem
	poll(t, 30*time.Second, "both instances holding only waiting calls", func() bool {
		held = leasedBy(t, conn, ownerA)
		ofB := leasedBy(t, conn, ownerB)
		for _, it := range append(held, ofB...) {
			if it.nodeID != "call" {
				return false
			}
		}
		first, _ := echo.held()
		return len(held) > 0 && len(ofB) > 0 && first == len(held)+len(ofB)
	})
	const results, lost = `yukta_node_results_total{`, `yukta_node_results_total{outcome="lost"}`
	handledBefore := metricSum(t, a, results)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	defer func() { _ = a.cmd.Process.Signal(syscall.SIGCONT) }()
	// A cannot have changed anything since: its workers were all waiting.
	if now := leasedBy(t, conn, ownerA); !slices.Equal(now, held) {
		t.Fatalf("A's leases changed as it froze: %v, then %v", held, now)
	}
	ids64 := make([]int64, len(held))
	for i, it := range held {
		ids64[i] = it.id
	}
	// First calls answer now: A's answers wait in its frozen sockets, and B
	// goes on. Re-runs wait, so A thaws while B holds A's old items.
	echo.first.open()

	// Takeover: B claims every item A held, under new tokens.
	took := poll(t, fenceLease+5*time.Second, "B claiming the items A held", func() bool {
		_, repeats := echo.held()
		return repeats == len(held) && queryInt(t, conn, `SELECT count(*) FROM work_items
			WHERE item_id = ANY($1) AND lease_owner = $2 AND state = 'ready'`, ids64, ownerB) == len(held)
	})
	t.Logf("B took A's %d items over %s after A froze (lease %s)", len(held), took.Round(10*time.Millisecond), fenceLease)
	retaken := leases(t, conn, "item_id = ANY($1)", ids64)

	// Keep A frozen for twice the lease in all, as a long GC pause or a
	// stalled VM would; then let it resume and try to commit its results.
	time.Sleep(time.Until(stopped.Add(2 * fenceLease)))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Each stale result refused and counted as lost. More would be results
	// A lost after thawing, which the design allows (a lease that lapsed).
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := metricSum(t, a, lost)
		if got > float64(len(held)) {
			t.Logf("A lost %v results, %d of them the items it held when frozen", got, len(held))
		}
		if got >= float64(len(held)) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("A counted %v lost results 15 s after thawing (and handled %v in all), want the %d items it held",
				got, metricSum(t, a, results)-handledBefore, len(held))
			break
		}
	}
	// A's commit changed nothing: B still holds the items, token for token.
	if now := leases(t, conn, "item_id = ANY($1)", ids64); !slices.Equal(now, retaken) {
		t.Errorf("the leases of A's old items changed when A thawed: %v, then %v", retaken, now)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM work_items WHERE item_id = ANY($1) AND state <> 'ready'`, ids64); n != 0 {
		t.Errorf("%d of the items B was re-running were finished meanwhile", n)
	}

	// B's re-runs answer and commit.
	echo.repeat.open()
	waitEnded(t, conn, ids, 60*time.Second)
	if n := queryInt(t, conn, `SELECT count(*) FROM work_items WHERE item_id = ANY($1) AND (done_by IS DISTINCT FROM $2 OR attempt < 2)`, ids64, ownerB); n != 0 {
		t.Errorf("%d of A's items were not finished by B on a second claim", n)
	}
	for _, id := range ids {
		ex, err := b.Client.GetExecutionWithResponse(context.Background(), "fence", id)
		if err != nil || ex.JSON200 == nil {
			t.Fatalf("get %s: %v", id, err)
		}
		if ex.JSON200.Status != apiclient.ExecutionStatusSUCCESS {
			t.Errorf("run %s: %s (%v)", id, ex.JSON200.Status, deref(ex.JSON200.Error))
		}
		for _, n := range ex.JSON200.Nodes {
			if n.Received != 1 || n.Emitted != fenceEmitted[n.NodeId] || n.Status != apiclient.NodeStatusSUCCESS {
				t.Errorf("run %s node %s: %s received %d emitted %d, want SUCCESS 1/%d", id, n.NodeId, n.Status, n.Received, n.Emitted, fenceEmitted[n.NodeId])
			}
		}
	}
	// One message per node per run, and one completion event per node.
	if n := queryInt(t, conn, `SELECT count(*) FROM (SELECT 1 FROM work_items GROUP BY execution_id, node_id HAVING count(*) <> 1) d`); n != 0 {
		t.Errorf("%d (run, node) pairs have other than one message", n)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM work_items WHERE state = 'done'`); n != runs*len(fenceNodes) {
		t.Errorf("%d done messages, want %d", n, runs*len(fenceNodes))
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM (SELECT 1 FROM events WHERE type = 'NodeStatusChanged' AND data->>'to' = 'SUCCESS'
		GROUP BY execution_id, node_id HAVING count(*) <> 1) d`); n != 0 {
		t.Errorf("%d nodes completed other than once", n)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM events WHERE type = 'NodeStatusChanged' AND data->>'to' = 'SUCCESS'`); n != runs*len(fenceNodes) {
		t.Errorf("%d node completions, want %d", n, runs*len(fenceNodes))
	}

	// The endpoint saw every call, and A's again from B with the same
	// Idempotency-Key: plugin effects are at-least-once by design, so a
	// call sent more often than that is reported, not failed.
	again := map[string]bool{}
	for _, it := range held {
		again[fmt.Sprintf("%s:%s:%d", it.execution, it.nodeID, it.id)] = true
	}
	sent := echo.counts()
	if len(sent) != runs {
		t.Errorf("the endpoint saw %d keys, want %d", len(sent), runs)
	}
	for key, n := range sent {
		want := map[bool]int{true: 2, false: 1}[again[key]]
		switch {
		case n < want:
			t.Errorf("key %s sent %d times, want %d", key, n, want)
		case n > want:
			t.Logf("key %s sent %d times (expected %d): a lease lapsed under load", key, n, want)
		}
	}

	// Every journal verifies, its projection equal to the live status.
	if c := checkJournals(t, dsn, 30*time.Second); c.settled != runs {
		t.Fatalf("%d settled journals, want %d", c.settled, runs)
	}
	assertEveryEventJournaledOnce(t, dsn)
}

// waitEnded polls the database until every execution has ended.
func waitEnded(t *testing.T, conn *pgx.Conn, ids []string, d time.Duration) {
	t.Helper()
	poll(t, d, "every run ending", func() bool {
		return queryInt(t, conn, `SELECT count(*) FROM executions WHERE execution_id = ANY($1::uuid[]) AND ended_at IS NULL`, ids) == 0
	})
}

// frozenCommit finds a transaction that has been idle, open, for longer
// than idle while holding row locks on the engine's tables: an engine
// commit whose instance froze in the middle of it. It returns its backend
// pid and statement, or 0.
func frozenCommit(t *testing.T, conn *pgx.Conn, idle time.Duration) (int, string) {
	t.Helper()
	var pid int
	var query string
	err := conn.QueryRow(context.Background(), `
		SELECT a.pid, left(a.query, 60) FROM pg_stat_activity a
		 WHERE a.datname = current_database() AND a.state = 'idle in transaction'
		   AND a.state_change < now() - $1::interval
		   AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
		                  AND l.relation IN ('work_items'::regclass, 'executions'::regclass)
		                  AND l.mode IN ('RowShareLock', 'RowExclusiveLock'))
		 ORDER BY a.state_change LIMIT 1`, idle).Scan(&pid, &query)
	if err == pgx.ErrNoRows {
		return 0, ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return pid, strings.Join(strings.Fields(query), " ")
}

// TestFencingStoppedMidCommit is the partition case of T19: instance A
// freezes in the middle of an engine commit, its transaction open and its
// row locks held, and stays frozen (a partitioned or dead host never sends
// the COMMIT). B must still take A's work over and finish every run in
// flight within lease + 10 s, and when A thaws each transition must still
// have happened exactly once.
func TestFencingStoppedMidCommit(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	env := []string{"YUKTA_LEASE=" + fenceLease.String(), fenceConns}
	a := startServer(t, serverOptions{DSN: dsn, Env: env})
	b := startServer(t, serverOptions{DSN: dsn, Env: env})
	ownerA := engineOwner(t, a)
	res, err := b.Client.PutSessionWithBodyWithResponse(context.Background(), "load", nil, jsonType, bytes.NewReader(linearSession("load", 10)))
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v %v", err, res)
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// Keep both engines committing: up to 80 runs/s of a 10-node chain,
	// well under what B alone carries, so the runs in flight stay few even
	// on a loaded machine. One starter per instance: an engine claims first
	// what its own instance's starts and commits wake it for. A start sent
	// to A while it is frozen waits, and is abandoned when the load stops.
	load, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var starters sync.WaitGroup
	for _, via := range []*server{a, b} {
		starters.Go(func() {
			pace := time.NewTicker(25 * time.Millisecond)
			defer pace.Stop()
			for load.Err() == nil {
				_, _ = via.Client.StartExecutionWithResponse(load, "load", "w", nil, apiclient.StartRequest{Payload: map[string]any{}})
				select {
				case <-load.Done():
				case <-pace.C:
				}
			}
		})
	}
	poll(t, 30*time.Second, "A committing work", func() bool {
		return queryInt(t, conn, `SELECT count(*) FROM work_items WHERE done_by = $1`, ownerA) >= 100
	})

	// Freeze A at arbitrary moments until one falls inside a commit: a
	// transaction that stays open, with engine row locks, while A is frozen.
	var stopped time.Time
	defer func() { _ = a.cmd.Process.Signal(syscall.SIGCONT) }()
	for try := 1; ; try++ {
		if try > 200 {
			// Also what an idle_in_transaction_session_timeout under 400 ms
			// would look like: the transaction ends before it is seen.
			t.Fatal("A was never seen frozen inside a commit in 200 tries")
		}
		time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
		if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped = time.Now()
		time.Sleep(150 * time.Millisecond) // a live instance's commit takes milliseconds
		if pid, _ := frozenCommit(t, conn, 100*time.Millisecond); pid != 0 {
			// Still idle later on: it is A's (B is running).
			time.Sleep(time.Until(stopped.Add(400 * time.Millisecond)))
			if again, query := frozenCommit(t, conn, 350*time.Millisecond); again == pid {
				t.Logf("A frozen inside a commit on try %d (backend %d, at %q)", try, pid, query)
				break
			}
		}
		if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	stopLoad()
	starters.Wait()
	rows, err := conn.Query(context.Background(), `SELECT execution_id::text FROM executions WHERE ended_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs in flight, %d items leased by A", len(open), len(leasedBy(t, conn, ownerA)))

	// B takes over: A's leases expire, and B's claims, reaps and commits do
	// not wait on A's open transaction.
	deadline := stopped.Add(fenceLease + 10*time.Second)
	for queryInt(t, conn, `SELECT count(*) FROM executions WHERE ended_at IS NULL`) > 0 {
		if time.Now().After(deadline) {
			var blocked string
			_ = conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(DISTINCT left(regexp_replace(query, '\s+', ' ', 'g'), 50), ' | '), '')
				FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&blocked)
			t.Fatalf("%s after A froze inside a commit, %d of %d runs are still in flight and %d items are still leased by A; "+
				"statements waiting on a lock: %s", time.Since(stopped).Round(100*time.Millisecond),
				queryInt(t, conn, `SELECT count(*) FROM executions WHERE ended_at IS NULL`), len(open), len(leasedBy(t, conn, ownerA)), blocked)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("every run ended %s after A froze", time.Since(stopped).Round(10*time.Millisecond))

	// A thaws after twice the lease at least; whatever it then commits must
	// not repeat a transition.
	time.Sleep(time.Until(stopped.Add(2 * fenceLease)))
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := a.waitReady(15 * time.Second); err != nil {
		t.Fatalf("A after thawing: %v", err)
	}
	runs := queryInt(t, conn, `SELECT count(*) FROM executions`)
	if n := queryInt(t, conn, `SELECT count(*) FROM executions WHERE status <> 'SUCCESS'`); n != 0 {
		var why string
		_ = conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(e.status || ' ' || coalesce(n.node_id || ': ' || n.status || ' ' || coalesce(n.error, ''), ''), ' | '), '')
			FROM executions e LEFT JOIN execution_nodes n ON n.execution_id = e.execution_id AND n.status <> 'SUCCESS'
			WHERE e.status <> 'SUCCESS'`).Scan(&why)
		t.Errorf("%d of %d runs did not succeed: %s", n, runs, why)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM (SELECT 1 FROM work_items GROUP BY execution_id, node_id HAVING count(*) <> 1 OR bool_or(state <> 'done')) d`); n != 0 {
		t.Errorf("%d (run, node) pairs have other than one finished message", n)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM (SELECT 1 FROM events WHERE type = 'NodeStatusChanged' AND data->>'to' = 'SUCCESS'
		GROUP BY execution_id, node_id HAVING count(*) <> 1) d`); n != 0 {
		t.Errorf("%d nodes completed other than once", n)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM events WHERE type = 'NodeStatusChanged' AND data->>'to' = 'SUCCESS'`); n != runs*10 {
		t.Errorf("%d node completions, want %d", n, runs*10)
	}
	if c := checkJournals(t, dsn, 30*time.Second); c.settled != runs {
		t.Fatalf("%d settled journals, want %d", c.settled, runs)
	}
	assertEveryEventJournaledOnce(t, dsn)
}
