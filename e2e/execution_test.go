package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// ---------------------------------------------------------------------------
// Helpers shared by execution_test.go and control_test.go.
// ---------------------------------------------------------------------------

// env is one yukta server and the test driving it.
type env struct {
	t   *testing.T
	s   *server
	c   *apiclient.ClientWithResponses
	ctx context.Context
}

// newEnv starts a server on a fresh database; extra are YUKTA_* settings.
func newEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: extra})
	return &env{t: t, s: s, c: s.Client, ctx: context.Background()}
}

// nd is a node of a session document.
func nd(id, typ, config string) string {
	if config == "" {
		config = "{}"
	}
	return fmt.Sprintf(`{"nodeId":%q,"type":%q,"config":%s}`, id, typ, config)
}

// ed is an edge; an empty port means the default one.
func ed(source, target, port string) string {
	if port == "" {
		return fmt.Sprintf(`{"source":%q,"target":%q}`, source, target)
	}
	return fmt.Sprintf(`{"source":%q,"target":%q,"sourcePort":%q}`, source, target, port)
}

func wf(id string, nodes, edges []string) string {
	return fmt.Sprintf(`{"workflowId":%q,"description":"e2e","nodes":[%s],"edges":[%s]}`, id,
		strings.Join(nodes, ","), strings.Join(edges, ","))
}

// line is a workflow whose nodes are chained in order on their default ports.
func line(id string, nodes ...string) string {
	var edges []string
	prev := ""
	for _, n := range nodes {
		var head struct {
			NodeID string `json:"nodeId"`
		}
		if err := json.Unmarshal([]byte(n), &head); err != nil {
			panic(err)
		}
		if prev != "" {
			edges = append(edges, ed(prev, head.NodeID, ""))
		}
		prev = head.NodeID
	}
	return wf(id, nodes, edges)
}

// apply creates or replaces a session made of workflows.
func (e *env) apply(sid string, workflows ...string) {
	e.t.Helper()
	doc := fmt.Sprintf(`{"name":"e2e %s","description":"e2e","initiator":"e2e","workflows":[%s]}`, sid, strings.Join(workflows, ","))
	res, err := e.c.PutSessionWithBodyWithResponse(e.ctx, sid, nil, jsonType, strings.NewReader(doc))
	if err != nil {
		e.t.Fatal(err)
	}
	if res.StatusCode() != http.StatusCreated && res.StatusCode() != http.StatusOK {
		e.t.Fatalf("apply %s: %d %s", sid, res.StatusCode(), res.Body)
	}
}

// start starts a run and returns its id.
func (e *env) start(sid, wid string, payload any) string {
	e.t.Helper()
	res, err := e.c.StartExecutionWithResponse(e.ctx, sid, wid, nil, apiclient.StartRequest{Payload: payload})
	if err != nil {
		e.t.Fatal(err)
	}
	if res.StatusCode() != http.StatusCreated || res.JSON201 == nil {
		e.t.Fatalf("start %s/%s: %d %s", sid, wid, res.StatusCode(), res.Body)
	}
	return res.JSON201.ExecutionId
}

