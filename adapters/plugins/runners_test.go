package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/plugin"
)

var runNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func runners(t *testing.T, cfg plugins.RunnerConfig) *plugins.RunnerSet {
	t.Helper()
	s, err := plugins.NewRunners(cfg)
	if err != nil {
		t.Fatalf("NewRunners: got error %v, want nil", err)
	}
	return s
}

// jsonValue decodes src as the engine does, numbers as json.Number; "" is nil.
func jsonValue(t *testing.T, src string) any {
	t.Helper()
	if src == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("test JSON %s: %v", src, err)
	}
	return v
}

// invocation builds what the engine hands a runner: the config with the
// type's defaults applied.
func invocation(t *testing.T, typ, cfg, payload string, resume *executionapp.Resume) executionapp.Invocation {
	t.Helper()
	return executionapp.Invocation{
		SessionID: "s", WorkflowID: "w", ExecutionID: "ex-1", NodeID: "n1", NodeType: typ, ItemID: 7,
		IdempotencyKey: "ex-1:n1:7", Attempt: 1,
		Config:    describe(t, typ).WithDefaults(config(t, cfg)),
		Payload:   jsonValue(t, payload),
		Execution: map[string]any{"executionId": "ex-1", "startedAt": "2026-11-30T08:59:00Z", "input": map[string]any{}},
		Now:       runNow,
		Resume:    resume,
	}
}

// view is an Outcome as JSON, so the tables can state expectations as text
// whatever numeric type (float64, json.Number) a runner produced.
func view(t *testing.T, o executionapp.Outcome) any {
	t.Helper()
	m := map[string]any{}
	if len(o.Emits) > 0 {
		m["emits"] = o.Emits
	}
	if len(o.Logs) > 0 {
		m["logs"] = o.Logs
	}
	if !o.Defer.IsZero() {
		m["defer"] = o.Defer.Format(time.RFC3339)
	}
	if o.Park != nil {
		m["park"] = o.Park
	}
	if o.HasResult {
		m["result"] = o.Result
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("outcome %#v is not JSON: %v", o, err)
	}
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

func wantView(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatalf("test want %s: %v", src, err)
	}
	return v
}

type runCase struct {
	name, config, payload string
	resume                *executionapp.Resume
	want                  string // the Outcome as JSON (see view); ignored when wantErr is set
	wantErr               string // a part of the error
}

func runTable(t *testing.T, typ string, tests []runCase) {
	t.Helper()
	set := runners(t, plugins.RunnerConfig{})
	r, ok := set.Runner(typ)
	if !ok {
		t.Fatalf("Runner(%s): got not found, want a runner", typ)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.Run(context.Background(), invocation(t, typ, tt.config, tt.payload, tt.resume))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Run: got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: got error %v, want %s", err, tt.want)
			}
			if got, want := view(t, out), wantView(t, tt.want); !reflect.DeepEqual(got, want) {
				gb, _ := json.Marshal(got)
				t.Errorf("Run: got %s, want %s", gb, tt.want)
			}
		})
	}
}

func TestEveryTypeHasARunner(t *testing.T) {
	set := runners(t, plugins.RunnerConfig{})
	for _, d := range plugins.Descriptors() {
		if _, ok := set.Runner(d.Type); !ok {
			t.Errorf("Runner(%s): got not found, want a runner", d.Type)
		}
	}
	if _, ok := set.Runner("NOPE"); ok {
		t.Errorf("Runner(NOPE): got a runner, want not found")
	}
}

func TestTriggerRunners(t *testing.T) {
	for _, typ := range []string{"MANUAL", "WEBHOOK", "SUPERVISOR_SIGNAL"} {
		t.Run(typ, func(t *testing.T) {
			runTable(t, typ, []runCase{
				{name: "object", config: `{}`, payload: `{"a": 1}`, want: `{"emits": [{"Port": "default", "Payload": {"a": 1}}]}`},
				{name: "null", config: `{}`, payload: ``, want: `{"emits": [{"Port": "default", "Payload": null}]}`},
			})
		})
	}
}

