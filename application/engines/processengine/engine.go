// Package processengine is the process engine (engine type "process"): it
// keeps a supervisor's program running on this machine, hands it each
// signal the runtime gives the engine as a line on its standard input, and
// acts on the lines of its standard output (lines.go) or drops them,
// counted and summed up (report.go). Its ports (ports.go) are what
// adapters/process implements. It stands on supervisorapp's Engine
// contract and the use cases it calls.
package processengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// Deps are what the process engine needs.
type Deps struct {
	Spawner Spawner
	// Submit takes the program's command lines as directives; Answer its
	// verdict and noOpinion lines.
	Submit supervisorapp.DirectiveSender
	Answer supervisorapp.ReviewAnswerer
	// Delegate takes delegate lines, AnswerDelegation delegationAnswer
	// lines (nil: those lines are dropped as notBuilt).
	Delegate         supervisorapp.Delegator
	AnswerDelegation supervisorapp.DelegationAnswerer
	// Policy says which executables may run. It is checked when the
	// engine starts, since the configuration may have changed since the
	// supervisor was saved; the zero policy runs nothing.
	Policy supervisorapp.SavePolicy
	Now    func() time.Time
	// Limits bound the pipes and the restarts; zero values take the
	// defaults.
	Limits Limits
	// OnDropped hears every output line the engine did not act on, with
	// why (one of DropReasons) and what is wrong with it. It is called for
	// each such line, as fast as a program prints them: count the line,
	// never log it (OnReport is for that).
	OnDropped func(supervisorID, reason string, err error)
	// OnReport hears the dropped lines summed up: at once for the first
	// line of a quiet spell, then at most once per Limits.ReportEvery, and
	// once more for what was counted when the engine stops. This is what
	// the server logs, so a program bounds the server's log to a line per
	// period however much it prints.
	OnReport func(supervisorID string, r DropReport)
	// OnError hears the program's life: an exit, a start that failed.
	// Restarts are paced by Limits.Restart, so these are bounded too.
	OnError func(supervisorID string, err error)
}

// Limits bound the process engine. Zero values take the defaults.
type Limits struct {
	// MaxLineBytes caps one output line (default 64 KiB): a longer line is
	// thrown away without being held.
	MaxLineBytes int
	// QueueLines bounds the signal lines waiting for the program's
	// standard input (default 64). When it is full, Handle waits: the
	// runtime stops reading the outbox for this supervisor and its cursor
	// stays, so a program that does not read loses nothing and holds no
	// memory beyond the queue.
	QueueLines int
	// Restart paces the restarts of a program that exited.
	Restart RestartPolicy
	// ReportEvery is the period of OnReport (default
	// DefaultReportEvery).
	ReportEvery time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxLine = 64 << 10
	DefaultQueue   = 64
)

// RestartPolicy is the delay before a program that exited is started
// again: Min after a life of at least StableAfter, doubling after each
// shorter life, at most Max. Zero values take the defaults (100 ms, 30 s,
// 1 minute).
type RestartPolicy struct {
	Min, Max, StableAfter time.Duration
}

// Next is the delay after a life of up, prev being the delay before it (0
// for the first life).
func (p RestartPolicy) Next(prev, up time.Duration) time.Duration {
	p = p.withDefaults()
	if prev <= 0 || up >= p.StableAfter {
		return p.Min
	}
	return min(max(2*prev, p.Min), p.Max)
}

