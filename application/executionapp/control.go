package executionapp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// Command statuses.
const (
	CommandAccepted = "accepted"
	CommandApplied  = "applied"
	CommandRejected = "rejected"
	// CommandInReview: a supervisor reviews the command; nothing was
	// applied yet (ControlResult.Review says where the review stands).
	CommandInReview = "review"
)

// Control applies control commands to executions, nodes and workflows. Every
// command is validated, recorded with its actor and channel (and journaled
// through its events) and applied in one transaction; a command with a key
// runs once, and repeating it returns the first answer.
type Control struct {
	tx         Transactor
	workflows  WorkflowReader
	runs       *runCache
	waker      Waker
	conditions ConditionChecker
	holds      HoldChecker
	admission  *Admission
	await      *Await
	reviews    ReviewGate
	skips      StartSkips
	now        func() time.Time
}

// ControlDeps are what Control needs. Conditions, Await and Waker may be nil:
// conditions are then not compiled before they are stored, waits return at
// once, and no local engine is woken.
type ControlDeps struct {
	Tx         Transactor
	Workflows  WorkflowReader
	Queue      Queue // loads execution definitions
	Catalog    session.Catalog
	Waker      Waker
	Conditions ConditionChecker
	// Holds refuses a RESUME of a run a supervisor holds; nil: no holds.
	Holds HoldChecker
	// Admission places restarts under the scheduler's limits and requeues
	// a resumed run that never started; nil: no limits.
	Admission *Admission
	Await     *Await
	// Reviews holds the commands supervisors review until their verdict;
	// nil: no reviews.
	Reviews ReviewGate
	// Skips hears of restarts refused because the workflow is paused; nil:
	// none are counted.
	Skips StartSkips
	Now   func() time.Time
}

// HoldChecker refuses to resume a run a supervisor holds (the hold ledger
// of the supervisor runtime).
type HoldChecker interface {
	CheckResume(ctx context.Context, executionID string) error
}

// NewControl returns the use case.
func NewControl(d ControlDeps) *Control {
	return &Control{tx: d.Tx, workflows: d.Workflows, now: d.Now, waker: d.Waker, conditions: d.Conditions, holds: d.Holds, admission: d.Admission, await: d.Await, reviews: d.Reviews, skips: d.Skips,
		runs: &runCache{runs: map[string]*run{}, catalog: d.Catalog, load: d.Queue.Source}}
}

// ControlInput is a validated command and its target.
type ControlInput struct {
	SessionID   string
	ExecutionID string // execution and node scope
	WorkflowID  string // workflow scope (STOP_ALL)
	Cause       string // what the sender reacted to; journaled
	Origin      Origin // what caused it: the runs a restart starts get it
	Command     execution.Command
}

// ControlResult is the answer to a command.
type ControlResult struct {
	CommandID          string
	Status             string
	ResultExecutionIDs []string
	Message            string
	// Waited holds, after a wait, the executions the command stopped or
	// started and how the wait left them.
	Waited []RunOutcome
	// Review is set when a supervisor reviews the command: Status is then
	// CommandInReview until the review has settled within the wait.
	Review *ReviewTicket
}

// Handle checks, records and applies one command. With a wait it then blocks
// until the effect is visible or the wait runs out: a DRAIN (or STOP_ALL
// DRAIN) until the drained executions have stopped, turning "accepted" into
// "applied"; a RESTART, RESTART_FROM_NODE or RETRY until the new execution
// has ended, so the caller gets its result in the same answer. Every other
// command is in effect when it is recorded.
//
// A command a supervisor reviews is held instead (see ReviewGate): the
// answer is its review, and with a wait the review's outcome.
func (uc *Control) Handle(ctx context.Context, r ControlRequest) (ControlResult, error) {
	in, err := uc.command(ctx, r)
	if err != nil {
		return ControlResult{}, err
	}
	if uc.reviews != nil {
		replay := r
		replay.WaitSecs = 0
		t, held, err := uc.reviews.Open(ctx, Reviewable{SessionID: in.SessionID, WorkflowID: in.WorkflowID, ExecutionID: in.ExecutionID,
			NodeID: in.Command.NodeID, Command: in.Command, Control: &replay})
		if err != nil {
			return ControlResult{}, err
		}
		if held {
			return uc.held(ctx, in, t)
		}
	}
	return uc.handle(ctx, in)
}

