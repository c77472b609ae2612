package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api"
	"github.com/yukta/yukta/api/apiclient"
)

// The keys of the access tests: one per role, and an ADMIN limited to the
// session "alpha". Each is long enough for the key file's rules.
var testKeys = map[string]string{
	"viewer":   "viewer-secret-0123456789abcdef",
	"operator": "operator-secret-0123456789abcdef",
	"admin":    "admin-secret-0123456789abcdef",
	"limited":  "limited-secret-0123456789abcdef",
	"worker":   "worker-secret-0123456789abcdef",   // WORKER, every queue
	"worker-q": "worker-q-secret-0123456789abcdef", // WORKER, queues build and deploy
}

func writeKeyFile(t *testing.T) string {
	t.Helper()
	body := "# name  role  [sessions]  secret\n" +
		"viewer   VIEWER   " + testKeys["viewer"] + "\n" +
		"operator OPERATOR " + testKeys["operator"] + "\n" +
		"admin    ADMIN    " + testKeys["admin"] + "\n" +
		"limited  ADMIN    sessions=alpha " + testKeys["limited"] + "\n" +
		"worker   WORKER   " + testKeys["worker"] + "\n" +
		"worker-q WORKER   queues=build,deploy " + testKeys["worker-q"] + "\n"
	p := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// keyedClient is the generated client sending key as a bearer token.
func keyedClient(t *testing.T, s *server, key string) *apiclient.ClientWithResponses {
	t.Helper()
	c, err := apiclient.NewClientWithResponses(s.URL, apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// accessEnv is a server with the test keys on a database the test can count
// rows in, with two sessions ("alpha", which the limited key may see, and
// "beta") that each have one finished execution.
type accessEnv struct {
	*env
	db    *pgxpool.Pool
	execs map[string]string // session -> a finished execution
}

func newAccessEnv(t *testing.T, extra ...string) *accessEnv {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: append([]string{"YUKTA_API_KEYS=" + writeKeyFile(t)}, extra...)})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := &accessEnv{env: &env{t: t, s: s, c: keyedClient(t, s, testKeys["admin"]), ctx: context.Background()}, db: db, execs: map[string]string{}}
	for _, sid := range []string{"alpha", "beta"} {
		e.apply(sid, wf("wf", []string{nd("start", "MANUAL", ""), nd("log", "LOG", `{"message":"hello"}`)}, []string{ed("start", "log", "")}))
		e.execs[sid] = e.start(sid, "wf", map[string]any{"n": 1})
		e.waitStatus(sid, e.execs[sid], apiclient.ExecutionStatusSUCCESS)
	}
	return e
}

// counts is the number of rows of every table a request could change.
func (e *accessEnv) counts() map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	for _, table := range []string{"sessions", "workflows", "executions", "execution_nodes", "work_items", "commands", "events", "inputs", "execution_logs", "supervisors"} {
		var n int64
		if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// settle waits until no execution is unfinished, so row counts are still.
func (e *accessEnv) settle() {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var n int64
		if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE status IN ('PENDING','RUNNING','PAUSED')`).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d executions still unfinished after %s", n, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call sends one request and returns its status and body; an event stream
// is cut as soon as its headers arrive.
func call(t *testing.T, s *server, method, path, key string, body []byte, header ...string) (int, []byte, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	setHeaders(req, header)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return res.StatusCode, nil, res.Header
	}
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header
}

// specOp is one operation of the OpenAPI document, as the matrix sees it.
type specOp struct {
	id, method, path string
	public           bool
	role             string // x-yukta-role
	hasSession       bool   // a {sessionId} path parameter
}

func loadSpecOps(t *testing.T) []specOp {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var ops []specOp
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if slices.Contains(op.Tags, "agent") {
				continue // credentials, not keys: TestAgentAPIRefusesKeys
			}
			o := specOp{id: op.OperationID, method: method, path: path, hasSession: strings.Contains(path, "{sessionId}")}
			o.public = op.Security != nil && len(*op.Security) == 0
			if r, ok := op.Extensions["x-yukta-role"].(string); ok {
				o.role = r
			}
			if !o.public && o.role == "" {
				t.Errorf("%s %s (%s) has neither security: [] nor x-yukta-role; every route needs a permission entry", method, path, op.OperationID)
			}
			ops = append(ops, o)
		}
	}
	// Deleting a session goes last: the matrix needs the fixtures until then.
	slices.SortFunc(ops, func(a, b specOp) int {
		if (a.id == "deleteSession") != (b.id == "deleteSession") {
			if a.id == "deleteSession" {
				return 1
			}
			return -1
		}
		return strings.Compare(a.method+a.path, b.method+b.path)
	})
	return ops
}

var roleRank = map[string]int{"VIEWER": 1, "OPERATOR": 2, "ADMIN": 3}

// requestFor fills an operation's path for session sid and gives it a body
// that passes the gate but changes as little as possible.
func (e *accessEnv) requestFor(o specOp, sid string) (string, []byte) {
	exec := e.execs[sid]
	if exec == "" {
		exec = "0193b7a0-0000-7000-8000-000000000000"
	}
	r := strings.NewReplacer("{sessionId}", sid, "{workflowId}", "wf", "{executionId}", exec, "{nodeId}", "log",
		"{inputId}", "0193b7a0-0000-7000-8000-000000000001", "{type}", "LOG", "{supervisorId}", "nosuch-supervisor",
		"{approvalId}", "0193b7a0-0000-7000-8000-000000000002")
	path := r.Replace(o.path)
	bodies := map[string]string{
		"putSession":       `{}`,
		"putSupervisor":    `{}`, // refused: a supervisor needs a name and an engine
		"startExecution":   `{"payload":{"n":2}}`,
		"stopWorkflow":     `{"mode":"CANCEL"}`,
		"postWebhook":      `{}`,
		"controlExecution": `{"action":"PAUSE"}`,
		"controlNode":      `{"action":"PAUSE"}`,
		"setBreakpoint":    `{"field":"n","equals":1}`,
		"answerInput":      `{"answer":"x"}`,
		"decideApproval":   `{"decision":"APPROVE"}`,
	}
	if b, ok := bodies[o.id]; ok {
		return path, []byte(b)
	}
	return path, nil
}

// TestRoleRouteMatrix drives every operation of the OpenAPI document with no
// key, each role and a session-limited key on its own and a foreign session.
// The expected cell comes from the document's x-yukta-role, so a route the
// server guards differently from what it documents fails here, and a route
// without a role fails loadSpecOps. Refused calls must change no row.
func TestRoleRouteMatrix(t *testing.T) {
	e := newAccessEnv(t)
	ops := loadSpecOps(t)
	if len(ops) < 25 {
		t.Fatalf("only %d operations in the spec", len(ops))
	}
	refused := 0
	for _, o := range ops {
		// No key: 401 unless the route is public.
		path, body := e.requestFor(o, "alpha")
		before := e.counts()
		status, b, h := call(t, e.s, o.method, path, "", body)
		switch {
		case o.public && (status == 401 || status == 403):
			t.Errorf("%s without a key: %d, want it served (public): %s", o.id, status, b)
		case !o.public && status != 401:
			t.Errorf("%s without a key: %d, want 401: %s", o.id, status, b)
		case !o.public && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer"):
			t.Errorf("%s without a key: no WWW-Authenticate challenge", o.id)
		}
		if !o.public {
			refused++
			e.assertUnchanged(o.id+" without a key", before)
			checkAnswer(t, o.method, path, status, h, b)
		}
		if o.public {
			continue
		}
		for _, name := range []string{"viewer", "operator", "admin", "worker"} {
			role := strings.ToUpper(name)
			// WORKER stands outside the order: it may do the worker
			// operations alone, and no other role may do those.
			allowed := roleRank[role] >= roleRank[o.role] && roleRank[o.role] > 0 || role == "WORKER" && o.role == "WORKER"
			target := "alpha"
			if allowed && o.method != http.MethodGet && o.hasSession {
				target = "nosuch" // passes the gate, changes nothing
			}
			path, body := e.requestFor(o, target)
			before := e.counts()
			status, b, h := call(t, e.s, o.method, path, testKeys[name], body)
			if allowed {
				if status == 401 || status == 403 || status == 429 {
					t.Errorf("%s as %s (needs %s): %d, want it let through: %s", o.id, role, o.role, status, b)
				}
				if !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
					checkAnswer(t, o.method, path, status, h, b)
				}
				e.settle()
				continue
			}
			refused++
			checkAnswer(t, o.method, path, status, h, b)
			if status != 403 {
				t.Errorf("%s as %s (needs %s): %d, want 403: %s", o.id, role, o.role, status, b)
			} else if !strings.Contains(string(b), "key:"+name) || !strings.Contains(string(b), o.role) {
				t.Errorf("%s as %s: the refusal should name the key and the role needed: %s", o.id, role, b)
			}
			e.assertUnchanged(o.id+" as "+role, before)
		}
		if !o.hasSession {
			continue
		}
		// The limited key: its own session passes, a foreign one is as
		// unknown as a session that does not exist.
		path, body = e.requestFor(o, "beta")
		before = e.counts()
		status, foreign, fh := call(t, e.s, o.method, path, testKeys["limited"], body)
		refused++
		checkAnswer(t, o.method, path, status, fh, foreign)
		e.assertUnchanged(o.id+" by the limited key on a foreign session", before)
		path, body = e.requestFor(o, "gamma")
		_, unknown, _ := call(t, e.s, o.method, path, testKeys["limited"], body)
		if status != 404 || detail(t, foreign) != strings.ReplaceAll(detail(t, unknown), "gamma", "beta") {
			t.Errorf("%s by the limited key: foreign session answered %d %s; unknown one %s; want the same 404", o.id, status, foreign, unknown)
		}
		path, body = e.requestFor(o, "alpha")
		status, b, _ = call(t, e.s, o.method, path, testKeys["limited"], body)
		if status == 401 || status == 403 || status == 404 && strings.Contains(string(b), `session \"alpha\"`) {
			t.Errorf("%s by the limited key on its own session: %d %s", o.id, status, b)
		}
		e.settle()
	}
	t.Logf("%d operations, %d refused calls, each with row counts unchanged", len(ops), refused)
}