func (p RestartPolicy) withDefaults() RestartPolicy {
	if p.Min <= 0 {
		p.Min = 100 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	p.Max = max(p.Max, p.Min)
	if p.StableAfter <= 0 {
		p.StableAfter = time.Minute
	}
	return p
}

// Why an output line was dropped (Deps.OnDropped).
const (
	DropTooLong     = "tooLong"     // longer than MaxLineBytes
	DropNotJSON     = "notJson"     // not a JSON object
	DropUnknownType = "unknownType" // no type, or a type the contract lacks
	DropInvalid     = "invalid"     // a known type with wrong members
	DropNotBuilt    = "notBuilt"    // delegationAnswer and delegate on an engine without delegations wired
)

// The type of each output line the contract knows
// (docs/process-supervisor.schema.json).
const (
	LineCommand          = "command"
	LineVerdict          = "verdict"
	LineNoOpinion        = "noOpinion"
	LineDelegationAnswer = "delegationAnswer"
	LineDelegate         = "delegate"
)

// maxAnswersLen bounds answers: review and delegation ids are far shorter.
const maxAnswersLen = 128

// errClosed is what Handle answers after Close: the signal
// was not handed to the program and comes again to the next engine.
var errClosed = fmt.Errorf("processengine: the process engine is closed: %w", fault.ErrUnavailable)

// NewFactory returns the factory of the process engine
// (engine type "process"). The engine runs the supervisor's command (an
// absolute path the Policy allows) with its args, one per line, and keeps
// it running: a program that exits is started again after
// Limits.Restart's delay. Each signal becomes one line on the program's
// standard input, the envelope {"cursor", "kind", "signal"}. Each line of
// its standard output is one of the contract's (LineCommand: a directive
// sent through the intake with the engine's lease; LineVerdict and
// LineNoOpinion: an answer to a review); any other line is dropped,
// counted by OnDropped and summed up by OnReport, and the engine goes on.
//
// Events the supervisor's own directives caused are not sent (the
// runtime keeps them back, see Handle). Lines queued for a program that then exits are lost with it (the
// runtime has moved its cursor past them); signals that come while no
// program runs wait for the next one. The engine keeps no state.
//
// The program lives until Close, or until the factory's ctx ends (the
// runtime's context for this engine run): either stops it with its whole
// process group.
func NewFactory(d Deps) supervisorapp.EngineFactory {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnDropped == nil {
		d.OnDropped = func(string, string, error) {}
	}
	if d.OnReport == nil {
		d.OnReport = func(string, DropReport) {}
	}
	if d.OnError == nil {
		d.OnError = func(string, error) {}
	}
	if d.Limits.ReportEvery <= 0 {
		d.Limits.ReportEvery = DefaultReportEvery
	}
	if d.Limits.MaxLineBytes <= 0 {
		d.Limits.MaxLineBytes = DefaultMaxLine
	}
	if d.Limits.QueueLines <= 0 {
		d.Limits.QueueLines = DefaultQueue
	}
	d.Limits.Restart = d.Limits.Restart.withDefaults()
	return func(ctx context.Context, sup supervisor.Supervisor, f supervisorapp.Fence, _ []byte) (supervisorapp.Engine, error) {
		if sup.EngineType() != "process" {
			return nil, fmt.Errorf("processengine: supervisor %s has engine %s, not process", sup.ID(), sup.EngineType())
		}
		// Validated when saved (supervisor.Parse); an error names the
		// setting a stored document the rules no longer accept must fix.
		cfg, err := sup.ProcessSettings()
		if err != nil {
			return nil, err
		}
		spec := Spec{Path: cfg.Command, Args: cfg.Args, MaxLineBytes: d.Limits.MaxLineBytes, QueueLines: d.Limits.QueueLines}
		if err := d.Policy.CheckCommand(spec.Path); err != nil {
			return nil, fmt.Errorf("process supervisor %s: engine.settings.command: %w", sup.ID(), err)
		}
		ectx, cancel := context.WithCancel(ctx)
		e := &processEngine{d: d, sup: sup, fence: f, spec: spec, ctx: ectx, cancel: cancel,
			done: make(chan struct{}), changed: make(chan struct{}), drops: dropCounter{every: d.Limits.ReportEvery}}
		go e.keep()
		return e, nil
	}
}

// processEngine keeps one supervisor's program running. The goroutine
// keep owns the program: it starts it, reads its output, stops it and
// starts it again; Handle, on the runtime's goroutine, only sends to the
// program keep publishes in proc.
type processEngine struct {
	d     Deps
	sup   supervisor.Supervisor
	fence supervisorapp.Fence
	spec  Spec
	// ctx ends on Close or when the factory's context ends; keep stops
	// the program then. done is closed when keep has returned.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// proc is the running program (nil between lives); changed is closed
	// and replaced each time proc changes, so Handle can wait for the
	// next program.
	proc    Process
	changed chan struct{}

	// drops counts the dropped lines between reports; keep's alone.
	drops dropCounter
}

// Handle writes the signal to the program's standard input. It waits
// while no program runs (between restarts) and while the input queue is
// full; an error means ctx or the engine ended first, and the signal comes
// again to the next engine. Events the supervisor itself caused (actor
// supervisor:<id>) never reach it (the runtime's supervisor.Hears): a
// program that answered each event with a directive would otherwise feed
// on its own directives without end.
func (e *processEngine) Handle(ctx context.Context, sig supervisor.Signal) error {
	line, err := json.Marshal(sig)
	if err != nil {
		return fmt.Errorf("process engine: encode the %s signal: %w", sig.Kind(), err)
	}
	for {
		e.mu.Lock()
		p, changed := e.proc, e.changed
		e.mu.Unlock()
		if p != nil {
			err := p.Send(ctx, line)
			if !errors.Is(err, ErrGone) {
				return err
			}
			// The program exited while the line waited; it goes to the
			// next one.
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-e.ctx.Done():
			return errClosed
		}
	}
}

// State is nil: the engine keeps nothing across restarts.
func (e *processEngine) State() ([]byte, error) { return nil, nil }

// Close stops the program with its process group and returns once every
// goroutine of the engine has returned.
func (e *processEngine) Close() error {
	e.cancel()
	<-e.done
	return nil
}

// publish makes p the program Handle sends to (nil: none) and wakes
// Handle.
func (e *processEngine) publish(p Process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.proc = p
	close(e.changed)
	e.changed = make(chan struct{})
}

// keep runs the program, again and again, until the engine's context
// ends.
func (e *processEngine) keep() {
	defer close(e.done)
	defer func() {
		if r, ok := e.drops.stop(e.d.Now()); ok {
			e.d.OnReport(e.sup.ID(), r)
		}
	}()
	var delay time.Duration
	for e.ctx.Err() == nil {
		began := e.d.Now()
		started, err := e.life()
		if e.ctx.Err() != nil {
			return
		}
		up := e.d.Now().Sub(began)
		delay = e.d.Limits.Restart.Next(delay, up)
		if started {
			e.d.OnError(e.sup.ID(), fmt.Errorf("process %s ended (%s) after %s; starting it again in %s",
				e.spec.Path, exitText(err), up.Round(time.Millisecond), delay))
		} else {
			e.d.OnError(e.sup.ID(), fmt.Errorf("process %s could not start: %w; trying again in %s", e.spec.Path, err, delay))
		}
		if !e.pause(delay) {
			return
		}
	}
}

// pause waits d (false: the engine's context ended first), reporting the
// dropped lines when their period ends meanwhile.
func (e *processEngine) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return false
		case <-t.C:
			return true
		case <-e.drops.C():
			e.reportDue()
		}
	}
}

// reportDue reports the period of dropped lines that just ended.
func (e *processEngine) reportDue() {
	if r, ok := e.drops.due(e.d.Now()); ok {
		e.d.OnReport(e.sup.ID(), r)
	}
}

// drop counts a line the engine did not act on: OnDropped at once, the
// report when its period says so.
func (e *processEngine) drop(reason string, err error) {
	e.d.OnDropped(e.sup.ID(), reason, err)
	if r, ok := e.drops.add(reason, err, e.d.Now()); ok {
		e.d.OnReport(e.sup.ID(), r)
	}
}

// life starts the program once, handles its output until it ends (or the
// engine's context does) and stops it. It returns whether the program
// started, and how it ended or why it did not start.
func (e *processEngine) life() (started bool, err error) {
	p, err := e.d.Spawner.Start(e.spec)
	if err != nil {
		return false, err
	}
	e.publish(p)
	defer e.publish(nil)
	lines := p.Lines()
	for {
		select {
		case <-e.ctx.Done():
			return true, p.Stop()
		case l, ok := <-lines:
			if !ok {
				return true, p.Stop()
			}
			e.line(l)
		case <-e.drops.C():
			e.reportDue()
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
