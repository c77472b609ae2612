package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// agentWorld is a server with a supervisor "agent" (engine http, no url:
// its agent reads over the agent API) that owns session ci and reviews
// STOPs, and the agent's credential.
type agentWorld struct {
	*reviewWorld
	token string
}

func newAgentWorld(t *testing.T, env ...string) *agentWorld {
	w := &agentWorld{reviewWorld: newReviewWorld(t, env...)}
	return w
}

// setup applies the session and the supervisor and issues the credential
// (with key, the ADMIN's key).
func (w *agentWorld) setup() {
	w.t.Helper()
	w.put("/api/sessions/ci", napSession("ci"))
	w.put("/api/supervisors/agent", []byte(`{"name":"Agent","owns":["session:ci"],"reviews":["StopWorkflow"],
		"engine":{"type":"http","settings":{}}}`))
	st, b, _ := call(w.t, w.s, "POST", "/api/supervisors/agent/credential", w.key, nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil || !strings.HasPrefix(c.Token, "yks_") {
		w.t.Fatalf("issue a credential: %d %s", st, b)
	}
	w.token = c.Token
}

// agent sends an agent API request with the credential.
func (w *agentWorld) agent(method, path string, body []byte) (int, []byte, http.Header) {
	w.t.Helper()
	return call(w.t, w.s, method, "/api/agent/v1"+path, w.token, body)
}

type signalPage struct {
	Signals []struct {
		Cursor string
		Kind   string
		Signal map[string]any
	}
	Cursor string
}

// pollUntil long-polls /signals from after until a signal satisfies want,
// and returns it with the cursor to read on.
func (w *agentWorld) pollUntil(after string, want func(kind string, sig map[string]any) bool) (map[string]any, string) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, b, h := w.agent("GET", "/signals?wait=5&after="+after, nil)
		var p signalPage
		if st != 200 || json.Unmarshal(b, &p) != nil || h.Get("Yukta-Supervisor-Contract") != "1" {
			w.t.Fatalf("GET /signals: %d %s (contract %q)", st, b, h.Get("Yukta-Supervisor-Contract"))
		}
		for _, s := range p.Signals {
			if want(s.Kind, s.Signal) {
				return s.Signal, s.Cursor
			}
		}
		after = p.Cursor
	}
	w.t.Fatal("no wanted signal within 30 s")
	return nil, ""
}

