package supervisorapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// The intake's effects: each step of a directive carried out through the
// use cases every door uses, and the events that journal them.

// apply applies the directive to one step and returns its outcome and the
// events that journal it (beside the ones the use cases write). An error
// is a failure to carry it out (the key stays open); a refusal is an
// outcome.
func (uc *SubmitDirective) apply(ctx context.Context, sup supervisor.Supervisor, d supervisor.Directive, channel string, st step,
	origin executionapp.Origin) (Outcome, []executionapp.Event, error) {
	c := d.Command()
	actor := Actor(sup.ID())
	key := ControlKey(sup.ID(), d.Key())
	out := Outcome{ExecutionID: st.ExecutionID, NodeID: st.NodeID}
	var events []executionapp.Event
	journal := func(typ, msg string) {
		events = append(events, uc.journal(sup, typ, d, channel, st, msg)...)
	}
	refused := func(err error) (Outcome, []executionapp.Event, error) {
		if !isRefusal(err) {
			return Outcome{}, nil, err
		}
		out.Status, out.Message = OutcomeRejected, err.Error()
		journal(EventDirectiveRejected, err.Error())
		return out, events, nil
	}
	if st.Missing {
		out.Status = OutcomeRejected
		out.Message = fmt.Sprintf("execution %s does not exist; nothing was changed", st.ExecutionID)
		return out, nil, nil
	}
	switch c.Type() {
	case supervisor.StartWorkflow:
		out.WorkflowID = st.WorkflowID
		res, err := uc.start.Handle(ctx, executionapp.StartInput{SessionID: st.SessionID, WorkflowID: st.WorkflowID, Payload: c.Payload(),
			IdempotencyKey: key, Trigger: executionapp.TriggerManual, Actor: actor, Channel: channel, Origin: origin})
		if err != nil {
			return refused(err)
		}
		if res.Review != nil && res.ExecutionID == "" {
			out.Status, out.ReviewID, out.Message = OutcomeInReview, res.Review.ReviewID, res.Review.Message
			return out, events, nil // the review journals itself
		}
		out.Status, out.ResultExecutionIDs = OutcomeApplied, []string{res.ExecutionID}
		out.Message = "started execution " + res.ExecutionID
		st.ExecutionID = res.ExecutionID
		journal(EventDirectiveApplied, out.Message)
		return out, events, nil
	case supervisor.AnswerInput:
		out.InputID = c.InputID()
		_, err := uc.answer.Handle(ctx, executionapp.AnswerRequest{InputID: c.InputID(), Answer: c.Answer(), Actor: actor, Channel: channel})
		if errors.Is(err, fault.ErrConflict) {
			// Answered already: by this directive (a retry after a crash)
			// counts as done.
			if inp, ok, lerr := uc.runs.Input(ctx, c.InputID()); lerr == nil && ok && inp.Status == "answered" && inp.AnsweredBy == actor {
				err = nil
			}
		}
		if err != nil {
			return refused(err)
		}
		out.Status, out.Message = OutcomeApplied, "input "+c.InputID()+" answered"
		journal(EventDirectiveApplied, out.Message)
		return out, events, nil
	case supervisor.Hold, supervisor.Release:
		return uc.hold(ctx, sup, d, channel, st)
	}
	scope, action, ok := c.Control()
	if !ok {
		return Outcome{}, nil, fmt.Errorf("supervisorapp: %s is not a control command", c.Type())
	}
	if c.Type() == supervisor.ResumeWorkflow && st.ExecutionID != "" { // a workflow's resume skips held runs itself
		hs, err := uc.holds.Holds(ctx, []string{st.ExecutionID})
		if err != nil {
			return Outcome{}, nil, err
		}
		for _, h := range hs {
			if err := h.CheckResume(); err != nil {
				return refused(err)
			}
		}
	}
	req := executionapp.ControlRequest{SessionID: st.SessionID, Scope: scope, Action: string(action), Mode: string(c.Mode()),
		FromNodeID: c.FromNodeID(), Immediate: c.Immediate(), Reason: d.Reason(), Cause: d.Cause(), Key: key, IfStatus: d.IfStatus(),
		Actor: actor, Channel: channel, Origin: origin}
	switch scope {
	case execution.ScopeWorkflow:
		req.WorkflowID, out.WorkflowID = st.WorkflowID, st.WorkflowID
	case execution.ScopeNode:
		req.ExecutionID, req.NodeID = st.ExecutionID, st.NodeID
	default:
		req.ExecutionID = st.ExecutionID
	}
	if bp, ok := c.Breakpoint(); ok {
		req.Breakpoint = &executionapp.BreakpointRequest{Field: bp.Field, Equals: bp.Equals, HasEquals: bp.Field != "", Condition: bp.Condition}
	}
	res, err := uc.control.Handle(ctx, req)
	out.CommandID, out.ResultExecutionIDs = res.CommandID, res.ResultExecutionIDs
	if err != nil {
		if !isRefusal(err) {
			return Outcome{}, nil, err
		}
		out.Status, out.Message = OutcomeRejected, err.Error()
		if res.CommandID == "" {
			// Refused before Control recorded it: journal it here.
			journal(EventDirectiveRejected, err.Error())
		}
		return out, events, nil
	}
	out.Status, out.Message = res.Status, res.Message
	switch {
	case res.Status == executionapp.CommandInReview:
		out.Status, out.ReviewID = OutcomeInReview, res.Review.ReviewID
	case out.Status != OutcomeAccepted:
		out.Status = OutcomeApplied
	}
	return out, events, nil
}