func detail(t *testing.T, b []byte) string {
	t.Helper()
	var p struct{ Detail string }
	if err := json.Unmarshal(b, &p); err != nil {
		return string(b)
	}
	return p.Detail
}

func (e *accessEnv) assertUnchanged(what string, before map[string]int64) {
	e.t.Helper()
	after := e.counts()
	for k, v := range before {
		if after[k] != v {
			e.t.Errorf("%s changed %s: %d rows before, %d after", what, k, v, after[k])
		}
	}
}

// TestLimitedKeySeesOnlyItsSessions: lists and streams across sessions are
// filtered, and a limited key cannot create a session outside its list.
func TestLimitedKeySeesOnlyItsSessions(t *testing.T) {
	e := newAccessEnv(t)
	lim := keyedClient(t, e.s, testKeys["limited"])
	res, err := lim.ListSessionsWithResponse(e.ctx, nil)
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list: %v %v", err, res)
	}
	if len(res.JSON200.Sessions) != 1 || res.JSON200.Sessions[0].SessionId != "alpha" {
		t.Fatalf("limited key lists %+v, want only alpha", res.JSON200.Sessions)
	}
	all, _ := e.c.ListSessionsWithResponse(e.ctx, nil)
	if all.JSON200 == nil || len(all.JSON200.Sessions) != 2 {
		t.Fatalf("admin lists %v", all)
	}
	// A session outside the list cannot be created.
	doc := `{"name":"x","workflows":[]}`
	put, err := lim.PutSessionWithBodyWithResponse(e.ctx, "delta", nil, jsonType, strings.NewReader(doc))
	if err != nil || put.StatusCode() != 404 {
		t.Fatalf("limited key created a foreign session: %v %d %s", err, put.StatusCode(), put.Body)
	}
	// The event stream across sessions carries only alpha's events.
	ctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.s.URL+"/api/events", nil)
	req.Header.Set("X-API-Key", testKeys["limited"])
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	seen := map[string]int{}
	buf := make([]byte, 1<<16)
	var text strings.Builder
	for ctx.Err() == nil && !strings.Contains(text.String(), `"ExecutionStatusChanged"`) {
		n, err := r.Body.Read(buf)
		text.Write(buf[:n])
		if err != nil {
			break
		}
	}
	// Read a little more to catch any foreign event that would follow.
	time.Sleep(300 * time.Millisecond)
	for _, line := range strings.Split(text.String(), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var ev struct{ SessionID string }
			if json.Unmarshal([]byte(d), &ev) == nil {
				seen[ev.SessionID]++
			}
		}
	}
	if seen["alpha"] == 0 || seen["beta"] != 0 {
		t.Fatalf("limited key's event stream: %v, want alpha's events only", seen)
	}
}