func TestScheduleRunner(t *testing.T) {
	runTable(t, "SCHEDULE", []runCase{
		{name: "payload from the scheduler", config: `{"cron": "@hourly", "payload": {"x": 1}}`, payload: `{"tick": 3}`, want: `{"emits": [{"Port": "default", "Payload": {"tick": 3}}]}`},
		{name: "configured payload", config: `{"cron": "@hourly", "payload": {"report": "daily"}}`, want: `{"emits": [{"Port": "default", "Payload": {"report": "daily"}}]}`},
		{name: "no payload at all", config: `{"cron": "@hourly"}`, want: `{"emits": [{"Port": "default", "Payload": {"firedAt": "2026-11-30T09:00:00Z"}}]}`},
	})
}

func TestTransformRunner(t *testing.T) {
	runTable(t, "TRANSFORM", []runCase{
		{name: "new object", config: `{"expression": "{\"id\": payload.body.id, \"count\": size(payload.body.items), \"run\": execution.executionId}"}`,
			payload: `{"body": {"id": "o-1", "items": [1, 2]}}`, want: `{"emits": [{"Port": "default", "Payload": {"id": "o-1", "count": 2, "run": "ex-1"}}]}`},
		{name: "scalar", config: `{"expression": "payload.amount * 2"}`, payload: `{"amount": 21}`, want: `{"emits": [{"Port": "default", "Payload": 42}]}`},
		{name: "runtime error names the expression", config: `{"expression": "payload.missing"}`, payload: `{}`, wantErr: `CEL expression "payload.missing": no such key: missing`},
	})
}

func TestFilterRunner(t *testing.T) {
	runTable(t, "FILTER", []runCase{
		{name: "true passes the message", config: `{"condition": "payload.amount > 100"}`, payload: `{"amount": 150}`, want: `{"emits": [{"Port": "default", "Payload": {"amount": 150}}]}`},
		{name: "false drops it with a log", config: `{"condition": "payload.amount > 100"}`, payload: `{"amount": 50}`, want: `{"logs": [{"Level": "info", "Message": "filtered out: the condition is false"}]}`},
		{name: "not a bool", config: `{"condition": "payload.amount"}`, payload: `{"amount": 50}`, wantErr: "must evaluate to a bool, got int"},
	})
}

func TestRouterRunner(t *testing.T) {
	routes := `"routes": [{"port": "big", "condition": "payload.n >= 1000"}, {"port": "small", "condition": "payload.n < 10"}, {"port": "also-small", "condition": "payload.n < 20"}]`
	runTable(t, "ROUTER", []runCase{
		{name: "first route", config: `{` + routes + `}`, payload: `{"n": 5000}`, want: `{"emits": [{"Port": "big", "Payload": {"n": 5000}}]}`},
		{name: "first true route wins", config: `{` + routes + `}`, payload: `{"n": 5}`, want: `{"emits": [{"Port": "small", "Payload": {"n": 5}}]}`},
		{name: "fallback by default", config: `{` + routes + `}`, payload: `{"n": 500}`, want: `{"emits": [{"Port": "default", "Payload": {"n": 500}}]}`},
		{name: "dropped without fallback", config: `{` + routes + `, "fallback": false}`, payload: `{"n": 500}`, want: `{"logs": [{"Level": "info", "Message": "dropped: no route matched and fallback is false"}]}`},
		{name: "error names the route", config: `{` + routes + `}`, payload: `{}`, wantErr: `routes[0].condition: CEL expression "payload.n >= 1000": no such key: n`},
	})
}

