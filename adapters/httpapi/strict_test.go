package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// fakes records what reached the use cases; a refused request must reach
// none of them.
type fakes struct {
	mu       sync.Mutex
	calls    []string
	starts   []executionapp.StartInput
	controls []executionapp.ControlRequest
	answers  []executionapp.AnswerRequest
	hooks    []executionapp.WebhookInput
	applied  []sessionapp.ApplyInput
	// fail makes every use case fail with an error of no known kind.
	fail error
}

func (f *fakes) record(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	return f.fail
}

func (f *fakes) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakes) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.starts, f.controls, f.answers, f.hooks, f.applied = nil, nil, nil, nil, nil, nil
}

type fakeStart struct{ f *fakes }

func (s fakeStart) Handle(_ context.Context, in executionapp.StartInput) (executionapp.StartResult, error) {
	if err := s.f.record("start"); err != nil {
		return executionapp.StartResult{}, err
	}
	s.f.mu.Lock()
	s.f.starts = append(s.f.starts, in)
	s.f.mu.Unlock()
	return executionapp.StartResult{ExecutionID: "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f", Status: execution.Running, Created: true}, nil
}

type fakeWebhook struct{ f *fakes }

func (s fakeWebhook) Handle(_ context.Context, in executionapp.WebhookInput) (executionapp.StartResult, error) {
	if err := s.f.record("webhook"); err != nil {
		return executionapp.StartResult{}, err
	}
	s.f.mu.Lock()
	s.f.hooks = append(s.f.hooks, in)
	s.f.mu.Unlock()
	return executionapp.StartResult{ExecutionID: "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f", Status: execution.Running, Created: true}, nil
}

// fakeGet answers every execution with the payload of the last start as its
// result, so a test can follow a value from the door back out.
type fakeGet struct{ f *fakes }

func (g fakeGet) Handle(_ context.Context, sid, eid string) (executionapp.ExecutionView, error) {
	if err := g.f.record("get"); err != nil {
		return executionapp.ExecutionView{}, err
	}
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	v := executionapp.ExecutionView{ID: eid, SessionID: sid, WorkflowID: "w", Status: execution.Success,
		StartedAt: time.Unix(1, 0), EndedAt: time.Unix(2, 0), Actor: "anonymous", Channel: "rest"}
	if n := len(g.f.starts); n > 0 {
		v.Result, v.HasResult = g.f.starts[n-1].Payload, true
	}
	return v, nil
}

type fakeControl struct{ f *fakes }

func (c fakeControl) Handle(_ context.Context, in executionapp.ControlRequest) (executionapp.ControlResult, error) {
	if err := c.f.record("control"); err != nil {
		return executionapp.ControlResult{}, err
	}
	c.f.mu.Lock()
	c.f.controls = append(c.f.controls, in)
	c.f.mu.Unlock()
	return executionapp.ControlResult{CommandID: "c1", Status: executionapp.CommandApplied}, nil
}

type fakeAnswer struct{ f *fakes }

func (a fakeAnswer) Handle(_ context.Context, in executionapp.AnswerRequest) (executionapp.Input, error) {
	if err := a.f.record("answer"); err != nil {
		return executionapp.Input{}, err
	}
	a.f.mu.Lock()
	a.f.answers = append(a.f.answers, in)
	a.f.mu.Unlock()
	return executionapp.Input{ID: in.InputID, SessionID: "s1", ExecutionID: "e1", NodeID: "ask", Prompt: "?", Status: "answered",
		Answer: in.Answer, AnsweredBy: in.Actor, CreatedAt: time.Unix(1, 0), AnsweredAt: time.Unix(2, 0)}, nil
}

type fakeEvents struct{ f *fakes }

func (e fakeEvents) Check(context.Context, string, string) error                  { return e.f.record("events") }
func (e fakeEvents) CheckPosition(context.Context, executionapp.EventQuery) error { return nil }
func (e fakeEvents) Handle(context.Context, executionapp.EventQuery) ([]executionapp.StoredEvent, error) {
	return nil, errors.New("no events in this test")
}

type fakeApply struct{ f *fakes }

