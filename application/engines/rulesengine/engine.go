// Package rulesengine is the rules engine (engine type "rules"): a
// supervisor's rule document (docs/supervisors.md) matched against each
// EVENT and TICK signal the runtime hands it, its deny and requireApproval
// rules answering REVIEW signals, and the dry run that replays a run's
// events through a document. It stands on supervisorapp: the runtime drives
// it through the Engine contract, and its directives and verdicts go
// through the intake and AnswerReview with the engine's Fence.
package rulesengine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// Deps are what the rules engine needs.
type Deps struct {
	Submit     supervisorapp.DirectiveSender
	Runs       supervisorapp.RunDirectory
	Conditions supervisorapp.ConditionEvaluator
	// Check compiles the rules' conditions when the engine reads its
	// document; nil checks only their structure.
	Check supervisor.ExprChecker
	Now   func() time.Time
	// OnRuleError hears what a rule could not do: a condition that failed
	// to evaluate, a command the signal could not build, a directive the
	// intake refused. The rule does not fire; the engine goes on.
	OnRuleError func(supervisorID, ruleID string, err error)
	// Answer takes the verdicts of deny and requireApproval rules on
	// REVIEW signals, and Counter reads workflow.activeCount for them;
	// without Answer the engine answers no reviews (they time out).
	Answer  supervisorapp.ReviewAnswerer
	Counter supervisorapp.WorkflowCounter
}

// TickRunLimit caps the unfinished runs one tick looks at.
const TickRunLimit = 1000

// NewFactory returns the factory of the rules engine
// (engine type "rules"): on each EVENT and TICK signal it matches the
// supervisor's rule document (docs/supervisors.md) and sends the directives
// of the rules that fire through the intake, with keys made of the rule id
// and the signal's cursor (RuleKey), so a signal handled again after a
// crash has its effects once. Count windows count by the events' own
// times and are saved with the cursor.
//
// Events its own supervisor caused (actor supervisor:<id>) never reach it:
// the runtime keeps them from every engine that decides (supervisor.Hears),
// so a rule cannot feed on its own directives.
func NewFactory(d Deps) supervisorapp.EngineFactory {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnRuleError == nil {
		d.OnRuleError = func(string, string, error) {}
	}
	return func(_ context.Context, sup supervisor.Supervisor, f supervisorapp.Fence, state []byte) (supervisorapp.Engine, error) {
		doc, ok, err := sup.RuleDocument(d.Check)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("rulesengine: supervisor %s has engine %s, not rules", sup.ID(), sup.EngineType())
		}
		rs := newRuleSet(doc, d.Conditions)
		if err := rs.restore(state); err != nil {
			return nil, err
		}
		return &rulesEngine{d: d, sup: sup, fence: f, rules: rs, facts: newFactsCache(d.Runs)}, nil
	}
}

type rulesEngine struct {
	d     Deps
	sup   supervisor.Supervisor
	fence supervisorapp.Fence
	rules *ruleSet
	facts *factsCache
}

// Handle reacts to one signal; delegation and other signals are not the
// rules engine's.
func (e *rulesEngine) Handle(ctx context.Context, sig supervisor.Signal) error {
	switch b := sig.Body().(type) {
	case supervisor.EventSignal:
		return e.onEvent(ctx, sig.Cursor(), b)
	case supervisor.TickSignal:
		return e.onTick(ctx, b)
	case supervisor.ReviewSignal:
		return e.onReview(ctx, b)
	}
	return nil
}

// State returns the count windows.
func (e *rulesEngine) State() ([]byte, error) { return e.rules.state() }

// BeginBatch and EndBatch bracket an outbox batch about runs
// (BatchEngine): in between, the facts of runs are read once, together
// (factsCache).
func (e *rulesEngine) BeginBatch(runs []string) { e.facts.begin(runs) }

// EndBatch: see BeginBatch.
func (e *rulesEngine) EndBatch() { e.facts.end() }

func (e *rulesEngine) onEvent(ctx context.Context, cursor string, ev supervisor.EventSignal) error {
	now := e.d.Now()
	t := eventTrigger(ev, func(ctx context.Context) (map[string]any, error) {
		return e.executionVar(ctx, ev.ExecutionID)
	}, now)
	evals, changes := e.rules.evaluate(ctx, t)
	for _, x := range evals {
		if err := e.fire(ctx, x, RuleKey(x.RuleID, cursor), cursor); err != nil {
			return err
		}
	}
	e.rules.commit(changes, ev.At)
	return nil
}