func TestSplitRunner(t *testing.T) {
	big := `{"items": [` + strings.TrimSuffix(strings.Repeat("0,", 10_001), ",") + `]}`
	runTable(t, "SPLIT", []runCase{
		{name: "nested field", config: `{"field": "body.items"}`, payload: `{"body": {"items": [{"a": 1}, 2, "three"]}}`,
			want: `{"emits": [{"Port": "default", "Payload": {"a": 1}}, {"Port": "default", "Payload": 2}, {"Port": "default", "Payload": "three"}]}`},
		{name: "the payload itself", config: `{}`, payload: `[1, 2]`, want: `{"emits": [{"Port": "default", "Payload": 1}, {"Port": "default", "Payload": 2}]}`},
		{name: "empty array emits nothing", config: `{"field": "items"}`, payload: `{"items": []}`, want: `{}`},
		{name: "not an array", config: `{"field": "body.items"}`, payload: `{"body": {"items": {"a": 1}}}`, wantErr: `field "body.items" must be an array, got an object`},
		{name: "payload not an array", config: `{}`, payload: `"text"`, wantErr: `the payload must be an array, got string`},
		{name: "missing member", config: `{"field": "body.items"}`, payload: `{"body": {}}`, wantErr: `field "body.items": payload.body has no member "items"`},
		{name: "through a non-object", config: `{"field": "body.items"}`, payload: `{"body": 3}`, wantErr: `payload.body is a number, not an object`},
		{name: "over the cap", config: `{"field": "items"}`, payload: big, wantErr: "has 10001 elements, more than the limit of 10000"},
	})
}

func TestDelayRunner(t *testing.T) {
	runTable(t, "DELAY", []runCase{
		{name: "first run defers", config: `{"duration": "10m"}`, payload: `{"a": 1}`, want: `{"defer": "2026-11-30T09:10:00Z"}`},
		{name: "resumed emits", config: `{"duration": "10m"}`, payload: `{"a": 1}`, resume: &executionapp.Resume{}, want: `{"emits": [{"Port": "default", "Payload": {"a": 1}}]}`},
		{name: "zero duration passes at once", config: `{"duration": "0s"}`, payload: `{"a": 1}`, want: `{"emits": [{"Port": "default", "Payload": {"a": 1}}]}`},
	})
}

func TestInputRequestRunner(t *testing.T) {
	approval := `{"prompt": "Refund?"}`
	answer := `{"prompt": "Name?", "mode": "answer", "schema": {"type": "object"}}`
	runTable(t, "INPUT_REQUEST", []runCase{
		{name: "first run parks", config: approval, payload: `{"order": 1}`,
			want: `{"park": {"Prompt": "Refund?", "Schema": null}, "logs": [{"Level": "info", "Message": "waiting for input: Refund?"}]}`},
		{name: "first run parks with the schema", config: answer, payload: `{"order": 1}`,
			want: `{"park": {"Prompt": "Name?", "Schema": {"type": "object"}}, "logs": [{"Level": "info", "Message": "waiting for input: Name?"}]}`},
		{name: "approved with a comment", config: approval, payload: `{"order": 1}`,
			resume: &executionapp.Resume{Answer: map[string]any{"approved": true, "comment": "fine"}, AnsweredBy: "alice"},
			want:   `{"emits": [{"Port": "approved", "Payload": {"order": 1, "approval": {"approved": true, "by": "alice", "comment": "fine"}}}], "logs": [{"Level": "info", "Message": "answered by alice"}]}`},
		{name: "rejected as a bare bool", config: approval, payload: `{"order": 1}`,
			resume: &executionapp.Resume{Answer: false, AnsweredBy: "bob"},
			want:   `{"emits": [{"Port": "rejected", "Payload": {"order": 1, "approval": {"approved": false, "by": "bob"}}}], "logs": [{"Level": "info", "Message": "answered by bob"}]}`},
		{name: "payload that is not an object goes on unchanged", config: approval, payload: `[1]`,
			resume: &executionapp.Resume{Answer: true, AnsweredBy: "bob"},
			want:   `{"emits": [{"Port": "approved", "Payload": [1]}], "logs": [{"Level": "info", "Message": "answered by bob"}]}`},
		{name: "malformed approval", config: approval, payload: `{}`, resume: &executionapp.Resume{Answer: map[string]any{"approved": "yes"}}, wantErr: "an approval answer must be true, false or an object"},
		{name: "answer merged, answer wins", config: answer, payload: `{"order": 1, "name": "old"}`,
			resume: &executionapp.Resume{Answer: map[string]any{"name": "Ada"}, AnsweredBy: "agent-1"},
			want:   `{"emits": [{"Port": "default", "Payload": {"order": 1, "name": "Ada"}}], "logs": [{"Level": "info", "Message": "answered by agent-1"}]}`},
		{name: "answer wrapped when not an object", config: answer, payload: `{"order": 1}`,
			resume: &executionapp.Resume{Answer: "Ada", AnsweredBy: "agent-1"},
			want:   `{"emits": [{"Port": "default", "Payload": {"input": {"order": 1}, "answer": "Ada"}}], "logs": [{"Level": "info", "Message": "answered by agent-1"}]}`},
	})
}