// TestAgentAPI drives the agent API as an agent would, with its
// supervisor's credential: open mode does not open it; it reads its
// signals by long poll and by SSE; its directives take effect once per key
// however often they are sent; it answers the review of an operator's STOP.
func TestAgentAPI(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	// Open mode (no keys): the agent API still needs a credential.
	st, b, h := call(t, w.s, "GET", "/api/agent/v1/self", "", nil)
	if st != 401 || h.Get("Yukta-Supervisor-Contract") != "1" {
		t.Fatalf("the agent API without a credential in open mode: %d %s (contract %q), want 401", st, b, h.Get("Yukta-Supervisor-Contract"))
	}
	w.setup()
	st, b, _ = w.agent("GET", "/self", nil)
	var self struct {
		ID, Contract string
		Owns         []string
	}
	if st != 200 || json.Unmarshal(b, &self) != nil || self.ID != "agent" || self.Contract != "1" || len(self.Owns) != 1 {
		t.Fatalf("GET /self: %d %s", st, b)
	}

	// Long poll: the run's start arrives as an EVENT.
	id := w.napping("ci")
	sig, cursor := w.pollUntil("", func(kind string, s map[string]any) bool {
		return kind == "EVENT" && s["type"] == "ExecutionStarted" && s["executionId"] == id
	})
	if sig["sessionId"] != "ci" {
		t.Fatalf("the EVENT signal: %v", sig)
	}

	// A directive sent three times at once with one key: one effect.
	dir := []byte(fmt.Sprintf(`{"key":"pause-1","cause":%q,"reason":"agent says","command":{"type":"PauseWorkflow","target":"execution:%s"}}`, cursor, id))
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range 3 {
		wg.Go(func() { codes[i], _, _ = w.agent("POST", "/directives", dir) })
	}
	wg.Wait()
	for _, c := range codes {
		if c != 202 {
			t.Fatalf("directive answers %v, want 202 each", codes)
		}
	}
	if s := w.status("ci", id); s != "PAUSED" {
		t.Fatalf("after the directive the run is %s, want PAUSED", s)
	}
	var pauses int
	_ = w.db.QueryRow(context.Background(), `SELECT count(*) FROM commands WHERE execution_id = $1::uuid AND action = 'PAUSE'`, id).Scan(&pauses)
	if pauses != 1 {
		t.Fatalf("%d PAUSE commands from one key sent 3 times, want 1", pauses)
	}
	// Outside allowedCommands' units: refused, 403.
	st, b, _ = w.agent("POST", "/directives", []byte(`{"key":"k2","command":{"type":"StopAll","target":"workflow:other/nap"}}`))
	if st != 403 {
		t.Fatalf("a directive outside the owned units: %d %s, want 403", st, b)
	}

	// An operator's STOP is held; the agent gets the REVIEW and denies it.
	w.stop("ci", id, 0)
	review, _ := w.pollUntil(cursor, func(kind string, s map[string]any) bool { return kind == "REVIEW" })
	rid, _ := review["reviewId"].(string)
	st, b, _ = w.agent("POST", "/reviews/"+rid, []byte(`{"verdict":"DENY","reason":"the agent is on it"}`))
	if st != 200 || !strings.Contains(string(b), `"status":"DENIED"`) {
		t.Fatalf("the agent's verdict: %d %s", st, b)
	}
	if s := w.status("ci", id); s != "PAUSED" {
		t.Fatalf("a STOP the agent denied changed the run to %s", s)
	}

	// SSE: the stream resumes after a cursor and carries the signals.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", w.s.URL+"/api/agent/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Last-Event-ID", cursor)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// The review was answered, so it is no REVIEW any more (a signal for a
	// review that moved on is not sent); its decision is an EVENT.
	sc := bufio.NewScanner(res.Body)
	var sawDecision bool
	for sc.Scan() && !sawDecision {
		sawDecision = strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"type":"ReviewDecided"`) &&
			strings.Contains(sc.Text(), `"kind":"EVENT"`)
	}
	if !sawDecision {
		t.Fatal("the SSE stream after the cursor has no EVENT for the review's decision")
	}

	// Reads: the workflow without settings, the run's log, the scheduler
	// (only for a supervisor of the server).
	if st, b, _ := w.agent("GET", "/workflows/ci/nap", nil); st != 200 || !strings.Contains(string(b), `"type":"DELAY"`) || strings.Contains(string(b), "120s") {
		t.Fatalf("GET /workflows/ci/nap: %d %s, want nodes and edges without config", st, b)
	}
	if st, b, _ := w.agent("GET", "/workflows/other/nap", nil); st != 404 {
		t.Fatalf("a workflow outside the owned units: %d %s, want 404", st, b)
	}
	if st, b, _ := w.agent("GET", "/executions/"+id+"/logs?tail=5", nil); st != 200 || !strings.Contains(string(b), `"lines"`) {
		t.Fatalf("GET logs: %d %s", st, b)
	}
	if st, b, _ := w.agent("GET", "/executions/"+id+"/logs?tail=500", nil); st != 400 {
		t.Fatalf("GET logs?tail=500: %d %s, want 400", st, b)
	}
	if st, b, _ := w.agent("GET", "/scheduler", nil); st != 403 {
		t.Fatalf("GET /scheduler by a session's supervisor: %d %s, want 403", st, b)
	}

	// Bodies are capped at 64 KiB.
	big := []byte(`{"key":"big","reason":"` + strings.Repeat("x", 64<<10) + `","command":{"type":"PauseWorkflow","target":"execution:` + id + `"}}`)
	if st, b, _ := w.agent("POST", "/directives", big); st != 413 {
		t.Fatalf("a body over 64 KiB: %d %.200s, want 413", st, b)
	}
}

// TestAgentAPIRefusesKeys: with API keys configured, no person's key opens
// the agent API (every role, every route), and a supervisor credential
// opens nothing else.
func TestAgentAPIRefusesKeys(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t, "YUKTA_API_KEYS="+writeKeyFile(t))
	w.key = testKeys["admin"]
	w.setup()
	for _, p := range []string{"/self", "/snapshot", "/signals", "/executions", "/inputs"} {
		for _, name := range []string{"viewer", "operator", "admin"} {
			if st, b, _ := call(t, w.s, "GET", "/api/agent/v1"+p, testKeys[name], nil); st != 401 {
				t.Errorf("%s with the %s key: %d %s, want 401", p, name, st, b)
			}
		}
		if st, b, _ := w.agent("GET", p, nil); st != 200 {
			t.Errorf("%s with the credential: %d %s", p, st, b)
		}
	}
	if st, b, _ := call(t, w.s, "GET", "/api/sessions", w.token, nil); st != 401 {
		t.Fatalf("REST with a supervisor credential: %d %s, want 401", st, b)
	}
}

// guideSession has a workflow that asks for an approval and one that naps.
const guideSession = `{"name":"ci","workflows":[
	{"workflowId":"ask","nodes":[{"nodeId":"in","type":"MANUAL"},
		{"nodeId":"ok","type":"INPUT_REQUEST","config":{"prompt":"Ship it?","mode":"approval"}},{"nodeId":"out","type":"RESULT"}],
		"edges":[{"source":"in","target":"ok"},{"source":"ok","target":"out","sourcePort":"approved"}]},
	{"workflowId":"nap","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"nap","type":"DELAY","config":{"duration":"120s"}},{"nodeId":"out","type":"RESULT"}],
		"edges":[{"source":"in","target":"nap"},{"source":"nap","target":"out"}]}]}`

// TestAgentGuideExample runs the Python agent of docs/agent-api.md, as
// written there, against the real server: it answers an input of its
// session and reviews STOPs (KILL denied with its reason, CANCEL allowed).
func TestAgentGuideExample(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to run the guide's agent (docs/agent-api.md): %v", err)
	}
	script := testedBlocks(t, "docs/agent-api.md", "TestAgentGuideExample", 1)[0].Body
	dir := t.TempDir()
	agentPy := filepath.Join(dir, "agent.py")
	if err := os.WriteFile(agentPy, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}

	w := newAgentWorld(t)
	w.put("/api/sessions/ci", []byte(guideSession))
	w.put("/api/supervisors/helper", []byte(`{"name": "Helper agent", "owns": ["session:ci"], "allowedCommands": ["AnswerInput"],
       "reviews": ["StopWorkflow"], "engine": {"type": "http", "settings": {}}}`))
	st, b, _ := call(t, w.s, "POST", "/api/supervisors/helper/credential", "", nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("credential: %d %s", st, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, agentPy)
	cmd.Env = []string{"YUKTA_URL=" + w.s.URL, "YUKTA_TOKEN=" + c.Token, "YUKTA_CURSOR_FILE=" + filepath.Join(dir, "cursor"),
		"YUKTA_AGENT_SECONDS=60", "PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		t.Logf("agent output:\n%s", out.String())
	}()

	// The input is answered by the agent: the run goes on to SUCCESS.
	st, b, _ = call(t, w.s, "POST", "/api/sessions/ci/workflows/ask/executions", "", []byte(`{"payload":{"order":7}}`))
	var run struct{ ExecutionId string }
	if st != 201 || json.Unmarshal(b, &run) != nil {
		t.Fatalf("start ask: %d %s", st, b)
	}
	for deadline := time.Now().Add(40 * time.Second); w.status("ci", run.ExecutionId) != "SUCCESS"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run asking for approval is %s; the agent did not answer (output:\n%s)", w.status("ci", run.ExecutionId), out.String())
		}
	}
	var by string
	_ = w.db.QueryRow(context.Background(), `SELECT answered_by FROM inputs WHERE execution_id = $1::uuid`, run.ExecutionId).Scan(&by)
	if by != "supervisor:helper" {
		t.Fatalf("the input was answered by %q, want supervisor:helper", by)
	}

	// KILL is denied with the agent's reason; CANCEL applies.
	id := w.napping("ci")
	body, _ := json.Marshal(map[string]any{"action": "STOP", "mode": "KILL", "wait": 8})
	st, b, _ = call(t, w.s, "POST", "/api/sessions/ci/executions/"+id+"/control", "", body)
	if st != 403 || !strings.Contains(string(b), "KILL loses work in flight") {
		t.Fatalf("STOP KILL: %d %s, want 403 with the agent's reason (output:\n%s)", st, b, out.String())
	}
	// Without wait, every door answers the review's ticket (nothing failed
	// yet), and the review ends DENIED with the agent's reason: REST 202
	// PENDING, the CLI prints the ticket and exits 0 (docs/agent-api.md).
	body, _ = json.Marshal(map[string]any{"action": "STOP", "mode": "KILL"})
	st, b, _ = call(t, w.s, "POST", "/api/sessions/ci/executions/"+id+"/control", "", body)
	var ticket struct{ ReviewId, Status string }
	if st != 202 || json.Unmarshal(b, &ticket) != nil || ticket.Status != "PENDING" {
		t.Fatalf("STOP KILL without wait: %d %s, want 202 with a PENDING ticket", st, b)
	}
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(50 * time.Millisecond) {
		r := w.review(ticket.ReviewId)
		if r["status"] == "DENIED" {
			if !strings.Contains(fmt.Sprint(r["steps"]), "KILL loses work in flight") {
				t.Fatalf("the denied review lacks the agent's reason: %v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the review of a KILL without wait is %v after %s, want DENIED", r["status"], waitLimit)
		}
	}
	cli := yukta(t, w.s.URL, "control", "ci", id, "STOP", "--mode", "KILL")
	cliWant(t, cli, 0, "status: review", "review-status: PENDING", "follow: yukta approvals show")
	cli = yukta(t, w.s.URL, "control", "ci", id, "STOP", "--mode", "KILL", "--wait", "8")
	if cli.code != 1 || !strings.Contains(cli.stderr+cli.stdout, "KILL loses work in flight") {
		t.Fatalf("yukta control STOP --mode KILL --wait 8: want exit 1 with the agent's reason\n%s", cli)
	}
	if st, b := w.stop("ci", id, 8); st != 200 || w.status("ci", id) != "STOPPED" {
		t.Fatalf("STOP CANCEL: %d %s, run %s", st, b, w.status("ci", id))
	}
}

// TestAgentAPILimits (T7, T8): each credential has its request budget
// (YUKTA_AGENT_RATE_LIMIT, 5 a minute here): the sixth request is 429 with
// Retry-After; a source that presents 20 wrong credentials gets 429 for the
// 21st; a body of exactly
// 64 KiB is read, one byte more is 413.
func TestAgentAPILimits(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t, "YUKTA_AGENT_RATE_LIMIT=5/m")
	w.setup()
	for i := 1; i <= 5; i++ {
		if st, b, _ := w.agent("GET", "/self", nil); st != 200 {
			t.Fatalf("request %d of 5: %d %s", i, st, b)
		}
	}
	st, b, h := w.agent("GET", "/self", nil)
	if st != 429 || h.Get("Retry-After") == "" || h.Get("Yukta-Supervisor-Contract") != "1" {
		t.Fatalf("the sixth request in a minute: %d %s (Retry-After %q)", st, b, h.Get("Retry-After"))
	}

	// A second credential for the body limits (the first has spent its
	// minute).
	w.put("/api/supervisors/other", []byte(`{"name":"Other","owns":["session:ci"],"engine":{"type":"http","settings":{}}}`))
	st, b, _ = call(t, w.s, "POST", "/api/supervisors/other/credential", "", nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("credential: %d %s", st, b)
	}
	body := func(n int) []byte {
		prefix, suffix := `{"key":"k","reason":"`, `","command":{"type":"PauseWorkflow","target":"execution:00000000-0000-7000-8000-000000000000"}}`
		return []byte(prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix)
	}
	if st, b, _ := call(t, w.s, "POST", "/api/agent/v1/directives", c.Token, body(64<<10)); st == 413 || st == 401 || st == 429 {
		t.Fatalf("a body of exactly 64 KiB: %d %.300s, want it read (refused for its content, not its size)", st, b)
	}
	if st, b, _ := call(t, w.s, "POST", "/api/agent/v1/directives", c.Token, body(64<<10+1)); st != 413 {
		t.Fatalf("a body of 64 KiB + 1: %d %.300s, want 413", st, b)
	}

	// 20 wrong credentials from one source: the 21st is not even checked.
	for i := range 20 {
		if st, b, _ := call(t, w.s, "GET", "/api/agent/v1/self", fmt.Sprintf("yks_wrong%02d", i), nil); st != 401 {
			t.Fatalf("wrong credential %d: %d %s, want 401", i, st, b)
		}
	}
	if st, b, h := call(t, w.s, "GET", "/api/agent/v1/self", "yks_wrong20", nil); st != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("the 21st wrong credential: %d %s, want 429", st, b)
	}
}

// TestWorkflowSupervisorGuide applies the workflow supervisor of
// docs/supervisors.md ("The workflow engine"), its two documents as
// written there, on the real server: an input of session ci whose prompt
// starts with "Ship" is answered by supervisor:triager through a run of
// supervisors/triage, and the ci run finishes.
func TestWorkflowSupervisorGuide(t *testing.T) {
	t.Parallel()
	blocks := testedBlocks(t, "docs/supervisors.md", "TestWorkflowSupervisorGuide", 2)
	w := newReviewWorld(t)
	w.put("/api/sessions/ci", []byte(guideSession))
	w.put("/api/sessions/supervisors", []byte(blocks[1].Body))
	w.put("/api/supervisors/triager", []byte(blocks[0].Body))
	st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/workflows/ask/executions", "", []byte(`{"payload":{}}`))
	var run struct{ ExecutionId string }
	if st != 201 || json.Unmarshal(b, &run) != nil {
		t.Fatalf("start: %d %s", st, b)
	}
	for deadline := time.Now().Add(40 * time.Second); w.status("ci", run.ExecutionId) != "SUCCESS"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the input was not answered by the workflow supervisor: run %s", w.status("ci", run.ExecutionId))
		}
	}
	var by string
	_ = w.db.QueryRow(context.Background(), `SELECT answered_by FROM inputs WHERE execution_id = $1::uuid`, run.ExecutionId).Scan(&by)
	if by != "supervisor:triager" {
		t.Fatalf("answered by %q, want supervisor:triager", by)
	}
}

// TestAgentMCP: the agent API's MCP endpoint (POST /api/agent/v1/mcp),
// driven by the go-sdk client with the supervisor's credential, offers the
// agent API's operations as tools: the agent reads its signals and pauses a
// run with a directive; without the credential it is refused.
func TestAgentMCP(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	w.setup()
	if _, err := mcpConnect(t.Context(), w.s.URL, "/api/agent/v1/mcp", ""); err == nil {
		t.Fatal("the agent MCP endpoint let a client in without a credential")
	}
	cs, err := mcpConnect(t.Context(), w.s.URL, "/api/agent/v1/mcp", w.token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	var self struct{ ID string }
	mustCall(t, cs, "get_self", map[string]any{}, &self)
	if self.ID != "agent" {
		t.Fatalf("get_self: %+v", self)
	}
	id := w.napping("ci")
	var page struct {
		Signals []map[string]any
		Cursor  string
	}
	found := false
	after := ""
	for deadline := time.Now().Add(20 * time.Second); !found && time.Now().Before(deadline); after = page.Cursor {
		mustCall(t, cs, "read_signals", map[string]any{"after": after, "waitSeconds": 3}, &page)
		for _, s := range page.Signals {
			sig, _ := s["signal"].(map[string]any)
			found = found || (s["kind"] == "EVENT" && sig["executionId"] == id)
		}
	}
	if !found {
		t.Fatal("read_signals never returned an EVENT of the run")
	}
	var res struct {
		Status   string
		Outcomes []map[string]any
	}
	mustCall(t, cs, "send_directive", map[string]any{"key": "mcp-pause", "command": map[string]any{"type": "PauseWorkflow", "target": "execution:" + id}}, &res)
	if res.Status != "accepted" || w.status("ci", id) != "PAUSED" {
		t.Fatalf("send_directive: %+v, run %s", res, w.status("ci", id))
	}
	if r := mcpCall(t, cs, "send_directive", map[string]any{"key": "mcp-bad", "command": map[string]any{"type": "Explode"}}, nil); !r.IsError {
		t.Fatal("an unknown command type was not refused")
	}
}

// TestHTTPSupervisorPushesToAnAgent: an http supervisor whose url is an
// agent (a test server here, allowed through the egress policy by
// YUKTA_EGRESS_ALLOWED_HOSTS) is posted each signal as {cursor, kind,
// signal}; the agent answers through the agent API with the supervisor's
// credential: it pauses each run it hears start, and denies a STOP it is
// asked to review.
func TestHTTPSupervisorPushesToAnAgent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var token, base string
	var kinds []string
	agent := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var sig struct {
			Cursor string
			Kind   string
			Signal map[string]any
		}
		if err := json.NewDecoder(r.Body).Decode(&sig); err != nil || r.Header.Get("X-Team") != "ops" {
			rw.WriteHeader(400)
			return
		}
		rw.WriteHeader(204)
		mu.Lock()
		kinds = append(kinds, sig.Kind)
		tok, url := token, base
		mu.Unlock()
		send := func(path string, body any) {
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest("POST", url+"/api/agent/v1"+path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}
		switch {
		case sig.Kind == "EVENT" && sig.Signal["type"] == "ExecutionStarted":
			go send("/directives", map[string]any{"key": "pause-" + sig.Cursor, "cause": sig.Cursor,
				"command": map[string]any{"type": "PauseWorkflow", "target": "execution:" + sig.Signal["executionId"].(string)}})
		case sig.Kind == "REVIEW":
			go send("/reviews/"+sig.Signal["reviewId"].(string), map[string]any{"verdict": "DENY", "reason": "the pushed agent says no"})
		}
	}))
	defer agent.Close()
	host := strings.TrimPrefix(agent.URL, "http://")
	w := newAgentWorld(t, "YUKTA_EGRESS_ALLOWED_HOSTS="+host)
	w.put("/api/sessions/ci", napSession("ci"))
	w.put("/api/supervisors/pushed", []byte(`{"name":"Pushed","owns":["session:ci"],"reviews":["StopWorkflow"],
		"engine":{"type":"http","settings":{"url":"`+agent.URL+`/signals","headers":{"X-Team":"ops"},"timeoutMs":2000}}}`))
	st, b, _ := call(t, w.s, "POST", "/api/supervisors/pushed/credential", "", nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("credential: %d %s", st, b)
	}
	mu.Lock()
	token, base = c.Token, w.s.URL
	mu.Unlock()

	st, b, _ = call(t, w.s, "POST", "/api/sessions/ci/workflows/nap/executions", "", []byte(`{"payload":{}}`))
	var run struct{ ExecutionId string }
	if st != 201 || json.Unmarshal(b, &run) != nil {
		t.Fatalf("start: %d %s", st, b)
	}
	for deadline := time.Now().Add(30 * time.Second); w.status("ci", run.ExecutionId) != "PAUSED"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("the pushed agent's pause never applied (run %s); kinds posted: %v", w.status("ci", run.ExecutionId), kinds)
		}
	}
	if st, b := w.stop("ci", run.ExecutionId, 8); st != 403 || !strings.Contains(string(b), "the pushed agent says no") {
		t.Fatalf("STOP reviewed by the pushed agent: %d %s", st, b)
	}
}
