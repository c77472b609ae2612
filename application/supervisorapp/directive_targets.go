package supervisorapp

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/domain/supervisor"
)

// The intake's expansion of a directive's target into the runs (nodes,
// inputs, workflow) it reaches, and the places CheckDirective judges.

// plan expands the directive's target to steps and checks the directive
// against the supervisor. Every target kind goes through the one
// CheckDirective call below with the places of the runs it expanded to, so
// no kind (held included) reaches a run outside the units the supervisor
// owns now; outside them, a run it holds may only be released. A refusal
// comes back as refusal, not as err.
func (uc *SubmitDirective) plan(ctx context.Context, sup supervisor.Supervisor, d supervisor.Directive) (steps []step, refusal, err error) {
	steps, places, err := uc.expand(ctx, sup, d)
	if err != nil {
		return nil, nil, err
	}
	if err := supervisor.CheckDirective(sup, d, places); err != nil {
		return nil, err, nil
	}
	ids := make([]string, 0, len(steps))
	for _, st := range steps {
		if st.ExecutionID != "" {
			ids = append(ids, st.ExecutionID)
		}
	}
	if _, err := supervisor.LimitRuns(d.Command().Target(), ids); err != nil {
		return nil, err, nil
	}
	return steps, nil, nil
}

// expand resolves the directive's target to steps and the places
// CheckDirective judges: one place per run (or input) reached, marked Held
// when the supervisor holds the run. It decides nothing. Expansions stop
// one past supervisor.MaxTargetRuns, so LimitRuns can refuse them.
func (uc *SubmitDirective) expand(ctx context.Context, sup supervisor.Supervisor, d supervisor.Directive) ([]step, []supervisor.Place, error) {
	c := d.Command()
	t := c.Target()
	switch c.Type() {
	case supervisor.AnswerInput:
		inp, ok, err := uc.runs.Input(ctx, c.InputID())
		if err != nil || !ok {
			// The server owner may answer any input: the answer says it
			// does not exist. Anyone else is refused (a zero place is
			// owned by no unit but server).
			return []step{{}}, []supervisor.Place{{}}, err
		}
		st := step{ExecutionID: inp.ExecutionID, NodeID: inp.NodeID, SessionID: inp.SessionID, WorkflowID: inp.WorkflowID}
		return []step{st}, []supervisor.Place{{SessionID: inp.SessionID, WorkflowID: inp.WorkflowID}}, nil
	case supervisor.StartWorkflow, supervisor.StopAll:
		return []step{{SessionID: t.SessionID(), WorkflowID: t.WorkflowID()}}, nil, nil // the workflow target is its place
	}
	if c.PausesWorkflow() { // one workflow-scope command, like StopAll
		return []step{{SessionID: t.SessionID(), WorkflowID: t.WorkflowID()}}, nil, nil
	}
	var runs []RunInfo
	var missing []step
	var err error
	switch t.Kind() {
	case supervisor.TargetExecution, supervisor.TargetNodes:
		found, err := uc.runs.Runs(ctx, t.ExecutionIDs())
		if err != nil {
			return nil, nil, err
		}
		refs := t.Nodes()
		if t.Kind() == supervisor.TargetExecution {
			refs = []supervisor.NodeRef{{ExecutionID: t.ExecutionID(), NodeID: c.NodeID()}}
		}
		var steps []step
		for _, n := range refs {
			if r, ok := found[n.ExecutionID]; ok {
				steps = append(steps, step{ExecutionID: r.ID, NodeID: n.NodeID, SessionID: r.SessionID, WorkflowID: r.WorkflowID})
			} else {
				missing = append(missing, step{ExecutionID: n.ExecutionID, NodeID: n.NodeID, Missing: true})
			}
		}
		places, err := uc.places(ctx, sup, c, steps)
		if err != nil {
			return nil, nil, err
		}
		if len(missing) > 0 {
			places = append(places, supervisor.Place{}) // an unknown run has no place: refused as foreign
		}
		return append(steps, missing...), places, nil
	case supervisor.TargetWorkflow:
		runs, err = uc.runs.ActiveRuns(ctx, []supervisor.Unit{supervisor.WorkflowUnit(t.SessionID(), t.WorkflowID())}, supervisor.MaxTargetRuns+1)
	case supervisor.TargetOwnedRunning:
		if owns := sup.Owns(); len(owns) > 0 {
			runs, err = uc.runs.ActiveRuns(ctx, owns, supervisor.MaxTargetRuns+1)
		}
	case supervisor.TargetHeld:
		runs, err = uc.holds.HeldRuns(ctx, sup.ID(), supervisor.MaxTargetRuns+1)
	default:
		return nil, nil, fmt.Errorf("supervisorapp: %s has no target", c.Type())
	}
	if err != nil {
		return nil, nil, err
	}
	steps := make([]step, len(runs))
	for i, r := range runs {
		steps[i] = step{ExecutionID: r.ID, NodeID: c.NodeID(), SessionID: r.SessionID, WorkflowID: r.WorkflowID}
	}
	if t.Kind() == supervisor.TargetHeld {
		places := make([]supervisor.Place, len(steps))
		for i, st := range steps {
			places[i] = supervisor.Place{SessionID: st.SessionID, WorkflowID: st.WorkflowID, Held: true}
		}
		return steps, places, nil
	}
	places, err := uc.places(ctx, sup, c, steps)
	return steps, places, err
}

// places are the places of the steps' runs, one per run. For Release, a
// run outside the owned units is looked up in the hold ledger: the one
// thing a supervisor may still do there is release its own hold.
func (uc *SubmitDirective) places(ctx context.Context, sup supervisor.Supervisor, c supervisor.Command, steps []step) ([]supervisor.Place, error) {
	places := make([]supervisor.Place, len(steps))
	var foreign []string
	for i, st := range steps {
		places[i] = supervisor.Place{SessionID: st.SessionID, WorkflowID: st.WorkflowID}
		if c.Type() == supervisor.Release && !sup.OwnsPlace(places[i]) {
			foreign = append(foreign, st.ExecutionID)
		}
	}
	if len(foreign) == 0 {
		return places, nil
	}
	hs, err := uc.holds.Holds(ctx, foreign)
	if err != nil {
		return nil, err
	}
	held := make(map[string]bool, len(hs))
	for _, h := range hs {
		if _, ok := h.HeldBy(sup.ID()); ok {
			held[h.ExecutionID()] = true
		}
	}
	for i, st := range steps {
		places[i].Held = held[st.ExecutionID]
	}
	return places, nil
}
