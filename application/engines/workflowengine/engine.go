// Package workflowengine is the workflow engine (engine type "workflow"):
// for each signal it takes it starts a run of the supervisor's workflow in
// the reserved slot pool, follows the run to its end, and carries out what
// its SUPERVISOR_DECISION node decided (engine.go starts runs,
// decision.go follows them and acts). It stands on supervisorapp's Engine
// contract and the use cases it calls.
package workflowengine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/supervisor"
)

// RunAwaiter waits for runs to end and reads them as they stand then
// (*executionapp.Await). A wait that runs out is not an error.
type RunAwaiter interface {
	Ended(ctx context.Context, sessionID string, ids []string, d time.Duration) ([]executionapp.RunOutcome, error)
}

// Deps are what the workflow engine needs.
type Deps struct {
	// Start starts the supervisor's runs (*executionapp.StartExecution), in
	// the reserved slot pool, fed to the workflow's SUPERVISOR_SIGNAL nodes.
	Start supervisorapp.Starter
	// Await follows a run to its end and reads its result.
	Await RunAwaiter
	// Control stops a run past its timeout (*executionapp.Control).
	Control supervisorapp.Controller
	// Submit sends a decision's commands (*SubmitDirective); Answer its
	// verdict on a REVIEW signal (*AnswerReview).
	Submit supervisorapp.DirectiveSender
	Answer supervisorapp.ReviewAnswerer
	// Delegate opens the ESCALATE of a run that decided ESCALATE (nil:
	// ESCALATE is no opinion only).
	Delegate supervisorapp.Delegator
	// Loops bounds the causal depth of the runs the engine starts (nil: no
	// bound): a run for an EVENT is one deeper than the event's run.
	Loops *supervisorapp.LoopGuard
	// Conditions evaluates the when setting; only a supervisor that has one
	// needs it.
	Conditions supervisorapp.ConditionEvaluator
	// Workflows reads the workflow before a run starts, so a signal kind
	// none of its SUPERVISOR_SIGNAL nodes takes (their kinds config) starts
	// no run. Nil: every kind the supervisor takes starts one.
	Workflows executionapp.WorkflowReader
	// ReservedSlots is the size of the reserved slot pool
	// (--reserved-supervisor-slots): a maxConcurrent above it is lowered to
	// it, since more runs would only wait for a slot. 0: no bound here.
	ReservedSlots int
	Now           func() time.Time
	// OnError hears what the engine could not do and carried on past: a
	// when that failed to evaluate, a run that could not start, failed or
	// ran out of time, a decision it could not read, a command the intake
	// refused, an answer that came after the review was settled.
	OnError func(supervisorID string, err error)
}

// The workflow engine's settings: defaults and bounds (seed 000,
// `workflow`).
// They are declared once in the domain (supervisor.Workflow*), which the
// catalogue, the validator and this engine read.
const (
	DefaultMaxConcurrent = supervisor.WorkflowDefaultMaxConcurrent
	DefaultTimeout       = supervisor.WorkflowDefaultTimeoutSeconds * time.Second
	MaxTimeout           = supervisor.WorkflowMaxTimeoutSeconds * time.Second
)

// MaxDecisionCommands caps the commands of one decision
// (supervisor.MaxDecisionCommands).
const MaxDecisionCommands = supervisor.MaxDecisionCommands

// TriggerSupervisorSignal feeds a workflow's SUPERVISOR_SIGNAL nodes
// (StartExecution matches a Trigger against node types).
const TriggerSupervisorSignal executionapp.Trigger = "SUPERVISOR_SIGNAL"

// The outcomes of SUPERVISOR_DECISION (adapters/plugins).
const (
	outcomeSuccess  = supervisor.OutcomeSuccess
	outcomeEscalate = supervisor.OutcomeEscalate
	outcomeRetry    = supervisor.OutcomeRetry
	outcomeFailed   = supervisor.OutcomeFailed
)

