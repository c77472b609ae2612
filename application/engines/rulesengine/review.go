package rulesengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// onReview answers a REVIEW signal with the rule document's deny and
// requireApproval rules (ReviewByRules): the first whose if holds
// decides, none means ALLOW, a condition that fails means NO_OPINION (the
// parent, or the default, decides).
func (e *rulesEngine) onReview(ctx context.Context, sig supervisor.ReviewSignal) error {
	if e.d.Answer == nil {
		return nil
	}
	doc, _, err := e.sup.RuleDocument(e.d.Check)
	if err != nil {
		return fmt.Errorf("rule document: %w", err)
	}
	in := ReviewInput{Command: sig.Command, Reason: sig.Reason, Actor: sig.Actor, SessionID: sig.SessionID,
		WorkflowID: sig.WorkflowID, ExecutionID: sig.ExecutionID, Now: e.d.Now()}
	if e.d.Counter != nil && sig.WorkflowID != "" {
		if in.ActiveCount, err = e.d.Counter.ActiveCount(ctx, sig.SessionID, sig.WorkflowID); err != nil {
			return err
		}
	}
	v, ruleID := ReviewByRules(ctx, doc, e.d.Conditions, in)
	if v.Decision() == supervisor.NoOpinion {
		e.d.OnRuleError(e.sup.ID(), ruleID, errors.New(v.Reason()))
	}
	_, err = e.d.Answer.Handle(ctx, supervisorapp.AnswerInput{ReviewID: sig.ReviewID, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
	e.facts.invalidate() // an ALLOW may have applied the command
	if errors.Is(err, supervisor.ErrReviewSettled) {
		return nil // moved on (timed out, decided elsewhere)
	}
	switch supervisorapp.SortEffect(err) {
	case supervisorapp.EffectDone:
		return nil
	case supervisorapp.EffectLeaseLost:
		return err
	case supervisorapp.EffectRefused, supervisorapp.EffectLoopBound:
		e.d.OnRuleError(e.sup.ID(), ruleID, err)
		return nil
	}
	return fmt.Errorf("review %s: %w", sig.ReviewID, err)
}

// ReviewInput is a command under review, as a rules supervisor's deny and
// requireApproval rules see it (the variables command, actor, workflow and
// now).
type ReviewInput struct {
	Command     supervisor.Command
	Reason      string
	Actor       string
	SessionID   string
	WorkflowID  string
	ExecutionID string
	NodeID      string
	// ActiveCount is how many runs of the workflow are unfinished now,
	// before the command applies (workflow.activeCount).
	ActiveCount int
	Now         time.Time
}

// ReviewByRules answers a review with a rule document: the first deny or
// requireApproval rule for the command's type whose if holds decides; none
// means ALLOW, and an if that fails means NO_OPINION
// (supervisor.RuleDocument.Review). It returns the verdict and the id of
// the deciding rule. It is what the review path calls for a rules
// supervisor.
func ReviewByRules(ctx context.Context, doc supervisor.RuleDocument, cond supervisorapp.ConditionEvaluator, in ReviewInput) (supervisor.Verdict, string) {
	vars := ReviewVariables(in)
	return doc.Review(in.Command.Type(), func(expr string) (bool, error) {
		return cond.EvalBool(ctx, expr, vars)
	})
}

// ReviewVariables are the variables of a deny or requireApproval rule's if.
func ReviewVariables(in ReviewInput) map[string]any {
	c := in.Command
	args := map[string]any{}
	if c.Mode() != "" {
		args["mode"] = string(c.Mode())
	}
	if c.FromNodeID() != "" {
		args["fromNodeId"] = c.FromNodeID()
	}
	if c.Type() == supervisor.StopNode {
		args["immediate"] = c.Immediate()
	}
	if p := c.Payload(); p != nil {
		args["payload"] = p
	}
	if c.InputID() != "" {
		args["inputId"] = c.InputID()
	}
	if bp, ok := c.Breakpoint(); ok {
		if bp.Field != "" {
			args["field"], args["equals"] = bp.Field, bp.Equals
		}
		if bp.Condition != "" {
			args["condition"] = bp.Condition
		}
	}
	target := ""
	if !c.Target().IsZero() {
		target = c.Target().String()
	}
	nodeID := in.NodeID
	if nodeID == "" {
		nodeID = c.NodeID()
	}
	cmd := map[string]any{"type": string(c.Type()), "target": target, "sessionId": in.SessionID, "workflowId": in.WorkflowID,
		"executionId": in.ExecutionID, "nodeId": nodeID, "reason": in.Reason, "args": args}
	wf := map[string]any{"sessionId": in.SessionID, "workflowId": in.WorkflowID, "activeCount": int64(in.ActiveCount)}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	return map[string]any{"command": cmd, "actor": in.Actor, "workflow": wf, "now": now.UTC()}
}
