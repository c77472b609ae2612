package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/yukta/yukta/api"
)

// specSchema compiles one schema of api/openapi.yaml (its components are
// JSON Schema 2020-12, as OpenAPI 3.1 says) with a real validator that also
// asserts formats.
func specSchema(t *testing.T, name string) *sjs.Schema {
	t.Helper()
	var doc any
	if err := yaml.Unmarshal(api.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := sjs.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("openapi.json", v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("openapi.json#/components/schemas/" + name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

// envelopeTypes are the event types EventEnvelope's discriminator maps.
func envelopeTypes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Discriminator struct{ Mapping map[string]string }
			}
		}
	}
	if err := yaml.Unmarshal(api.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range doc.Components.Schemas["EventEnvelope"].Discriminator.Mapping {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sseRecord is one record of an event stream.
type sseRecord struct{ id, event, data string }

// sseTap reads an event stream in the background until stop, which joins it.
type sseTap struct {
	mu      sync.Mutex
	records []sseRecord
	stop    func()
}

func openSSE(t *testing.T, s *server, path, token string, header ...string) *sseTap {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	setHeaders(req, header)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	tap := &sseTap{}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var r sseRecord
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if r.data != "" {
					tap.mu.Lock()
					tap.records = append(tap.records, r)
					tap.mu.Unlock()
				}
				r = sseRecord{}
			case strings.HasPrefix(line, "id: "):
				r.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				r.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				r.data = line[6:]
			}
		}
	})
	tap.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(tap.stop)
	return tap
}

func (tp *sseTap) snapshot() []sseRecord {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.records)
}

// waitFor waits until a record's data holds every want.
func (tp *sseTap) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range tp.snapshot() {
			if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(r.data, w) }) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no event with %q within 30 s", want)
}

// validateRecords checks every record's data against schema and returns
// the types (or kinds) seen.
func validateRecords(t *testing.T, what string, sch *sjs.Schema, branches map[string]*sjs.Schema, records []sseRecord, key string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, r := range records {
		v, err := sjs.UnmarshalJSON(strings.NewReader(r.data))
		if err != nil {
			t.Errorf("%s: data is not JSON: %s", what, r.data)
			continue
		}
		if err := sch.Validate(v); err != nil {
			// The oneOf's error lists every branch; the one of the
			// record's own type says what is wrong.
			if branch := branches[r.event]; branch != nil {
				err = branch.Validate(v)
			} else {
				err = fmt.Errorf("%q is not a type (kind) the contract lists", r.event)
			}
			t.Errorf("%s: a %s record does not match the contract: %v\n%s", what, r.event, err, r.data)
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(r.data), &m)
		typ, _ := m[key].(string)
		if typ != r.event {
			t.Errorf("%s: record event %q, data %s %q", what, r.event, key, typ)
		}
		seen[typ]++
	}
	return seen
}