func TestInputRequestDoesNotChangeItsInput(t *testing.T) {
	r, _ := runners(t, plugins.RunnerConfig{}).Runner("INPUT_REQUEST")
	in := invocation(t, "INPUT_REQUEST", `{"prompt": "ok?"}`, `{"order": 1}`, &executionapp.Resume{Answer: true})
	if _, err := r.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if _, ok := in.Payload.(map[string]any)["approval"]; ok {
		t.Errorf("input payload after Run: got %v, want no approval member added to it", in.Payload)
	}
}

func TestInputRequestCheckAnswer(t *testing.T) {
	r := plugins.InputRequestRunner{}
	if err := r.CheckAnswer(map[string]any{"mode": "approval"}, "yes"); err == nil {
		t.Errorf(`CheckAnswer("yes") in approval mode: got nil, want an error`)
	}
	if err := r.CheckAnswer(map[string]any{"mode": "approval"}, map[string]any{"approved": true}); err != nil {
		t.Errorf(`CheckAnswer({"approved": true}): got %v, want nil`, err)
	}
	if err := r.CheckAnswer(map[string]any{"mode": "answer"}, "anything"); err != nil {
		t.Errorf(`CheckAnswer in answer mode: got %v, want nil`, err)
	}
}

func TestLogRunner(t *testing.T) {
	long := `{"s": "` + strings.Repeat("é", 1000) + `"}`
	r, _ := runners(t, plugins.RunnerConfig{}).Runner("LOG")
	out, err := r.Run(context.Background(), invocation(t, "LOG", `{}`, long, nil))
	if err != nil {
		t.Fatal(err)
	}
	if msg := out.Logs[0].Message; len(msg) > 1024+len("…") || !strings.HasPrefix(msg, `{"s":"éé`) || !strings.HasSuffix(msg, "é…") {
		t.Errorf("log of a long payload: got %d bytes ending %q, want at most 1 KiB cut on a rune boundary", len(msg), msg[len(msg)-8:])
	}
	runTable(t, "LOG", []runCase{
		{name: "message at level", config: `{"message": "order rejected", "level": "warn"}`, payload: `{"a": 1}`,
			want: `{"emits": [{"Port": "default", "Payload": {"a": 1}}], "logs": [{"Level": "warn", "Message": "order rejected"}]}`},
		{name: "payload as JSON by default", config: `{}`, payload: `{"a": 1}`,
			want: `{"emits": [{"Port": "default", "Payload": {"a": 1}}], "logs": [{"Level": "info", "Message": "{\"a\":1}"}]}`},
	})
}

func TestFailRunner(t *testing.T) {
	runTable(t, "FAIL", []runCase{
		{name: "default message", config: `{}`, payload: `{}`, wantErr: "failed on purpose"},
		{name: "own message", config: `{"message": "simulated outage"}`, payload: `{}`, wantErr: "simulated outage"},
	})
}

func TestResultRunner(t *testing.T) {
	runTable(t, "RESULT", []runCase{
		{name: "payload", config: `{}`, payload: `{"a": 1}`, want: `{"result": {"a": 1}}`},
		{name: "null payload", config: `{}`, payload: ``, want: `{"result": null}`},
		{name: "expression", config: `{"expression": "payload.body"}`, payload: `{"body": [1, 2]}`, want: `{"result": [1, 2]}`},
		{name: "expression error", config: `{"expression": "payload.body"}`, payload: `{}`, wantErr: "no such key: body"},
	})
}