func (e *rulesEngine) onTick(ctx context.Context, tick supervisor.TickSignal) error {
	if !e.rules.hasTickRules() || len(e.sup.Owns()) == 0 {
		return nil
	}
	runs, err := e.d.Runs.ActiveRuns(ctx, e.sup.Owns(), TickRunLimit)
	if err != nil {
		return err
	}
	slot := "tick:" + strconv.FormatInt(tick.At.Unix()/int64(max(e.sup.TickSeconds(), 1)), 10)
	for _, r := range runs {
		occ := supervisor.Occurrence{SessionID: r.SessionID, WorkflowID: r.WorkflowID, ExecutionID: r.ID, Status: string(r.Status)}
		t := trigger{occ: occ, at: tick.At, tick: true,
			base:      func() map[string]any { return map[string]any{"now": e.d.Now()} },
			execution: func(ctx context.Context) (map[string]any, error) { return e.executionVar(ctx, r.ID) }}
		evals, _ := e.rules.evaluate(ctx, t)
		for _, ev := range evals {
			if err := e.fire(ctx, ev, RuleKey(ev.RuleID, slot+":"+r.ID), slot); err != nil {
				return err
			}
		}
	}
	return nil
}

// fire sends a fired rule's directive; other evaluations are reported.
// errFactsUnread marks a condition that could not be evaluated because the
// facts of its run could not be read: a failure of the signal, not of the
// rule.
var errFactsUnread = errors.New("the facts of the run could not be read")

func (e *rulesEngine) fire(ctx context.Context, ev Evaluation, key, cause string) error {
	switch ev.Outcome {
	case RuleFired:
	case RuleConditionFailed, RuleBuildFailed:
		if errors.Is(ev.Err, errFactsUnread) {
			// Not the rule's fault: the signal fails, so the cursor stays
			// before it and it comes again (at least once).
			return ev.Err
		}
		e.d.OnRuleError(e.sup.ID(), ev.RuleID, ev.Err)
		return nil
	default:
		return nil
	}
	d, err := supervisor.NewDirective(key, cause, ev.Reason, "", ev.Command)
	if err != nil {
		e.d.OnRuleError(e.sup.ID(), ev.RuleID, err)
		return nil
	}
	_, err = e.d.Submit.Handle(ctx, supervisorapp.SubmitInput{SupervisorID: e.sup.ID(), Directive: d, Channel: supervisorapp.ChannelSupervisor, Fence: &e.fence})
	// The directive may have changed any number of runs (a workflow's, or
	// every run's activeCount by a start): read facts again from here on.
	e.facts.invalidate()
	switch supervisorapp.SortEffect(err) {
	case supervisorapp.EffectDone, supervisorapp.EffectLoopBound: // the loop bounds log theirs once per window
		return nil
	case supervisorapp.EffectLeaseLost:
		return err
	case supervisorapp.EffectRefused: // recorded with the sender by the intake
		e.d.OnRuleError(e.sup.ID(), ev.RuleID, err)
		return nil
	}
	return fmt.Errorf("rule %s: %w", ev.RuleID, err)
}

// executionVar is the execution variable of a run ("" or a run that is
// gone: every field empty), its facts read once per outbox batch.
func (e *rulesEngine) executionVar(ctx context.Context, id string) (map[string]any, error) {
	if id == "" {
		return ExecutionVariable(supervisorapp.RunFacts{}), nil
	}
	f, ok, err := e.facts.facts(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return ExecutionVariable(supervisorapp.RunFacts{}), nil
	}
	return ExecutionVariable(f), nil
}

// RuleKey is the directive key of a rule that fired on a signal: the rule
// id and what it fired on (an event's cursor, or a tick slot and run), at
// most supervisor.MaxKeyLen characters. The same rule on the same signal
// always makes the same key, so a signal handled again (after a crash, or
// by the next owner of the lease) has its effect once.
func RuleKey(ruleID, on string) string {
	k := "rule:" + ruleID + ":" + on
	if len(k) <= supervisor.MaxKeyLen {
		return k
	}
	sum := sha256.Sum256([]byte(on))
	return "rule:" + ruleID + ":" + hex.EncodeToString(sum[:20])
}

// ExecutionVariable is the execution variable conditions read
// (docs/supervisors.md, Variables).
func ExecutionVariable(f supervisorapp.RunFacts) map[string]any {
	nodes := make(map[string]any, len(f.Nodes))
	for id, s := range f.Nodes {
		nodes[id] = string(s)
	}
	return map[string]any{"id": f.ID, "sessionId": f.SessionID, "workflowId": f.WorkflowID, "status": string(f.Status),
		"startedAt": f.StartedAt.UTC(), "lastProgressAt": f.LastProgressAt.UTC(), "activeCount": int64(f.ActiveCount), "nodes": nodes}
}
