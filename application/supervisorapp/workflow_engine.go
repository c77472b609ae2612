package supervisorapp

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

// WorkflowEngineDeps are what the workflow engine needs.
type WorkflowEngineDeps struct {
	// Start starts the supervisor's runs (*executionapp.StartExecution), in
	// the reserved slot pool, fed to the workflow's SUPERVISOR_SIGNAL nodes.
	Start Starter
	// Await follows a run to its end and reads its result.
	Await RunAwaiter
	// Control stops a run past its timeout (*executionapp.Control).
	Control Controller
	// Submit sends a decision's commands (*SubmitDirective); Answer its
	// verdict on a REVIEW signal (*AnswerReview).
	Submit DirectiveSender
	Answer ReviewAnswerer
	// Delegate opens the ESCALATE of a run that decided ESCALATE (nil:
	// ESCALATE is no opinion only).
	Delegate Delegator
	// Loops bounds the causal depth of the runs the engine starts (nil: no
	// bound): a run for an EVENT is one deeper than the event's run.
	Loops *LoopGuard
	// Conditions evaluates the when setting; only a supervisor that has one
	// needs it.
	Conditions ConditionEvaluator
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
	WorkflowDefaultMaxConcurrent = supervisor.WorkflowDefaultMaxConcurrent
	WorkflowDefaultTimeout       = supervisor.WorkflowDefaultTimeoutSeconds * time.Second
	WorkflowMaxTimeout           = supervisor.WorkflowMaxTimeoutSeconds * time.Second
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

// errWorkflowEngineClosed is what Handle answers after Close: the signal
// started no run and comes again to the next engine.
var errWorkflowEngineClosed = fmt.Errorf("supervisorapp: the workflow engine is closed: %w", fault.ErrUnavailable)

// WorkflowRunKey is the idempotency key of the run a signal starts: the
// first run (attempt 1) or the one a RETRY asks for (attempt 2). A signal
// handed again after a crash finds its run instead of starting another.
func WorkflowRunKey(supervisorID, signalID string, attempt int) string {
	k := "supervisor:" + supervisorID + "/signal:" + signalID
	if attempt > 1 {
		k += "/retry"
	}
	return k
}

// WorkflowDirectiveKey is the directive key of a decision's command: the
// signal and the command's place in the message, so a decision read again
// sends nothing twice.
func WorkflowDirectiveKey(signalID string, index int) string {
	return "workflow:" + signalID + ":" + strconv.Itoa(index)
}

// NewWorkflowEngineFactory returns the factory of the workflow engine
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
func NewWorkflowEngineFactory(d WorkflowEngineDeps) EngineFactory {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnError == nil {
		d.OnError = func(string, error) {}
	}
	return func(ctx context.Context, sup supervisor.Supervisor, f Fence, state []byte) (Engine, error) {
		if sup.EngineType() != "workflow" {
			return nil, fmt.Errorf("supervisorapp: supervisor %s has engine %s, not workflow", sup.ID(), sup.EngineType())
		}
		if d.Start == nil || d.Await == nil || d.Control == nil || d.Submit == nil || d.Answer == nil {
			return nil, fmt.Errorf("supervisorapp: supervisor %s: the workflow engine lacks Start, Await, Control, Submit or Answer; this is a wiring bug: %w",
				sup.ID(), fault.ErrUnavailable)
		}
		cfg, err := readWorkflowSettings(sup)
		if err != nil {
			return nil, err
		}
		if cfg.when != "" && d.Conditions == nil {
			return nil, fmt.Errorf("supervisorapp: supervisor %s: the workflow engine has no condition evaluator for its when; this is a wiring bug: %w",
				sup.ID(), fault.ErrUnavailable)
		}
		if d.ReservedSlots > 0 && cfg.maxConcurrent > d.ReservedSlots {
			d.OnError(sup.ID(), fault.Newf(fault.ErrInvalid, "workflow engine: engine.settings.maxConcurrent %d is more than the %d reserved slots (--reserved-supervisor-slots); %d runs are followed at once",
				cfg.maxConcurrent, d.ReservedSlots, d.ReservedSlots))
			cfg.maxConcurrent = d.ReservedSlots
		}
		ectx, cancel := context.WithCancel(ctx)
		e := &workflowEngine{d: d, sup: sup, fence: f, cfg: cfg, ctx: ectx, cancel: cancel,
			slots: make(chan struct{}, cfg.maxConcurrent), jobs: map[string]*wfJob{}}
		e.restore(state)
		return e, nil
	}
}

// workflowSettings are a workflow supervisor's settings, read once by the
// domain (supervisor.WorkflowSettings) with its defaults and bounds.
type workflowSettings struct {
	sessionID, workflowID string
	events                []string
	when                  string
	maxConcurrent         int
	timeout               time.Duration
}

// readWorkflowSettings reads the stored settings through the domain. They
// were validated when saved (supervisor.Parse); an error names the setting
// a stored document the rules no longer accept must fix.
func readWorkflowSettings(sup supervisor.Supervisor) (workflowSettings, error) {
	w, err := sup.WorkflowSettings()
	if err != nil {
		return workflowSettings{}, err
	}
	return workflowSettings{sessionID: w.SessionID, workflowID: w.WorkflowID, events: w.Events, when: w.When,
		maxConcurrent: w.MaxConcurrent, timeout: w.Timeout}, nil
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

// wfDecision is what a run ended with: an outcome of SUPERVISOR_DECISION
// with its reason and message, or no outcome and why.
type wfDecision struct {
	outcome string
	reason  string
	message any
	why     string
}

type workflowEngine struct {
	d     WorkflowEngineDeps
	sup   supervisor.Supervisor
	fence Fence
	cfg   workflowSettings
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
		return errWorkflowEngineClosed
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
		return errWorkflowEngineClosed
	}
	e.jobs[j.Signal] = j
	e.wg.Add(1)
	e.mu.Unlock()
	go e.follow(j, true)
	return nil
}

// plan decides whether sig starts a run and builds its job.
func (e *workflowEngine) plan(ctx context.Context, sig supervisor.Signal) (*wfJob, bool, error) {
	j := &wfJob{Signal: sig.Cursor(), Cursor: sig.Cursor(), Kind: sig.Kind(), SessionID: e.cfg.sessionID, Attempt: 1}
	switch b := sig.Body().(type) {
	case supervisor.EventSignal:
		if b.SessionID == e.cfg.sessionID && b.WorkflowID == e.cfg.workflowID {
			// Its own runs: reacting to them could loop without end (its
			// own directives' events never reach it: supervisor.Hears).
			return nil, false, nil
		}
		if !slices.Contains(e.cfg.events, b.Type) {
			return nil, false, nil
		}
		if e.cfg.when != "" {
			holds, err := e.d.Conditions.EvalBool(ctx, e.cfg.when, map[string]any{"event": EventVariable(b)})
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
	w, err := e.d.Workflows.Workflow(ctx, e.cfg.sessionID, e.cfg.workflowID)
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
	res, err := e.d.Start.Handle(ctx, executionapp.StartInput{SessionID: j.SessionID, WorkflowID: e.cfg.workflowID,
		Payload: j.payload, IdempotencyKey: WorkflowRunKey(e.sup.ID(), j.Signal, j.Attempt), Trigger: TriggerSupervisorSignal,
		Actor: Actor(e.sup.ID()), Channel: ChannelSupervisor, Pool: execution.PoolReserved, Origin: origin})
	if err != nil {
		return "", err
	}
	if res.ExecutionID == "" {
		return "", fault.Newf(fault.ErrConflict, "the start of %s/%s is held for a review; a supervisor's workflow cannot wait for one", j.SessionID, e.cfg.workflowID)
	}
	return res.ExecutionID, nil
}

// startFailed handles a run that could not start: a failure to reach the
// database is returned (the signal comes again); a refusal (no such
// workflow, no SUPERVISOR_SIGNAL node, a key reused) will not change by
// trying again, so it is reported and the signal gets no opinion.
func (e *workflowEngine) startFailed(ctx context.Context, j *wfJob, err error) error {
	effect := SortEffect(err)
	if ctx.Err() != nil || effect == EffectFailed {
		return fmt.Errorf("workflow engine: start the run for signal %s: %w", j.Cursor, err)
	}
	why := fmt.Sprintf("the run of %s/%s for signal %s (%s) could not start: %v", j.SessionID, e.cfg.workflowID, j.Cursor, j.Kind, err)
	if effect != EffectLoopBound { // the loop bounds log theirs once per window
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: %s: %w", why, err))
	}
	if j.Kind != supervisor.KindReview {
		return nil
	}
	v, _ := supervisor.NewVerdict(supervisor.NoOpinion, jsonvalue.Cut(why, supervisor.MaxReasonLen))
	_, aerr := e.d.Answer.Handle(ctx, AnswerInput{ReviewID: j.ReviewID, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
	if errors.Is(aerr, supervisor.ErrReviewSettled) {
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: review %s was settled before its NO_OPINION: %w", j.ReviewID, aerr))
		return nil
	}
	switch SortEffect(aerr) {
	case EffectDone:
		return nil
	case EffectRefused, EffectLoopBound:
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
			return errWorkflowEngineClosed
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.ctx.Done():
		return errWorkflowEngineClosed
	}
}

func (e *workflowEngine) release() { <-e.slots }

// follow owns one job: it waits for the run, retries it once when asked,
// carries the decision out and lets the job go. A job the engine's
// closing interrupted stays in the jobs (they are no longer saved), and
// the next engine resumes it from the last saved state.
func (e *workflowEngine) follow(j *wfJob, slotHeld bool) {
	defer e.wg.Done()
	if !slotHeld {
		if e.acquire(e.ctx) != nil {
			return
		}
	}
	defer e.release()
	if !e.decide(j) {
		return
	}
	e.mu.Lock()
	delete(e.jobs, j.Signal)
	e.mu.Unlock()
}

// decide follows the job's runs to a decision and carries it out; false
// when the engine closed first.
func (e *workflowEngine) decide(j *wfJob) bool {
	for {
		d, ok := e.await(j)
		if !ok {
			return false
		}
		if d.outcome != outcomeRetry {
			return e.apply(j, d)
		}
		if j.Attempt > 1 { // only this owner writes j
			return e.apply(j, wfDecision{why: "its run decided RETRY again; a signal is retried once"})
		}
		if j.payload == nil {
			return e.apply(j, wfDecision{why: "its run decided RETRY, but the signal was taken over from a previous engine without its payload, so it cannot run again"})
		}
		next := *j
		next.Attempt, next.StartedAt = 2, e.d.Now()
		var id string
		err := e.patiently(fmt.Sprintf("the retry of signal %s", j.Cursor), func() error {
			var err error
			id, err = e.start(e.ctx, &next)
			return err
		})
		switch {
		case e.ctx.Err() != nil:
			return false
		case err != nil:
			return e.apply(j, wfDecision{why: fmt.Sprintf("its run decided RETRY, and the second run could not start: %v", err)})
		}
		e.jobField(func() bool {
			j.Attempt, j.StartedAt, j.ExecutionID = 2, next.StartedAt, id
			return true
		})
	}
}

// jobField runs f under the engine's lock: State reads jobs from the
// runtime's goroutine while their owners change them.
func (e *workflowEngine) jobField(f func() bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return f()
}

// await waits for the job's run to end, stopping it at its time limit, and
// reads the decision it ended with; false when the engine closed first.
func (e *workflowEngine) await(j *wfJob) (wfDecision, bool) {
	limit := j.StartedAt.Add(e.cfg.timeout)
	if !j.Deadline.IsZero() && j.Deadline.Before(limit) {
		limit = j.Deadline
	}
	var out executionapp.RunOutcome
	err := e.patiently("the wait for run "+j.ExecutionID, func() error {
		var err error
		out, err = e.ended(j, max(limit.Sub(e.d.Now()), 0))
		return err
	})
	switch {
	case e.ctx.Err() != nil:
		return wfDecision{}, false
	case err != nil:
		return wfDecision{why: fmt.Sprintf("its run %s cannot be read: %v", j.ExecutionID, err)}, true
	case out.Ended:
		return readDecision(j.ExecutionID, out), true
	}
	e.stop(j)
	out, err = e.ended(j, workflowStopGrace)
	switch {
	case e.ctx.Err() != nil:
		return wfDecision{}, false
	case err != nil || !out.Ended:
		return wfDecision{why: fmt.Sprintf("its run %s did not decide within %s and was stopped, but had not ended %s later",
			j.ExecutionID, limit.Sub(j.StartedAt).Round(time.Second), workflowStopGrace)}, true
	case out.Status == execution.Stopped:
		return wfDecision{why: fmt.Sprintf("its run %s did not decide within %s and was stopped", j.ExecutionID, limit.Sub(j.StartedAt).Round(time.Second))}, true
	}
	// It ended on its own while it was being stopped: the run's stored
	// end decides, as it would for the signal handed again.
	return readDecision(j.ExecutionID, out), true
}

func (e *workflowEngine) ended(j *wfJob, d time.Duration) (executionapp.RunOutcome, error) {
	outs, err := e.d.Await.Ended(e.ctx, j.SessionID, []string{j.ExecutionID}, d)
	if err != nil {
		return executionapp.RunOutcome{}, err
	}
	if len(outs) != 1 {
		return executionapp.RunOutcome{}, fmt.Errorf("the wait for run %s answered %d runs", j.ExecutionID, len(outs))
	}
	return outs[0], nil
}

// stop kills a run past its time limit. A refusal (it ended meanwhile) is
// fine; a failure is reported, and the run's end is read anyway.
func (e *workflowEngine) stop(j *wfJob) {
	_, err := e.d.Control.Handle(e.ctx, executionapp.ControlRequest{SessionID: j.SessionID, ExecutionID: j.ExecutionID,
		Scope: execution.ScopeExecution, Action: string(execution.ActionStop), Mode: string(execution.Kill),
		Reason: fmt.Sprintf("the workflow supervisor %s's timeout ran out", e.sup.ID()), Cause: j.Cursor,
		Key: ControlKey(e.sup.ID(), "timeout:"+j.ExecutionID), Actor: Actor(e.sup.ID()), Channel: ChannelSupervisor})
	if e.ctx.Err() == nil && SortEffect(err) == EffectFailed {
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: stop run %s past its timeout: %w", j.ExecutionID, err))
	}
}

// readDecision reads what a run ended with: the result its
// SUPERVISOR_DECISION node stored ({"outcome", "reason", "payload"}), or
// why there is none.
func readDecision(id string, out executionapp.RunOutcome) wfDecision {
	switch {
	case out.Status == execution.Failure:
		return wfDecision{why: fmt.Sprintf("its run %s failed: %s", id, cmp.Or(out.Error, "no error given"))}
	case out.Status == execution.Stopped:
		return wfDecision{why: fmt.Sprintf("its run %s was stopped", id)}
	case !out.HasResult:
		return wfDecision{why: fmt.Sprintf("its run %s ended without reaching SUPERVISOR_DECISION; end each exit of the workflow with one", id)}
	}
	res, _ := out.Result.(map[string]any)
	outcome, ok := res["outcome"].(string)
	if !ok {
		return wfDecision{why: fmt.Sprintf("the result of its run %s is not a SUPERVISOR_DECISION's (it has no outcome); end each exit of the workflow with SUPERVISOR_DECISION, not RESULT", id)}
	}
	d := wfDecision{outcome: cmp.Or(outcome, outcomeSuccess), message: res["payload"]}
	d.reason, _ = res["reason"].(string)
	if !slices.Contains(supervisor.DecisionOutcomes, d.outcome) {
		return wfDecision{why: fmt.Sprintf("its run %s decided %q, which is not SUCCESS, ESCALATE, RETRY or FAILED", id, clipText(outcome, 120))}
	}
	return d
}

// apply carries a decision out; false when the engine closed (or lost its
// lease) before it was done, so the next engine does it again (its keys
// make that harmless).
func (e *workflowEngine) apply(j *wfJob, d wfDecision) bool {
	review := j.Kind == supervisor.KindReview
	switch d.outcome {
	case "":
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s (%s) has no decision: %s", j.Cursor, j.Kind, d.why))
		return !review || e.answer(j, e.noOpinion(d.why))
	case outcomeFailed:
		return !review || e.answer(j, e.noOpinion(cmp.Or(d.reason, "the supervisor's workflow decided FAILED")))
	case outcomeEscalate:
		if !e.escalate(j, d) {
			return false
		}
		return !review || e.answer(j, e.noOpinion(cmp.Or(d.reason, "the supervisor's workflow escalated")))
	}
	dirs, verdict, err := readMessage(d.message, j, d.reason)
	if err != nil {
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s (%s): the decision of run %s cannot be read, so nothing was sent: %w",
			j.Cursor, j.Kind, j.ExecutionID, err))
		return !review || e.answer(j, e.noOpinion("the supervisor's workflow sent a decision that cannot be read"))
	}
	if review {
		v := e.noOpinion("the supervisor's workflow gave no verdict")
		if verdict != nil {
			v = *verdict
		}
		if !e.answer(j, v) {
			return false
		}
	}
	for _, dir := range dirs {
		if !e.send(j, dir) {
			return false
		}
	}
	return true
}

// escalate opens an ESCALATE to the parent with the decision's message as
// the request, keyed by the signal so a retried decision finds it. A
// refusal (no parent, a message too large) is reported and the engine goes
// on; false when the engine closed or lost its lease first.
func (e *workflowEngine) escalate(j *wfJob, d wfDecision) bool {
	if e.d.Delegate == nil {
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s (%s): its run %s decided ESCALATE, but delegations are not wired here; taken as no opinion",
			j.Cursor, j.Kind, j.ExecutionID))
		return true
	}
	payload, err := json.Marshal(d.message)
	if err != nil {
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s: the ESCALATE message: %w", j.Cursor, err))
		return true
	}
	err = e.patiently("the ESCALATE of signal "+j.Cursor, func() error {
		_, _, err := e.d.Delegate.Handle(e.ctx, DelegateInput{SupervisorID: e.sup.ID(), Kind: supervisor.Escalate,
			Key: "workflow:" + j.Cursor, Payload: payload, Channel: ChannelSupervisor, Fence: &e.fence})
		return err
	})
	switch {
	case err == nil:
		return true
	case e.ctx.Err() != nil:
		return false
	}
	e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s (%s): the ESCALATE of run %s was refused: %w", j.Cursor, j.Kind, j.ExecutionID, err))
	return true
}

func (e *workflowEngine) noOpinion(why string) supervisor.Verdict {
	v, _ := supervisor.NewVerdict(supervisor.NoOpinion, jsonvalue.Cut(why, supervisor.MaxReasonLen))
	return v
}

// answer gives the review the verdict; false when the engine closed or
// lost its lease first.
func (e *workflowEngine) answer(j *wfJob, v supervisor.Verdict) bool {
	err := e.patiently("the answer to review "+j.ReviewID, func() error {
		_, err := e.d.Answer.Handle(e.ctx, AnswerInput{ReviewID: j.ReviewID, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
		return err
	})
	switch {
	case err == nil:
		return true
	case e.ctx.Err() != nil, SortEffect(err) == EffectLeaseLost:
		return false
	case errors.Is(err, supervisor.ErrReviewSettled):
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: the %s on review %s came after the review was settled: %w", v.Decision(), j.ReviewID, err))
	default:
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: the %s on review %s was refused: %w", v.Decision(), j.ReviewID, err))
	}
	return true
}

// send hands one directive to the intake; false when the engine closed or
// lost its lease first. A refusal is journaled by the intake and reported
// here; the other commands go on.
func (e *workflowEngine) send(j *wfJob, d supervisor.Directive) bool {
	err := e.patiently("directive "+d.Key(), func() error {
		_, err := e.d.Submit.Handle(e.ctx, SubmitInput{SupervisorID: e.sup.ID(), Directive: d, Channel: ChannelSupervisor, Fence: &e.fence})
		return err
	})
	if err != nil && e.ctx.Err() != nil {
		return false
	}
	switch SortEffect(err) {
	case EffectDone, EffectLoopBound: // the loop bounds log theirs once per window
		return true
	case EffectLeaseLost:
		return false
	}
	e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: signal %s: directive %s (%s) was refused: %w", j.Cursor, d.Key(), d.Command().Type(), err))
	return true
}

// patiently calls f until it succeeds, is refused (a refusal does not
// change by asking again) or the engine closes. Other failures (the
// database is down) are reported and tried again after a growing pause.
func (e *workflowEngine) patiently(what string, f func() error) error {
	var pause time.Duration
	for {
		err := f()
		if e.ctx.Err() != nil || SortEffect(err) != EffectFailed {
			return err
		}
		pause = min(max(2*pause, 100*time.Millisecond), 5*time.Second)
		e.d.OnError(e.sup.ID(), fmt.Errorf("workflow engine: %s failed; trying again in %s: %w", what, pause, err))
		sleep(e.ctx, pause)
	}
}

// readMessage reads the message of a SUCCESS decision strictly
// (supervisor.ReadDecision, paths under "message"): each command becomes a
// directive keyed by the signal and its index, with the signal's cursor as
// its cause. Every problem is listed in one *fault.ValidationError, and
// then nothing is sent. The SUPERVISOR_DECISION node reads the same
// message with the same rules and fails its run first, so this guards a
// run that ended before that check existed.
func readMessage(msg any, j *wfJob, reason string) ([]supervisor.Directive, *supervisor.Verdict, error) {
	d, err := supervisor.ReadDecision(msg, supervisor.DecisionOptions{Base: "message", Kind: j.Kind, Cause: j.Cursor, Reason: reason,
		Key: func(i int) string { return WorkflowDirectiveKey(j.Signal, i) }})
	if err != nil {
		return nil, nil, err
	}
	return d.Directives, d.Verdict, nil
}

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
