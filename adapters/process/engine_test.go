package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/yukta/yukta/adapters/process"
	"github.com/yukta/yukta/application/engines/processengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// The process engine with this adapter and a real program: the engine's
// senders record what reaches them (the intake and the review use cases
// are tested over PostgreSQL in their package).

// timedSpawner is the real spawner, noting when each program starts.
type timedSpawner struct {
	s      *process.Spawner
	mu     sync.Mutex
	starts []time.Time
}

func (t *timedSpawner) Start(spec processengine.Spec) (processengine.Process, error) {
	t.mu.Lock()
	t.starts = append(t.starts, time.Now())
	t.mu.Unlock()
	return t.s.Start(spec)
}

func (t *timedSpawner) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.starts)
}

type sink struct {
	directives chan supervisorapp.SubmitInput
	answers    chan supervisorapp.AnswerInput
	drops      chan string
	errs       chan error
}

func newSink() *sink {
	return &sink{directives: make(chan supervisorapp.SubmitInput, 100), answers: make(chan supervisorapp.AnswerInput, 100),
		drops: make(chan string, 100), errs: make(chan error, 100)}
}

func (s *sink) Handle(_ context.Context, in supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error) {
	s.directives <- in
	return supervisorapp.DirectiveResult{Status: supervisorapp.DirectiveAccepted}, nil
}

type answerSink struct{ *sink }

func (s answerSink) Handle(_ context.Context, in supervisorapp.AnswerInput) (supervisor.Review, error) {
	s.answers <- in
	return supervisor.Review{}, nil
}

