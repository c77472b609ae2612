package processengine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/application/engines/processengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// The engine's line handling, with a hand-written spawner: the real one
// (adapters/process) is tested there on the real OS, with this engine.

// fakeSpawner hands out fakeProcs and remembers what it started.
type fakeSpawner struct {
	// stopDelay is how long each program's Stop takes.
	stopDelay time.Duration
	mu        sync.Mutex
	specs     []processengine.Spec
	starts    []time.Time
	procs     chan *fakeProc
}

func newFakeSpawner() *fakeSpawner { return &fakeSpawner{procs: make(chan *fakeProc, 100)} }

func (s *fakeSpawner) Start(spec processengine.Spec) (processengine.Process, error) {
	p := &fakeProc{stdin: make(chan []byte, spec.QueueLines), lines: make(chan processengine.OutputLine),
		gone: make(chan struct{}), stopped: make(chan struct{}), stopDelay: s.stopDelay}
	s.mu.Lock()
	s.specs = append(s.specs, spec)
	s.starts = append(s.starts, time.Now())
	s.mu.Unlock()
	s.procs <- p
	return p, nil
}

// next waits for the next program the engine starts.
func (s *fakeSpawner) next(t *testing.T) *fakeProc {
	t.Helper()
	select {
	case p := <-s.procs:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("the engine started no program within 5s")
		return nil
	}
}

// fakeProc is a program whose input is a channel of the queue's size and
// whose output the test writes.
type fakeProc struct {
	stopDelay time.Duration
	stdin     chan []byte
	lines     chan processengine.OutputLine
	goneOnce  sync.Once
	gone      chan struct{}
	stopOnce  sync.Once
	stopped   chan struct{}
	exitOnce  sync.Once
}