// Reviewed applies a command its review allowed, past the gate. Only the
// review's applier calls it, with the request the door sent.
func (uc *Control) Reviewed(ctx context.Context, r ControlRequest) (ControlResult, error) {
	in, err := uc.command(ctx, r)
	if err != nil {
		return ControlResult{}, err
	}
	return uc.handle(ctx, in)
}

// held answers a command under review: at once, or after waiting for the
// review to settle and then, for what is left of the wait, for the
// command's effect.
func (uc *Control) held(ctx context.Context, in ControlInput, t ReviewTicket) (ControlResult, error) {
	wait := in.Command.Wait
	began := time.Now()
	if wait > 0 && !t.Settled {
		var err error
		if t, err = uc.reviews.Wait(ctx, t.ReviewID, wait); err != nil {
			return ControlResult{}, err
		}
	}
	res := ControlResult{Status: CommandInReview, ResultExecutionIDs: []string{}, Message: t.Message, Review: &t}
	switch {
	case t.Denied != nil:
		return res, t.Denied
	case t.Applied != nil:
		o := t.Applied
		res.CommandID, res.Status, res.Message = o.CommandID, o.Status, o.Message
		if o.ResultExecutionIDs != nil {
			res.ResultExecutionIDs = o.ResultExecutionIDs
		}
		if o.Refused != "" {
			return res, fault.Newf(fault.ErrConflict, "%s", o.Refused)
		}
		return uc.effect(ctx, in, res, wait-time.Since(began))
	}
	return res, nil
}

func (uc *Control) handle(ctx context.Context, in ControlInput) (ControlResult, error) {
	res, err := uc.record(ctx, in)
	if err != nil {
		return res, err
	}
	return uc.effect(ctx, in, res, in.Command.Wait)
}

// effect waits up to wait for a recorded command's effect: the end of the
// runs a STOP stops or a restart starts.
func (uc *Control) effect(ctx context.Context, in ControlInput, res ControlResult, wait time.Duration) (ControlResult, error) {
	if wait <= 0 || uc.await == nil || pausesWorkflow(in.Command) {
		return res, nil // a workflow pause or resume is in effect when recorded
	}
	ids := res.ResultExecutionIDs
	if in.Command.Action == execution.ActionStop && in.Command.Scope == execution.ScopeExecution {
		ids = []string{in.ExecutionID}
	}
	if len(ids) == 0 {
		return res, nil
	}
	out, err := uc.await.Ended(ctx, in.SessionID, ids, wait)
	if err != nil {
		return ControlResult{}, err
	}
	res.Waited = out
	if res.Status == CommandAccepted && allEnded(out) {
		res.Status = CommandApplied
	}
	return res, nil
}

func allEnded(out []RunOutcome) bool {
	for _, o := range out {
		if !o.Ended {
			return false
		}
	}
	return true
}

// record records and applies a validated command in one transaction.
func (uc *Control) record(ctx context.Context, in ControlInput) (ControlResult, error) {
	var res ControlResult
	var refused error
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		refused = nil
		rec := CommandRecord{ID: newID(), SessionID: in.SessionID, ExecutionID: in.ExecutionID, WorkflowID: in.WorkflowID, Cause: in.Cause,
			NodeID: in.Command.NodeID, Command: in.Command, Status: CommandApplied, CreatedAt: uc.now()}
		if k := in.Command.Key; k != "" {
			// A key is scoped to its target and action: the same key on
			// another execution or for another action is another command.
			if err := st.Commands.LockKey(ctx, in.SessionID, k); err != nil {
				return err
			}
			prev, ok, err := st.Commands.ByKey(ctx, rec)
			if err != nil {
				return err
			}
			if ok {
				if diff := argsDiffer(prev.Command, in.Command); diff != "" {
					return fault.Newf(ErrKeyReused, "the key %q was already used for %s with %s; send a new key for a different command",
						k, in.Command.Action, diff)
				}
				res = ControlResult{CommandID: prev.ID, Status: prev.Status, ResultExecutionIDs: prev.ResultExecutionIDs, Message: prev.Message}
				if prev.Status == CommandRejected {
					refused = fault.Newf(fault.ErrConflict, "%s", prev.Message)
				}
				return nil
			}
		}
		msg, created, err := uc.apply(ctx, st, &rec, in)
		if err != nil {
			if !isRefusal(err) {
				return err
			}
			// A refusal is recorded (who asked for what, and why not) and
			// committed, then reported to the caller.
			rec.Status, rec.Message, refused = CommandRejected, err.Error(), err
		} else {
			rec.Message, rec.ResultExecutionIDs = msg, created
			if in.Command.Action == execution.ActionStop && in.Command.Mode == execution.Drain && !rec.drainedNow {
				rec.Status = CommandAccepted // applied when the run has drained
			}
		}
		if err := st.Commands.Insert(ctx, rec); err != nil {
			return err
		}
		if err := st.Events.Append(ctx, commandEvents(rec, uc.now())); err != nil {
			return err
		}
		res = ControlResult{CommandID: rec.ID, Status: rec.Status, ResultExecutionIDs: rec.ResultExecutionIDs, Message: rec.Message}
		return nil
	})
	if err != nil {
		return ControlResult{}, err
	}
	if refused != nil {
		return res, refused
	}
	wake(uc.waker) // RESUME, STEP, SKIP, restarts: work may be runnable now
	if res.ResultExecutionIDs == nil {
		res.ResultExecutionIDs = []string{}
	}
	return res, nil
}