// engine starts a process engine for a supervisor running the helper with
// args; the test closes it when it ends.
func engine(t *testing.T, sp processengine.Spawner, s *sink, limits processengine.Limits, args ...string) supervisorapp.EngineCloser {
	t.Helper()
	pol, err := supervisorapp.NewSavePolicy([]string{helper}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{"command": helper, "args": strings.Join(args, "\n")})
	sup, err := supervisor.Parse([]byte(fmt.Sprintf(`{"id":"proc","name":"P","engine":{"type":"process","settings":%s},
		"owns":["session:ci"],"reviews":["StopWorkflow"]}`, settings)), supervisor.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	factory := processengine.NewFactory(processengine.Deps{Spawner: sp, Submit: s, Answer: answerSink{s}, Policy: pol,
		Limits:    limits,
		OnDropped: func(_, reason string, _ error) { s.drops <- reason },
		OnError:   func(_ string, err error) { s.errs <- err }})
	eng, err := factory(t.Context(), sup, supervisorapp.Fence{SupervisorID: "proc", Owner: "test", Token: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := eng.(supervisorapp.EngineCloser)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A program that keeps exiting is started again after 20, 40, 80, 80, …
// ms: the delay doubles and stops at its cap.
func TestEngineRestartsAnExitingProgramWithAGrowingDelay(t *testing.T) {
	t.Parallel()
	sp := &timedSpawner{s: spawner(0)}
	s := newSink()
	restart := processengine.RestartPolicy{Min: 20 * time.Millisecond, Max: 80 * time.Millisecond, StableAfter: time.Minute}
	eng := engine(t, sp, s, processengine.Limits{Restart: restart}, "exit", "3")
	deadline := time.Now().Add(10 * time.Second)
	for sp.count() < 6 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	sp.mu.Lock()
	starts := slices.Clone(sp.starts)
	sp.mu.Unlock()
	if len(starts) < 6 {
		t.Fatalf("%d starts in 10s, want 6", len(starts))
	}
	ms := time.Millisecond
	for i, want := range []time.Duration{20 * ms, 40 * ms, 80 * ms, 80 * ms, 80 * ms} {
		if gap := starts[i+1].Sub(starts[i]); gap < want {
			t.Errorf("start %d came %s after the one before, want at least %s", i+2, gap, want)
		}
	}
	err := <-s.errs
	if !strings.Contains(err.Error(), "ended (exit status 3)") || !strings.Contains(err.Error(), "starting it again in 20ms") {
		t.Errorf("first report %q, want the exit status and the delay", err)
	}
	n := sp.count()
	time.Sleep(200 * time.Millisecond)
	if sp.count() != n {
		t.Error("a program was started after Close")
	}
}

// A real program answers a REVIEW with a verdict and an EVENT with a
// command; its chatter is dropped and counted. The lines it read and the
// lines it wrote follow docs/process-supervisor.schema.json.
func TestEngineWithARealReviewer(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "input.ndjson")
	s := newSink()
	eng := engine(t, spawner(0), s, processengine.Limits{}, "reviewer", log)
	at := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	stop, err := supervisor.ParseDirective([]byte(`{"key":"x","command":{"type":"StopWorkflow","target":"execution:e1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	signals := []supervisor.Signal{
		supervisor.NewSignal("12", supervisor.EventSignal{Seq: 12, At: at, Type: "NodeStatusChanged", SessionID: "ci", WorkflowID: "build",
			ExecutionID: "e1", NodeID: "ship", Actor: "engine", Data: map[string]any{"to": "FAILURE"}}),
		supervisor.NewSignal("13", supervisor.ReviewSignal{ReviewID: "r1", Command: stop.Command(), Actor: "key:ops", Channel: "rest",
			SessionID: "ci", ExecutionID: "e1", Reason: "stuck", Deadline: at.Add(30 * time.Second)}),
		supervisor.NewSignal("13", supervisor.StartedSignal{At: at, Snapshot: supervisorapp.Snapshot{Cursor: "13",
			Executions: []supervisorapp.SnapshotRun{}, Inputs: []supervisorapp.SnapshotInput{}, Holds: []supervisorapp.SnapshotHold{}}}),
	}
	for _, sig := range signals {
		if err := eng.Handle(t.Context(), sig); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case in := <-s.directives:
		d := in.Directive
		if d.Key() != "pause-12" || d.Cause() != "12" || d.Command().Type() != supervisor.PauseWorkflow || d.Command().Target().String() != "execution:e1" ||
			in.Fence == nil || in.Fence.Token != 3 {
			t.Errorf("directive %s cause %s %s on %s fence %v; want pause-12 for cursor 12, PauseWorkflow on execution:e1, token 3",
				d.Key(), d.Cause(), d.Command().Type(), d.Command().Target(), in.Fence)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the program's command line did not reach the intake")
	}
	select {
	case in := <-s.answers:
		if in.ReviewID != "r1" || in.Verdict.Decision() != supervisor.Deny || in.Verdict.Reason() != "the program says no" {
			t.Errorf("answer %s %s %q; want r1 DENY with the program's reason", in.ReviewID, in.Verdict.Decision(), in.Verdict.Reason())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the program's verdict did not reach the review")
	}
	for range 3 { // "thinking about EVENT", "… REVIEW", "… STARTED"
		select {
		case r := <-s.drops:
			if r != processengine.DropNotJSON {
				t.Errorf("dropped as %s, want %s", r, processengine.DropNotJSON)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the program's chatter was not dropped")
		}
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	in, out := schemas(t)
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != len(signals) {
		t.Fatalf("the program read %d lines, want %d", len(lines), len(signals))
	}
	for _, l := range lines {
		if err := validate(in, l); err != nil {
			t.Errorf("input line %s: %v", l, err)
		}
	}
	for _, l := range []string{
		`{"type":"command","key":"pause-12","cause":"12","command":{"type":"PauseWorkflow","executionId":"e1"}}`,
		`{"type":"verdict","answers":"r1","verdict":"DENY","reason":"the program says no"}`,
		`{"type":"noOpinion","answers":"r1"}`,
	} {
		if err := validate(out, l); err != nil {
			t.Errorf("output line %s: %v", l, err)
		}
	}
	for _, l := range []string{
		`{"type":"verdict","answers":"r1","verdict":"DENY"}`,
		`{"type":"verdict","answers":"r1","verdict":"MAYBE"}`,
		`{"type":"noOpinion","answers":"r1","reason":"x"}`,
		`{"type":"command","key":"k","command":{"type":"PauseWorkflw"}}`,
		`{"type":"dance"}`,
	} {
		if validate(out, l) == nil {
			t.Errorf("output line %s passes the schema; the engine drops it", l)
		}
	}
}

// schemas compiles the contract's input and output line schemas.
func schemas(t *testing.T) (in, out *sjs.Schema) {
	t.Helper()
	raw, err := os.ReadFile("../../docs/process-supervisor.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := sjs.NewCompiler()
	c.AssertFormat()
	const url = "file:///process-supervisor.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	if in, err = c.Compile(url + "#/$defs/inputLine"); err != nil {
		t.Fatal(err)
	}
	if out, err = c.Compile(url + "#/$defs/outputLine"); err != nil {
		t.Fatal(err)
	}
	return in, out
}

func validate(s *sjs.Schema, line string) error {
	v, err := sjs.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// The schema names what the code knows: every command type, and the
// output line types the engine reads.
func TestSchemaMatchesTheCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/process-supervisor.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Command struct {
				Properties struct {
					Type struct{ Enum []string }
				}
			}
			OutputLine struct {
				Properties struct {
					Type struct{ Enum []string }
				}
			} `json:"outputLine"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Defs.Command.Properties.Type.Enum; !slices.Equal(got, supervisor.Commands) {
		t.Errorf("schema command types %v, want %v", got, supervisor.Commands)
	}
	want := []string{processengine.LineCommand, processengine.LineVerdict, processengine.LineNoOpinion, processengine.LineDelegationAnswer, processengine.LineDelegate}
	if got := doc.Defs.OutputLine.Properties.Type.Enum; !slices.Equal(got, want) {
		t.Errorf("schema output line types %v, want %v", got, want)
	}
	in, out := schemas(t)
	if in == nil || out == nil {
		t.Fatal("schemas did not compile")
	}
}
