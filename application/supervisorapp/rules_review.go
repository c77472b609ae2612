package supervisorapp

import (
	"context"
	"errors"
	"fmt"

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
	_, err = e.d.Answer.Handle(ctx, AnswerInput{ReviewID: sig.ReviewID, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
	e.facts.invalidate() // an ALLOW may have applied the command
	if errors.Is(err, supervisor.ErrReviewSettled) {
		return nil // moved on (timed out, decided elsewhere)
	}
	switch SortEffect(err) {
	case EffectDone:
		return nil
	case EffectLeaseLost:
		return err
	case EffectRefused, EffectLoopBound:
		e.d.OnRuleError(e.sup.ID(), ruleID, err)
		return nil
	}
	return fmt.Errorf("review %s: %w", sig.ReviewID, err)
}