func (e *env) get(sid, eid string) apiclient.Execution {
	e.t.Helper()
	res, err := e.c.GetExecutionWithResponse(e.ctx, sid, eid)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.JSON200 == nil {
		e.t.Fatalf("get execution %s: %d %s", eid, res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

const waitLimit = 15 * time.Second

// waitExec polls the execution until cond holds (or fails after waitLimit).
func (e *env) waitExec(sid, eid, what string, cond func(apiclient.Execution) bool) apiclient.Execution {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		x := e.get(sid, eid)
		if cond(x) {
			return x
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("execution %s: %s did not happen within %s; last state:\n%s", eid, what, waitLimit, describe(x))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) waitStatus(sid, eid string, want apiclient.ExecutionStatus) apiclient.Execution {
	e.t.Helper()
	return e.waitExec(sid, eid, "status "+string(want), func(x apiclient.Execution) bool { return x.Status == want })
}

// waitNode waits until node id satisfies cond.
func (e *env) waitNode(sid, eid, id, what string, cond func(apiclient.ExecutionNode) bool) apiclient.Execution {
	e.t.Helper()
	return e.waitExec(sid, eid, "node "+id+" "+what, func(x apiclient.Execution) bool { return cond(nodeOf(e.t, x, id)) })
}

// steady checks that cond holds on every poll for the whole window d: the
// way to show that something does NOT happen without a bare sleep.
func (e *env) steady(sid, eid, what string, d time.Duration, cond func(apiclient.Execution) bool) apiclient.Execution {
	e.t.Helper()
	end := time.Now().Add(d)
	for {
		x := e.get(sid, eid)
		if !cond(x) {
			e.t.Fatalf("execution %s: expected %s for %s, but it changed:\n%s", eid, what, d, describe(x))
		}
		if time.Now().After(end) {
			return x
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func nodeOf(t *testing.T, x apiclient.Execution, id string) apiclient.ExecutionNode {
	t.Helper()
	for _, n := range x.Nodes {
		if n.NodeId == id {
			return n
		}
	}
	t.Fatalf("execution %s has no node %q", x.ExecutionId, id)
	return apiclient.ExecutionNode{}
}

func describe(x apiclient.Execution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  execution %s status=%s draining=%v error=%q result=%v\n", x.ExecutionId, x.Status, deref(x.Draining), deref(x.Error), x.Result)
	for _, n := range x.Nodes {
		fmt.Fprintf(&b, "  node %-8s %-8s received=%d emitted=%d paused=%v step=%v/%d skipped=%v error=%q\n",
			n.NodeId, n.Status, n.Received, n.Emitted, n.Paused, n.StepMode, deref(n.StepCredits), n.Skipped, deref(n.Error))
	}
	return b.String()
}

// counts returns received/emitted per node.
func counts(x apiclient.Execution) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, n := range x.Nodes {
		out[n.NodeId] = [2]int64{n.Received, n.Emitted}
	}
	return out
}

func statuses(x apiclient.Execution) map[string]apiclient.NodeStatus {
	out := map[string]apiclient.NodeStatus{}
	for _, n := range x.Nodes {
		out[n.NodeId] = n.Status
	}
	return out
}

func (e *env) ctl(sid, eid string, cmd apiclient.ExecutionCommand) *apiclient.ControlExecutionResponse {
	e.t.Helper()
	res, err := e.c.ControlExecutionWithResponse(e.ctx, sid, eid, nil, cmd)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// mustCtl sends an execution command that must be applied (or accepted).
func (e *env) mustCtl(sid, eid string, cmd apiclient.ExecutionCommand) apiclient.CommandResult {
	e.t.Helper()
	res := e.ctl(sid, eid, cmd)
	if res.JSON200 == nil {
		e.t.Fatalf("%s on %s: %d %s", cmd.Action, eid, res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

func (e *env) ctlNode(sid, eid, node string, cmd apiclient.NodeCommand) *apiclient.ControlNodeResponse {
	e.t.Helper()
	res, err := e.c.ControlNodeWithResponse(e.ctx, sid, eid, node, nil, cmd)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) mustCtlNode(sid, eid, node string, cmd apiclient.NodeCommand) apiclient.CommandResult {
	e.t.Helper()
	res := e.ctlNode(sid, eid, node, cmd)
	if res.JSON200 == nil {
		e.t.Fatalf("node %s %s on %s: %d %s", node, cmd.Action, eid, res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

// history lists every execution of a session (all pages).
func (e *env) history(sid string, p apiclient.ListExecutionsParams) []apiclient.ExecutionSummary {
	e.t.Helper()
	var out []apiclient.ExecutionSummary
	for {
		res, err := e.c.ListExecutionsWithResponse(e.ctx, sid, &p)
		if err != nil {
			e.t.Fatal(err)
		}
		if res.JSON200 == nil {
			e.t.Fatalf("history %s: %d %s", sid, res.StatusCode(), res.Body)
		}
		out = append(out, res.JSON200.Executions...)
		if res.JSON200.NextCursor == nil {
			return out
		}
		p.Cursor = res.JSON200.NextCursor
	}
}

func ptr[T any](v T) *T { return &v }

// jsonEqual compares two values as JSON documents.
// sameJSON reports whether got encodes to the same JSON value as want.
func sameJSON(got any, want string) bool {
	b, err := json.Marshal(got)
	if err != nil {
		return false
	}
	var g, w any
	return json.Unmarshal(b, &g) == nil && json.Unmarshal([]byte(want), &w) == nil && reflect.DeepEqual(g, w)
}

func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func problemDetail(body []byte) string {
	var p apiclient.Problem
	_ = json.Unmarshal(body, &p)
	s := deref(p.Detail)
	for _, v := range deref(p.Errors) {
		s += " | " + v.Path + ": " + v.Message
	}
	return s
}

// backend is an HTTP endpoint an HTTP_REQUEST node calls. Requests block
// until the test releases them (or the caller gives up), so a test holds a
// plugin call in flight for as long as it likes.
type backend struct {
	srv     *httptest.Server
	arrived chan string // the Idempotency-Key of each request, as it arrives
	release chan struct{}
	once    sync.Once

	mu        sync.Mutex
	calls     int
	keys      []string
	cancelled int
	completed int
	cancelCh  chan struct{} // one send per request whose context ended
	doneCh    chan struct{} // one send per request answered
	// failFirst closes the connection without an answer for the first
	// failFirst requests (a transport error, which is retried).
	failFirst int
	blocking  bool
}

func newBackend(t *testing.T, blocking bool, failFirst int) *backend {
	b := &backend{arrived: make(chan string, 100), release: make(chan struct{}), cancelCh: make(chan struct{}, 100),
		doneCh: make(chan struct{}, 100), blocking: blocking, failFirst: failFirst}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(func() {
		b.Release()
		b.srv.CloseClientConnections()
		b.srv.Close()
	})
	return b
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	b.mu.Lock()
	b.calls++
	n := b.calls
	b.keys = append(b.keys, r.Header.Get("Idempotency-Key"))
	b.mu.Unlock()
	b.arrived <- r.Header.Get("Idempotency-Key")
	if n <= b.failFirst {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	if b.blocking {
		select {
		case <-b.release:
		case <-r.Context().Done():
			b.mu.Lock()
			b.cancelled++
			b.mu.Unlock()
			b.cancelCh <- struct{}{}
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"ok":true,"call":%d}`, n)
	b.mu.Lock()
	b.completed++
	b.mu.Unlock()
	b.doneCh <- struct{}{}
}

// Release lets every waiting and future request answer.
func (b *backend) Release() { b.once.Do(func() { close(b.release) }) }

func (b *backend) hostPort() string { return strings.TrimPrefix(b.srv.URL, "http://") }

// egressEnv allows the server to call the backends.
func egressEnv(bs ...*backend) string {
	var hosts []string
	for _, b := range bs {
		hosts = append(hosts, b.hostPort())
	}
	return "YUKTA_EGRESS_ALLOWED_HOSTS=" + strings.Join(hosts, ",")
}

func (b *backend) stats() (calls, completed, cancelled int, keys []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls, b.completed, b.cancelled, slices.Clone(b.keys)
}

// await waits for one value on ch.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("%s did not happen within %s", what, waitLimit)
	}
	var zero T
	return zero
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	ID   int64
	Type string
	Data map[string]any
}

// readSSE reads events from an open stream until stop returns true for one
// (included), or the timeout.
func readSSE(t *testing.T, body io.Reader, timeout time.Duration, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	ch := make(chan sseEvent)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur sseEvent
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if cur.Type != "" {
					ch <- cur
				}
				cur = sseEvent{}
			case strings.HasPrefix(l, "id: "):
				cur.ID, _ = strconv.ParseInt(strings.TrimPrefix(l, "id: "), 10, 64)
			case strings.HasPrefix(l, "event: "):
				cur.Type = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &cur.Data)
			}
		}
		errc <- sc.Err()
	}()
	var out []sseEvent
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-ch:
			out = append(out, ev)
			if stop != nil && stop(ev) {
				return out
			}
		case err := <-errc:
			t.Fatalf("event stream ended after %d events: %v", len(out), err)
		case <-deadline:
			return out
		}
	}
}

// ---------------------------------------------------------------------------
// Execution tests.
// ---------------------------------------------------------------------------

const linearWF = "linear"

func linearFlow(id string) string {
	return line(id,
		nd("start", "MANUAL", ""),
		nd("greet", "TRANSFORM", `{"expression":"{\"greeting\": \"hello \" + payload.name}"}`),
		nd("note", "LOG", `{"message":"greeting-built","level":"info"}`),
		nd("out", "RESULT", ""))
}

func TestExecutionLinearRunHistoryAndLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("hist", linearFlow(linearWF),
		line("broken", nd("start", "MANUAL", ""), nd("boom", "FAIL", `{"message":"exploded"}`), nd("out", "RESULT", "")))

	id := e.start("hist", linearWF, map[string]any{"name": "ada"})
	x := e.waitStatus("hist", id, apiclient.ExecutionStatusSUCCESS)
	if !jsonEqual(t, x.Result, `{"greeting":"hello ada"}`) {
		t.Fatalf("result = %s, want the TRANSFORM's output", mustJSON(x.Result))
	}
	want := map[string][2]int64{"start": {1, 1}, "greet": {1, 1}, "note": {1, 1}, "out": {1, 0}}
	if got := counts(x); !reflect.DeepEqual(got, want) {
		t.Fatalf("received/emitted per node = %v, want %v", got, want)
	}
	for _, n := range x.Nodes {
		if n.Status != apiclient.NodeStatusSUCCESS {
			t.Errorf("node %s is %s, want SUCCESS", n.NodeId, n.Status)
		}
	}
	if x.EndedAt == nil || x.Actor == "" || x.Channel != "rest" {
		t.Errorf("execution lacks endedAt/actor/channel: %+v", x)
	}

	// Three more successes and one failure make a history of five.
	ids := []string{id}
	for i := range 3 {
		ids = append(ids, e.start("hist", linearWF, map[string]any{"name": fmt.Sprint("n", i)}))
	}
	failed := e.start("hist", "broken", map[string]any{})
	for _, i := range ids {
		e.waitStatus("hist", i, apiclient.ExecutionStatusSUCCESS)
	}
	e.waitStatus("hist", failed, apiclient.ExecutionStatusFAILURE)

	all := e.history("hist", apiclient.ListExecutionsParams{})
	if len(all) != 5 {
		t.Fatalf("history has %d executions, want 5", len(all))
	}
	onlyFailed := e.history("hist", apiclient.ListExecutionsParams{Status: ptr(apiclient.ExecutionStatusFAILURE)})
	if len(onlyFailed) != 1 || onlyFailed[0].ExecutionId != failed || onlyFailed[0].WorkflowId != "broken" {
		t.Fatalf("status=FAILURE lists %+v, want only %s", onlyFailed, failed)
	}
	byWF := e.history("hist", apiclient.ListExecutionsParams{WorkflowId: ptr(linearWF), Status: ptr(apiclient.ExecutionStatusSUCCESS)})
	if len(byWF) != 4 {
		t.Fatalf("workflowId+status filter lists %d, want 4", len(byWF))
	}
	// Paging: pages of two, following nextCursor, give every run exactly once.
	first, err := e.c.ListExecutionsWithResponse(e.ctx, "hist", &apiclient.ListExecutionsParams{Limit: ptr(2)})
	if err != nil || first.JSON200 == nil || len(first.JSON200.Executions) != 2 || first.JSON200.NextCursor == nil {
		t.Fatalf("first page: %v %s, want 2 executions and a cursor", err, first.Body)
	}
	paged := e.history("hist", apiclient.ListExecutionsParams{Limit: ptr(2)})
	var pagedIDs, allIDs []string
	for i := range paged {
		pagedIDs = append(pagedIDs, paged[i].ExecutionId)
		allIDs = append(allIDs, all[i].ExecutionId)
	}
	if !slices.Equal(pagedIDs, allIDs) {
		t.Fatalf("paged history %v differs from the single page %v", pagedIDs, allIDs)
	}
	if all[0].ExecutionId != failed {
		t.Errorf("history is not newest first: %v (the failed run started last)", allIDs)
	}
	for i := 1; i < len(all); i++ {
		if all[i].StartedAt.After(all[i-1].StartedAt) {
			t.Errorf("history not ordered newest first at %d", i)
		}
	}

	// Logs: the whole tail, then a filter.
	logs, err := e.c.GetExecutionLogsWithResponse(e.ctx, "hist", id, &apiclient.GetExecutionLogsParams{})
	if err != nil || logs.JSON200 == nil {
		t.Fatalf("logs: %v %s", err, logs.Body)
	}
	lp := logs.JSON200
	if lp.ReturnedLines != len(lp.Lines) || lp.TotalMatched != int64(len(lp.Lines)) || !lp.Complete || lp.ExecutionId != id {
		t.Fatalf("unfiltered logs: total=%d returned=%d lines=%d complete=%v", lp.TotalMatched, lp.ReturnedLines, len(lp.Lines), lp.Complete)
	}
	found := false
	for i, l := range lp.Lines {
		if l.NodeId == "note" && l.Message == "greeting-built" && l.Level == "info" {
			found = true
		}
		if i > 0 && l.Seq <= lp.Lines[i-1].Seq {
			t.Errorf("log lines out of order: %v", lp.Lines)
		}
	}
	if !found {
		t.Fatalf("the LOG node's line is missing: %+v", lp.Lines)
	}
	filtered, err := e.c.GetExecutionLogsWithResponse(e.ctx, "hist", id, &apiclient.GetExecutionLogsParams{FilterPattern: ptr("greet.*built")})
	if err != nil || filtered.JSON200 == nil {
		t.Fatalf("filtered logs: %v %s", err, filtered.Body)
	}
	if f := filtered.JSON200; f.TotalMatched != 1 || f.ReturnedLines != 1 || len(f.Lines) != 1 || f.Lines[0].Message != "greeting-built" {
		t.Fatalf("filter greet.*built: total=%d returned=%d lines=%+v, want exactly the LOG line", f.TotalMatched, f.ReturnedLines, f.Lines)
	}
	none, _ := e.c.GetExecutionLogsWithResponse(e.ctx, "hist", id, &apiclient.GetExecutionLogsParams{FilterPattern: ptr("^no such line$")})
	if none.JSON200 == nil || none.JSON200.TotalMatched != 0 || none.JSON200.ReturnedLines != 0 {
		t.Fatalf("a filter matching nothing: %s", none.Body)
	}
	// The failed run logs its error, and a tail of one returns the newest line
	// while totalMatched still counts them all.
	fl, _ := e.c.GetExecutionLogsWithResponse(e.ctx, "hist", failed, &apiclient.GetExecutionLogsParams{TailLines: ptr(1)})
	if fl.JSON200 == nil || fl.JSON200.ReturnedLines != 1 || fl.JSON200.TotalMatched < 1 {
		t.Fatalf("tail of one: %s", fl.Body)
	}
	fe, _ := e.c.GetExecutionLogsWithResponse(e.ctx, "hist", failed, &apiclient.GetExecutionLogsParams{FilterPattern: ptr("exploded")})
	if fe.JSON200 == nil || fe.JSON200.TotalMatched < 1 || fe.JSON200.Lines[0].Level != "error" || fe.JSON200.Lines[0].NodeId != "boom" {
		t.Fatalf("the failure is not in the log as an error of node boom: %s", fe.Body)
	}
}

func TestExecutionIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("idem", linearFlow(linearWF))
	params := &apiclient.StartExecutionParams{IdempotencyKey: ptr("order-42")}
	first, err := e.c.StartExecutionWithResponse(e.ctx, "idem", linearWF, params, apiclient.StartRequest{Payload: map[string]any{"name": "a"}})
	if err != nil || first.StatusCode() != http.StatusCreated || first.JSON201 == nil {
		t.Fatalf("first start: %v %d %s, want 201", err, first.StatusCode(), first.Body)
	}
	again, err := e.c.StartExecutionWithResponse(e.ctx, "idem", linearWF, params, apiclient.StartRequest{Payload: map[string]any{"name": "a"}})
	if err != nil || again.StatusCode() != http.StatusOK || again.JSON200 == nil {
		t.Fatalf("second start with the same key: %v %d %s, want 200", err, again.StatusCode(), again.Body)
	}
	// The same key with another payload is refused: returning the first
	// run would hide that this payload started nothing.
	differs, _ := e.c.StartExecutionWithResponse(e.ctx, "idem", linearWF, params, apiclient.StartRequest{Payload: map[string]any{"name": "b"}})
	if differs.StatusCode() != http.StatusConflict || !strings.Contains(problemDetail(differs.Body), first.JSON201.ExecutionId) {
		t.Fatalf("the key with another payload: %d %s, want 409 naming the first execution", differs.StatusCode(), differs.Body)
	}
	if again.JSON200.ExecutionId != first.JSON201.ExecutionId {
		t.Fatalf("same key gave two executions: %s and %s", first.JSON201.ExecutionId, again.JSON200.ExecutionId)
	}
	x := e.waitStatus("idem", first.JSON201.ExecutionId, apiclient.ExecutionStatusSUCCESS)
	if !jsonEqual(t, x.Result, `{"greeting":"hello a"}`) {
		t.Fatalf("result %s: the repeated start must not change the run", mustJSON(x.Result))
	}
	if h := e.history("idem", apiclient.ListExecutionsParams{}); len(h) != 1 {
		t.Fatalf("history has %d executions after two starts with one key, want 1", len(h))
	}
	// Another key is another run.
	other, _ := e.c.StartExecutionWithResponse(e.ctx, "idem", linearWF, &apiclient.StartExecutionParams{IdempotencyKey: ptr("order-43")},
		apiclient.StartRequest{Payload: map[string]any{"name": "c"}})
	if other.StatusCode() != http.StatusCreated || other.JSON201.ExecutionId == first.JSON201.ExecutionId {
		t.Fatalf("a new key: %d %s, want a new execution", other.StatusCode(), other.Body)
	}
}

func TestExecutionFailFast(t *testing.T) {
	t.Parallel()
	b := newBackend(t, true, 0) // holds its caller until the test ends
	e := newEnv(t, egressEnv(b))
	// start fans out to a node that fails (after a 300 ms retry, so the
	// other branches are under way), to a slow branch whose message waits in
	// a DELAY, and to an HTTP call in flight: the failure must drop the first
	// and cancel the second.
	e.apply("ff", wf("w",
		[]string{nd("start", "MANUAL", ""),
			nd("boom", "FAIL", `{"message":"disk on fire","retry":{"maxAttempts":2,"backoff":"300ms"}}`),
			nd("wait", "DELAY", `{"duration":"1s"}`), nd("after", "LOG", ""), nd("out", "RESULT", ""),
			nd("call", "HTTP_REQUEST", fmt.Sprintf(`{"url":"%s/slow"}`, b.srv.URL)), nd("called", "RESULT", "")},
		[]string{ed("start", "boom", ""), ed("start", "wait", ""), ed("wait", "after", ""), ed("after", "out", ""),
			ed("start", "call", ""), ed("call", "called", "")}))
	began := time.Now()
	id := e.start("ff", "w", map[string]any{"v": 1})
	await(t, b.arrived, "the HTTP call to start")
	x := e.waitStatus("ff", id, apiclient.ExecutionStatusFAILURE)
	if !strings.Contains(deref(x.Error), "disk on fire") || !strings.Contains(deref(x.Error), "boom") {
		t.Fatalf("execution error %q does not name the node and its error", deref(x.Error))
	}
	boom := nodeOf(t, x, "boom")
	if boom.Status != apiclient.NodeStatusFAILURE || !strings.Contains(deref(boom.Error), "disk on fire") {
		t.Fatalf("node boom: %s %q, want FAILURE with the error", boom.Status, deref(boom.Error))
	}
	if x.EndedAt == nil {
		t.Fatal("a failed execution has no endedAt")
	}
	await(t, b.cancelCh, "the in-flight HTTP call to be cancelled by the failure")
	// Past the delay, nothing downstream of the dropped message ran and the
	// execution stayed FAILURE.
	x = e.steady("ff", id, "the slow branch to stay dropped", time.Until(began.Add(1800*time.Millisecond)), func(x apiclient.Execution) bool {
		return x.Status == apiclient.ExecutionStatusFAILURE && nodeOf(t, x, "after").Received == 0 && nodeOf(t, x, "out").Received == 0 &&
			nodeOf(t, x, "wait").Received == 0 && nodeOf(t, x, "called").Received == 0
	})
	for _, n := range x.Nodes {
		if n.Status == apiclient.NodeStatusRUNNING || n.Status == apiclient.NodeStatusPENDING || n.Status == apiclient.NodeStatusWAITING {
			t.Errorf("node %s is still %s in a failed execution", n.NodeId, n.Status)
		}
	}
	if calls, done, cancelled, _ := b.stats(); calls != 1 || done != 0 || cancelled != 1 {
		t.Fatalf("backend: %d calls, %d answered, %d cancelled; want the one call cancelled", calls, done, cancelled)
	}
}

func TestExecutionRetrySucceedsOnThirdAttempt(t *testing.T) {
	t.Parallel()
	b := newBackend(t, false, 2) // the first two calls lose their connection
	e := newEnv(t, egressEnv(b))
	e.apply("retry", line("w",
		nd("start", "MANUAL", ""),
		nd("call", "HTTP_REQUEST", fmt.Sprintf(`{"url":"%s/orders","method":"POST","retry":{"maxAttempts":3,"backoff":"10ms"}}`, b.srv.URL)),
		nd("out", "RESULT", `{"expression":"payload.body"}`)))
	id := e.start("retry", "w", map[string]any{"sku": "A-1"})
	x := e.waitStatus("retry", id, apiclient.ExecutionStatusSUCCESS)
	calls, _, _, keys := b.stats()
	if calls != 3 {
		t.Fatalf("the backend saw %d calls, want 3 (two failed attempts and a success)", calls)
	}
	if keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] {
		t.Fatalf("Idempotency-Key headers %q, want one stable non-empty key", keys)
	}
	if !strings.Contains(keys[0], id) {
		t.Errorf("Idempotency-Key %q does not derive from the execution id %s", keys[0], id)
	}
	if !jsonEqual(t, x.Result, `{"ok":true,"call":3}`) {
		t.Fatalf("result %s, want the third answer", mustJSON(x.Result))
	}
	if c := nodeOf(t, x, "call"); c.Received != 1 || c.Emitted != 1 || c.Status != apiclient.NodeStatusSUCCESS {
		t.Fatalf("node call: %+v, want one message received and emitted", c)
	}
	lg, _ := e.c.GetExecutionLogsWithResponse(e.ctx, "retry", id, &apiclient.GetExecutionLogsParams{FilterPattern: ptr(`attempt \d of 3 failed`)})
	if lg.JSON200 == nil || lg.JSON200.TotalMatched != 2 {
		t.Fatalf("want two logged failed attempts: %s", lg.Body)
	}

	// Without enough attempts the same failure fails the run.
	b2 := newBackend(t, false, 5)
	e2 := newEnv(t, egressEnv(b2))
	e2.apply("retry", line("w",
		nd("start", "MANUAL", ""),
		nd("call", "HTTP_REQUEST", fmt.Sprintf(`{"url":"%s/orders","retry":{"maxAttempts":2,"backoff":"10ms"}}`, b2.srv.URL)),
		nd("out", "RESULT", "")))
	id2 := e2.start("retry", "w", nil)
	x2 := e2.waitStatus("retry", id2, apiclient.ExecutionStatusFAILURE)
	if calls, _, _, _ := b2.stats(); calls != 2 {
		t.Fatalf("maxAttempts 2: backend saw %d calls", calls)
	}
	if nodeOf(t, x2, "call").Status != apiclient.NodeStatusFAILURE {
		t.Fatalf("node call should have failed:\n%s", describe(x2))
	}
}

func TestExecutionRouterTakesOneBranch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("route", wf("w",
		[]string{nd("start", "MANUAL", ""),
			nd("route", "ROUTER", `{"routes":[{"port":"big","condition":"payload.size == \"big\""},{"port":"small","condition":"payload.size == \"small\""}],"fallback":false}`),
			nd("big-log", "LOG", `{"message":"went big"}`), nd("small-log", "LOG", `{"message":"went small"}`),
			nd("big-out", "RESULT", ""), nd("small-out", "RESULT", "")},
		[]string{ed("start", "route", ""), ed("route", "big-log", "big"), ed("route", "small-log", "small"),
			ed("big-log", "big-out", ""), ed("small-log", "small-out", "")}))
	id := e.start("route", "w", map[string]any{"size": "big", "n": 7})
	x := e.waitStatus("route", id, apiclient.ExecutionStatusSUCCESS)
	st := statuses(x)
	want := map[string]apiclient.NodeStatus{"start": "SUCCESS", "route": "SUCCESS", "big-log": "SUCCESS", "big-out": "SUCCESS",
		"small-log": "SKIPPED", "small-out": "SKIPPED"}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("node statuses %v, want %v", st, want)
	}
	if nodeOf(t, x, "small-log").Received != 0 || nodeOf(t, x, "big-log").Received != 1 {
		t.Fatalf("wrong branch taken:\n%s", describe(x))
	}
	if !jsonEqual(t, x.Result, `{"size":"big","n":7}`) {
		t.Fatalf("result %s, want the routed payload unchanged", mustJSON(x.Result))
	}
	// The other input takes the other branch.
	id2 := e.start("route", "w", map[string]any{"size": "small"})
	x2 := e.waitStatus("route", id2, apiclient.ExecutionStatusSUCCESS)
	if nodeOf(t, x2, "big-log").Status != apiclient.NodeStatusSKIPPED || nodeOf(t, x2, "small-out").Received != 1 {
		t.Fatalf("small payload:\n%s", describe(x2))
	}
}

func TestExecutionInputRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("ask", wf("w",
		[]string{nd("start", "MANUAL", ""), nd("ask", "INPUT_REQUEST", `{"prompt":"Refund order 7?","mode":"approval"}`),
			nd("yes", "RESULT", ""), nd("no", "RESULT", "")},
		[]string{ed("start", "ask", ""), ed("ask", "yes", "approved"), ed("ask", "no", "rejected")}))
	id := e.start("ask", "w", map[string]any{"order": 7})
	x := e.waitNode("ask", id, "ask", "WAITING", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusWAITING })
	if x.Status != apiclient.ExecutionStatusRUNNING {
		t.Fatalf("execution waiting for input is %s, want RUNNING", x.Status)
	}
	// It keeps waiting: nothing moves on its own.
	e.steady("ask", id, "the run to wait for its answer", 300*time.Millisecond, func(x apiclient.Execution) bool {
		return x.Status == apiclient.ExecutionStatusRUNNING && nodeOf(t, x, "yes").Received == 0 && nodeOf(t, x, "no").Received == 0
	})
	list, err := e.c.ListInputsWithResponse(e.ctx, &apiclient.ListInputsParams{SessionId: ptr("ask")})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Inputs) != 1 {
		t.Fatalf("open inputs: %v %s, want one", err, list.Body)
	}
	in := list.JSON200.Inputs[0]
	if in.ExecutionId != id || in.NodeId != "ask" || in.Prompt != "Refund order 7?" || in.Status != apiclient.InputStatusOpen {
		t.Fatalf("input %+v", in)
	}
	var inputID openapi_types.UUID
	if err := inputID.UnmarshalText([]byte(in.InputId)); err != nil {
		t.Fatal(err)
	}
	ans, err := e.c.AnswerInputWithResponse(e.ctx, inputID, nil, apiclient.AnswerRequest{Answer: map[string]any{"approved": true, "comment": "ok"}})
	if err != nil || ans.JSON200 == nil || ans.JSON200.Status != apiclient.InputStatusAnswered {
		t.Fatalf("answer: %v %d %s", err, ans.StatusCode(), ans.Body)
	}
	x = e.waitStatus("ask", id, apiclient.ExecutionStatusSUCCESS)
	if nodeOf(t, x, "yes").Received != 1 || nodeOf(t, x, "no").Status != apiclient.NodeStatusSKIPPED {
		t.Fatalf("approved answer did not take the approved port:\n%s", describe(x))
	}
	res, _ := x.Result.(map[string]any)
	appr, _ := res["approval"].(map[string]any)
	if res["order"] != float64(7) || appr["approved"] != true || appr["comment"] != "ok" {
		t.Fatalf("result %s, want the payload with the approval merged", mustJSON(x.Result))
	}
	again, err := e.c.AnswerInputWithResponse(e.ctx, inputID, nil, apiclient.AnswerRequest{Answer: map[string]any{"approved": false}})
	if err != nil || again.StatusCode() != http.StatusConflict || !strings.Contains(problemDetail(again.Body), "answered") {
		t.Fatalf("second answer: %v %d %s, want 409 saying it was answered", err, again.StatusCode(), again.Body)
	}
	open, _ := e.c.ListInputsWithResponse(e.ctx, &apiclient.ListInputsParams{SessionId: ptr("ask")})
	if open.JSON200 == nil || len(open.JSON200.Inputs) != 0 {
		t.Fatalf("answered input still listed as open: %s", open.Body)
	}
}

func TestExecutionWebhookStartsRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const secret = "0123456789abcdef-shared"
	e.apply("hooks",
		line("open", nd("hook", "WEBHOOK", ""), nd("out", "RESULT", "")),
		line("signed", nd("hook", "WEBHOOK", fmt.Sprintf(`{"secret":%q}`, secret)), nd("out", "RESULT", "")))
	body := []byte(`{"order":42,"items":["a","b"]}`)
	res, err := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "open", nil, jsonType, bytes.NewReader(body))
	if err != nil || res.StatusCode() != http.StatusCreated || res.JSON201 == nil {
		t.Fatalf("webhook: %v %d %s, want 201", err, res.StatusCode(), res.Body)
	}
	x := e.waitStatus("hooks", res.JSON201.ExecutionId, apiclient.ExecutionStatusSUCCESS)
	if !jsonEqual(t, x.Result, string(body)) || x.Channel != "webhook" {
		t.Fatalf("webhook run: result %s channel %q, want the body as payload", mustJSON(x.Result), x.Channel)
	}

	bad, err := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "signed",
		&apiclient.PostWebhookParams{XYuktaSignature: ptr("sha256=" + strings.Repeat("00", 32))}, jsonType, bytes.NewReader(body))
	if err != nil || bad.StatusCode() != http.StatusUnauthorized || !strings.Contains(problemDetail(bad.Body), "X-Yukta-Signature") {
		t.Fatalf("bad signature: %v %d %s, want 401 naming the header", err, bad.StatusCode(), bad.Body)
	}
	missing, _ := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "signed", nil, jsonType, bytes.NewReader(body))
	if missing.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("no signature: %d %s, want 401", missing.StatusCode(), missing.Body)
	}
	// A manual start must not feed the WEBHOOK trigger: that would run the
	// workflow on a payload no signature vouches for.
	forged, err := e.c.StartExecutionWithResponse(e.ctx, "hooks", "signed", nil, apiclient.StartRequest{Payload: map[string]any{"order": 1}})
	if err != nil || forged.StatusCode() != http.StatusConflict || !strings.Contains(problemDetail(forged.Body), "hook (WEBHOOK)") {
		t.Fatalf("manual start of a webhook-only workflow: %v %d %s, want 409 naming its trigger", err, forged.StatusCode(), forged.Body)
	}
	if h := e.history("hooks", apiclient.ListExecutionsParams{WorkflowId: ptr("signed")}); len(h) != 0 {
		t.Fatalf("refused webhooks and manual starts started %d executions", len(h))
	}
	// The first scheme signed the body alone, so a captured request could
	// be replayed for ever: such a signature is refused now.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	bodyOnly := "sha256=" + hex.EncodeToString(m.Sum(nil))
	now := strconv.FormatInt(time.Now().Unix(), 10)
	if old, _ := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "signed", &apiclient.PostWebhookParams{XYuktaSignature: &bodyOnly, XYuktaTimestamp: &now},
		jsonType, bytes.NewReader(body)); old.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("a body-only signature: %d %s, want 401", old.StatusCode(), old.Body)
	}
	// A delivery signed 6 minutes ago is outside the 5-minute window.
	lateTS := strconv.FormatInt(time.Now().Add(-6*time.Minute).Unix(), 10)
	lateSig := webhookSignature(secret, lateTS, body)
	if late, _ := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "signed", &apiclient.PostWebhookParams{XYuktaSignature: &lateSig, XYuktaTimestamp: &lateTS},
		jsonType, bytes.NewReader(body)); late.StatusCode() != http.StatusUnauthorized || !strings.Contains(problemDetail(late.Body), "X-Yukta-Timestamp") {
		t.Fatalf("a late timestamp: %d %s, want 401 naming the timestamp", late.StatusCode(), late.Body)
	}
	sig := webhookSignature(secret, now, body)
	good, err := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "signed", &apiclient.PostWebhookParams{XYuktaSignature: &sig, XYuktaTimestamp: &now}, jsonType, bytes.NewReader(body))
	if err != nil || good.StatusCode() != http.StatusCreated || good.JSON201 == nil {
		t.Fatalf("signed webhook: %v %d %s, want 201", err, good.StatusCode(), good.Body)
	}
	// The same signed request again is a replay: refused, nothing started.
	replayed, _ := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "signed", &apiclient.PostWebhookParams{XYuktaSignature: &sig, XYuktaTimestamp: &now}, jsonType, bytes.NewReader(body))
	if replayed.StatusCode() != http.StatusConflict || !strings.Contains(problemDetail(replayed.Body), "already accepted") {
		t.Fatalf("a replayed webhook: %d %s, want 409", replayed.StatusCode(), replayed.Body)
	}
	x = e.waitStatus("hooks", good.JSON201.ExecutionId, apiclient.ExecutionStatusSUCCESS)
	if !jsonEqual(t, x.Result, string(body)) {
		t.Fatalf("signed run result %s", mustJSON(x.Result))
	}
	// The signature covers the exact bytes: the same signature on another body fails.
	tampered, _ := e.c.PostWebhookWithBodyWithResponse(e.ctx, "hooks", "signed", &apiclient.PostWebhookParams{XYuktaSignature: &sig, XYuktaTimestamp: &now}, jsonType,
		bytes.NewReader([]byte(`{"order":43,"items":["a","b"]}`)))
	if tampered.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("tampered body: %d, want 401", tampered.StatusCode())
	}
	if h := e.history("hooks", apiclient.ListExecutionsParams{WorkflowId: ptr("signed")}); len(h) != 1 {
		t.Fatalf("signed workflow has %d executions, want 1", len(h))
	}
}

// webhookSignature signs a webhook delivery as docs/webhooks.md says.
func webhookSignature(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestExecutionEventStreamAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("sse", linearFlow(linearWF))
	id := e.start("sse", linearWF, map[string]any{"name": "sse"})

	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	resp, err := e.c.StreamExecutionEvents(ctx, "sse", id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	isEnd := func(ev sseEvent) bool {
		return ev.Type == "ExecutionStatusChanged" && ev.Data["data"].(map[string]any)["to"] == "SUCCESS"
	}
	evs := readSSE(t, resp.Body, waitLimit, isEnd)
	cancel()
	if len(evs) < 3 || evs[0].Type != "ExecutionStarted" || !isEnd(evs[len(evs)-1]) {
		t.Fatalf("stream %v, want ExecutionStarted … ExecutionStatusChanged(SUCCESS)", eventTypes(evs))
	}
	nodeDone := map[string]bool{}
	seen := map[int64]bool{}
	for _, ev := range evs {
		// Ids are unique; the stream is in commit order, which is what
		// Last-Event-ID resumes from.
		if seen[ev.ID] || ev.ID <= 0 {
			t.Fatalf("event id %d repeated or missing: %v", ev.ID, eventTypes(evs))
		}
		seen[ev.ID] = true
		if ev.Data["executionId"] != id || ev.Data["seq"] != float64(ev.ID) || ev.Data["type"] != ev.Type {
			t.Fatalf("envelope %v does not match its record (id %d, type %s)", ev.Data, ev.ID, ev.Type)
		}
		if ev.Type == "NodeStatusChanged" && ev.Data["data"].(map[string]any)["to"] == "SUCCESS" {
			nodeDone[ev.Data["nodeId"].(string)] = true
		}
	}
	if len(nodeDone) != 4 {
		t.Fatalf("NodeStatusChanged(SUCCESS) for %v, want all four nodes", nodeDone)
	}

	// Resume after the second event: the rest arrives, without repeats.
	ctx2, cancel2 := context.WithCancel(e.ctx)
	defer cancel2()
	resp2, err := e.c.StreamExecutionEvents(ctx2, "sse", id, &apiclient.StreamExecutionEventsParams{LastEventID: ptr(strconv.FormatInt(evs[1].ID, 10))})
	if err != nil || resp2.StatusCode != http.StatusOK {
		t.Fatalf("resume: %v", err)
	}
	defer resp2.Body.Close()
	rest := readSSE(t, resp2.Body, waitLimit, isEnd)
	cancel2()
	if !slices.EqualFunc(rest, evs[2:], func(a, b sseEvent) bool { return a.ID == b.ID && a.Type == b.Type }) {
		t.Fatalf("resumed stream %v, want %v", eventTypes(rest), eventTypes(evs[2:]))
	}

	// Resuming after the last event delivers nothing of that run again.
	ctx3, cancel3 := context.WithCancel(e.ctx)
	defer cancel3()
	resp3, err := e.c.StreamExecutionEvents(ctx3, "sse", id, &apiclient.StreamExecutionEventsParams{LastEventID: ptr(strconv.FormatInt(evs[len(evs)-1].ID, 10))})
	if err != nil || resp3.StatusCode != http.StatusOK {
		t.Fatalf("resume at end: %v", err)
	}
	defer resp3.Body.Close()
	if more := readSSE(t, resp3.Body, 400*time.Millisecond, nil); len(more) != 0 {
		t.Fatalf("resuming after the last event repeated %v", eventTypes(more))
	}
}

func eventTypes(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%d:%s", e.ID, e.Type))
	}
	return out
}

func TestExecutionNotFoundIsTheSameForForeignIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply("mine", linearFlow(linearWF))
	e.apply("theirs", linearFlow(linearWF))
	foreign := e.start("theirs", linearWF, map[string]any{"name": "x"})
	e.waitStatus("theirs", foreign, apiclient.ExecutionStatusSUCCESS)
	const unknown = "5b0c8e7e-0f7e-4c1a-9d7e-3f2a1b0c9d8e"

	type probe struct {
		name, method, path string
		body               []byte
	}
	probes := func(id string) []probe {
		base := "/api/sessions/mine/executions/" + id
		return []probe{
			{"status", "GET", base, nil},
			{"logs", "GET", base + "/logs", nil},
			{"events", "GET", base + "/events", nil},
			{"control", "POST", base + "/control", []byte(`{"action":"PAUSE"}`)},
			{"node control", "POST", base + "/nodes/out/control", []byte(`{"action":"PAUSE"}`)},
		}
	}
	normalize := func(b []byte, id string) string {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("not JSON: %s", b)
		}
		delete(m, "instance")
		out, _ := json.Marshal(m)
		return strings.ReplaceAll(string(out), id, "<id>")
	}
	pf, pu := probes(foreign), probes(unknown)
	for i := range pf {
		ct := ""
		if pf[i].body != nil {
			ct = jsonType
		}
		rf, bf := e.s.do(t, pf[i].method, pf[i].path, ct, pf[i].body)
		ru, bu := e.s.do(t, pu[i].method, pu[i].path, ct, pu[i].body)
		if rf.StatusCode != http.StatusNotFound || ru.StatusCode != http.StatusNotFound {
			t.Errorf("%s: foreign %d %s / unknown %d %s, want 404 both", pf[i].name, rf.StatusCode, bf, ru.StatusCode, bu)
			continue
		}
		if nf, nu := normalize(bf, foreign), normalize(bu, unknown); nf != nu {
			t.Errorf("%s: foreign and unknown ids answer differently:\n  %s\n  %s", pf[i].name, nf, nu)
		}
		if strings.Contains(string(bf), "theirs") {
			t.Errorf("%s: the 404 leaks the owning session: %s", pf[i].name, bf)
		}
	}
	// The foreign run was not touched by the refused commands.
	if x := e.get("theirs", foreign); x.Status != apiclient.ExecutionStatusSUCCESS || len(e.history("mine", apiclient.ListExecutionsParams{})) != 0 {
		t.Fatalf("refused probes changed something: %s", describe(x))
	}
	// The generated client sees the same problem.
	got, err := e.c.GetExecutionWithResponse(e.ctx, "mine", foreign)
	if err != nil || got.ApplicationproblemJSON404 == nil || !strings.Contains(deref(got.ApplicationproblemJSON404.Detail), "GET /api/sessions/{sessionId}/executions") {
		t.Fatalf("404 does not name the next call: %v %s", err, got.Body)
	}
}
