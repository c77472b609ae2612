package rulesengine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// Occurrence is what an event is matched as: its place, and for a status
// change the new status.
func Occurrence(e supervisor.EventSignal) supervisor.Occurrence {
	o := supervisor.Occurrence{Type: e.Type, SessionID: e.SessionID, WorkflowID: e.WorkflowID, ExecutionID: e.ExecutionID, NodeID: e.NodeID}
	if e.Type == "NodeStatusChanged" || e.Type == "ExecutionStatusChanged" {
		o.Status, _ = e.Data["to"].(string)
	}
	return o
}

// trigger is one occurrence a rule set is evaluated against: an event, or
// a tick looking at one run.
type trigger struct {
	occ  supervisor.Occurrence
	at   time.Time // the window's clock: the event's own time, or the tick's
	tick bool
	// base builds the condition variables other than execution (event and
	// now, or now); execution builds the execution variable, which reads
	// the run's facts. evaluate calls each at most once per trigger, and
	// execution only for an if that reads it.
	base      func() map[string]any
	execution func(ctx context.Context) (map[string]any, error)
}

func eventTrigger(ev supervisor.EventSignal, execution func(ctx context.Context) (map[string]any, error), now time.Time) trigger {
	return trigger{occ: Occurrence(ev), at: ev.At, execution: execution,
		base: func() map[string]any { return map[string]any{"event": supervisorapp.EventVariable(ev), "now": now} }}
}

// triggerVars are the condition variables of one trigger, built when an if
// first needs them.
type triggerVars struct {
	t          *trigger
	base, full map[string]any
	fullErr    error
	fullBuilt  bool
}

// get returns the variables of an if: with execution when it reads it
// (readsExecution), without it otherwise, so the if compiles against the
// variables it reads and needs no facts query.
func (v *triggerVars) get(ctx context.Context, execution bool) (map[string]any, error) {
	if v.base == nil {
		v.base = v.t.base()
	}
	if !execution {
		return v.base, nil
	}
	if !v.fullBuilt {
		v.fullBuilt = true
		ex, err := v.t.execution(ctx)
		if err != nil {
			v.fullErr = err
		} else {
			v.full = maps.Clone(v.base)
			v.full["execution"] = ex
		}
	}
	return v.full, v.fullErr
}

