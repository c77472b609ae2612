package rulesengine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// DryRun replays the recorded events of one execution through a rule
// document and reports which rules would have fired and the directives
// they would have sent, without sending anything. It backs
// POST /api/supervisor-engines/rules/dry-run.
//
// The replay is the live engine's matching, with three differences that
// make it repeatable: now is each event's own time; the execution variable
// is the run as its events up to that one leave it (status, nodes,
// startedAt, lastProgressAt), with activeCount counting only this run (1
// while it is unfinished); and count windows start empty and see only this
// run's events, so a per: workflow count that needs several runs shows
// how far this run alone takes it. Tick, deny and requireApproval rules
// are listed as not replayed.
type DryRun struct {
	events executionapp.EventTail
	runs   supervisorapp.RunDirectory
	redact supervisorapp.EventRedactor
	cond   supervisorapp.ConditionEvaluator
	check  supervisor.ExprChecker
}

// NewDryRun returns the use case. check compiles the document's
// conditions (nil checks their structure only).
func NewDryRun(events executionapp.EventTail, runs supervisorapp.RunDirectory, redact supervisorapp.EventRedactor, cond supervisorapp.ConditionEvaluator, check supervisor.ExprChecker) *DryRun {
	return &DryRun{events: events, runs: runs, redact: redact, cond: cond, check: check}
}