// strictCatalog is enough of the built-ins for session documents here.
type strictCatalog map[string]plugin.Descriptor

func (c strictCatalog) Describe(typ string) (plugin.Descriptor, bool) { d, ok := c[typ]; return d, ok }

var testCatalog = strictCatalog{
	"MANUAL": {Type: "MANUAL", Category: plugin.Trigger, Description: "start", Fields: []plugin.Field{{Name: "payload", Type: plugin.Any, Description: "p"}}},
	"LOG":    {Type: "LOG", Category: plugin.Processor, Description: "log", Fields: []plugin.Field{{Name: "message", Type: plugin.String, Description: "m"}}},
	"RESULT": {Type: "RESULT", Category: plugin.Terminal, Description: "result"},
}

func (a fakeApply) Handle(_ context.Context, in sessionapp.ApplyInput) (sessionapp.ApplyResult, error) {
	if _, _, err := session.Parse(in.Document, testCatalog, session.ParseOptions{ID: in.ID}); err != nil {
		return sessionapp.ApplyResult{}, err
	}
	if err := a.f.record("apply"); err != nil {
		return sessionapp.ApplyResult{}, err
	}
	a.f.mu.Lock()
	a.f.applied = append(a.f.applied, in)
	a.f.mu.Unlock()
	return sessionapp.ApplyResult{SessionID: in.ID, Created: true, Workflows: []string{"w"}}, nil
}

type fakeDescribe struct{ f *fakes }

type fakeWorkflow struct{ f *fakes }

func (w fakeWorkflow) Handle(context.Context, string, string) (sessionapp.WorkflowView, error) {
	return sessionapp.WorkflowView{}, nil
}

func (d fakeDescribe) Handle(_ context.Context, typ string, _ map[string]any) (pluginapp.Description, error) {
	return pluginapp.Description{Descriptor: testCatalog["LOG"], Ports: []string{typ}}, d.f.record("describe")
}

// strictServer is an API server over the fakes, logging into an observer.
func strictServer(t testing.TB, cfg Config) (*Server, *fakes, *observer.ObservedLogs) {
	t.Helper()
	f := &fakes{}
	core, logs := observer.New(zapcore.ErrorLevel) // errors only: a fuzz run sends many requests
	cfg.Addr = "127.0.0.1:0"
	uc := UseCases{
		ApplySession:   fakeApply{f},
		DescribePlugin: fakeDescribe{f},
		GetWorkflow:    fakeWorkflow{f},
		Executions: ExecutionUseCases{Start: fakeStart{f}, Webhook: fakeWebhook{f}, Get: fakeGet{f}, Control: fakeControl{f},
			Answer: fakeAnswer{f}, Events: fakeEvents{f}},
		Keys:   fakeKeyUseCases,
		Worker: fakeWorkerUseCases,
	}
	srv, err := New(cfg, uc, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	return srv, f, logs
}

// answer is one response, its problem decoded when it is one.
type answer struct {
	status int
	ctype  string
	body   string
	header http.Header
	p      problemDoc
}

type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Path    string `json:"path"`
		Message string `json:"message"`
	} `json:"errors"`
}

func (a answer) paths() []string {
	var out []string
	for _, e := range a.p.Errors {
		out = append(out, e.Path)
	}
	return out
}

func (a answer) messages() string {
	var b strings.Builder
	b.WriteString(a.p.Detail)
	for _, e := range a.p.Errors {
		b.WriteString(" | " + e.Path + ": " + e.Message)
	}
	return b.String()
}

func send(h http.Handler, method, target, ctype string, body []byte, header ...string) answer {
	req := httptest.NewRequest(method, "http://127.0.0.1"+target, strings.NewReader(string(body)))
	if strings.IndexByte(target, 0) >= 0 || !utf8.ValidString(target) {
		req.URL.RawPath = ""
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, ctype: rec.Header().Get("Content-Type"), body: rec.Body.String(), header: rec.Header()}
	if a.ctype == problemContentType {
		_ = json.Unmarshal(rec.Body.Bytes(), &a.p)
	}
	return a
}

// goText are fragments of Go's own error text that must never reach a client.
var goText = []string{"json: ", "cannot unmarshal", "interface {}", "strconv.", "Unmarshal type error", "uuid.UUID", "Go value", "about:blank", "invalid character"}