// TestEventStreamsMatchTheContract drives a server through every kind of
// change that emits an event (runs, nodes, inputs, breakpoints, commands
// accepted, applied and rejected, reviews, directives, delegations,
// sessions, supervisors and their credentials) and validates every record
// of the event streams against the OpenAPI document's EventEnvelope (and the
// agent stream's against Signal) with a JSON Schema validator. The schema
// and the emitter cannot drift apart: an event type or a data member the
// schema lacks fails here, and so does a type the schema lists that no
// event of this run had.
func TestEventStreamsMatchTheContract(t *testing.T) {
	t.Parallel()
	envelope, signal := specSchema(t, "EventEnvelope"), specSchema(t, "Signal")
	// A budget of 5 directives per supervisor and minute, so the lead can
	// spend it below (the agent sends 5, exactly its budget).
	w := newAgentWorld(t, "YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE=5")
	all := openSSE(t, w.s, "/api/events", "")

	w.put("/api/sessions/ci", napSession("ci"))
	w.put("/api/sessions/asks", []byte(`{"name":"asks","workflows":[{"workflowId":"ask","nodes":[
		{"nodeId":"in","type":"MANUAL"},{"nodeId":"ask","type":"INPUT_REQUEST","config":{"prompt":"Ship it?"}},
		{"nodeId":"yes","type":"LOG","config":{"message":"shipped"}},{"nodeId":"no","type":"RESULT"}],
		"edges":[{"source":"in","target":"ask"},{"source":"ask","target":"yes","sourcePort":"approved"},
		{"source":"ask","target":"no","sourcePort":"rejected"}]}]}`))
	w.put("/api/supervisors/lead", []byte(`{"name":"Lead","owns":["session:ci"],"engine":{"type":"http","settings":{}}}`))
	w.put("/api/supervisors/agent", []byte(`{"name":"Agent","owns":["session:ci","session:asks"],"parentId":"lead","reviews":["StopWorkflow"],
		"engine":{"type":"http","settings":{}}}`))
	lead, agent := w.as("lead"), w.as("agent")

	// One execution id format on every door: a malformed id is 400 naming
	// path.executionId on REST and on the agent API.
	for _, c := range []struct {
		who  *agentWorld
		path string
	}{{nil, "/api/sessions/ci/executions/nope"}, {nil, "/api/sessions/ci/executions/nope/events"}, {agent, "/executions/nope"}, {agent, "/executions/nope/logs"}} {
		var st int
		var b []byte
		if c.who == nil {
			st, b, _ = call(t, w.s, "GET", c.path, "", nil)
		} else {
			st, b, _ = c.who.agent("GET", c.path, nil)
		}
		if st != 400 || !strings.Contains(string(b), `"path":"path.executionId"`) {
			t.Errorf("GET %s: %d %s, want 400 naming path.executionId", c.path, st, b)
		}
	}

	// A run, a directive that pauses it, one refused, a command the state
	// refuses, and a STOP the agent reviews and denies.
	id := w.napping("ci")
	dir := fmt.Sprintf(`{"key":"pause-1","reason":"agent says","command":{"type":"PauseWorkflow","target":"execution:%s"}}`, id)
	if st, b, _ := agent.agent("POST", "/directives", []byte(dir)); st != 202 {
		t.Fatalf("directive: %d %s", st, b)
	}
	if st, b, _ := agent.agent("POST", "/directives", []byte(`{"key":"k2","command":{"type":"StopAll","target":"workflow:other/nap"}}`)); st != 403 {
		t.Fatalf("a directive outside the owned units: %d %s, want 403", st, b)
	}
	// A refusal is recorded with its sender, never as an event; an owned
	// run that refuses its part of an accepted directive (a Release of a
	// run not held) journals a DirectiveRejected.
	if st, b, _ := agent.agent("POST", "/directives", []byte(`{"key":"release-1","command":{"type":"Release","target":"execution:`+id+`"}}`)); st != 202 ||
		!strings.Contains(string(b), `"status":"rejected"`) {
		t.Fatalf("a Release of a run not held: %d %s, want 202 with the run's part rejected", st, b)
	}
	if st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/executions/"+id+"/control", "", []byte(`{"action":"RESUME","ifStatus":"RUNNING"}`)); st != 409 {
		t.Fatalf("RESUME of a PAUSED run ifStatus RUNNING: %d %s, want 409", st, b)
	}
	st, b := w.stop("ci", id, 0)
	var ticket struct{ ReviewID string }
	if st != 202 || json.Unmarshal(b, &ticket) != nil || ticket.ReviewID == "" {
		t.Fatalf("a reviewed STOP: %d %s, want 202", st, b)
	}
	if st, b, _ := agent.agent("POST", "/reviews/"+ticket.ReviewID, []byte(`{"verdict":"DENY","reason":"the agent is on it"}`)); st != 200 {
		t.Fatalf("verdict: %d %s", st, b)
	}

	// An execution stream of its own, from the start of the run.
	run := openSSE(t, w.s, "/api/sessions/ci/executions/"+id+"/events", "")

	// A delegation, asked and answered.
	st, b, _ = agent.agent("POST", "/delegations", []byte(`{"kind":"ESCALATE","key":"d1","payload":{"q":"retry?"}}`))
	var d struct{ DelegationID string }
	if st != 201 || json.Unmarshal(b, &d) != nil {
		t.Fatalf("delegate: %d %s", st, b)
	}
	if st, b, _ := lead.agent("POST", "/delegations/"+d.DelegationID, []byte(`{"answer":{"retry":true}}`)); st != 200 {
		t.Fatalf("answer the delegation: %d %s", st, b)
	}
	// The agent's own stream, read before its credential goes.
	sigs := openSSE(t, w.s, "/api/agent/v1/events", agent.token)
	sigs.waitFor(t, `"kind":"DELEGATED"`, `"answer"`)
	sigs.stop()

	// An input, a breakpoint the answer's message hits, and the answer.
	st, b, _ = call(t, w.s, "POST", "/api/sessions/asks/workflows/ask/executions", "", []byte(`{"payload":{"n":1}}`))
	var started struct{ ExecutionId string }
	if st != 201 || json.Unmarshal(b, &started) != nil {
		t.Fatalf("start ask: %d %s", st, b)
	}
	all.waitFor(t, `"type":"InputRequested"`, started.ExecutionId)
	if st, b, _ := call(t, w.s, "PUT", "/api/sessions/asks/executions/"+started.ExecutionId+"/nodes/yes/breakpoint", "",
		[]byte(`{"field":"n","equals":1}`)); st != 200 {
		t.Fatalf("set a breakpoint: %d %s", st, b)
	}
	st, b, _ = call(t, w.s, "GET", "/api/inputs?sessionId=asks", "", nil)
	var inputs struct{ Inputs []struct{ InputId string } }
	if st != 200 || json.Unmarshal(b, &inputs) != nil || len(inputs.Inputs) != 1 {
		t.Fatalf("inputs: %d %s", st, b)
	}
	answer := fmt.Sprintf(`{"key":"answer-1","command":{"type":"AnswerInput","inputId":%q,"answer":{"approved":true}}}`, inputs.Inputs[0].InputId)
	if st, b, _ := agent.agent("POST", "/directives", []byte(answer)); st != 202 || !strings.Contains(string(b), `"applied"`) {
		t.Fatalf("the agent answers the input: %d %s", st, b)
	}
	all.waitFor(t, `"type":"BreakpointHit"`)
	if st, b, _ := call(t, w.s, "POST", "/api/sessions/asks/executions/"+started.ExecutionId+"/nodes/yes/control", "",
		[]byte(`{"action":"RESUME"}`)); st != 200 {
		t.Fatalf("resume the node: %d %s", st, b)
	}
	for deadline := time.Now().Add(30 * time.Second); w.status("asks", started.ExecutionId) != "SUCCESS"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the asking run is %s after 30 s, want SUCCESS", w.status("asks", started.ExecutionId))
		}
	}

	// A task a worker completes, with what it spent (TaskCompleted).
	w.put("/api/sessions/tasks", []byte(`{"name":"tasks","workflows":[{"workflowId":"t","nodes":[
		{"nodeId":"in","type":"MANUAL"},{"nodeId":"work","type":"TASK","config":{"queue":"schema"}},{"nodeId":"out","type":"RESULT"}],
		"edges":[{"source":"in","target":"work"},{"source":"work","target":"out"}]}]}`))
	if st, b, _ := call(t, w.s, "POST", "/api/sessions/tasks/workflows/t/executions", "", []byte(`{"payload":1}`)); st != 201 {
		t.Fatalf("start a TASK run: %d %s", st, b)
	}
	st, b, _ = call(t, w.s, "POST", "/api/worker/v1/poll", "", []byte(`{"queues":["schema"],"wait":10}`))
	var polled struct {
		Tasks []struct{ TaskID, LeaseToken string }
	}
	if st != 200 || json.Unmarshal(b, &polled) != nil || len(polled.Tasks) != 1 {
		t.Fatalf("poll: %d %s", st, b)
	}
	done := fmt.Sprintf(`{"leaseToken":%q,"output":2,"usage":{"input":10,"output":3,"reasoning":1,"tokensKnown":true},"cost":{"usd":0.01,"usdKnown":false,"provenance":"estimated"}}`, polled.Tasks[0].LeaseToken)
	if st, b, _ := call(t, w.s, "POST", "/api/worker/v1/tasks/"+polled.Tasks[0].TaskID+"/complete", "", []byte(done)); st != 200 {
		t.Fatalf("complete: %d %s", st, b)
	}
	all.waitFor(t, `"type":"TaskCompleted"`, `"provenance":"estimated"`)

	// The lead spends its budget with directives outside its units (403);
	// past it they are refused for the budget, and it is told so once.
	for i := range 7 {
		st, b, _ := lead.agent("POST", "/directives", fmt.Appendf(nil, `{"key":"over-%d","command":{"type":"StopAll","target":"workflow:other/nap"}}`, i))
		if over := i >= 5; st != 403 || strings.Contains(string(b), "budget of 5") != over {
			t.Fatalf("directive %d of the lead (budget 5): %d %s", i+1, st, b)
		}
	}
	all.waitFor(t, `"type":"SupervisorLimitReached"`, `"limit":"budget"`)
	// The agent holds the run; deleting it releases the hold (HoldReleased).
	hold := fmt.Sprintf(`{"key":"hold-1","reason":"agent looks","command":{"type":"Hold","target":"execution:%s"}}`, id)
	if st, b, _ := agent.agent("POST", "/directives", []byte(hold)); st != 202 || !strings.Contains(string(b), `"applied"`) {
		t.Fatalf("the agent holds the run: %d %s", st, b)
	}

	// The supervisors and their credentials go, then the run and the sessions.
	for _, p := range []struct {
		path string
		want int
	}{{"/api/supervisors/agent/credential", 204}, {"/api/supervisors/agent", 200}, {"/api/supervisors/lead", 200}} {
		if st, b, _ := call(t, w.s, "DELETE", p.path, "", nil); st != p.want {
			t.Fatalf("DELETE %s: %d %s, want %d", p.path, st, b, p.want)
		}
	}
	if st, b := w.stop("ci", id, 10); st != 200 {
		t.Fatalf("stop: %d %s", st, b)
	}
	for _, sid := range []string{"ci", "asks", "tasks"} {
		if st, b, _ := call(t, w.s, "DELETE", "/api/sessions/"+sid, "", nil); st != 204 {
			t.Fatalf("DELETE session %s: %d %s", sid, st, b)
		}
	}
	// Stored keys: the first closes the open server, and its holder
	// creates, rotates and revokes another, then revokes the first, which
	// opens the server again.
	st, b, _ = call(t, w.s, "POST", "/api/keys", "", []byte(`{"name":"root","role":"ADMIN"}`))
	var root struct{ Secret string }
	if st != 201 || json.Unmarshal(b, &root) != nil {
		t.Fatalf("create the first key: %d %s", st, b)
	}
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/api/keys", `{"name":"schema","role":"VIEWER","sessions":["ci"],"ttl":"1h"}`, 201},
		{"POST", "/api/keys/schema/rotate", "", 200},
		{"PATCH", "/api/keys/schema", `{"ttl":"2h"}`, 200},
		{"DELETE", "/api/keys/schema", "", 204},
		{"DELETE", "/api/keys/root", "", 204},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		if st, b, _ := call(t, w.s, c.method, c.path, root.Secret, body); st != c.want {
			t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, st, b, c.want)
		}
	}
	all.waitFor(t, `"type":"APIKeyRevoked"`, `"name":"root"`)
	all.waitFor(t, `"type":"SessionDeleted"`, `"sessionId":"asks"`)
	run.waitFor(t, `"type":"ExecutionStatusChanged"`, `"to":"STOPPED"`)
	all.stop()
	run.stop()

	branches := map[string]*sjs.Schema{}
	for _, typ := range envelopeTypes(t) {
		branches[typ] = specSchema(t, typ+"Event")
	}
	seen := validateRecords(t, "/api/events", envelope, branches, all.snapshot(), "type")
	for _, typ := range envelopeTypes(t) {
		if seen[typ] == 0 {
			t.Errorf("no %s event in the run: the schema lists it, so the test must produce it", typ)
		}
	}
	inRun := validateRecords(t, "the execution stream", envelope, branches, run.snapshot(), "type")
	kinds := validateRecords(t, "/api/agent/v1/events", signal, nil, sigs.snapshot(), "kind")
	if len(envelopeTypes(t)) < 21 || inRun["CommandAccepted"] == 0 || kinds["EVENT"] == 0 || kinds["DELEGATED"] == 0 {
		t.Errorf("too little was checked: schema types %v; execution stream %v; agent stream %v", envelopeTypes(t), inRun, kinds)
	}
	t.Logf("/api/events: %v; execution stream: %v; agent stream: %v", seen, inRun, kinds)
}