// DryRunInput names the rules to try and the execution to replay. Give a
// rule document, or a preset with its parameters.
type DryRunInput struct {
	// RuleDocument is a rules engine's settings ({"schemaVersion", "rules"}).
	RuleDocument json.RawMessage `json:"ruleDocument,omitempty"`
	// Preset and Parameters instantiate a preset instead
	// (supervisor.InstantiatePreset).
	Preset      string         `json:"preset,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	SessionID   string         `json:"sessionId"`
	ExecutionID string         `json:"executionId"`
}

// DryRunReport is what the replay found.
type DryRunReport struct {
	SessionID   string `json:"sessionId"`
	ExecutionID string `json:"executionId"`
	// Events is how many of the execution's events were replayed.
	Events int `json:"events"`
	// Fired lists, in event order, the directives the rules would have
	// sent.
	Fired []DryRunFiring `json:"fired"`
	// Evaluations lists, in event order, every rule an event passed the
	// filters of (event type, status, nodeId) and what came of it.
	Evaluations []DryRunEvaluation `json:"evaluations"`
	// Truncated is set when the execution has more than MaxDryRunEvents
	// events (the first are replayed) or more evaluations than
	// MaxDryRunEvaluations (the first are listed; Fired is complete).
	Truncated bool `json:"truncated,omitempty"`
	// NotReplayed lists the rules a replay of events cannot exercise.
	NotReplayed []DryRunSkipped `json:"notReplayed"`
}

// DryRunFiring is one directive a rule would have sent.
type DryRunFiring struct {
	Seq       int64     `json:"seq"`
	At        time.Time `json:"at"`
	EventType string    `json:"eventType"`
	NodeID    string    `json:"nodeId,omitempty"`
	RuleID    string    `json:"ruleId"`
	// Directive is the directive in its wire form, with the key the live
	// engine would give it.
	Directive json.RawMessage `json:"directive"`
}

// DryRunEvaluation is what one rule made of one event.
type DryRunEvaluation struct {
	Seq       int64     `json:"seq"`
	At        time.Time `json:"at"`
	EventType string    `json:"eventType"`
	NodeID    string    `json:"nodeId,omitempty"`
	RuleID    string    `json:"ruleId"`
	// Outcome is fired, counted, conditionFalse, conditionFailed or
	// buildFailed.
	Outcome string `json:"outcome"`
	// Count and Of: matches in the rule's window after this event, and
	// how many fire it (left out without a count).
	Count int    `json:"count,omitempty"`
	Of    int    `json:"of,omitempty"`
	Error string `json:"error,omitempty"`
}

// DryRunSkipped is a rule the replay did not exercise, and why.
type DryRunSkipped struct {
	RuleID string `json:"ruleId"`
	Reason string `json:"reason"`
}

// Limits of a dry run.
const (
	MaxDryRunEvents      = 10000
	MaxDryRunEvaluations = 2000
)

// Handle runs the replay.
func (uc *DryRun) Handle(ctx context.Context, in DryRunInput) (DryRunReport, error) {
	doc, err := uc.document(in)
	if err != nil {
		return DryRunReport{}, err
	}
	found, err := uc.runs.Runs(ctx, []string{in.ExecutionID})
	if err != nil {
		return DryRunReport{}, err
	}
	run, ok := found[in.ExecutionID]
	if !ok || run.SessionID != in.SessionID {
		return DryRunReport{}, fault.Newf(executionapp.ErrExecutionNotFound,
			"Execution not found: %s.", in.ExecutionID)
	}
	rep := DryRunReport{SessionID: in.SessionID, ExecutionID: in.ExecutionID, Fired: []DryRunFiring{}, Evaluations: []DryRunEvaluation{},
		NotReplayed: []DryRunSkipped{}}
	for _, r := range doc.Rules() {
		switch w, ok := r.When(); {
		case ok && w.Tick():
			rep.NotReplayed = append(rep.NotReplayed, DryRunSkipped{RuleID: r.ID(), Reason: "a tick rule: ticks are not recorded events"})
		case !ok:
			rep.NotReplayed = append(rep.NotReplayed, DryRunSkipped{RuleID: r.ID(), Reason: "a deny or requireApproval rule: it answers reviews, not events"})
		}
	}
	rs := newRuleSet(doc, uc.cond)
	fold := runFold{facts: supervisorapp.RunFacts{RunInfo: run, Nodes: map[string]execution.NodeStatus{}}}
	fold.facts.Status = execution.Running
	var after int64
	for rep.Events < MaxDryRunEvents {
		evs, err := uc.events.Events(ctx, executionapp.EventQuery{SessionID: in.SessionID, ExecutionID: in.ExecutionID, AfterSeq: after,
			Limit: min(executionapp.MaxEventBatch, MaxDryRunEvents-rep.Events)})
		if err != nil {
			return DryRunReport{}, err
		}
		for _, e := range evs {
			if err := uc.replay(ctx, e, rs, &fold, &rep); err != nil {
				return DryRunReport{}, err
			}
			after = e.Seq
		}
		if len(evs) < executionapp.MaxEventBatch {
			break
		}
	}
	if rep.Events >= MaxDryRunEvents {
		rep.Truncated = true
	}
	return rep, nil
}

func (uc *DryRun) document(in DryRunInput) (supervisor.RuleDocument, error) {
	hasDoc := len(in.RuleDocument) > 0 && string(in.RuleDocument) != "null"
	switch {
	case hasDoc && in.Preset != "":
		return supervisor.RuleDocument{}, &fault.ValidationError{Subject: "dry run", Violations: []fault.Violation{{Path: "preset",
			Message: "give ruleDocument or preset, not both"}}}
	case in.Preset != "":
		return supervisor.InstantiatePreset(in.Preset, in.Parameters, uc.check)
	case !hasDoc:
		return supervisor.RuleDocument{}, &fault.ValidationError{Subject: "dry run", Violations: []fault.Violation{{Path: "ruleDocument",
			Message: `is required: a rule document such as {"rules": [{"id": "pause-on-failure", "when": {"event": "NodeStatusChanged", "status": "FAILURE"}, "then": {"command": "PauseWorkflow"}}]}, or give a preset`}}}
	case len(in.Parameters) > 0:
		return supervisor.RuleDocument{}, &fault.ValidationError{Subject: "dry run", Violations: []fault.Violation{{Path: "parameters",
			Message: "apply only with a preset; leave them out with a rule document"}}}
	}
	return supervisor.ParseRuleDocument(in.RuleDocument, uc.check)
}

// replay folds one event into the run and evaluates the rules on it.
func (uc *DryRun) replay(ctx context.Context, e executionapp.StoredEvent, rs *ruleSet, fold *runFold, rep *DryRunReport) error {
	rep.Events++
	data, err := uc.redact.Redact(ctx, e)
	if err != nil {
		return err
	}
	sig := supervisorapp.EventSignal(e, data)
	fold.apply(sig)
	facts := fold.facts
	facts.Nodes = make(map[string]execution.NodeStatus, len(fold.facts.Nodes))
	for k, v := range fold.facts.Nodes {
		facts.Nodes[k] = v
	}
	t := eventTrigger(sig, func(context.Context) (map[string]any, error) { return ExecutionVariable(facts), nil }, e.At)
	evals, changes := rs.evaluate(ctx, t)
	rs.commit(changes, e.At)
	cursor := supervisorapp.EventCursor(e)
	for _, x := range evals {
		ev := DryRunEvaluation{Seq: e.Seq, At: e.At.UTC(), EventType: e.Type, NodeID: e.NodeID, RuleID: x.RuleID, Outcome: x.Outcome}
		if x.Of > 1 {
			ev.Count, ev.Of = x.Count, x.Of
		}
		if x.Err != nil {
			ev.Error = x.Err.Error()
		}
		if x.Outcome == RuleFired {
			d, err := supervisor.NewDirective(RuleKey(x.RuleID, cursor), cursor, x.Reason, "", x.Command)
			if err != nil {
				ev.Outcome, ev.Error = RuleBuildFailed, err.Error()
			} else {
				b, err := d.MarshalJSON()
				if err != nil {
					return fmt.Errorf("rulesengine: encode directive: %w", err)
				}
				rep.Fired = append(rep.Fired, DryRunFiring{Seq: e.Seq, At: e.At.UTC(), EventType: e.Type, NodeID: e.NodeID, RuleID: x.RuleID, Directive: b})
			}
		}
		if len(rep.Evaluations) < MaxDryRunEvaluations {
			rep.Evaluations = append(rep.Evaluations, ev)
		} else {
			rep.Truncated = true
		}
	}
	return nil
}

// runFold is a run as its events leave it.
type runFold struct {
	facts supervisorapp.RunFacts
}

func (f *runFold) apply(e supervisor.EventSignal) {
	to, _ := e.Data["to"].(string)
	switch e.Type {
	case "ExecutionStarted":
		f.facts.StartedAt, f.facts.LastProgressAt = e.At, e.At
		if s, ok := e.Data["status"].(string); ok && execution.Status(s).Valid() {
			f.facts.Status = execution.Status(s)
		}
	case "ExecutionStatusChanged":
		if execution.Status(to).Valid() {
			f.facts.Status = execution.Status(to)
		}
	case "NodeStatusChanged":
		if execution.NodeStatus(to).Valid() {
			f.facts.Nodes[e.NodeID] = execution.NodeStatus(to)
		}
		if e.At.After(f.facts.LastProgressAt) {
			f.facts.LastProgressAt = e.At
		}
	}
	if f.facts.LastProgressAt.IsZero() {
		f.facts.LastProgressAt = f.facts.StartedAt
	}
	f.facts.ActiveCount = 0
	if !f.facts.Status.Terminal() {
		f.facts.ActiveCount = 1
	}
}