func checkWords(t testing.TB, what string, a answer) {
	t.Helper()
	if a.ctype != problemContentType {
		t.Errorf("%s: content type %q, want %s (%d %s)", what, a.ctype, problemContentType, a.status, a.body)
	}
	if !strings.HasPrefix(a.p.Type, "urn:yukta:problem:") {
		t.Errorf("%s: problem type %q, want one of ours (urn:yukta:problem:…): %s", what, a.p.Type, a.body)
	}
	for _, g := range goText {
		if strings.Contains(a.body, g) {
			t.Errorf("%s: answer holds Go text %q: %s", what, g, a.body)
		}
	}
}

const (
	jsonCT = "application/json"
	inputP = "/api/inputs/0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f"
	execP  = "/api/sessions/s1/executions/0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f"
)

const (
	logDoc = `{"name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"},{"nodeId":"l","type":"LOG","config":{"message":%s}}],"edges":[{"source":"t","target":"l"}]}]}`
)

func TestStrictBodiesAreRefusedNamingThePlace(t *testing.T) {
	t.Parallel()
	srv, f, logs := strictServer(t, Config{})
	h := srv.Handler()
	cases := []struct {
		name, method, target string
		body                 string
		header               []string
		path, reason         string
	}{
		// Session documents: the domain parser names the place in the document.
		{"session name NUL", "PUT", "/api/sessions/s1", `{"name":"a\u0000","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`, nil, "name", "U+0000"},
		{"session name raw NUL", "PUT", "/api/sessions/s1", "{\"name\":\"a\x00\"," + `"workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`, nil, "name", "U+0000"},
		{"session LOG message NUL", "PUT", "/api/sessions/s1", strings.Replace(logDoc, "%s", `"x\u0000y"`, 1), nil, "workflows[0].nodes[1].config.message", "U+0000"},
		{"session LOG message invalid UTF-8", "PUT", "/api/sessions/s1", strings.Replace(logDoc, "%s", "\"x\xffy\"", 1), nil, "workflows[0].nodes[1].config.message", "UTF-8"},
		{"session repeated key", "PUT", "/api/sessions/s1", `{"name":"a","name":"b","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`, nil, "name", "twice"},
		// Start payloads.
		{"payload value NUL", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":{"v":"a\u0000"}}`, nil, "body.payload.v", "U+0000"},
		{"payload value raw NUL", "POST", "/api/sessions/s1/workflows/w/executions", "{\"payload\":{\"v\":\"a\x00\"}}", nil, "body.payload.v", "U+0000"},
		{"payload key NUL", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":{"k\u0000":1}}`, nil, `body.payload["k\x00"]`, "U+0000"},
		{"payload invalid UTF-8", "POST", "/api/sessions/s1/workflows/w/executions", "{\"payload\":{\"v\":\"\xc3\x28\"}}", nil, "body.payload.v", "UTF-8"},
		{"payload lone surrogate", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":{"v":"\udc00"}}`, nil, "body.payload.v", "surrogate"},
		{"payload repeated key", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":{"id":1,"id":2}}`, nil, "body.payload.id", "twice"},
		{"body repeated key", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":1,"payload":2}`, nil, "body.payload", "twice"},
		{"payload 1e400", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":{"n":1e400}}`, nil, "body.payload.n", "out of range"},
		{"payload too deep", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":` + strings.Repeat("[", 130) + strings.Repeat("]", 130) + `}`, nil, "", "deeper than 128"},
		{"body not JSON", "POST", "/api/sessions/s1/workflows/w/executions", `{"payload":{"name":`, nil, "body", "not valid JSON at byte 19"},
		{"body with trailing data", "POST", "/api/sessions/s1/workflows/w/executions", `{} {}`, nil, "body", "data after"},
		// Answers, commands, breakpoints.
		{"answer NUL", "POST", inputP, `{"answer":{"comment":"\u0000"}}`, nil, "body.answer.comment", "U+0000"},
		{"answer 1e400", "POST", inputP, `{"answer":1e400}`, nil, "body.answer", "out of range"},
		{"command reason NUL", "POST", execP + "/control", `{"action":"PAUSE","reason":"\u0000"}`, nil, "body.reason", "U+0000"},
		{"command key NUL", "POST", execP + "/control", `{"action":"PAUSE","key":"k\u0000"}`, nil, "body.key", "U+0000"},
		{"command key invalid UTF-8", "POST", execP + "/control", "{\"action\":\"PAUSE\",\"key\":\"k\xff\"}", nil, "body.key", "UTF-8"},
		{"command repeated action", "POST", execP + "/control", `{"action":"PAUSE","action":"RESUME"}`, nil, "body.action", "twice"},
		{"node command reason NUL", "POST", execP + "/nodes/n1/control", `{"action":"PAUSE","reason":"\u0000"}`, nil, "body.reason", "U+0000"},
		{"breakpoint equals NUL", "PUT", execP + "/nodes/n1/breakpoint", `{"field":"a","equals":"\u0000"}`, nil, "body.equals", "U+0000"},
		{"breakpoint equals 1e400", "PUT", execP + "/nodes/n1/breakpoint", `{"field":"a","equals":1e400}`, nil, "body.equals", "out of range"},
		{"stop-all reason NUL", "POST", "/api/sessions/s1/workflows/w/stop", `{"reason":"\u0000"}`, nil, "body.reason", "U+0000"},
		// Webhook bodies (the body is the payload).
		{"webhook NUL", "POST", "/api/hooks/s1/w", `{"order":"\u0000"}`, nil, "body.order", "U+0000"},
		{"webhook invalid UTF-8", "POST", "/api/hooks/s1/w", "{\"order\":\"\xff\"}", nil, "body.order", "UTF-8"},
		{"webhook repeated key", "POST", "/api/hooks/s1/w", `{"order":1,"order":2}`, nil, "body.order", "twice"},
		{"webhook 1e400", "POST", "/api/hooks/s1/w", `{"order":1e400}`, nil, "body.order", "out of range"},
		// A JSON query parameter.
		{"plugin config NUL", "GET", "/api/plugins/LOG?config=" + `%7B%22message%22%3A%22%5Cu0000%22%7D`, "", nil, "query.config.message", "U+0000"},
	}
	for _, tc := range cases {
		f.reset()
		a := send(h, tc.method, tc.target, jsonCT, []byte(tc.body), tc.header...)
		if a.status != http.StatusBadRequest {
			t.Errorf("%s: status %d (%s), want 400", tc.name, a.status, a.body)
			continue
		}
		checkWords(t, tc.name, a)
		if a.p.Type != typeInvalid || len(a.p.Errors) != 1 {
			t.Errorf("%s: problem %s, want one violation of type %s", tc.name, a.body, typeInvalid)
			continue
		}
		if got := a.p.Errors[0].Path; tc.path != "" && got != tc.path || tc.path == "" && !strings.HasPrefix(got, "body.payload[0]") {
			t.Errorf("%s: path %q, want %q (%s)", tc.name, got, tc.path, a.body)
		}
		if !strings.Contains(a.p.Errors[0].Message, tc.reason) {
			t.Errorf("%s: message %q, want it to mention %q", tc.name, a.p.Errors[0].Message, tc.reason)
		}
		if c := f.called(); len(c) != 0 {
			t.Errorf("%s: a refused request reached the use cases %v", tc.name, c)
		}
	}
	if n := logs.FilterMessage("request failed").Len(); n != 0 {
		t.Errorf("%d requests failed with a 5xx", n)
	}
}

func TestStrictParametersAreRefusedNamingThem(t *testing.T) {
	t.Parallel()
	srv, f, _ := strictServer(t, Config{})
	h := srv.Handler()
	cases := []struct {
		name, method, target string
		header               []string
		path, reason         string
	}{
		{"execution id with NUL", "GET", "/api/sessions/s1/executions/abc%00", nil, "path.executionId", "U+0000"},
		{"execution id with invalid UTF-8", "GET", "/api/sessions/s1/executions/abc%FF", nil, "path.executionId", "UTF-8"},
		{"cursor with NUL", "GET", "/api/sessions?cursor=a%00", nil, "query.cursor", "U+0000"},
		{"cursor with invalid UTF-8", "GET", "/api/sessions/s1/executions?cursor=%C3%28", nil, "query.cursor", "UTF-8"},
		{"filter with invalid UTF-8", "GET", execP + "/logs?filterPattern=%FF", nil, "query.filterPattern", "UTF-8"},
		{"Idempotency-Key with invalid UTF-8", "POST", "/api/sessions/s1/workflows/w/executions", []string{"Idempotency-Key", "k\xff"}, "header.Idempotency-Key", "UTF-8"},
		{"Idempotency-Key on a webhook", "POST", "/api/hooks/s1/w", []string{"Idempotency-Key", "k\xfe"}, "header.Idempotency-Key", "UTF-8"},
		{"Last-Event-ID with invalid UTF-8", "GET", execP + "/events", []string{"Last-Event-ID", "1\xff"}, "header.Last-Event-ID", "UTF-8"},
		{"signature with invalid UTF-8", "POST", "/api/hooks/s1/w", []string{"X-Yukta-Signature", "sha256=\xff"}, "header.X-Yukta-Signature", "UTF-8"},
		{"input id not a UUID", "POST", "/api/inputs/not-a-uuid", nil, "path.inputId", "not a UUID"},
		{"input id almost a UUID", "POST", "/api/inputs/0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8", nil, "path.inputId", "not a UUID"},
		{"execution filter not a UUID", "GET", "/api/inputs?sessionId=s1&executionId=nope", nil, "query.executionId", "not a UUID"},
		{"execution id not a UUID", "GET", "/api/sessions/s1/executions/nope", nil, "path.executionId", "not a UUID"},
		{"execution id almost a UUID", "GET", "/api/sessions/s1/executions/0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8/logs", nil, "path.executionId", "not a UUID"},
		{"execution id of a stream not a UUID", "GET", "/api/sessions/s1/executions/42/events", nil, "path.executionId", "not a UUID"},
	}
	for _, tc := range cases {
		f.reset()
		a := send(h, tc.method, tc.target, jsonCT, []byte(`{"answer":1}`), tc.header...)
		if a.status != http.StatusBadRequest {
			t.Errorf("%s: status %d (%s), want 400", tc.name, a.status, a.body)
			continue
		}
		checkWords(t, tc.name, a)
		found := false
		for _, e := range a.p.Errors {
			found = found || e.Path == tc.path && strings.Contains(e.Message, tc.reason)
		}
		if !found {
			t.Errorf("%s: violations %q, want %s naming %q", tc.name, a.messages(), tc.path, tc.reason)
		}
		if c := f.called(); len(c) != 0 {
			t.Errorf("%s: a refused request reached the use cases %v", tc.name, c)
		}
	}
}

// Numbers keep their exact text from the request to the use case and from
// the use case back out: a start payload read back as the execution's
// result, an answer, a breakpoint's value.
func TestStrictNumbersRoundTripExactly(t *testing.T) {
	t.Parallel()
	srv, f, _ := strictServer(t, Config{})
	h := srv.Handler()
	const payload = `{"id":9007199254740993,"big":9223372036854775809,"neg":-9223372036854775809,"f":0.1000000000000000055511151231257827,"e":1.5e300,"list":[18446744073709551617]}`
	digits := []string{"9007199254740993", "9223372036854775809", "-9223372036854775809", "0.1000000000000000055511151231257827", "1.5e300", "18446744073709551617"}

	a := send(h, "POST", "/api/sessions/s1/workflows/w/executions", jsonCT, []byte(`{"payload":`+payload+`}`))
	if a.status != http.StatusCreated {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	got, _ := json.Marshal(f.starts[0].Payload)
	if string(got) != `{"big":9223372036854775809,"e":1.5e300,"f":0.1000000000000000055511151231257827,"id":9007199254740993,"list":[18446744073709551617],"neg":-9223372036854775809}` {
		t.Errorf("payload handed to the use case: %s", got)
	}
	a = send(h, "GET", execP, "", nil)
	if a.status != http.StatusOK {
		t.Fatalf("get: %d %s", a.status, a.body)
	}
	for _, d := range digits {
		if !strings.Contains(a.body, d) {
			t.Errorf("GET execution result lost %s: %s", d, a.body)
		}
	}

	a = send(h, "POST", inputP, jsonCT, []byte(`{"answer":{"n":9223372036854775809}}`))
	if a.status != http.StatusOK || !strings.Contains(a.body, `"n":9223372036854775809`) {
		t.Errorf("answer: %d %s, want the exact number back", a.status, a.body)
	}
	if b, _ := json.Marshal(f.answers[0].Answer); string(b) != `{"n":9223372036854775809}` {
		t.Errorf("answer handed to the use case: %s", b)
	}

	a = send(h, "PUT", execP+"/nodes/n1/breakpoint", jsonCT, []byte(`{"field":"id","equals":9007199254740993}`))
	if a.status != http.StatusOK {
		t.Fatalf("breakpoint: %d %s", a.status, a.body)
	}
	if bp := f.controls[0].Breakpoint; bp == nil || bp.Equals != json.Number("9007199254740993") {
		t.Errorf("breakpoint handed to the use case: %#v", f.controls[0].Breakpoint)
	}

	a = send(h, "POST", "/api/hooks/s1/w", jsonCT, []byte(payload))
	if a.status != http.StatusCreated || string(f.hooks[0].Body) != payload {
		t.Errorf("webhook: %d %s, body handed on %q", a.status, a.body, f.hooks[0].Body)
	}
}

// The Idempotency-Key cap is 255 characters (not bytes): 255 pass, 256 are
// refused naming the header, and nothing is started.
func TestIdempotencyKeyCap(t *testing.T) {
	t.Parallel()
	srv, f, _ := strictServer(t, Config{})
	h := srv.Handler()
	for _, route := range []string{"/api/sessions/s1/workflows/w/executions", "/api/hooks/s1/w"} {
		for _, key := range []string{strings.Repeat("k", 255), strings.Repeat("é", 255)} {
			f.reset()
			a := send(h, "POST", route, jsonCT, []byte(`{}`), "Idempotency-Key", key)
			if a.status != http.StatusCreated {
				t.Errorf("%s with a %d-character key: %d %s, want 201", route, len([]rune(key)), a.status, a.body)
			}
			var passed string
			if len(f.starts) == 1 {
				passed = f.starts[0].IdempotencyKey
			} else if len(f.hooks) == 1 {
				passed = f.hooks[0].IdempotencyKey
			}
			if passed != key {
				t.Errorf("%s: key handed to the use case %q, want the 255 characters sent", route, passed)
			}
			f.reset()
			long := key + string([]rune(key)[:1])
			a = send(h, "POST", route, jsonCT, []byte(`{}`), "Idempotency-Key", long)
			if a.status != http.StatusBadRequest || len(a.paths()) != 1 || a.paths()[0] != "header.Idempotency-Key" {
				t.Errorf("%s with a 256-character key: %d %s, want 400 naming header.Idempotency-Key", route, a.status, a.body)
			}
			checkWords(t, "256-character key", a)
			if c := f.called(); len(c) != 0 {
				t.Errorf("%s: a 256-character key reached the use cases %v", route, c)
			}
		}
	}
}

// Every answer the HTTP layer itself makes is a problem of a type of ours.
func TestEveryProblemHasOurType(t *testing.T) {
	t.Parallel()
	spec, err := access.NewKeySpec("admin", access.Admin, nil, "admin-secret-0123456789abcdefgh")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := access.NewKeyring([]access.KeySpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	keyed, _, _ := strictServer(t, Config{Security: Security{Keys: authn.Keys{API: authn.NewRing(ring)}, KeyRate: Rate{N: 1, Per: time.Hour}}})
	open, f, logs := strictServer(t, Config{BodyLimit: 64})
	big := `{"payload":"` + strings.Repeat("x", 100) + `"}`
	cases := []struct {
		name               string
		srv                *Server
		method, target, ct string
		body               string
		header             []string
		status             int
		typ                string
	}{
		{"unknown route", open, "GET", "/api/nothing", "", "", nil, 404, typeNotFound},
		{"unknown route outside /api", open, "GET", "/nothing", "", "", nil, 404, typeNotFound},
		{"wrong method", open, "DELETE", "/api/sessions", "", "", nil, 405, typeMethodNotAllowed},
		{"body over the limit", open, "POST", "/api/sessions/s1/workflows/w/executions", jsonCT, big, nil, 413, typeTooLarge},
		{"wrong content type", open, "POST", "/api/sessions/s1/workflows/w/executions", "text/plain", "x", nil, 415, typeUnsupportedMedia},
		{"schema violation", open, "POST", execP + "/control", jsonCT, `{"action":"NAP"}`, nil, 400, typeInvalid},
		{"wrong member type", open, "POST", execP + "/control", jsonCT, `{"action":1}`, nil, 400, typeInvalid},
		{"number as a wait", open, "POST", execP + "/control", jsonCT, `{"action":"PAUSE","wait":9007199254740993}`, nil, 400, typeInvalid},
		{"limit not a number", open, "GET", "/api/sessions?limit=abc", "", "", nil, 400, typeInvalid},
		{"foreign host", open, "GET", "/api/sessions", "", "", []string{"Origin", "http://evil.example"}, 403, typeForbidden},
		{"no key", keyed, "GET", "/api/sessions", "", "", nil, 401, typeUnauthenticated},
		{"wrong key", keyed, "GET", "/api/sessions", "", "", []string{"X-API-Key", "wrong-secret-0123456789abcdefgh"}, 401, typeUnauthenticated},
		{"rate limited", keyed, "GET", "/api/nothing", "", "", []string{"X-API-Key", "admin-secret-0123456789abcdefgh"}, 404, typeNotFound},
		{"rate limited again", keyed, "GET", "/api/nothing", "", "", []string{"X-API-Key", "admin-secret-0123456789abcdefgh"}, 429, typeRateLimited},
	}
	for _, tc := range cases {
		a := send(tc.srv.Handler(), tc.method, tc.target, tc.ct, []byte(tc.body), tc.header...)
		if a.status != tc.status || a.p.Type != tc.typ {
			t.Errorf("%s: %d %s, want %d of type %s", tc.name, a.status, a.body, tc.status, tc.typ)
		}
		checkWords(t, tc.name, a)
	}
	// An internal error: type internal, no internal text, logged once.
	f.fail = errors.New("pq: something private broke")
	a := send(open.Handler(), "POST", "/api/sessions/s1/workflows/w/executions", jsonCT, []byte(`{}`))
	if a.status != 500 || a.p.Type != typeInternal || strings.Contains(a.body, "private") {
		t.Errorf("internal error: %d %s, want 500 of type %s without the internal text", a.status, a.body, typeInternal)
	}
	checkWords(t, "internal error", a)
	if n := logs.FilterMessage("request failed").Len(); n != 1 {
		t.Errorf("internal error logged %d times, want once", n)
	}
}

// TestPutSessionChecksThePathIDWithTheBody: a session id in the URL that
// breaks the id rule is one violation among the body's (the parser checks
// it with the document's sessionId, x-yukta-checks-path), not an answer of
// its own that hides them; other routes still refuse a bad path id alone.
func TestPutSessionChecksThePathIDWithTheBody(t *testing.T) {
	t.Parallel()
	srv, _, _ := strictServer(t, Config{})
	h := srv.Handler()
	a := send(h, "PUT", "/api/sessions/Bad%20Id", jsonCT, []byte(`{"name":"","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`))
	var paths []string
	for _, e := range a.p.Errors {
		paths = append(paths, e.Path)
	}
	if a.status != http.StatusBadRequest || strings.Join(paths, " ") != "sessionId name" {
		t.Fatalf("PUT with a bad path id: %d %s, want 400 at sessionId and name", a.status, a.body)
	}
	if a = send(h, "GET", "/api/sessions/Bad%20Id", "", nil); a.status != http.StatusBadRequest || len(a.p.Errors) != 1 || a.p.Errors[0].Path != "path.sessionId" {
		t.Fatalf("GET with a bad path id: %d %s, want 400 at path.sessionId", a.status, a.body)
	}
}