// TestActorIsRecordedEverywhere: the key that sent a change is its actor in
// the execution, its commands' events and the session list.
func TestActorIsRecordedEverywhere(t *testing.T) {
	e := newAccessEnv(t)
	ops := keyedClient(t, e.s, testKeys["operator"])
	res, err := ops.StartExecutionWithResponse(e.ctx, "alpha", "wf", nil, apiclient.StartRequest{Payload: map[string]any{"n": 3}})
	if err != nil || res.JSON201 == nil {
		t.Fatalf("start: %v %v", err, res)
	}
	x := e.waitStatus("alpha", res.JSON201.ExecutionId, apiclient.ExecutionStatusSUCCESS)
	if x.Actor != "key:operator" || x.Channel != "rest" {
		t.Fatalf("execution actor %q channel %q, want key:operator over rest", x.Actor, x.Channel)
	}
	var actor, channel string
	if err := e.db.QueryRow(e.ctx, `SELECT actor, channel FROM events WHERE execution_id = $1 AND type = 'ExecutionStarted'`,
		res.JSON201.ExecutionId).Scan(&actor, &channel); err != nil {
		t.Fatal(err)
	}
	if actor != "key:operator" || channel != "rest" {
		t.Fatalf("ExecutionStarted event actor %q channel %q", actor, channel)
	}
	ctl, err := ops.ControlExecutionWithResponse(e.ctx, "alpha", res.JSON201.ExecutionId, nil, apiclient.ControlExecutionJSONRequestBody{Action: "RESTART"})
	if err != nil || ctl.JSON200 == nil {
		t.Fatalf("restart: %v %v", err, ctl)
	}
	if err := e.db.QueryRow(e.ctx, `SELECT actor, channel FROM commands WHERE command_id = $1`, ctl.JSON200.CommandId).Scan(&actor, &channel); err != nil {
		t.Fatal(err)
	}
	if actor != "key:operator" || channel != "rest" {
		t.Fatalf("command actor %q channel %q", actor, channel)
	}
	if err := e.db.QueryRow(e.ctx, `SELECT actor, channel FROM events WHERE type = 'CommandAccepted' ORDER BY seq DESC LIMIT 1`).Scan(&actor, &channel); err != nil {
		t.Fatal(err)
	}
	if actor != "key:operator" || channel != "rest" {
		t.Fatalf("CommandAccepted event actor %q channel %q", actor, channel)
	}
	list, err := e.c.ListSessionsWithResponse(e.ctx, nil)
	if err != nil || list.JSON200 == nil || list.JSON200.Sessions[0].UpdatedBy != "key:admin" || list.JSON200.Sessions[0].UpdatedVia != "rest" {
		t.Fatalf("session list: %v %+v", err, list.JSON200)
	}
	if err := e.db.QueryRow(e.ctx, `SELECT actor, channel FROM events WHERE type = 'SessionApplied' AND session_id = 'alpha'`).Scan(&actor, &channel); err != nil {
		t.Fatal(err)
	}
	if actor != "key:admin" || channel != "rest" {
		t.Fatalf("SessionApplied event actor %q channel %q", actor, channel)
	}
}

