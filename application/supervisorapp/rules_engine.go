package supervisorapp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// RulesDeps are what the rules engine needs.
type RulesDeps struct {
	Submit     DirectiveSender
	Runs       RunDirectory
	Conditions ConditionEvaluator
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
	Answer  ReviewAnswerer
	Counter WorkflowCounter
}

// TickRunLimit caps the unfinished runs one tick looks at.
const TickRunLimit = 1000

// NewRulesEngineFactory returns the factory of the rules engine
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
func NewRulesEngineFactory(d RulesDeps) EngineFactory {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnRuleError == nil {
		d.OnRuleError = func(string, string, error) {}
	}
	return func(_ context.Context, sup supervisor.Supervisor, f Fence, state []byte) (Engine, error) {
		doc, ok, err := sup.RuleDocument(d.Check)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("supervisorapp: supervisor %s has engine %s, not rules", sup.ID(), sup.EngineType())
		}
		rs := newRuleSet(doc, d.Conditions)
		if err := rs.restore(state); err != nil {
			return nil, err
		}
		return &rulesEngine{d: d, sup: sup, fence: f, rules: rs, facts: newFactsCache(d.Runs)}, nil
	}
}

type rulesEngine struct {
	d     RulesDeps
	sup   supervisor.Supervisor
	fence Fence
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
	_, err = e.d.Submit.Handle(ctx, SubmitInput{SupervisorID: e.sup.ID(), Directive: d, Channel: ChannelSupervisor, Fence: &e.fence})
	// The directive may have changed any number of runs (a workflow's, or
	// every run's activeCount by a start): read facts again from here on.
	e.facts.invalidate()
	switch SortEffect(err) {
	case EffectDone, EffectLoopBound: // the loop bounds log theirs once per window
		return nil
	case EffectLeaseLost:
		return err
	case EffectRefused: // recorded with the sender by the intake
		e.d.OnRuleError(e.sup.ID(), ev.RuleID, err)
		return nil
	}
	return fmt.Errorf("rule %s: %w", ev.RuleID, err)
}

// executionVar is the execution variable of a run ("" or a run that is
// gone: every field empty), its facts read once per outbox batch.
func (e *rulesEngine) executionVar(ctx context.Context, id string) (map[string]any, error) {
	if id == "" {
		return ExecutionVariable(RunFacts{}), nil
	}
	f, ok, err := e.facts.facts(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return ExecutionVariable(RunFacts{}), nil
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
func ExecutionVariable(f RunFacts) map[string]any {
	nodes := make(map[string]any, len(f.Nodes))
	for id, s := range f.Nodes {
		nodes[id] = string(s)
	}
	return map[string]any{"id": f.ID, "sessionId": f.SessionID, "workflowId": f.WorkflowID, "status": string(f.Status),
		"startedAt": f.StartedAt.UTC(), "lastProgressAt": f.LastProgressAt.UTC(), "activeCount": int64(f.ActiveCount), "nodes": nodes}
}

// EventVariable is the event variable conditions read.
func EventVariable(e supervisor.EventSignal) map[string]any {
	data := e.Data
	if data == nil {
		data = map[string]any{}
	}
	return map[string]any{"seq": e.Seq, "at": e.At.UTC(), "type": e.Type, "sessionId": e.SessionID, "workflowId": e.WorkflowID,
		"executionId": e.ExecutionID, "nodeId": e.NodeID, "actor": e.Actor, "data": data}
}

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
		base: func() map[string]any { return map[string]any{"event": EventVariable(ev), "now": now} }}
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
	cond    ConditionEvaluator
	windows map[string]map[string]supervisor.Window
	latest  time.Time // the newest time counted, for pruning
	// needsFacts maps each if of the document to whether it reads the
	// execution variable (readsExecution).
	needsFacts map[string]bool
}

func newRuleSet(doc supervisor.RuleDocument, cond ConditionEvaluator) *ruleSet {
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
func ReviewByRules(ctx context.Context, doc supervisor.RuleDocument, cond ConditionEvaluator, in ReviewInput) (supervisor.Verdict, string) {
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