// hold applies Hold or Release to one run: the hold ledger first, then
// the pause or resume it calls for, through Control.
func (uc *SubmitDirective) hold(ctx context.Context, sup supervisor.Supervisor, d supervisor.Directive, channel string, st step) (Outcome, []executionapp.Event, error) {
	c := d.Command()
	out := Outcome{ExecutionID: st.ExecutionID}
	var status execution.Status
	var effect supervisor.HoldEffect
	now := uc.now()
	holds, err := uc.holds.ChangeHolds(ctx, st.ExecutionID, func(h supervisor.RunHolds, s execution.Status) (supervisor.RunHolds, error) {
		status, effect = s, supervisor.NoEffect
		if d.IfStatus() != "" && string(s) != d.IfStatus() {
			return h, fault.Newf(fault.ErrConflict, "execution %s is %s, not %s (ifStatus); nothing was changed", st.ExecutionID, s, d.IfStatus())
		}
		var next supervisor.RunHolds
		var err error
		if c.Type() == supervisor.Hold {
			next, effect, err = h.Hold(sup.ID(), d.Reason(), now, s)
		} else {
			next, effect, err = h.Release(sup.ID(), s)
		}
		return next, err
	})
	ev := func(typ, msg string) []executionapp.Event {
		return uc.journal(sup, typ, d, channel, st, msg)
	}
	if err != nil {
		if !isRefusal(err) {
			return Outcome{}, nil, err
		}
		out.Status, out.Message = OutcomeRejected, err.Error()
		return out, ev(EventDirectiveRejected, err.Error()), nil
	}
	var action execution.Action
	switch {
	case c.Type() == supervisor.Hold && holds.PausedByHold() && (status == execution.Pending || status == execution.Running):
		// The first hold paused it (or a retry finds the pause not yet
		// done): pause it. The key makes a second pause a no-op.
		action = execution.ActionPause
		out.Message = "held and paused: it stays paused until every holder released it"
	case c.Type() == supervisor.Hold:
		out.Message = "held: it was not running, so it stays as it is until every holder released it"
	case effect == supervisor.ResumeRun:
		action = execution.ActionResume
		out.Message = "released, the last hold: resumed"
	default:
		out.Message = "released"
	}
	out.Status = OutcomeApplied
	if action != "" {
		id, refusal, err := holdControl(ctx, uc.control, holdEffect{SessionID: st.SessionID, ExecutionID: st.ExecutionID, Action: action,
			Reason: d.Reason(), Cause: d.Cause(), Key: ControlKey(sup.ID(), d.Key()), Actor: Actor(sup.ID()), Channel: channel})
		if err != nil {
			return Outcome{}, nil, err
		}
		out.CommandID = id
		if refusal != "" {
			out.Message += " (" + refusal + ")"
		}
	}
	return out, ev(EventDirectiveApplied, out.Message), nil
}

// journal is the events that journal a directive's outcome in one step's
// run. A refusal is journaled only in a run the supervisor owns (a Release
// of a held run outside its units that fails is its outcome alone), so a
// supervisor never writes a refusal into a run it does not own.
func (uc *SubmitDirective) journal(sup supervisor.Supervisor, typ string, d supervisor.Directive, channel string, st step, msg string) []executionapp.Event {
	if typ == EventDirectiveRejected && !sup.OwnsPlace(supervisor.Place{SessionID: st.SessionID, WorkflowID: st.WorkflowID}) {
		return nil
	}
	return []executionapp.Event{uc.event(typ, sup.ID(), d, channel, st, msg)}
}

// event is the outbox event that journals a directive in one step's run.
func (uc *SubmitDirective) event(typ, supervisorID string, d supervisor.Directive, channel string, st step, msg string) executionapp.Event {
	c := d.Command()
	cmd := commandRef(c)
	data := map[string]any{"supervisorId": supervisorID, "key": d.Key(), "command": cmd, "channel": channel, "message": msg}
	if d.Cause() != "" {
		data["cause"] = d.Cause()
	}
	if d.Reason() != "" {
		data["reason"] = d.Reason()
	}
	return executionapp.Event{Type: typ, At: uc.now(), SessionID: st.SessionID, WorkflowID: st.WorkflowID, ExecutionID: st.ExecutionID,
		NodeID: st.NodeID, Actor: Actor(supervisorID), Channel: channel, Data: data}
}

// commandRef is a directive's command as its events record it: its type,
// target and every argument that decides what it does (a stop's mode, a
// restart's node, a breakpoint's condition). A StartWorkflow payload and an
// AnswerInput answer are left out: the run and the input record those.
func commandRef(c supervisor.Command) map[string]any {
	cmd := map[string]any{"type": string(c.Type())}
	if t := c.Target(); !t.IsZero() {
		cmd["target"] = t.String()
	}
	for k, v := range map[string]string{"nodeId": c.NodeID(), "inputId": c.InputID(), "mode": string(c.Mode()), "fromNodeId": c.FromNodeID()} {
		if v != "" {
			cmd[k] = v
		}
	}
	if c.Immediate() {
		cmd["immediate"] = true
	}
	if bp, ok := c.Breakpoint(); ok {
		if bp.Field != "" {
			cmd["field"], cmd["equals"] = bp.Field, bp.Equals
		}
		if bp.Condition != "" {
			cmd["condition"] = bp.Condition
		}
	}
	return cmd
}
