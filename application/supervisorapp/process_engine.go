package supervisorapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ProcessDeps are what the process engine needs.
type ProcessDeps struct {
	Spawner ProcessSpawner
	// Submit takes the program's command lines as directives; Answer its
	// verdict and noOpinion lines.
	Submit DirectiveSender
	Answer ReviewAnswerer
	// Delegate takes delegate lines, AnswerDelegation delegationAnswer
	// lines (nil: those lines are dropped as notBuilt).
	Delegate         Delegator
	AnswerDelegation DelegationAnswerer
	// Policy says which executables may run. It is checked when the
	// engine starts, since the configuration may have changed since the
	// supervisor was saved; the zero policy runs nothing.
	Policy SavePolicy
	Now    func() time.Time
	// Limits bound the pipes and the restarts; zero values take the
	// defaults.
	Limits ProcessLimits
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

// ProcessLimits bound the process engine. Zero values take the defaults.
type ProcessLimits struct {
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
	// DefaultProcessReportEvery).
	ReportEvery time.Duration
}

// Defaults of ProcessLimits.
const (
	DefaultProcessMaxLine = 64 << 10
	DefaultProcessQueue   = 64
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

// Why an output line was dropped (ProcessDeps.OnDropped).
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

// errProcessEngineClosed is what Handle answers after Close: the signal
// was not handed to the program and comes again to the next engine.
var errProcessEngineClosed = fmt.Errorf("supervisorapp: the process engine is closed: %w", fault.ErrUnavailable)

// NewProcessEngineFactory returns the factory of the process engine
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
func NewProcessEngineFactory(d ProcessDeps) EngineFactory {
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
		d.Limits.ReportEvery = DefaultProcessReportEvery
	}
	if d.Limits.MaxLineBytes <= 0 {
		d.Limits.MaxLineBytes = DefaultProcessMaxLine
	}
	if d.Limits.QueueLines <= 0 {
		d.Limits.QueueLines = DefaultProcessQueue
	}
	d.Limits.Restart = d.Limits.Restart.withDefaults()
	return func(ctx context.Context, sup supervisor.Supervisor, f Fence, _ []byte) (Engine, error) {
		if sup.EngineType() != "process" {
			return nil, fmt.Errorf("supervisorapp: supervisor %s has engine %s, not process", sup.ID(), sup.EngineType())
		}
		spec, err := processSpec(sup, d.Limits)
		if err != nil {
			return nil, err
		}
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

// processSpec reads the command and args settings: args is one argument
// per line ("\r\n" too); a single trailing newline ends the last argument
// rather than adding an empty one.
func processSpec(sup supervisor.Supervisor, l ProcessLimits) (ProcessSpec, error) {
	s := sup.Settings()
	cmd, _ := s["command"].(string)
	if cmd == "" {
		return ProcessSpec{}, fault.Newf(fault.ErrInvalid, "process supervisor %s has no engine.settings.command; apply it again with the executable's absolute path", sup.ID())
	}
	var args []string
	if a, _ := s["args"].(string); a != "" {
		a = strings.TrimSuffix(strings.TrimSuffix(a, "\n"), "\r")
		for _, line := range strings.Split(a, "\n") {
			args = append(args, strings.TrimSuffix(line, "\r"))
		}
	}
	return ProcessSpec{Path: cmd, Args: args, MaxLineBytes: l.MaxLineBytes, QueueLines: l.QueueLines}, nil
}

// processEngine keeps one supervisor's program running. The goroutine
// keep owns the program: it starts it, reads its output, stops it and
// starts it again; Handle, on the runtime's goroutine, only sends to the
// program keep publishes in proc.
type processEngine struct {
	d     ProcessDeps
	sup   supervisor.Supervisor
	fence Fence
	spec  ProcessSpec
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
			if !errors.Is(err, ErrProcessGone) {
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
			return errProcessEngineClosed
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

// line acts on one output line, or drops it. A line that reaches the
// server is sent with the engine's context, so Close does not wait for a
// slow database beyond what the intake takes to notice.
func (e *processEngine) line(l ProcessLine) {
	if l.TooLong {
		e.drop(DropTooLong, fmt.Errorf("an output line is longer than %d bytes; it was thrown away", e.spec.MaxLineBytes))
		return
	}
	data := bytes.TrimSpace(l.Data)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		e.drop(DropNotJSON, fmt.Errorf("an output line is not a JSON object: %q", clipLine(data)))
		return
	}
	var typ string
	if raw, ok := m["type"]; !ok || json.Unmarshal(raw, &typ) != nil {
		e.drop(DropUnknownType, fmt.Errorf(`an output line has no "type" string; use one of %s`, lineTypes))
		return
	}
	delete(m, "type")
	switch typ {
	case LineCommand:
		e.command(m)
	case LineVerdict, LineNoOpinion:
		e.verdict(typ, m)
	case LineDelegate:
		e.delegate(m)
	case LineDelegationAnswer:
		e.delegationAnswer(m)
	default:
		e.drop(DropUnknownType, fmt.Errorf("an output line has type %q; use one of %s", clipLine([]byte(typ)), lineTypes))
	}
}

var lineTypes = strings.Join([]string{LineCommand, LineVerdict, LineNoOpinion, LineDelegationAnswer, LineDelegate}, ", ")

// lineMembers reads a line's members into v, refusing members it lacks.
func lineMembers(typ string, m map[string]json.RawMessage, v any, known ...string) []string {
	var problems []string
	for k := range m {
		if !slices.Contains(known, k) {
			problems = append(problems, fmt.Sprintf("%q is not a member of a %s line", clipLine([]byte(k)), typ))
		}
	}
	rest, _ := json.Marshal(m)
	if err := json.Unmarshal(rest, v); err != nil {
		problems = append(problems, "members of the wrong type: "+strings.Join(known, ", "))
	}
	slices.Sort(problems)
	return problems
}

// delegate opens a delegation: {kind, key, payload, to?}.
func (e *processEngine) delegate(m map[string]json.RawMessage) {
	if e.d.Delegate == nil {
		e.drop(DropNotBuilt, errors.New("a delegate line was dropped: delegations are not wired on this server"))
		return
	}
	var in struct {
		Kind, Key, To string
		Payload       json.RawMessage
	}
	if problems := lineMembers(LineDelegate, m, &in, "kind", "key", "to", "payload"); len(problems) > 0 {
		e.drop(DropInvalid, fmt.Errorf("delegate line: %s", strings.Join(problems, "; ")))
		return
	}
	_, _, err := e.d.Delegate.Handle(e.ctx, DelegateInput{SupervisorID: e.sup.ID(), Kind: supervisor.DelegationKind(in.Kind), Key: in.Key,
		To: in.To, Payload: in.Payload, Channel: ChannelSupervisor, Fence: &e.fence})
	if err != nil && e.ctx.Err() == nil {
		e.drop(DropRefused, fmt.Errorf("delegate line with key %q: %w", clipLine([]byte(in.Key)), err))
	}
}

// delegationAnswer answers a delegation sent to this supervisor:
// {answers, answer}.
func (e *processEngine) delegationAnswer(m map[string]json.RawMessage) {
	if e.d.AnswerDelegation == nil {
		e.drop(DropNotBuilt, errors.New("a delegationAnswer line was dropped: delegations are not wired on this server"))
		return
	}
	var in struct {
		Answers string
		Answer  json.RawMessage
	}
	problems := lineMembers(LineDelegationAnswer, m, &in, "answers", "answer")
	switch {
	case strings.TrimSpace(in.Answers) == "":
		problems = append(problems, "answers is required: the delegationId of the DELEGATED or CONSULTED signal it answers")
	case utf8.RuneCountInString(in.Answers) > maxAnswersLen:
		problems = append(problems, fmt.Sprintf("answers is longer than %d characters", maxAnswersLen))
	}
	if len(problems) > 0 {
		e.drop(DropInvalid, fmt.Errorf("delegationAnswer line: %s", strings.Join(problems, "; ")))
		return
	}
	_, err := e.d.AnswerDelegation.Handle(e.ctx, AnswerDelegationInput{DelegationID: in.Answers, SupervisorID: e.sup.ID(), Answer: in.Answer,
		Channel: ChannelSupervisor, Fence: &e.fence})
	if err != nil && e.ctx.Err() == nil {
		e.drop(DropRefused, fmt.Errorf("delegationAnswer line for %s: %w", clipLine([]byte(in.Answers)), err))
	}
}

// command sends a command line, the directive envelope with its type, to
// the intake.
func (e *processEngine) command(m map[string]json.RawMessage) {
	rest, err := json.Marshal(m)
	if err != nil {
		e.drop(DropInvalid, err)
		return
	}
	d, err := supervisor.ParseDirective(rest)
	if err != nil {
		e.drop(DropInvalid, fmt.Errorf("command line: %w", err))
		return
	}
	_, err = e.d.Submit.Handle(e.ctx, SubmitInput{SupervisorID: e.sup.ID(), Directive: d, Channel: ChannelSupervisor, Fence: &e.fence})
	if effect := SortEffect(err); effect != EffectDone && effect != EffectLoopBound && e.ctx.Err() == nil {
		// A refusal is journaled by the intake; a failure leaves the key
		// open, so the program may send the same line again. The loop
		// bounds log their refusals once per window themselves; the
		// rest are counted and summed up (process_report.go).
		e.drop(DropRefused, fmt.Errorf("command line with key %q: %w", d.Key(), err))
	}
}

// verdict answers a review: verdict lines with their decision, noOpinion
// lines with NO_OPINION.
func (e *processEngine) verdict(typ string, m map[string]json.RawMessage) {
	var in struct {
		Answers *string `json:"answers"`
		Verdict *string `json:"verdict"`
		Reason  *string `json:"reason"`
	}
	var problems []string
	for k := range m {
		if k != "answers" && (typ == LineNoOpinion || (k != "verdict" && k != "reason")) {
			problems = append(problems, fmt.Sprintf("%q is not a member of a %s line", clipLine([]byte(k)), typ))
		}
	}
	rest, _ := json.Marshal(m)
	if err := json.Unmarshal(rest, &in); err != nil {
		problems = append(problems, "members of the wrong type: answers, verdict and reason are strings")
	}
	switch {
	case in.Answers == nil || strings.TrimSpace(*in.Answers) == "":
		problems = append(problems, "answers is required: the reviewId of the REVIEW signal it answers")
	case utf8.RuneCountInString(*in.Answers) > maxAnswersLen:
		problems = append(problems, fmt.Sprintf("answers is longer than %d characters; give the reviewId of the REVIEW signal", maxAnswersLen))
	}
	decision, reason := supervisor.NoOpinion, ""
	if in.Reason != nil {
		reason = *in.Reason
	}
	if typ == LineVerdict {
		switch {
		case in.Verdict == nil:
			problems = append(problems, "verdict is required: ALLOW, DENY or REQUIRE_APPROVAL")
		case strings.EqualFold(*in.Verdict, string(supervisor.NoOpinion)):
			problems = append(problems, `verdict NO_OPINION is sent as a line of its own: {"type": "noOpinion", "answers": …}`)
		default:
			decision = supervisor.Decision(*in.Verdict)
		}
	}
	if len(problems) > 0 {
		e.drop(DropInvalid, fmt.Errorf("%s line: %s", typ, strings.Join(problems, "; ")))
		return
	}
	v, err := supervisor.NewVerdict(decision, reason)
	if err != nil {
		e.drop(DropInvalid, fmt.Errorf("%s line: %w", typ, err))
		return
	}
	_, err = e.d.Answer.Handle(e.ctx, AnswerInput{ReviewID: *in.Answers, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
	switch {
	case err == nil, e.ctx.Err() != nil:
	case errors.Is(err, supervisor.ErrReviewSettled):
		// Answered too late (timed out, decided by an ADMIN): the
		// answer has nothing left to decide, and is said so.
		e.drop(DropRefused, fmt.Errorf("%s line for review %s came after the review was settled: %w", typ, *in.Answers, err))
	default:
		e.drop(DropRefused, fmt.Errorf("%s line for review %s: %w", typ, *in.Answers, err))
	}
}

// clipLine shortens a dropped line for a report: enough to recognise it,
// never a whole 64 KiB line in a log.
func clipLine(b []byte) string {
	const n = 120
	if len(b) <= n {
		return string(b)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