// argsDiffer says how a command differs from the first use of its key
// ("mode KILL, not DRAIN"), or "" when it asks for the same thing.
func argsDiffer(first, again execution.Command) string {
	switch {
	case first.Mode != again.Mode:
		return fmt.Sprintf("mode %s, not %s", orNone(string(first.Mode)), orNone(string(again.Mode)))
	case first.Immediate != again.Immediate:
		return fmt.Sprintf("immediate %v, not %v", first.Immediate, again.Immediate)
	case first.FromNodeID != again.FromNodeID:
		return fmt.Sprintf("fromNodeId %s, not %s", orNone(first.FromNodeID), orNone(again.FromNodeID))
	case !reflect.DeepEqual(first.Breakpoint, again.Breakpoint):
		return "another breakpoint"
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// isRefusal tells a command the state refuses (recorded as rejected) from a
// failure to carry it out (rolled back).
func isRefusal(err error) bool {
	return errors.Is(err, fault.ErrConflict) || errors.Is(err, fault.ErrInvalid) || errors.Is(err, ErrNodeNotFound)
}

func commandEvents(rec CommandRecord, now time.Time) []Event {
	c := rec.Command
	data := map[string]any{"commandId": rec.ID, "scope": string(c.Scope), "action": string(c.Action), "channel": c.Channel}
	if c.Mode != "" {
		data["mode"] = string(c.Mode)
	}
	if c.Reason != "" {
		data["reason"] = c.Reason
	}
	if c.FromNodeID != "" {
		data["fromNodeId"] = c.FromNodeID
	}
	if c.Key != "" {
		data["key"] = c.Key
	}
	if rec.Cause != "" {
		data["cause"] = rec.Cause
	}
	ev := Event{At: now, SessionID: rec.SessionID, WorkflowID: rec.WorkflowID, ExecutionID: rec.ExecutionID, NodeID: rec.NodeID, Actor: c.Actor, Channel: c.Channel}
	accepted := ev
	accepted.Type, accepted.Data = EventCommandAccepted, data
	out := []Event{accepted}
	second := ev
	second.Data = map[string]any{"commandId": rec.ID, "message": rec.Message}
	switch rec.Status {
	case CommandApplied:
		second.Type = EventCommandApplied
		if len(rec.ResultExecutionIDs) > 0 {
			second.Data["resultExecutionIds"] = rec.ResultExecutionIDs
		}
		out = append(out, second)
	case CommandRejected:
		second.Type = EventCommandRejected
		out = append(out, second)
	}
	if c.Scope == execution.ScopeWorkflow && rec.Status == CommandApplied {
		out = append(out, stopAllEvents(rec, data, ev)...)
	}
	return out
}

// stopAllEvents are a STOP_ALL's command events once more for each execution
// it stopped (or is draining), with that execution's id: the workflow-scoped
// events above name no execution, so without these no journal would hold
// the command. Each carries the STOP_ALL's id, so every stopped execution's
// journal has the decision with its actor, channel and cause.
func stopAllEvents(rec CommandRecord, accepted map[string]any, ev Event) []Event {
	var out []Event
	for _, id := range rec.ResultExecutionIDs {
		one := ev
		one.ExecutionID = id
		a := one
		a.Type, a.Data = EventCommandAccepted, maps.Clone(accepted)
		a.Data["workflowId"] = rec.WorkflowID
		applied := one
		applied.Type = EventCommandApplied
		applied.Data = map[string]any{"commandId": rec.ID, "message": rec.Message, "workflowId": rec.WorkflowID}
		out = append(out, a, applied)
	}
	return out
}

func (uc *Control) apply(ctx context.Context, st Stores, rec *CommandRecord, in ControlInput) (string, []string, error) {
	c := in.Command
	switch {
	case c.Scope == execution.ScopeWorkflow && c.Action == execution.ActionPauseWorkflow:
		return uc.pauseWorkflow(ctx, st, in)
	case c.Scope == execution.ScopeWorkflow && c.Action == execution.ActionResumeWorkflow:
		return uc.resumeWorkflow(ctx, st, in)
	case c.Scope == execution.ScopeWorkflow:
		return uc.stopAll(ctx, st, rec, in)
	}
	ex, err := st.Executions.LockOne(ctx, in.SessionID, in.ExecutionID)
	if err != nil {
		return "", nil, err
	}
	rec.WorkflowID = ex.State().WorkflowID
	now := uc.now()
	w, err := newWork(ctx, st, []string{ex.ID()}, now)
	if err != nil {
		return "", nil, err
	}
	w.actor, w.channel = c.Actor, c.Channel
	ex = w.execs[ex.ID()]
	if c.Scope == execution.ScopeNode {
		return uc.applyNode(ctx, st, w, ex, c, in.Origin)
	}
	if c.IfStatus != "" && string(ex.Status()) != c.IfStatus {
		return "", nil, fault.Newf(fault.ErrConflict, "execution %s is %s, not %s (ifStatus); nothing was changed", ex.ID(), ex.Status(), c.IfStatus)
	}
	var msg string
	switch c.Action {
	case execution.ActionPause:
		err, msg = ex.Pause(), "execution paused: no new messages are taken; running ones finish"
	case execution.ActionResume:
		if uc.holds != nil {
			if err := uc.holds.CheckResume(ctx, ex.ID()); err != nil {
				return "", nil, err // a held run: recorded as rejected
			}
		}
		var requeued bool
		if requeued, err = uc.admission.Resume(ctx, st, ex); err == nil && !requeued {
			err = ex.Resume()
		}
		msg = "execution resumed"
		if requeued {
			msg = "execution resumed: it never started, so it waits for a slot again (PENDING, in its first place)"
		}
	case execution.ActionStop:
		msg, err = uc.stop(ctx, st, w, ex, c.Mode)
		if err == nil && c.Mode == execution.Drain {
			if err = w.reconcile(ctx, ex.ID()); err != nil {
				return "", nil, err
			}
			if err = w.finish(ctx, uc.runs); err != nil {
				return "", nil, err
			}
			if ex.Status().Terminal() { // nothing was queued: drained at once
				rec.drainedNow = true
				msg = "drained at once (nothing was queued): the execution is STOPPED"
			}
			return msg, nil, nil
		}
	case execution.ActionRestart:
		id, err := uc.restart(ctx, st, ex, "", c, in.Origin, now)
		if err != nil {
			return "", nil, err
		}
		return "restarted as execution " + id, []string{id}, w.finish(ctx, uc.runs)
	case execution.ActionRestartFromNode:
		id, err := uc.restart(ctx, st, ex, c.FromNodeID, c, in.Origin, now)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("restarted from node %s as execution %s", c.FromNodeID, id), []string{id}, w.finish(ctx, uc.runs)
	default:
		err = fmt.Errorf("execution: action %s is not an execution action: %w", c.Action, fault.ErrInvalid)
	}
	if err != nil {
		return "", nil, err
	}
	if err := w.reconcile(ctx, ex.ID()); err != nil {
		return "", nil, err
	}
	return msg, nil, w.finish(ctx, uc.runs)
}

func (uc *Control) stop(ctx context.Context, st Stores, w *work, ex *execution.Execution, mode execution.StopMode) (string, error) {
	eff, err := ex.Stop(mode, w.now)
	if err != nil {
		return "", err
	}
	if mode == execution.Drain {
		// Waiting inputs would never drain: they are cancelled.
		if err := st.Inputs.CancelOpen(ctx, ex.ID(), ""); err != nil {
			return "", err
		}
		if _, err := st.Items.DropParked(ctx, ex.ID()); err != nil {
			return "", err
		}
		for _, n := range w.nodes[ex.ID()] {
			if n.State().Parked > 0 { // its waiting message was dropped
				n.ClearParked()
				_ = n.Stop(w.now)
			}
		}
		return "draining: queued messages finish, then the execution is STOPPED", nil
	}
	if err := w.endRun(ctx, ex, eff.CancelInFlight); err != nil {
		return "", err
	}
	if eff.CancelInFlight {
		return "killed: queued messages dropped, running plugins cancelled", nil
	}
	return "stopped: queued messages dropped; running plugins finish and their output is discarded", nil
}

func (uc *Control) stopAll(ctx context.Context, st Stores, rec *CommandRecord, in ControlInput) (string, []string, error) {
	if _, err := uc.workflows.Workflow(ctx, in.SessionID, in.WorkflowID); err != nil && !errors.Is(err, session.ErrWorkflowNotFound) {
		return "", nil, err
	}
	ids, err := st.Executions.Active(ctx, in.SessionID, in.WorkflowID)
	if err != nil {
		return "", nil, err
	}
	if len(ids) == 0 {
		return fmt.Sprintf("no active execution of workflow %s to stop", in.WorkflowID), nil, nil
	}
	w, err := newWork(ctx, st, ids, uc.now())
	if err != nil {
		return "", nil, err
	}
	w.actor, w.channel = in.Command.Actor, in.Command.Channel
	var stopped []string
	for _, id := range ids {
		if ex := w.execs[id]; ex != nil && !ex.Status().Terminal() {
			if _, err := uc.stop(ctx, st, w, ex, in.Command.Mode); err != nil {
				return "", nil, err
			}
			stopped = append(stopped, id)
		}
	}
	// The ids stopped (or draining) are the command's result: the caller
	// gets them, and each of their journals records the command as a
	// decision (commandEvents).
	return fmt.Sprintf("%s sent to %d execution(s) of workflow %s", in.Command.Mode, len(stopped), in.WorkflowID), stopped, w.finish(ctx, uc.runs)
}

func (uc *Control) applyNode(ctx context.Context, st Stores, w *work, ex *execution.Execution, c execution.Command, origin Origin) (string, []string, error) {
	n := w.nodes[ex.ID()][c.NodeID]
	if n == nil {
		var ids []string
		for id := range w.nodes[ex.ID()] {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return "", nil, fault.Newf(ErrNodeNotFound, "node %q is not in execution %s; its nodes are: %s", c.NodeID, ex.ID(), strings.Join(ids, ", "))
	}
	if c.IfStatus != "" && string(n.Status()) != c.IfStatus {
		return "", nil, fault.Newf(fault.ErrConflict, "node %s is %s, not %s (ifStatus); nothing was changed", c.NodeID, n.Status(), c.IfStatus)
	}
	if c.Action == execution.ActionRetry {
		id, err := uc.restart(ctx, st, ex, c.NodeID, c, origin, w.now)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("node %s retried in new execution %s", c.NodeID, id), []string{id}, w.finish(ctx, uc.runs)
	}
	if ex.Status().Terminal() {
		return "", nil, fault.Newf(execution.ErrFinished, "execution %s is %s and has finished; use node RETRY or RESTART_FROM_NODE to run node %s again", ex.ID(), ex.Status(), c.NodeID)
	}
	var err error
	msg := fmt.Sprintf("node %s: %s applied", c.NodeID, c.Action)
	switch c.Action {
	case execution.ActionPause:
		err = n.Pause()
	case execution.ActionResume:
		err = n.Resume()
	case execution.ActionStop:
		if err = n.Stop(w.now); err == nil {
			if _, err = st.Items.Drop(ctx, ex.ID(), c.NodeID); err == nil {
				err = st.Inputs.CancelOpen(ctx, ex.ID(), c.NodeID)
			}
			if err == nil && c.Immediate {
				err = st.Signals.Cancel(ctx, ex.ID(), c.NodeID)
			}
		}
	case execution.ActionStepEnable:
		err = n.EnableStep()
	case execution.ActionStep:
		err = n.Step()
	case execution.ActionStepDisable:
		err = n.DisableStep()
	case execution.ActionSkip:
		if err = n.Skip(); err == nil {
			err = uc.requeue(ctx, st, ex.ID(), c.NodeID, false)
		}
	case execution.ActionUnskip:
		if err = n.Unskip(); err == nil {
			err = uc.requeue(ctx, st, ex.ID(), c.NodeID, true)
		}
	case execution.ActionBreakpoint:
		err = n.SetBreakpoint(*c.Breakpoint)
	case execution.ActionBreakpointClear:
		err = n.ClearBreakpoint()
	}
	if err != nil {
		return "", nil, err
	}
	if err := w.reconcile(ctx, ex.ID()); err != nil {
		return "", nil, err
	}
	return msg, nil, w.finish(ctx, uc.runs)
}

// requeue moves the waiting messages of a TASK node out of its queue when it
// is skipped (the engine passes them on, with no worker needed) and back
// when it is unskipped. Other nodes have no queue.
func (uc *Control) requeue(ctx context.Context, st Stores, executionID, nodeID string, queued bool) error {
	r, err := uc.runs.get(ctx, executionID)
	if err != nil {
		return err
	}
	task := r.nodes[nodeID].task
	if task == nil {
		return nil
	}
	if !queued {
		task = nil
	}
	return st.Items.Requeue(ctx, executionID, nodeID, task)
}

// restart starts a new execution from the workflow's current definition:
// from its triggers with the source's payload, or (fromNode set) feeding
// that node the inputs it received in the source run, with the nodes that
// cannot reach it SKIPPED.
func (uc *Control) restart(ctx context.Context, st Stores, src *execution.Execution, fromNode string, c execution.Command, origin Origin, now time.Time) (string, error) {
	s := src.State()
	// A restart is a new run: a paused workflow refuses it like a start,
	// before anything is written (the refusal is recorded and committed).
	if p, paused, err := st.Pauses.GuardStart(ctx, s.SessionID, s.WorkflowID); err != nil {
		return "", err
	} else if paused {
		what := "restart"
		if c.Action == execution.ActionRetry {
			what = "retry"
		}
		skipped(uc.skips, SourceRestart, p.RefuseStart(what))
		return "", p.RefuseStart(what)
	}
	source, err := st.Executions.Source(ctx, src.ID())
	if err != nil {
		return "", err
	}
	w, err := uc.workflows.Workflow(ctx, s.SessionID, s.WorkflowID)
	if err != nil {
		return "", fault.Newf(fault.ErrConflict, "workflow %s no longer exists in session %s; cannot restart: %v", s.WorkflowID, s.SessionID, err)
	}
	var feed []string
	var inputs map[string][]any
	if fromNode == "" {
		// The triggers the source run was started through get the payload
		// again (a run started by its webhook restarts through it).
		for _, n := range w.Nodes() {
			if d, ok := uc.runs.catalog.Describe(n.Type()); !ok || d.Category != plugin.Trigger {
				continue
			}
			got, err := st.Items.Inputs(ctx, src.ID(), n.ID())
			if err != nil {
				return "", err
			}
			if len(got) > 0 {
				feed = append(feed, n.ID())
			}
		}
		if len(feed) == 0 {
			return "", fault.Newf(fault.ErrConflict, "execution %s has no trigger that received its payload in the current definition; start a new run instead", src.ID())
		}
	} else {
		if _, ok := w.Node(fromNode); !ok {
			return "", fault.Newf(ErrNodeNotFound, "node %q is not in the current definition of workflow %s", fromNode, s.WorkflowID)
		}
		got, err := st.Items.Inputs(ctx, src.ID(), fromNode)
		if err != nil {
			return "", err
		}
		if len(got) == 0 {
			return "", fault.Newf(fault.ErrConflict, "node %s received no messages in execution %s; nothing to re-feed. Use RESTART instead", fromNode, src.ID())
		}
		inputs = map[string][]any{fromNode: got}
	}
	def, err := session.MarshalDefinition(w)
	if err != nil {
		return "", err
	}
	ex, err := uc.admission.Place(ctx, st, PlaceInput{ID: newID(), SessionID: s.SessionID, WorkflowID: s.WorkflowID,
		RestartOf: src.ID(), FromNodeID: fromNode, At: now})
	if err != nil {
		return "", err
	}
	if _, _, err := st.Executions.Insert(ctx, NewExecution{ID: ex.ID(), SessionID: s.SessionID, WorkflowID: s.WorkflowID,
		Definition: def, Payload: source.Payload, Actor: c.Actor, Channel: c.Channel, RestartOf: src.ID(), FromNodeID: fromNode,
		StartedAt: now, Status: ex.Status(), Origin: origin}); err != nil {
		return "", err
	}
	noteStarted(st, s.SessionID, s.WorkflowID)
	return ex.ID(), seed(ctx, st, uc.runs.catalog, w, ex, s.SessionID, feed, source.Payload, inputs, c.Actor, c.Channel, origin, now)
}
