package supervisorapp_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	specs     []supervisorapp.ProcessSpec
	starts    []time.Time
	procs     chan *fakeProc
}

func newFakeSpawner() *fakeSpawner { return &fakeSpawner{procs: make(chan *fakeProc, 100)} }

func (s *fakeSpawner) Start(spec supervisorapp.ProcessSpec) (supervisorapp.Process, error) {
	p := &fakeProc{stdin: make(chan []byte, spec.QueueLines), lines: make(chan supervisorapp.ProcessLine),
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
	lines     chan supervisorapp.ProcessLine
	goneOnce  sync.Once
	gone      chan struct{}
	stopOnce  sync.Once
	stopped   chan struct{}
	exitOnce  sync.Once
}

func (p *fakeProc) Send(ctx context.Context, line []byte) error {
	select {
	case <-p.gone:
		return supervisorapp.ErrProcessGone
	default:
	}
	select {
	case p.stdin <- append([]byte(nil), line...):
		return nil
	case <-p.gone:
		return supervisorapp.ErrProcessGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *fakeProc) Lines() <-chan supervisorapp.ProcessLine { return p.lines }

func (p *fakeProc) Stop() error {
	p.stopOnce.Do(func() {
		time.Sleep(p.stopDelay)
		close(p.stopped)
	})
	p.goneOnce.Do(func() { close(p.gone) })
	return nil
}

// say writes one output line; only the test goroutine calls it.
func (p *fakeProc) say(t *testing.T, l supervisorapp.ProcessLine) {
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
	p.say(t, supervisorapp.ProcessLine{Data: []byte(s)})
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

func newProcEnv(t *testing.T, limits supervisorapp.ProcessLimits, opts ...func(*supervisorapp.ProcessDeps)) *procEnv {
	t.Helper()
	e := &procEnv{spawner: newFakeSpawner(), rec: newProcRecorder(), drops: make(chan procDrop, 100), errs: make(chan error, 100),
		fence: supervisorapp.Fence{SupervisorID: "proc", Owner: "test", Token: 7}}
	deps := supervisorapp.ProcessDeps{
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
	factory := supervisorapp.NewProcessEngineFactory(deps)
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
	e := newProcEnv(t, supervisorapp.ProcessLimits{})
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
	e := newProcEnv(t, supervisorapp.ProcessLimits{})
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

// TestProcessEngineCommandLine: a command line is a directive sent through
// the intake under the engine's lease.
func TestProcessEngineCommandLine(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, supervisorapp.ProcessLimits{})
	p := e.spawner.next(t)
	p.sayText(t, `{"type":"command","key":"pause-12","cause":"12","reason":"three failures","command":{"type":"PauseWorkflow","executionId":"e1"}}`)
	var in supervisorapp.SubmitInput
	select {
	case in = <-e.rec.directives:
	case <-time.After(5 * time.Second):
		t.Fatal("no directive reached the intake")
	}
	d := in.Directive
	if in.SupervisorID != "proc" || in.Channel != supervisorapp.ChannelSupervisor || in.Fence == nil || *in.Fence != e.fence {
		t.Errorf("sent by %q over %q with fence %v; want proc over %q with %v", in.SupervisorID, in.Channel, in.Fence, supervisorapp.ChannelSupervisor, e.fence)
	}
	if d.Key() != "pause-12" || d.Cause() != "12" || d.Reason() != "three failures" || d.Command().Type() != supervisor.PauseWorkflow ||
		d.Command().Target().String() != "execution:e1" {
		t.Errorf("directive %s %s %s %s %s; want pause-12, cause 12, the reason, PauseWorkflow on execution:e1",
			d.Key(), d.Cause(), d.Reason(), d.Command().Type(), d.Command().Target())
	}
}

// TestProcessEngineVerdictLines: verdict and noOpinion answer the review
// named by answers, under the engine's lease.
func TestProcessEngineVerdictLines(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, supervisorapp.ProcessLimits{})
	p := e.spawner.next(t)
	p.sayText(t, `{"type":"verdict","answers":"r1","verdict":"DENY","reason":"not on Fridays"}`)
	p.sayText(t, `{"type":"verdict","answers":"r2","verdict":"require_approval"}`)
	p.sayText(t, `{"type":"noOpinion","answers":"r3"}`)
	want := []struct {
		review   string
		decision supervisor.Decision
		reason   string
	}{{"r1", supervisor.Deny, "not on Fridays"}, {"r2", supervisor.RequireApproval, ""}, {"r3", supervisor.NoOpinion, ""}}
	for _, w := range want {
		select {
		case in := <-e.rec.answers:
			if in.ReviewID != w.review || in.SupervisorID != "proc" || in.Verdict.Decision() != w.decision || in.Verdict.Reason() != w.reason ||
				in.Fence == nil || *in.Fence != e.fence {
				t.Errorf("answer %+v (verdict %s %q); want review %s %s %q by proc with fence %v", in, in.Verdict.Decision(), in.Verdict.Reason(),
					w.review, w.decision, w.reason, e.fence)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer for %s", w.review)
		}
	}
}

// TestProcessEngineDropsJunk: every line the contract does not know is
// dropped with its reason, nothing reaches the server, and the engine goes
// on with the next line.
func TestProcessEngineDropsJunk(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, supervisorapp.ProcessLimits{})
	p := e.spawner.next(t)
	tests := []struct {
		line   string
		reason string
		words  string
	}{
		{"thinking...", supervisorapp.DropNotJSON, "not a JSON object"},
		{"", supervisorapp.DropNotJSON, "not a JSON object"},
		{`[1,2]`, supervisorapp.DropNotJSON, "not a JSON object"},
		{`null`, supervisorapp.DropNotJSON, "not a JSON object"},
		{`{"key":"k"}`, supervisorapp.DropUnknownType, `no "type"`},
		{`{"type":7}`, supervisorapp.DropUnknownType, `no "type"`},
		{`{"type":"dance"}`, supervisorapp.DropUnknownType, `type "dance"; use one of command, verdict`},
		{`{"type":"command","key":"k"}`, supervisorapp.DropInvalid, "command"},
		{`{"type":"command","key":"k","command":{"type":"PauseWorkflw","executionId":"e1"}}`, supervisorapp.DropInvalid, "PauseWorkflw"},
		{`{"type":"command","key":"k","command":{"type":"PauseWorkflow","executionId":"e1"},"colour":"red"}`, supervisorapp.DropInvalid, "colour"},
		{`{"type":"verdict","verdict":"ALLOW"}`, supervisorapp.DropInvalid, "answers is required"},
		{`{"type":"verdict","answers":"r1","verdict":"MAYBE"}`, supervisorapp.DropInvalid, `"MAYBE" is not a verdict`},
		{`{"type":"verdict","answers":"r1","verdict":"DENY"}`, supervisorapp.DropInvalid, "reason: is required with DENY"},
		{`{"type":"verdict","answers":"r1","verdict":"NO_OPINION"}`, supervisorapp.DropInvalid, "noOpinion"},
		{`{"type":"verdict","answers":"r1","verdict":"ALLOW","extra":1}`, supervisorapp.DropInvalid, `"extra" is not a member`},
		{`{"type":"noOpinion","answers":"r1","verdict":"ALLOW"}`, supervisorapp.DropInvalid, `"verdict" is not a member of a noOpinion line`},
		{`{"type":"noOpinion","answers":5}`, supervisorapp.DropInvalid, "strings"},
		{`{"type":"verdict","answers":"` + strings.Repeat("r", 129) + `","verdict":"ALLOW"}`, supervisorapp.DropInvalid, "longer than 128"},
		{`{"type":"delegationAnswer","answers":"d1","answer":{}}`, supervisorapp.DropNotBuilt, "delegations are not wired"},
		{`{"type":"delegate","kind":"CONSULT","key":"k","payload":{}}`, supervisorapp.DropNotBuilt, "delegations are not wired"},
	}
	for _, tt := range tests {
		p.sayText(t, tt.line)
		d := e.nextDrop(t)
		if d.reason != tt.reason || d.err == nil || !strings.Contains(d.err.Error(), tt.words) {
			t.Errorf("line %.60q: dropped as %s (%v); want %s saying %q", tt.line, d.reason, d.err, tt.reason, tt.words)
		}
	}
	p.say(t, supervisorapp.ProcessLine{TooLong: true})
	if d := e.nextDrop(t); d.reason != supervisorapp.DropTooLong || !strings.Contains(d.err.Error(), "longer than 65536 bytes") {
		t.Errorf("an overlong line: dropped as %s (%v); want %s", d.reason, d.err, supervisorapp.DropTooLong)
	}
	// The engine goes on.
	p.sayText(t, `{"type":"noOpinion","answers":"r9"}`)
	select {
	case in := <-e.rec.answers:
		if in.ReviewID != "r9" {
			t.Errorf("answered %s, want r9", in.ReviewID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a valid line after the junk was not handled")
	}
	if n := len(e.rec.directives) + len(e.rec.answers); n != 0 {
		t.Errorf("%d junk lines reached the server", n)
	}
	if n := len(e.drops); n != 0 {
		t.Errorf("%d more drops than lines", n)
	}
}

// TestProcessEngineRestartsTheProgram: a program that exits is started
// again, and a signal that comes meanwhile waits for it.
func TestProcessEngineRestartsTheProgram(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, supervisorapp.ProcessLimits{Restart: supervisorapp.RestartPolicy{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
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
	e := newProcEnv(t, supervisorapp.ProcessLimits{QueueLines: 2})
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
	e := newProcEnv(t, supervisorapp.ProcessLimits{})
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
	factory := supervisorapp.NewProcessEngineFactory(supervisorapp.ProcessDeps{Spawner: sp, Policy: procPolicy(t, "/opt/yukta/decide")})
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
			factory := supervisorapp.NewProcessEngineFactory(supervisorapp.ProcessDeps{Spawner: sp, Policy: tt.policy})
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
	p := supervisorapp.RestartPolicy{}
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
	if got := (supervisorapp.RestartPolicy{Min: 10 * ms, Max: 40 * ms}).Next(40*ms, ms); got != 40*ms {
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
	e := newProcEnv(t, supervisorapp.ProcessLimits{}, func(d *supervisorapp.ProcessDeps) {
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
		if d := e.nextDrop(t); d.reason != supervisorapp.DropInvalid || !strings.Contains(d.err.Error(), tt.words) {
			t.Errorf("line %s: dropped as %s (%v), want %q", tt.line, d.reason, d.err, tt.words)
		}
	}
}