// workflowStopGrace is how long the engine waits for a run it stopped at
// its timeout to end before it lets the slot go.
const workflowStopGrace = 10 * time.Second

// errClosed is what Handle answers after Close: the signal
// started no run and comes again to the next engine.
var errClosed = fmt.Errorf("workflowengine: the workflow engine is closed: %w", fault.ErrUnavailable)

// RunKey is the idempotency key of the run a signal starts: the
// first run (attempt 1) or the one a RETRY asks for (attempt 2). A signal
// handed again after a crash finds its run instead of starting another.
func RunKey(supervisorID, signalID string, attempt int) string {
	k := "supervisor:" + supervisorID + "/signal:" + signalID
	if attempt > 1 {
		k += "/retry"
	}
	return k
}

// DirectiveKey is the directive key of a decision's command: the
// signal and the command's place in the message, so a decision read again
// sends nothing twice.
func DirectiveKey(signalID string, index int) string {
	return "workflow:" + signalID + ":" + strconv.Itoa(index)
}

// NewFactory returns the factory of the workflow engine
// (engine type "workflow"). For each signal it takes (EVENT signals of a
// type in settings.events whose when holds; REVIEW, TICK, STARTED and the
// other kinds the supervisor takes; in both cases only kinds one of the
// workflow's SUPERVISOR_SIGNAL nodes takes) it starts a run of
// settings.sessionId/settings.workflowId in the reserved slot pool, with
// the signal's envelope {"cursor", "kind", "signal"} as the payload of its
// SUPERVISOR_SIGNAL nodes. When the run ends, the result its
// SUPERVISOR_DECISION node stored decides:
//
//   - SUCCESS: the message's commands ({"commands": [...]}, the directive
//     vocabulary) go through the intake, keyed by the signal and their
//     index; on a REVIEW signal the message's verdict ({"verdict",
//     "reason"?}) answers the review, NO_OPINION when it has none. A message
//     the contract cannot read sends nothing.
//   - RETRY: the signal gets one more run.
//   - ESCALATE: the message goes to the supervisor's parent as an ESCALATE
//     request (a DELEGATED signal there), keyed by the signal; on a REVIEW
//     signal the review also gets no opinion (which asks the parent too).
//   - FAILED, a run that failed or ran past settings.timeout (it is
//     stopped): no opinion.
//
// At most settings.maxConcurrent runs are followed at once: Handle waits
// for a slot, which holds the runtime's cursor back (never an unbounded
// queue). Each run has an owner goroutine that Close cancels and joins. The
// runs in flight are the engine's State, so the next engine (after a crash
// or a takeover) follows them to their end instead of losing their
// decisions.
func NewFactory(d Deps) supervisorapp.EngineFactory {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnError == nil {
		d.OnError = func(string, error) {}
	}
	return func(ctx context.Context, sup supervisor.Supervisor, f supervisorapp.Fence, state []byte) (supervisorapp.Engine, error) {
		if sup.EngineType() != "workflow" {
			return nil, fmt.Errorf("workflowengine: supervisor %s has engine %s, not workflow", sup.ID(), sup.EngineType())
		}
		if d.Start == nil || d.Await == nil || d.Control == nil || d.Submit == nil || d.Answer == nil {
			return nil, fmt.Errorf("workflowengine: supervisor %s: the workflow engine lacks Start, Await, Control, Submit or Answer; this is a wiring bug: %w",
				sup.ID(), fault.ErrUnavailable)
		}
		// Validated when saved (supervisor.Parse); an error names the
		// setting a stored document the rules no longer accept must fix.
		cfg, err := sup.WorkflowSettings()
		if err != nil {
			return nil, err
		}
		if cfg.When != "" && d.Conditions == nil {
			return nil, fmt.Errorf("workflowengine: supervisor %s: the workflow engine has no condition evaluator for its when; this is a wiring bug: %w",
				sup.ID(), fault.ErrUnavailable)
		}
		if d.ReservedSlots > 0 && cfg.MaxConcurrent > d.ReservedSlots {
			d.OnError(sup.ID(), fault.Newf(fault.ErrInvalid, "workflow engine: engine.settings.maxConcurrent %d is more than the %d reserved slots (--reserved-supervisor-slots); %d runs are followed at once",
				cfg.MaxConcurrent, d.ReservedSlots, d.ReservedSlots))
			cfg.MaxConcurrent = d.ReservedSlots
		}
		ectx, cancel := context.WithCancel(ctx)
		e := &workflowEngine{d: d, sup: sup, fence: f, cfg: cfg, ctx: ectx, cancel: cancel,
			slots: make(chan struct{}, cfg.MaxConcurrent), jobs: map[string]*wfJob{}}
		e.restore(state)
		return e, nil
	}
}