// TestHostileHostAndOriginAreRefusedBeforeAnything: DNS rebinding and
// cross-site requests get 403 on every door, in keyed and in open mode,
// before authentication (no 401 even without a key) and before any handler
// (nothing changes). T1 of the test plan, grown for issue 11: every Origin a
// page on another port of this machine can send (localhost:3000,
// 127.0.0.1:3000, [::1]:3000, app.localhost:3000, the default ports, the
// server's port ± 1) and every Sec-Fetch-Site, on every method the doors
// take. The expected answer of each cell is written out here: hostile when
// the Host is not ours, the Origin is not the server's own port on a
// loopback name, Sec-Fetch-Site is cross-site, or it is same-site on a
// request that is not GET.
func TestHostileHostAndOriginAreRefusedBeforeAnything(t *testing.T) {
	t.Run("keyed", func(t *testing.T) { hostileMatrix(t, newAccessEnv(t), "", testKeys["admin"]) })
	t.Run("open", func(t *testing.T) { hostileMatrix(t, newOpenAccessEnv(t), "") })
}

// hostileMatrix runs T1 against e, sending each hostile cell with each of
// keys and each legitimate one with the last key.
func hostileMatrix(t *testing.T, e *accessEnv, keys ...string) {
	port := e.s.URL[strings.LastIndex(e.s.URL, ":")+1:]
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	routes := []struct{ method, path string }{
		{"POST", "/api/sessions/alpha/workflows/wf/executions"}, // REST, changing
		{"POST", "/api/sessions/alpha/executions/" + e.execs["alpha"] + "/control"},
		{"DELETE", "/api/sessions/nosuch"},
		{"PUT", "/api/sessions/alpha/workflows/wf/nodes/log/breakpoint"},
		{"GET", "/api/sessions"},
		{"POST", "/api/hooks/alpha/wf"}, // webhooks
		{"GET", "/api/events"},          // SSE
		{"GET", "/api/sessions/alpha/executions/" + e.execs["alpha"] + "/events"},
		{"GET", "/metrics"},
		{"GET", "/healthz"},
		{"GET", "/api/openapi.yaml"},
		{"POST", "/mcp"},
		{"POST", "/sse"},
		{"GET", "/mcp"},
		{"POST", "/api/agent/v1/signals"}, // later doors: refused before routing
		{"POST", "/api/agent/v1/mcp"},
		{"GET", "/"},
	}
	hosts := map[string]bool{ // host → hostile
		"evil.example": true, "evil.example:" + port: true, "127.0.0.1.nip.io:" + port: true, "localhost.:" + port: true,
		"localhost.evil.example:" + port: true, "127.0.0.1:" + port: false, "localhost:" + port: false, "[::1]:" + port: false,
	}
	origins := map[string]bool{ // origin → hostile
		"": false, "http://127.0.0.1:" + port: false, "http://localhost:" + port: false, "http://[::1]:" + port: false,
		"http://evil.example": true, "null": true, "http://127.0.0.1.evil.example:" + port: true,
		"http://localhost:3000": true, "http://127.0.0.1:3000": true, "http://[::1]:3000": true, "http://app.localhost:3000": true,
		"http://localhost": true, "https://localhost": true, "http://127.0.0.1:80": true,
		fmt.Sprintf("http://localhost:%d", p+1): true, fmt.Sprintf("http://127.0.0.1:%d", p-1): true,
	}
	sites := []string{"", "none", "same-origin", "same-site", "cross-site"}
	hostile := func(method string, host, origin, site string) bool {
		safe := method == "GET" || method == "HEAD" || method == "OPTIONS"
		return hosts[host] || origins[origin] || site == "cross-site" || site == "same-site" && !safe
	}
	refused, legit := 0, 0
	for _, r := range routes {
		before := e.counts()
		for h := range hosts {
			for o := range origins {
				for _, f := range sites {
					hdr := []string{"Host", h}
					if o != "" {
						hdr = append(hdr, "Origin", o)
					}
					if f != "" {
						hdr = append(hdr, "Sec-Fetch-Site", f)
					}
					if !hostile(r.method, h, o, f) {
						continue
					}
					for _, key := range keys {
						status, b, _ := call(t, e.s, r.method, r.path, key, []byte(`{}`), hdr...)
						if status != 403 || !strings.Contains(string(b), "YUKTA_ALLOWED_") {
							t.Errorf("%s %s with %v (key %v): %d, want the gate's 403: %s", r.method, r.path, hdr, key != "", status, b)
						}
						refused++
					}
				}
			}
		}
		e.assertUnchanged(fmt.Sprintf("hostile requests to %s %s", r.method, r.path), before)
		for h := range hosts {
			for o := range origins {
				for _, f := range sites {
					if hostile(r.method, h, o, f) {
						continue
					}
					hdr := []string{"Host", h}
					if o != "" {
						hdr = append(hdr, "Origin", o)
					}
					if f != "" {
						hdr = append(hdr, "Sec-Fetch-Site", f)
					}
					status, b, _ := call(t, e.s, r.method, r.path, keys[len(keys)-1], []byte(`{}`), hdr...)
					if status == 403 {
						t.Errorf("%s %s with legitimate %v: 403 %s", r.method, r.path, hdr, b)
					}
					legit++
					e.settle()
				}
			}
		}
	}
	t.Logf("%d hostile requests refused with the gate's 403 and no row changed; %d legitimate combinations passed", refused, legit)
}

