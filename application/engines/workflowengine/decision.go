package workflowengine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/supervisor"
)

// What happens once a signal's run was started: its owner goroutine
// follows the run to its end, reads the decision its SUPERVISOR_DECISION
// node stored and carries it out (engine.go starts the runs).

// wfDecision is what a run ended with: an outcome of SUPERVISOR_DECISION
// with its reason and message, or no outcome and why.
type wfDecision struct {
	outcome string
	reason  string
	message any
	why     string
}

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
	limit := j.StartedAt.Add(e.cfg.Timeout)
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
		Key: supervisorapp.ControlKey(e.sup.ID(), "timeout:"+j.ExecutionID), Actor: supervisorapp.Actor(e.sup.ID()), Channel: supervisorapp.ChannelSupervisor})
	if e.ctx.Err() == nil && supervisorapp.SortEffect(err) == supervisorapp.EffectFailed {
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
		return wfDecision{why: fmt.Sprintf("its run %s decided %q, which is not SUCCESS, ESCALATE, RETRY or FAILED", id, supervisorapp.Clip(outcome, 120))}
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
		_, _, err := e.d.Delegate.Handle(e.ctx, supervisorapp.DelegateInput{SupervisorID: e.sup.ID(), Kind: supervisor.Escalate,
			Key: "workflow:" + j.Cursor, Payload: payload, Channel: supervisorapp.ChannelSupervisor, Fence: &e.fence})
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
		_, err := e.d.Answer.Handle(e.ctx, supervisorapp.AnswerInput{ReviewID: j.ReviewID, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
		return err
	})
	switch {
	case err == nil:
		return true
	case e.ctx.Err() != nil, supervisorapp.SortEffect(err) == supervisorapp.EffectLeaseLost:
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
		_, err := e.d.Submit.Handle(e.ctx, supervisorapp.SubmitInput{SupervisorID: e.sup.ID(), Directive: d, Channel: supervisorapp.ChannelSupervisor, Fence: &e.fence})
		return err
	})
	if err != nil && e.ctx.Err() != nil {
		return false
	}
	switch supervisorapp.SortEffect(err) {
	case supervisorapp.EffectDone, supervisorapp.EffectLoopBound: // the loop bounds log theirs once per window
		return true
	case supervisorapp.EffectLeaseLost:
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
		if e.ctx.Err() != nil || supervisorapp.SortEffect(err) != supervisorapp.EffectFailed {
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
		Key: func(i int) string { return DirectiveKey(j.Signal, i) }})
	if err != nil {
		return nil, nil, err
	}
	return d.Directives, d.Verdict, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