// readsExecution reports whether a condition may read the execution
// variable: whether "execution" occurs in it as a whole word. A CEL
// identifier is ASCII letters, digits and _, and a variable is read only by
// spelling its name, so no if that reads it is missed; a string or a field
// named execution counts too, which costs a facts query, never an answer.
func readsExecution(expr string) bool {
	const name = "execution"
	word := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; ; {
		j := strings.Index(expr[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !word(expr[start-1])) && (end == len(expr) || !word(expr[end])) {
			return true
		}
		i = start + 1
	}
}

// The outcomes of a rule on an occurrence it matched.
const (
	// RuleFired: the rule fires; Command is what it sends.
	RuleFired = "fired"
	// RuleCounted: the match was counted; the window is not full yet.
	RuleCounted = "counted"
	// RuleConditionFalse: the if does not hold.
	RuleConditionFalse = "conditionFalse"
	// RuleConditionFailed: the if could not be evaluated (Err says why);
	// the rule does not fire.
	RuleConditionFailed = "conditionFailed"
	// RuleBuildFailed: the signal lacks what the command needs.
	RuleBuildFailed = "buildFailed"
)

// Evaluation is what one rule made of one occurrence whose event (or
// tick), status and nodeId filters it passed.
type Evaluation struct {
	RuleID  string
	Outcome string
	// Count and Of: matches in the window after this one, and how many
	// fire the rule (0 without a count).
	Count, Of int
	Command   supervisor.Command
	Reason    string
	Err       error
}

// ruleSet matches a rule document's reacting rules and keeps their count
// windows: rule id → window key → window.
type ruleSet struct {
	doc     supervisor.RuleDocument
	cond    supervisorapp.ConditionEvaluator
	windows map[string]map[string]supervisor.Window
	latest  time.Time // the newest time counted, for pruning
	// needsFacts maps each if of the document to whether it reads the
	// execution variable (readsExecution).
	needsFacts map[string]bool
}

func newRuleSet(doc supervisor.RuleDocument, cond supervisorapp.ConditionEvaluator) *ruleSet {
	rs := &ruleSet{doc: doc, cond: cond, windows: map[string]map[string]supervisor.Window{}, needsFacts: map[string]bool{}}
	for _, r := range doc.Rules() {
		if w, ok := r.When(); ok && w.If() != "" {
			rs.needsFacts[w.If()] = readsExecution(w.If())
		}
	}
	return rs
}

func (rs *ruleSet) hasTickRules() bool {
	for _, r := range rs.doc.Rules() {
		if w, ok := r.When(); ok && w.Tick() {
			return true
		}
	}
	return false
}

// evaluate matches every reacting rule against t, in document order. The
// windows it changed come back apart, for commit once the fired rules'
// directives are sent: a signal that fails midway leaves the windows as
// they were, and is counted once when it comes again.
func (rs *ruleSet) evaluate(ctx context.Context, t trigger) ([]Evaluation, map[string]map[string]supervisor.Window) {
	var out []Evaluation
	changes := map[string]map[string]supervisor.Window{}
	vars := triggerVars{t: &t}
	for _, rule := range rs.doc.Rules() {
		w, ok := rule.When()
		then, hasThen := rule.Then()
		if !ok || !hasThen || w.Tick() != t.tick || !w.Matches(t.occ) {
			continue
		}
		ev := Evaluation{RuleID: rule.ID(), Of: w.Count(), Reason: rule.DirectiveReason()}
		if cond := w.If(); cond != "" {
			holds := false
			vs, err := vars.get(ctx, rs.needsFacts[cond])
			if err != nil {
				// The facts could not be read (the database): the signal
				// was not handled and must come again.
				err = fmt.Errorf("%w: %w", errFactsUnread, err)
			} else {
				holds, err = rs.cond.EvalBool(ctx, cond, vs)
			}
			switch {
			case err != nil:
				ev.Outcome, ev.Err = RuleConditionFailed, fmt.Errorf("rule %s: its if could not be evaluated: %w", rule.ID(), err)
				out = append(out, ev)
				continue
			case !holds:
				ev.Outcome = RuleConditionFalse
				out = append(out, ev)
				continue
			}
		}
		if w.Count() > 1 {
			key := w.WindowKey(t.occ)
			win, ok := changes[rule.ID()][key]
			if !ok {
				win = rs.windows[rule.ID()][key]
			}
			next, fires := w.Record(win, t.at)
			if changes[rule.ID()] == nil {
				changes[rule.ID()] = map[string]supervisor.Window{}
			}
			changes[rule.ID()][key] = next
			ev.Count = next.Len()
			if !fires {
				ev.Outcome = RuleCounted
				out = append(out, ev)
				continue
			}
			ev.Count = w.Count()
		}
		cmd, err := then.Build(t.occ)
		if err != nil {
			ev.Outcome, ev.Err = RuleBuildFailed, fmt.Errorf("rule %s: %w", rule.ID(), err)
			out = append(out, ev)
			continue
		}
		ev.Outcome, ev.Command = RuleFired, cmd
		out = append(out, ev)
	}
	return out, changes
}

// commit keeps the windows evaluate changed.
func (rs *ruleSet) commit(changes map[string]map[string]supervisor.Window, at time.Time) {
	for id, ws := range changes {
		if rs.windows[id] == nil {
			rs.windows[id] = map[string]supervisor.Window{}
		}
		for k, w := range ws {
			if w.Len() == 0 {
				delete(rs.windows[id], k)
			} else {
				rs.windows[id][k] = w
			}
		}
	}
	if at.After(rs.latest) {
		rs.latest = at
	}
}

// windowState is the saved form of the count windows.
type windowState struct {
	Windows map[string]map[string][]time.Time `json:"windows"`
}

// state encodes the windows, leaving out those that can no longer fire:
// every match older than the rule's window before the newest time counted.
func (rs *ruleSet) state() ([]byte, error) {
	st := windowState{Windows: map[string]map[string][]time.Time{}}
	within := rs.withins()
	for id, ws := range rs.windows {
		for k, w := range ws {
			d, ok := within[id]
			if !ok || w.Len() == 0 || (!rs.latest.IsZero() && w.Latest().Before(rs.latest.Add(-d))) {
				delete(ws, k)
				continue
			}
			if st.Windows[id] == nil {
				st.Windows[id] = map[string][]time.Time{}
			}
			st.Windows[id][k] = w.Times()
		}
	}
	if len(st.Windows) == 0 {
		return nil, nil
	}
	return json.Marshal(st)
}

// withins maps the counting rules to their windows.
func (rs *ruleSet) withins() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, r := range rs.doc.Rules() {
		if w, ok := r.When(); ok && w.Count() > 1 {
			out[r.ID()] = w.Within()
		}
	}
	return out
}

// restore loads saved windows; those of rules the document no longer has
// (or that no longer count) are dropped.
func (rs *ruleSet) restore(data []byte) error {
	windows, err := ParseWindowState(data)
	if err != nil {
		return err
	}
	within := rs.withins()
	for id, ws := range windows {
		if _, ok := within[id]; !ok {
			continue
		}
		rs.windows[id] = ws
		for _, w := range ws {
			if l := w.Latest(); l.After(rs.latest) {
				rs.latest = l
			}
		}
	}
	return nil
}

// ParseWindowState reads the rules engine's saved state: rule id → window
// key → the times of its matches. Empty input is no windows.
func ParseWindowState(data []byte) (map[string]map[string]supervisor.Window, error) {
	out := map[string]map[string]supervisor.Window{}
	if len(data) == 0 || string(data) == "null" {
		return out, nil
	}
	var st windowState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fault.Newf(fault.ErrInvalid, "rules engine state: %v", err)
	}
	for id, ws := range st.Windows {
		if len(ws) == 0 {
			continue
		}
		out[id] = make(map[string]supervisor.Window, len(ws))
		for k, times := range ws {
			if len(times) > 0 {
				out[id][k] = supervisor.RestoreWindow(times)
			}
		}
	}
	return out, nil
}