// TestIdempotentStartUnderConcurrency: five identical starts at once make
// one execution; every caller gets its id.
func TestIdempotentStartUnderConcurrency(t *testing.T) {
	e := newAccessEnv(t)
	ids := make(chan string, 5)
	start := make(chan struct{})
	for range 5 {
		go func() {
			<-start
			key := "same-key"
			res, err := e.c.StartExecutionWithResponse(e.ctx, "alpha", "wf", &apiclient.StartExecutionParams{IdempotencyKey: &key},
				apiclient.StartRequest{Payload: map[string]any{"n": 9}})
			switch {
			case err != nil:
				ids <- "error: " + err.Error()
			case res.JSON201 != nil:
				ids <- res.JSON201.ExecutionId
			case res.JSON200 != nil:
				ids <- res.JSON200.ExecutionId
			default:
				ids <- fmt.Sprintf("status %d %s", res.StatusCode(), res.Body)
			}
		}()
	}
	close(start)
	got := map[string]int{}
	for range 5 {
		got[<-ids]++
	}
	if len(got) != 1 {
		t.Fatalf("five identical starts answered %v, want one execution id", got)
	}
	var n int
	if err := e.db.QueryRow(e.ctx, `SELECT count(*) FROM executions WHERE session_id = 'alpha' AND idempotency_key = 'same-key'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d executions stored, want 1", n)
	}
}

// TestCanarySecretsNeverLeak runs a server whose keys and node secrets are
// canaries (a WEBHOOK secret, HTTP_REQUEST's authorization, secretHeaders
// and secretQuery, WEBHOOK_OUT's secretHeaders), exercises every read path,
// a read document sent back unchanged, and failed authentication, checks at
// the loopback target that the nodes really sent the secrets, and then
// searches the server's whole log, every response and stream, and every
// stored row but the definitions the nodes run with for any 8 characters of
// any canary.
func TestCanarySecretsNeverLeak(t *testing.T) {
	canary := func(tag string) string { return "CANARY" + tag + strings.ToLower(rand.Text()) }
	apiKey, mcpKey, fileKey, hookSecret, wrongKey, bearer := canary("api"), canary("mcp"), canary("file"), canary("hook"), canary("wrong"), canary("bearer")
	headerKey, queryKey, outToken := canary("header"), canary("query"), canary("out")
	// The target of the HTTP node and of the WEBHOOK_OUT node: it sees the
	// secrets (so the nodes really used them) and fails, so the error paths
	// run too. Its answer to WEBHOOK_OUT echoes what it was sent, as
	// debugging endpoints do, and WEBHOOK_OUT quotes that answer in its error.
	type sent struct {
		path, query string
		header      http.Header
	}
	got := make(chan sent, 8)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- sent{r.URL.Path, r.URL.RawQuery, r.Header.Clone()}
		if r.URL.Path == "/hook" {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "refused; you sent %v with query %q", r.Header, r.URL.RawQuery)
			return
		}
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	defer target.Close()
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("reader VIEWER "+fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_API_KEY=" + apiKey, "YUKTA_MCP_API_KEY=" + mcpKey,
		"YUKTA_API_KEYS=" + keyFile, "YUKTA_EGRESS_ALLOWED_HOSTS=" + strings.TrimPrefix(target.URL, "http://")}})
	var responses bytes.Buffer
	record := func(status int, b []byte, h http.Header) {
		fmt.Fprintf(&responses, "%d %v %s\n", status, h, b)
	}
	doc := fmt.Sprintf(`{"name":"canary","workflows":[{"workflowId":"wf","nodes":[{"nodeId":"hook","type":"WEBHOOK","config":{"secret":%q}},`+
		`{"nodeId":"log","type":"LOG","config":{"message":"got it"}}],"edges":[{"source":"hook","target":"log"}]},`+
		`{"workflowId":"call","nodes":[{"nodeId":"go","type":"MANUAL"},{"nodeId":"fetch","type":"HTTP_REQUEST","config":{"url":%q,"authorization":%q,`+
		`"headers":{"X-Source":"canary-test"},"secretHeaders":{"X-API-Key":%q},"secretQuery":{"api_key":%q}}},`+
		`{"nodeId":"failed","type":"LOG","config":{"message":"the call failed"}},`+
		`{"nodeId":"notify","type":"WEBHOOK_OUT","config":{"url":%q,"secretHeaders":{"X-Hook-Token":%q}}}],`+
		`"edges":[{"source":"go","target":"fetch"},{"source":"fetch","target":"failed","sourcePort":"error"},{"source":"failed","target":"notify"}]}]}`,
		hookSecret, target.URL+"/x?page=1", "Bearer "+bearer, headerKey, queryKey, target.URL+"/hook", outToken)
	record(call(t, s, "PUT", "/api/sessions/canary", apiKey, []byte(doc)))
	status, read, h := call(t, s, "GET", "/api/sessions/canary", fileKey, nil)
	record(status, read, h)
	record(call(t, s, "GET", "/api/sessions/canary/workflows/wf", fileKey, nil))
	record(call(t, s, "GET", "/api/sessions", fileKey, nil))
	for _, want := range []string{`"X-API-Key":"***"`, `"api_key":"***"`, `"X-Hook-Token":"***"`, `"authorization":"***"`, `"secret":"***"`} {
		if !strings.Contains(string(read), want) {
			t.Errorf("the VIEWER's read lacks %s: %s", want, read)
		}
	}
	// The read, sent back unchanged, keeps every secret: the run below
	// starts after it and must still send the real values.
	status, b, h := call(t, s, "PUT", "/api/sessions/canary", apiKey, read)
	record(status, b, h)
	if status != http.StatusOK {
		t.Fatalf("PUT of the VIEWER's read: %d %s, want 200", status, b)
	}
	// Refused applies of credentials in plain fields answer without them.
	for _, bad := range []string{
		strings.Replace(string(read), `"X-Source":"canary-test"`, `"X-Source":"canary-test","Cookie":"`+canary("cookie")+`"`, 1),
		strings.Replace(string(read), target.URL+"/x", strings.Replace(target.URL, "http://", "http://u:"+canary("pass")+"@", 1)+"/x", 1),
		strings.Replace(string(read), "/x?page=1", "/x?page=1&token="+canary("token"), 1),
	} {
		status, b, h := call(t, s, "PUT", "/api/sessions/canary", apiKey, []byte(bad))
		record(status, b, h)
		if status != http.StatusBadRequest {
			t.Errorf("a credential in a plain field: %d %s, want 400", status, b)
		}
	}
	// Failed authentications, in both header forms, and a key on the wrong surface.
	record(call(t, s, "GET", "/api/sessions", wrongKey, nil))
	record(call(t, s, "GET", "/api/sessions", "", nil, "X-API-Key", wrongKey))
	record(call(t, s, "GET", "/api/sessions", mcpKey, nil))
	record(call(t, s, "GET", "/api/sessions", "", nil, "Authorization", "Basic "+wrongKey))
	// A signed webhook start, an unsigned one, and the read paths of its run.
	status, b, h = call(t, s, "POST", "/api/hooks/canary/wf", apiKey, []byte(`{"n":1}`), "X-Yukta-Signature", "sha256="+strings.Repeat("0", 64))
	record(status, b, h)
	if status != 401 {
		t.Fatalf("a badly signed webhook: %d %s", status, b)
	}
	// A manual start of the webhook-only workflow is refused: it must not
	// feed the signed trigger (issue 11). The run comes from a signed call.
	status, b, h = call(t, s, "POST", "/api/sessions/canary/workflows/wf/executions", apiKey, []byte(`{"payload":{"n":1}}`))
	record(status, b, h)
	if status != http.StatusConflict {
		t.Fatalf("a manual start of a webhook-only workflow: %d %s", status, b)
	}
	status, b, h = call(t, s, "POST", "/api/hooks/canary/wf", apiKey, []byte(`{"n":1}`), signWebhook(hookSecret, []byte(`{"n":1}`))...)
	record(status, b, h)
	if status != http.StatusCreated {
		t.Fatalf("a signed webhook: %d %s", status, b)
	}
	var started, called struct{ ExecutionId string }
	_ = json.Unmarshal(b, &started)
	status, b, h = call(t, s, "POST", "/api/sessions/canary/workflows/call/executions", apiKey, []byte(`{"payload":{}}`))
	record(status, b, h)
	_ = json.Unmarshal(b, &called)
	byPath := map[string]sent{}
	for len(byPath) < 2 {
		select {
		case r := <-got:
			byPath[r.path] = r
		case <-time.After(waitLimit):
			t.Fatalf("the target got only %v, want /x from HTTP_REQUEST and /hook from WEBHOOK_OUT", slices.Collect(maps.Keys(byPath)))
		}
	}
	for _, want := range []struct{ path, header, value string }{
		{"/x", "Authorization", "Bearer " + bearer}, {"/x", "X-API-Key", headerKey}, {"/x", "X-Source", "canary-test"},
		{"/hook", "X-Hook-Token", outToken},
	} {
		if v := byPath[want.path].header.Get(want.header); v != want.value {
			t.Errorf("%s was sent %s %q, want %q", want.path, want.header, v, want.value)
		}
	}
	if q := byPath["/x"].query; q != "page=1&api_key="+queryKey {
		t.Errorf("/x was sent query %q, want page=1 and the secret api_key", q)
	}
	waitFinished(t, s, apiKey, "canary", called.ExecutionId)
	for _, id := range []string{started.ExecutionId, called.ExecutionId} {
		for _, p := range []string{"/api/sessions/canary/executions", "/api/sessions/canary/executions/" + id,
			"/api/sessions/canary/executions/" + id + "/logs", "/api/sessions/canary/workflows/call"} {
			record(call(t, s, "GET", p, fileKey, nil))
		}
	}
	for _, p := range []string{"/api/inputs?status=all", "/metrics"} {
		record(call(t, s, "GET", p, fileKey, nil))
	}
	if !strings.Contains(responses.String(), "the call failed") || !strings.Contains(responses.String(), "answered 500") {
		t.Fatalf("the HTTP node's and the WEBHOOK_OUT node's error paths did not both run:\n%s", responses.String())
	}
	// The MCP read paths, with the MCP key.
	cs := mustConnect(t, s.URL, mcpKey)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_session_details", map[string]any{"sessionId": "canary"}},
		{"get_workflow_details", map[string]any{"sessionId": "canary", "workflowId": "call"}},
		{"get_workflow_status", map[string]any{"sessionId": "canary", "executionId": called.ExecutionId}},
		{"get_execution_logs", map[string]any{"sessionId": "canary", "executionId": called.ExecutionId}},
		{"get_workflow_history", map[string]any{"sessionId": "canary"}},
		{"get_control_bus_status", nil},
	} {
		res := mcpCall(t, cs, c.tool, c.args, nil)
		b, _ := json.Marshal(res)
		responses.Write(b)
		if res.IsError {
			t.Errorf("%s: %s", c.tool, text(res))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/events", nil)
	req.Header.Set("X-API-Key", fileKey)
	if r, err := http.DefaultClient.Do(req); err == nil {
		ev, _ := io.ReadAll(r.Body)
		responses.Write(ev)
		r.Body.Close()
		if !strings.Contains(string(ev), "SessionApplied") {
			t.Errorf("the event stream did not carry the session's events: %s", ev)
		}
	}
	cancel()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "authentication failed") || !strings.Contains(responses.String(), `"***"`) {
		t.Fatalf("the sweep did not exercise failures and masking:\n%s", responses.String())
	}
	// Every stored row is a sink too (the journal, the outbox, commands,
	// logs, results, queue items, inputs, …), except the definitions the
	// nodes run with, which hold the secrets by design.
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	stored, tables := storedRows(t, db, "definition")
	if !strings.Contains(stored, "the call failed") || !strings.Contains(stored, "answered 500") {
		t.Fatalf("the stored rows hold no run: %.500s", stored)
	}
	sinks := map[string]string{"the server log": logs, "responses": responses.String(), "the stored rows": stored}
	secrets := map[string]string{"YUKTA_API_KEY": apiKey, "YUKTA_MCP_API_KEY": mcpKey, "key file": fileKey,
		"webhook secret": hookSecret, "wrong key": wrongKey, "HTTP authorization": bearer,
		"HTTP_REQUEST secretHeaders": headerKey, "HTTP_REQUEST secretQuery": queryKey, "WEBHOOK_OUT secretHeaders": outToken}
	windows := 0
	for name, secret := range secrets {
		// Any 8 characters of the random part count as a leak (T6).
		random := secret[len(secret)-26:] // rand.Text is 26 characters
		for sink, text := range sinks {
			for i := 0; i+8 <= len(random); i++ {
				windows++
				if strings.Contains(text, random[i:i+8]) {
					t.Errorf("8 characters of the %s (%q) appear in %s", name, random[i:i+8], sink)
					break
				}
			}
		}
	}
	t.Logf("searched %d secrets x %d sinks (%d tables, %d bytes stored, %d bytes of responses, %d bytes of log): %d 8-character windows",
		len(secrets), len(sinks), tables, len(stored), responses.Len(), len(logs), windows)
}

// storedRows returns every row of every table of the database as JSON
// text, one row a line, with the columns named skip left out, and the
// number of tables read.
func storedRows(t *testing.T, db *pgx.Conn, skip ...string) (string, int) {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name)
		FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, table := range tables {
		var text string
		q := `SELECT coalesce(string_agg((to_jsonb(t) - $1::text[])::text, E'\n'), '') FROM ` + table + ` t`
		if err := db.QueryRow(context.Background(), q, skip).Scan(&text); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out.WriteString(text + "\n")
	}
	return out.String(), len(tables)
}

// waitFinished waits until an execution is no longer pending or running.
func waitFinished(t *testing.T, s *server, key, sessionID, id string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		_, b, _ := call(t, s, "GET", "/api/sessions/"+sessionID+"/executions/"+id, key, nil)
		var e struct{ Status string }
		_ = json.Unmarshal(b, &e)
		if e.Status != "" && e.Status != "PENDING" && e.Status != "RUNNING" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s still %q after %s", id, e.Status, waitLimit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signWebhook returns the timestamp and signature headers of a webhook
// body signed now: HMAC-SHA256 of "<timestamp>.<body>" keyed with secret.
func signWebhook(secret string, body []byte) []string {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return []string{"X-Yukta-Timestamp", ts, "X-Yukta-Signature", "sha256=" + hex.EncodeToString(m.Sum(nil))}
}