func TestSupervisorDecisionRunner(t *testing.T) {
	runTable(t, "SUPERVISOR_DECISION", []runCase{
		{name: "with reason", config: `{"outcome": "ESCALATE", "reason": "three failures"}`, payload: `{"signal": 1}`,
			want: `{"result": {"outcome": "ESCALATE", "reason": "three failures", "payload": {"signal": 1}}}`},
		{name: "without reason", config: `{"outcome": "SUCCESS"}`, payload: `{}`, want: `{"result": {"outcome": "SUCCESS", "reason": "", "payload": {}}}`},
		// Seed 000: SUCCESS is the default.
		{name: "without outcome", config: `{}`, payload: `{"commands": [{"type": "PauseWorkflow", "target": "owned.running"}]}`,
			want: `{"result": {"outcome": "SUCCESS", "reason": "", "payload": {"commands": [{"type": "PauseWorkflow", "target": "owned.running"}]}}}`},
		{name: "a command the contract cannot read", config: `{}`, payload: `{"commands": [{"type": "PauseWorkflow", "target": "owned.running"}, {"type": "Explode"}]}`,
			wantErr: `payload.commands[1].type: "Explode" is not a command type`},
		{name: "a command without its argument", config: `{"outcome": "SUCCESS"}`, payload: `{"commands": [{"type": "AnswerInput", "answer": {}}]}`,
			wantErr: "payload.commands[0].inputId"},
		{name: "a member of no decision", config: `{}`, payload: `{"command": {"type": "PauseWorkflow"}}`, wantErr: "payload.command: is not part of a decision"},
		{name: "not an object", config: `{}`, payload: `"pause"`, wantErr: "payload: must be an object"},
		// Only SUCCESS sends the message's commands; the others pass it on.
		{name: "escalate passes any message", config: `{"outcome": "ESCALATE"}`, payload: `{"question": "ship?"}`,
			want: `{"result": {"outcome": "ESCALATE", "reason": "", "payload": {"question": "ship?"}}}`},
	})
}

// TestSupervisorDecisionFailsPermanently: the failure of an unreadable
// decision is a *jsonvalue.Error, which the engine does not retry (the
// same message fails every attempt), and a verdict is refused on a run a
// supervisor started for a signal that is not a REVIEW (the run's input
// envelope names the kind).
func TestSupervisorDecisionFailsPermanently(t *testing.T) {
	r, _ := runners(t, plugins.RunnerConfig{}).Runner("SUPERVISOR_DECISION")
	in := invocation(t, "SUPERVISOR_DECISION", `{}`, `{"verdict": "ALLOW"}`, nil)
	in.Execution["input"] = map[string]any{"cursor": "42", "kind": "EVENT", "signal": map[string]any{}}
	_, err := r.Run(context.Background(), in)
	var je *jsonvalue.Error
	if !errors.As(err, &je) || !strings.Contains(err.Error(), "payload.verdict: answers a REVIEW signal only; this run was started by a EVENT signal") {
		t.Fatalf("a verdict on an EVENT run: %v (%T), want a permanent failure naming payload.verdict", err, err)
	}
	in.Execution["input"] = map[string]any{"cursor": "42", "kind": "REVIEW", "signal": map[string]any{}}
	if _, err := r.Run(context.Background(), in); err != nil {
		t.Fatalf("a verdict on a REVIEW run: %v", err)
	}
	in.Payload = map[string]any{"verdict": "DENY"}
	if _, err := r.Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), "payload.reason") {
		t.Fatalf("DENY without a reason: %v, want payload.reason named", err)
	}
}