func (p *fakeProc) Send(ctx context.Context, line []byte) error {
	select {
	case <-p.gone:
		return processengine.ErrGone
	default:
	}
	select {
	case p.stdin <- append([]byte(nil), line...):
		return nil
	case <-p.gone:
		return processengine.ErrGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *fakeProc) Lines() <-chan processengine.OutputLine { return p.lines }

func (p *fakeProc) Stop() error {
	p.stopOnce.Do(func() {
		time.Sleep(p.stopDelay)
		close(p.stopped)
	})
	p.goneOnce.Do(func() { close(p.gone) })
	return nil
}

// say writes one output line; only the test goroutine calls it.
func (p *fakeProc) say(t *testing.T, l processengine.OutputLine) {
	t.Helper()
	select {
	case p.lines <- l:
	case <-p.stopped:
		t.Fatal("the engine stopped the program before reading its line")
	case <-time.After(5 * time.Second):
		t.Fatal("the engine read no output line within 5s")
	}
}

func (p *fakeProc) sayText(t *testing.T, s string) {
	t.Helper()
	p.say(t, processengine.OutputLine{Data: []byte(s)})
}

// exit ends the program as if it exited by itself.
func (p *fakeProc) exit() {
	p.exitOnce.Do(func() {
		p.goneOnce.Do(func() { close(p.gone) })
		close(p.lines)
	})
}

// input waits for the next line the engine wrote to the program.
func (p *fakeProc) input(t *testing.T) string {
	t.Helper()
	select {
	case b := <-p.stdin:
		return string(b)
	case <-time.After(5 * time.Second):
		t.Fatal("the engine wrote no input line within 5s")
		return ""
	}
}

// procRecorder is the intake and the review answerer, recording what the
// engine sends them.
type procRecorder struct {
	directives chan supervisorapp.SubmitInput
	answers    chan supervisorapp.AnswerInput
}

func newProcRecorder() *procRecorder {
	return &procRecorder{directives: make(chan supervisorapp.SubmitInput, 100), answers: make(chan supervisorapp.AnswerInput, 100)}
}

type procSubmitFunc func(ctx context.Context, in supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error)

func (f procSubmitFunc) Handle(ctx context.Context, in supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error) {
	return f(ctx, in)
}

type procAnswerFunc func(ctx context.Context, in supervisorapp.AnswerInput) (supervisor.Review, error)

func (f procAnswerFunc) Handle(ctx context.Context, in supervisorapp.AnswerInput) (supervisor.Review, error) {
	return f(ctx, in)
}

type procDrop struct {
	reason string
	err    error
}

// procEnv is a process engine over the fakes.
type procEnv struct {
	spawner *fakeSpawner
	rec     *procRecorder
	drops   chan procDrop
	errs    chan error
	fence   supervisorapp.Fence
	eng     supervisorapp.EngineCloser
}

const procDoc = `{"id":"proc","name":"P","engine":{"type":"process","settings":{"command":"/opt/yukta/decide","args":"--mode\n\nfast lane\n"}},
	"owns":["session:ci"],"reviews":["StopWorkflow"]}`

func procPolicy(t *testing.T, commands ...string) supervisorapp.SavePolicy {
	t.Helper()
	p, err := supervisorapp.NewSavePolicy(commands, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newProcEnv(t *testing.T, limits processengine.Limits, opts ...func(*processengine.Deps)) *procEnv {
	t.Helper()
	e := &procEnv{spawner: newFakeSpawner(), rec: newProcRecorder(), drops: make(chan procDrop, 100), errs: make(chan error, 100),
		fence: supervisorapp.Fence{SupervisorID: "proc", Owner: "test", Token: 7}}
	deps := processengine.Deps{
		Spawner: e.spawner,
		Submit: procSubmitFunc(func(_ context.Context, in supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error) {
			e.rec.directives <- in
			return supervisorapp.DirectiveResult{Status: supervisorapp.DirectiveAccepted}, nil
		}),
		Answer: procAnswerFunc(func(_ context.Context, in supervisorapp.AnswerInput) (supervisor.Review, error) {
			e.rec.answers <- in
			return supervisor.Review{}, nil
		}),
		Policy:    procPolicy(t, "/opt/yukta/decide"),
		Limits:    limits,
		OnDropped: func(_ string, reason string, err error) { e.drops <- procDrop{reason, err} },
		OnError:   func(_ string, err error) { e.errs <- err },
	}
	for _, o := range opts {
		o(&deps)
	}
	factory := processengine.NewFactory(deps)
	eng, err := factory(t.Context(), procSupervisor(t, procDoc), e.fence, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.eng = eng.(supervisorapp.EngineCloser)
	t.Cleanup(func() { _ = e.eng.Close() })
	return e
}

func procSupervisor(t *testing.T, doc string) supervisor.Supervisor {
	t.Helper()
	s, err := supervisor.Parse([]byte(doc), supervisor.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *procEnv) nextDrop(t *testing.T) procDrop {
	t.Helper()
	select {
	case d := <-e.drops:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no line was dropped within 5s")
		return procDrop{}
	}
}

var procAt = time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

func TestProcessEngineStartsTheCommandWithItsArgs(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{})
	e.spawner.next(t)
	e.spawner.mu.Lock()
	spec := e.spawner.specs[0]
	e.spawner.mu.Unlock()
	if spec.Path != "/opt/yukta/decide" || !slices.Equal(spec.Args, []string{"--mode", "", "fast lane"}) {
		t.Errorf("started %q with %q, want /opt/yukta/decide with [--mode, \"\", fast lane] (one per line, the last newline ending the last)", spec.Path, spec.Args)
	}
	if spec.MaxLineBytes != 64<<10 || spec.QueueLines != 64 {
		t.Errorf("limits: line %d, queue %d; want the defaults 65536 and 64", spec.MaxLineBytes, spec.QueueLines)
	}
}

// TestProcessEngineSignalsBecomeInputLines: each signal is one line, the
// envelope every supervisor receives.
func TestProcessEngineSignalsBecomeInputLines(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{})
	p := e.spawner.next(t)
	ev := supervisor.NewSignal("12", supervisor.EventSignal{Seq: 12, At: procAt, Type: "NodeStatusChanged", SessionID: "ci", WorkflowID: "build",
		ExecutionID: "e1", NodeID: "ship", Actor: "engine", Data: map[string]any{"to": "FAILURE"}})
	stop, err := supervisor.ParseDirective([]byte(`{"key":"x","command":{"type":"StopWorkflow","target":"execution:e1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	rv := supervisor.NewSignal("13", supervisor.ReviewSignal{ReviewID: "r1", Command: stop.Command(), Actor: "key:ops", Channel: "rest",
		SessionID: "ci", ExecutionID: "e1", Deadline: procAt.Add(30 * time.Second)})
	other := supervisor.NewSignal("15", supervisor.EventSignal{Seq: 15, At: procAt, Type: "CommandApplied", SessionID: "ci",
		ExecutionID: "e1", Actor: "supervisor:other", Data: map[string]any{}})
	for _, sig := range []supervisor.Signal{ev, rv, other} {
		if err := e.eng.Handle(t.Context(), sig); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`{"cursor":"12","kind":"EVENT","signal":{"seq":12,"at":"2026-03-01T11:00:00Z","type":"NodeStatusChanged","sessionId":"ci","workflowId":"build","executionId":"e1","nodeId":"ship","actor":"engine","data":{"to":"FAILURE"}}}`,
		`{"cursor":"13","kind":"REVIEW","signal":{"reviewId":"r1","command":{"type":"StopWorkflow","target":"execution:e1","mode":"CANCEL"},"actor":"key:ops","channel":"rest","sessionId":"ci","executionId":"e1","deadline":"2026-03-01T11:00:30Z"}}`,
		// The events the supervisor itself caused never reach the engine
		// (the runtime's TestRuntimeHandsAnEngineOnlyWhatItsSupervisorHears).
		`{"cursor":"15","kind":"EVENT","signal":{"seq":15,"at":"2026-03-01T11:00:00Z","type":"CommandApplied","sessionId":"ci","executionId":"e1","actor":"supervisor:other","data":{}}}`,
	}
	for i, w := range want {
		if got := p.input(t); got != w {
			t.Errorf("line %d:\n got  %s\n want %s", i, got, w)
		}
	}
	if n := len(p.stdin); n != 0 {
		t.Errorf("%d more lines than signals sent", n)
	}
}

// TestProcessEngineRestartsTheProgram: a program that exits is started
// again, and a signal that comes meanwhile waits for it.
func TestProcessEngineRestartsTheProgram(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{Restart: processengine.RestartPolicy{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	p1 := e.spawner.next(t)
	p1.exit()
	handled := make(chan error, 1)
	go func() {
		handled <- e.eng.Handle(t.Context(), supervisor.NewSignal("1", supervisor.TickSignal{At: procAt}))
	}()
	p2 := e.spawner.next(t)
	if got := p2.input(t); !strings.HasPrefix(got, `{"cursor":"1","kind":"TICK"`) {
		t.Errorf("the second program got %s, want the signal sent while none ran", got)
	}
	if err := <-handled; err != nil {
		t.Fatal(err)
	}
	e.spawner.mu.Lock()
	gap := e.spawner.starts[1].Sub(e.spawner.starts[0])
	e.spawner.mu.Unlock()
	if gap < 50*time.Millisecond {
		t.Errorf("restarted after %s, want at least the 50ms delay", gap)
	}
	select {
	case err := <-e.errs:
		if !strings.Contains(err.Error(), "/opt/yukta/decide ended") || !strings.Contains(err.Error(), "starting it again in 50ms") {
			t.Errorf("reported %v; want the exit and the delay", err)
		}
	case <-time.After(time.Second):
		t.Error("the exit was not reported")
	}
}

// TestProcessEngineBackPressure: when the program does not read, Handle
// waits once the queue is full, and gives up only when its context ends;
// the queue never grows past its bound.
func TestProcessEngineBackPressure(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{QueueLines: 2})
	p := e.spawner.next(t)
	sig := supervisor.NewSignal("1", supervisor.TickSignal{At: procAt})
	for range 2 {
		if err := e.eng.Handle(t.Context(), sig); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := e.eng.Handle(ctx, sig)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("third signal into a full queue of 2: %v after %s; want it to wait until its context ends", err, time.Since(start))
	}
	if len(p.stdin) != 2 {
		t.Errorf("queue holds %d lines, want 2", len(p.stdin))
	}
	// Once the program reads, the next signal goes through.
	p.input(t)
	if err := e.eng.Handle(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
}

// TestProcessEngineClose stops the program and answers no more signals.
func TestProcessEngineClose(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{})
	p := e.spawner.next(t)
	if err := e.eng.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.stopped:
	default:
		t.Fatal("Close returned before the program was stopped")
	}
	err := e.eng.Handle(t.Context(), supervisor.NewSignal("1", supervisor.TickSignal{At: procAt}))
	if !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("Handle after Close: %v, want unavailable", err)
	}
	select {
	case p := <-e.spawner.procs:
		t.Errorf("a program was started after Close: %v", p)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestProcessEngineStopsWithItsContext: the runtime's context ending stops
// the program even before Close.
func TestProcessEngineStopsWithItsContext(t *testing.T) {
	t.Parallel()
	sp := newFakeSpawner()
	factory := processengine.NewFactory(processengine.Deps{Spawner: sp, Policy: procPolicy(t, "/opt/yukta/decide")})
	ctx, cancel := context.WithCancel(t.Context())
	eng, err := factory(ctx, procSupervisor(t, procDoc), supervisorapp.Fence{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := sp.next(t)
	cancel()
	select {
	case <-p.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the program outlived the engine's context")
	}
	_ = eng.(supervisorapp.EngineCloser).Close()
}

// TestProcessEngineRefusesACommandOffTheList: the list is checked again
// when the engine starts; nothing is started.
func TestProcessEngineRefusesACommandOffTheList(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		policy supervisorapp.SavePolicy
		words  string
	}{
		{"another command", procPolicy(t, "/opt/yukta/other"), `"/opt/yukta/decide" is not allowed: this server runs only /opt/yukta/other`},
		{"the zero policy", supervisorapp.SavePolicy{}, "runs no process supervisors"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sp := newFakeSpawner()
			factory := processengine.NewFactory(processengine.Deps{Spawner: sp, Policy: tt.policy})
			_, err := factory(t.Context(), procSupervisor(t, procDoc), supervisorapp.Fence{}, nil)
			if !errors.Is(err, supervisorapp.ErrCommandNotAllowed) || !errors.Is(err, fault.ErrForbidden) || !strings.Contains(err.Error(), tt.words) ||
				!strings.Contains(err.Error(), "engine.settings.command") {
				t.Errorf("got %v; want ErrCommandNotAllowed naming engine.settings.command and %q", err, tt.words)
			}
			if len(sp.procs) != 0 {
				t.Error("a program was started")
			}
		})
	}
}

func TestRestartPolicyNext(t *testing.T) {
	t.Parallel()
	p := processengine.RestartPolicy{}
	var delays []time.Duration
	var d time.Duration
	for range 11 {
		d = p.Next(d, time.Second)
		delays = append(delays, d)
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(delays, want) {
		t.Errorf("delays after short lives: %v, want %v (doubling from 100ms, capped at 30s)", delays, want)
	}
	if got := p.Next(30*time.Second, time.Minute); got != 100*ms {
		t.Errorf("after a life of a minute: %s, want the delay back at 100ms", got)
	}
	if got := (processengine.RestartPolicy{Min: 10 * ms, Max: 40 * ms}).Next(40*ms, ms); got != 40*ms {
		t.Errorf("capped: %s, want 40ms", got)
	}
}

type procDelegateFunc func(ctx context.Context, in supervisorapp.DelegateInput) (supervisor.Delegation, bool, error)

func (f procDelegateFunc) Handle(ctx context.Context, in supervisorapp.DelegateInput) (supervisor.Delegation, bool, error) {
	return f(ctx, in)
}

type procDelegationAnswerFunc func(ctx context.Context, in supervisorapp.AnswerDelegationInput) (supervisor.Delegation, error)

func (f procDelegationAnswerFunc) Handle(ctx context.Context, in supervisorapp.AnswerDelegationInput) (supervisor.Delegation, error) {
	return f(ctx, in)
}

// TestProcessEngineDelegates: a delegate line opens a delegation and a
// delegationAnswer line answers one, as the program's supervisor; wrong
// lines are dropped as invalid.
func TestProcessEngineDelegates(t *testing.T) {
	t.Parallel()
	opened := make(chan supervisorapp.DelegateInput, 10)
	answered := make(chan supervisorapp.AnswerDelegationInput, 10)
	e := newProcEnv(t, processengine.Limits{}, func(d *processengine.Deps) {
		d.Delegate = procDelegateFunc(func(_ context.Context, in supervisorapp.DelegateInput) (supervisor.Delegation, bool, error) {
			opened <- in
			return supervisor.Delegation{}, true, nil
		})
		d.AnswerDelegation = procDelegationAnswerFunc(func(_ context.Context, in supervisorapp.AnswerDelegationInput) (supervisor.Delegation, error) {
			answered <- in
			return supervisor.Delegation{}, nil
		})
	})
	p := e.spawner.next(t)
	p.sayText(t, `{"type":"delegate","kind":"CONSULT","key":"k1","to":"peer","payload":{"q":1}}`)
	p.sayText(t, `{"type":"delegate","kind":"ESCALATE","key":"k2","payload":"help"}`)
	p.sayText(t, `{"type":"delegationAnswer","answers":"d1","answer":{"ok":true}}`)
	for _, want := range []string{"CONSULT k1 peer {\"q\":1}", `ESCALATE k2  "help"`} {
		select {
		case in := <-opened:
			if got := fmt.Sprintf("%s %s %s %s", in.Kind, in.Key, in.To, in.Payload); got != want || in.SupervisorID != "proc" {
				t.Errorf("delegate %q by %s, want %q", got, in.SupervisorID, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no delegation for %q", want)
		}
	}
	select {
	case in := <-answered:
		if in.DelegationID != "d1" || in.SupervisorID != "proc" || string(in.Answer) != `{"ok":true}` {
			t.Errorf("answer %+v", in)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
	for _, tt := range []struct{ line, words string }{
		{`{"type":"delegate","kind":"CONSULT","key":"k","payload":1,"colour":"red"}`, `"colour" is not a member`},
		{`{"type":"delegate","kind":7,"key":"k","payload":1}`, "wrong type"},
		{`{"type":"delegationAnswer","answer":1}`, "answers is required"},
	} {
		p.sayText(t, tt.line)
		if d := e.nextDrop(t); d.reason != processengine.DropInvalid || !strings.Contains(d.err.Error(), tt.words) {
			t.Errorf("line %s: dropped as %s (%v), want %q", tt.line, d.reason, d.err, tt.words)
		}
	}
}