// wfJob is one signal the engine follows: its run, and what the decision
// needs of the signal. The exported fields are the engine's State.
type wfJob struct {
	// Signal names the signal in keys: its cursor for EVENT and REVIEW,
	// tick:<slot> for TICK, started:<time> for STARTED.
	Signal   string                `json:"signal"`
	Cursor   string                `json:"cursor"`
	Kind     supervisor.SignalKind `json:"kind"`
	ReviewID string                `json:"reviewId,omitempty"`
	// Deadline is the review's: an answer after it decides nothing, so
	// the run is stopped then if its timeout is later.
	Deadline    time.Time `json:"deadline,omitzero"`
	SessionID   string    `json:"sessionId"`
	ExecutionID string    `json:"executionId"`
	// Attempt is 1, or 2 for the run a RETRY started.
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"startedAt"`
	// payload is the signal's envelope, kept for a RETRY. It is not part
	// of the State (a STARTED snapshot can be large): a run resumed by the
	// next engine cannot be retried.
	payload any
}

// wfState is the engine's saved state: the runs it follows.
type wfState struct {
	Runs []*wfJob `json:"runs"`
}

type workflowEngine struct {
	d     Deps
	sup   supervisor.Supervisor
	fence supervisorapp.Fence
	cfg   supervisor.WorkflowSettings
	// ctx ends at Close or when the runtime stops the engine; every owner
	// goroutine works under it.
	ctx    context.Context
	cancel context.CancelFunc
	// slots holds one token per run followed.
	slots chan struct{}
	wg    sync.WaitGroup

	mu sync.Mutex
	// closed is set by Close; no owner starts after it.
	closed bool
	// jobs are the runs followed, by signal; an owner removes its job once
	// the decision was carried out.
	jobs map[string]*wfJob
}

// restore follows the runs a previous engine left in its state. A state
// that cannot be read is reported and dropped: those decisions are lost,
// and the supervisor goes on.
func (e *workflowEngine) restore(state []byte) {
	if len(state) == 0 {
		return
	}
	var st wfState
	if err := json.Unmarshal(state, &st); err != nil {
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: the saved runs cannot be read, so their decisions are lost: %w", err))
		return
	}
	for _, j := range st.Runs {
		if j == nil || j.Signal == "" || j.ExecutionID == "" || j.SessionID == "" {
			continue
		}
		e.mu.Lock()
		e.jobs[j.Signal] = j
		e.wg.Add(1)
		e.mu.Unlock()
		go e.follow(j, false)
	}
}

// Handle starts a run for sig when the engine takes it. It waits for a
// slot first. An error means the signal started nothing and comes again: a
// failure to reach the database, or the engine closing.
func (e *workflowEngine) Handle(ctx context.Context, sig supervisor.Signal) error {
	if e.ctx.Err() != nil {
		return errClosed
	}
	j, ok, err := e.plan(ctx, sig)
	if err != nil || !ok {
		return err
	}
	e.mu.Lock()
	_, following := e.jobs[j.Signal]
	e.mu.Unlock()
	if following {
		return nil // handed again while its run is followed
	}
	if ok, err := e.takesKind(ctx, j.Kind); err != nil {
		return e.startFailed(ctx, j, err)
	} else if !ok {
		return nil
	}
	if err := e.acquire(ctx); err != nil {
		return err
	}
	j.StartedAt = e.d.Now()
	if j.ExecutionID, err = e.start(ctx, j); err != nil {
		e.release()
		return e.startFailed(ctx, j, err)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.release()
		return errClosed
	}
	e.jobs[j.Signal] = j
	e.wg.Add(1)
	e.mu.Unlock()
	go e.follow(j, true)
	return nil
}

// plan decides whether sig starts a run and builds its job.
func (e *workflowEngine) plan(ctx context.Context, sig supervisor.Signal) (*wfJob, bool, error) {
	j := &wfJob{Signal: sig.Cursor(), Cursor: sig.Cursor(), Kind: sig.Kind(), SessionID: e.cfg.SessionID, Attempt: 1}
	switch b := sig.Body().(type) {
	case supervisor.EventSignal:
		if b.SessionID == e.cfg.SessionID && b.WorkflowID == e.cfg.WorkflowID {
			// Its own runs: reacting to them could loop without end (its
			// own directives' events never reach it: supervisor.Hears).
			return nil, false, nil
		}
		if !slices.Contains(e.cfg.Events, b.Type) {
			return nil, false, nil
		}
		if e.cfg.When != "" {
			holds, err := e.d.Conditions.EvalBool(ctx, e.cfg.When, map[string]any{"event": supervisorapp.EventVariable(b)})
			if err != nil {
				if ctx.Err() != nil {
					return nil, false, ctx.Err()
				}
				e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s (%s): engine.settings.when could not be evaluated, so no run started: %w",
					sig.Cursor(), b.Type, err))
				return nil, false, nil
			}
			if !holds {
				return nil, false, nil
			}
		}
	case supervisor.ReviewSignal:
		if !b.Deadline.IsZero() && !b.Deadline.After(e.d.Now()) {
			// The review's default decides it now; a run could not.
			e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s: review %s reached its deadline before the signal was handled, so no run started",
				sig.Cursor(), b.ReviewID))
			return nil, false, nil
		}
		j.ReviewID, j.Deadline = b.ReviewID, b.Deadline
	case supervisor.TickSignal:
		j.Signal = "tick:" + strconv.FormatInt(b.At.Unix()/int64(max(e.sup.TickSeconds(), 1)), 10)
	case supervisor.StartedSignal:
		j.Signal = "started:" + strconv.FormatInt(b.At.UnixNano(), 10)
	default:
		j.Signal = strings.ToLower(string(sig.Kind())) + ":" + sig.Cursor()
	}
	body, err := json.Marshal(sig)
	if err == nil {
		j.payload, err = jsonvalue.Decode(body, "signal")
	}
	if err != nil {
		// A signal that cannot be written never will be; handing it again
		// would stall the supervisor.
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s (%s) cannot be written as JSON, so no run started: %w", sig.Cursor(), sig.Kind(), err))
		return nil, false, nil
	}
	return j, true, nil
}

// takesKind reports whether one of the workflow's SUPERVISOR_SIGNAL nodes
// takes signals of kind k. A workflow without such a node is left to
// StartExecution, which says so.
func (e *workflowEngine) takesKind(ctx context.Context, k supervisor.SignalKind) (bool, error) {
	if e.d.Workflows == nil {
		return true, nil
	}
	w, err := e.d.Workflows.Workflow(ctx, e.cfg.SessionID, e.cfg.WorkflowID)
	if err != nil {
		return false, err
	}
	found := false
	for _, n := range w.Nodes() {
		if n.Type() != string(TriggerSupervisorSignal) {
			continue
		}
		found = true
		kinds, ok := n.Config()["kinds"].([]any)
		if !ok || slices.Contains(kinds, any(string(k))) {
			return true, nil
		}
	}
	return !found, nil
}

// start starts (or finds, by its key) the job's run. A run for an EVENT
// deeper than the loop bounds allow is refused (ErrLoopTooDeep).
func (e *workflowEngine) start(ctx context.Context, j *wfJob) (string, error) {
	cause := ""
	if j.Kind == supervisor.KindEvent {
		cause = j.Cursor
	}
	origin, err := e.d.Loops.AdmitRun(ctx, e.sup.ID(), cause)
	if err != nil {
		return "", err
	}
	res, err := e.d.Start.Handle(ctx, executionapp.StartInput{SessionID: j.SessionID, WorkflowID: e.cfg.WorkflowID,
		Payload: j.payload, IdempotencyKey: RunKey(e.sup.ID(), j.Signal, j.Attempt), Trigger: TriggerSupervisorSignal,
		Actor: supervisorapp.Actor(e.sup.ID()), Channel: supervisorapp.ChannelSupervisor, Pool: execution.PoolReserved, Origin: origin})
	if err != nil {
		return "", err
	}
	if res.ExecutionID == "" {
		return "", fault.Newf(fault.ErrConflict, "the start of %s/%s is held for a review; a supervisor's workflow cannot wait for one", j.SessionID, e.cfg.WorkflowID)
	}
	return res.ExecutionID, nil
}

// startFailed handles a run that could not start: a failure to reach the
// database is returned (the signal comes again); a refusal (no such
// workflow, no SUPERVISOR_SIGNAL node, a key reused) will not change by
// trying again, so it is reported and the signal gets no opinion.
func (e *workflowEngine) startFailed(ctx context.Context, j *wfJob, err error) error {
	effect := supervisorapp.SortEffect(err)
	if ctx.Err() != nil || effect == supervisorapp.EffectFailed {
		return fmt.Errorf("workflow engine: start the run for signal %s: %w", j.Cursor, err)
	}
	why := fmt.Sprintf("the run of %s/%s for signal %s (%s) could not start: %v", j.SessionID, e.cfg.WorkflowID, j.Cursor, j.Kind, err)
	if effect != supervisorapp.EffectLoopBound { // the loop bounds log theirs once per window
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: %s: %w", why, err))
	}
	if j.Kind != supervisor.KindReview {
		return nil
	}
	v, _ := supervisor.NewVerdict(supervisor.NoOpinion, jsonvalue.Cut(why, supervisor.MaxReasonLen))
	_, aerr := e.d.Answer.Handle(ctx, supervisorapp.AnswerInput{ReviewID: j.ReviewID, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
	if errors.Is(aerr, supervisor.ErrReviewSettled) {
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: review %s was settled before its NO_OPINION: %w", j.ReviewID, aerr))
		return nil
	}
	switch supervisorapp.SortEffect(aerr) {
	case supervisorapp.EffectDone:
		return nil
	case supervisorapp.EffectRefused, supervisorapp.EffectLoopBound:
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: NO_OPINION on review %s: %w", j.ReviewID, aerr))
		return nil
	}
	return fmt.Errorf("workflow engine: NO_OPINION on review %s: %w", j.ReviewID, aerr)
}

func (e *workflowEngine) acquire(ctx context.Context) error {
	select {
	case e.slots <- struct{}{}:
		if e.ctx.Err() != nil { // both were ready: a closed engine starts nothing
			e.release()
			return errClosed
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.ctx.Done():
		return errClosed
	}
}

func (e *workflowEngine) release() { <-e.slots }

// State returns the runs the engine follows, nil when none.
func (e *workflowEngine) State() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.jobs) == 0 {
		return nil, nil
	}
	st := wfState{Runs: make([]*wfJob, 0, len(e.jobs))}
	for _, j := range e.jobs {
		c := *j
		st.Runs = append(st.Runs, &c)
	}
	slices.SortFunc(st.Runs, func(a, b *wfJob) int { return cmp.Compare(a.Signal, b.Signal) })
	return json.Marshal(st)
}

// Close cancels the waits and the runs' owners and returns once every
// owner has returned. Runs in flight go on; the next engine follows them
// from the saved state. It may be called more than once.
func (e *workflowEngine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	return nil
}