func TestRunnersHonourACancelledContext(t *testing.T) {
	set := runners(t, plugins.RunnerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range plugins.Descriptors() {
		r, _ := set.Runner(d.Type)
		if _, err := r.Run(ctx, executionapp.Invocation{NodeType: d.Type, Config: d.WithDefaults(nil)}); err == nil {
			t.Errorf("%s Run with a cancelled context: got nil error, want context.Canceled", d.Type)
		}
	}
}

func TestNewRunnersUsesTheGivenEvaluator(t *testing.T) {
	ev, err := cel.New(cel.WithCostLimit(10))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := runners(t, plugins.RunnerConfig{CEL: ev}).Runner("TRANSFORM")
	_, err = r.Run(context.Background(), invocation(t, "TRANSFORM", `{"expression": "[1, 2, 3, 4, 5, 6, 7, 8].map(x, x * 2)"}`, `{}`, nil))
	if err == nil || !strings.Contains(err.Error(), "cost limit of 10") {
		t.Errorf("Run with a cost limit of 10: got %v, want the limit to stop it", err)
	}
}

type countingRunner struct{ runs int }

func (c *countingRunner) Run(context.Context, executionapp.Invocation) (executionapp.Outcome, error) {
	c.runs++
	return executionapp.Outcome{}, nil
}

// TestExtensionIsRegisteredLikeABuiltIn: an added processor gets the run
// fields the engine enforces (its own timeout kept), a trigger gets none,
// and its runner is not started on a context that is already done.
func TestExtensionIsRegisteredLikeABuiltIn(t *testing.T) {
	r := &countingRunner{}
	p := plugins.Extension(plugin.Descriptor{Type: "SHOUT", Category: plugin.Processor, Description: "shouts"}, r)
	if err := p.Descriptor.Check(); err != nil {
		t.Fatal(err)
	}
	names := fieldNames(p.Descriptor)
	if !reflect.DeepEqual(names, []string{"timeout", "retry"}) {
		t.Errorf("an added processor's fields %v, want the run fields timeout and retry", names)
	}
	if vs := p.Descriptor.Validate(map[string]any{"retry": map[string]any{"maxAttempts": 0}}); len(vs) != 1 || vs[0].Path != "retry.maxAttempts" {
		t.Errorf("retry.maxAttempts 0: %v, want the run fields' own check", vs)
	}
	own := plugins.Extension(plugin.Descriptor{Type: "SLOW", Category: plugin.Terminal, Description: "slow",
		Fields: []plugin.Field{{Name: "timeout", Type: plugin.Duration, Default: "1h", Description: "its own"}}}, r)
	if names := fieldNames(own.Descriptor); !reflect.DeepEqual(names, []string{"timeout", "retry"}) || own.Descriptor.Fields[0].Default != "1h" {
		t.Errorf("a type with its own timeout: fields %v, default %v; want its timeout kept", names, own.Descriptor.Fields[0].Default)
	}
	trig := plugins.Extension(plugin.Descriptor{Type: "BELL", Category: plugin.Trigger, Description: "rings"}, r)
	if names := fieldNames(trig.Descriptor); len(names) != 0 {
		t.Errorf("an added trigger's fields %v, want none", names)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Runner.Run(ctx, executionapp.Invocation{}); !errors.Is(err, context.Canceled) || r.runs != 0 {
		t.Errorf("run on a done context: %v after %d runs, want context.Canceled and no run", err, r.runs)
	}
	if _, err := p.Runner.Run(context.Background(), executionapp.Invocation{}); err != nil || r.runs != 1 {
		t.Errorf("run: %v after %d runs, want one run", err, r.runs)
	}
}

// TestRunnerSetRefusesATakenName: the built-ins and the added types share
// one namespace; a name registered twice, or a type without a runner,
// fails, naming the type.
func TestRunnerSetRefusesATakenName(t *testing.T) {
	builtins, err := plugins.Builtins(plugins.RunnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(builtins) != len(plugins.Descriptors()) {
		t.Fatalf("%d built-ins for %d descriptors", len(builtins), len(plugins.Descriptors()))
	}
	add := func(name string, r executionapp.Runner) plugins.NodeType {
		return plugins.Extension(plugin.Descriptor{Type: name, Category: plugin.Processor, Description: "added"}, r)
	}
	for want, types := range map[string][]plugins.NodeType{
		"node type LOG is registered twice":   append(slices.Clone(builtins), add("LOG", &countingRunner{})),
		"node type SHOUT is registered twice": append(slices.Clone(builtins), add("SHOUT", &countingRunner{}), add("SHOUT", &countingRunner{})),
		"node type SHOUT has no runner":       append(slices.Clone(builtins), add("SHOUT", nil)),
	} {
		if _, err := plugins.NewRunnerSet(types); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
	s, err := plugins.NewRunnerSet(append(slices.Clone(builtins), add("SHOUT", &countingRunner{})))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"SHOUT", "LOG", "HTTP_REQUEST"} {
		if _, ok := s.Runner(typ); !ok {
			t.Errorf("no runner for %s", typ)
		}
	}
}

func fieldNames(d plugin.Descriptor) []string {
	var out []string
	for _, f := range d.Fields {
		out = append(out, f.Name)
	}
	return out
}
