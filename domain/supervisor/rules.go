package supervisor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/session"
)

// Limits of a rule document.
const (
	RuleSchemaVersion = 1
	MaxRules          = 200
	MaxCount          = 10000
	MaxWithinSeconds  = 86400
	MaxDescriptionLen = 1024
)

// Per says what a when's count is counted per.
type Per string

// The counting scopes of a sliding window.
const (
	// PerExecution counts each run separately.
	PerExecution Per = "execution"
	// PerWorkflow counts all runs of a workflow together (the default).
	PerWorkflow Per = "workflow"
	// PerSupervisor counts everything the supervisor sees together.
	PerSupervisor Per = "supervisor"
)

// DefaultPer is the counting scope when a count gives none. Runs fail fast
// (a node FAILURE ends its run), so repeated failures pile up across the
// runs of a workflow, not inside one run.
const DefaultPer = PerWorkflow

// Pers lists the counting scopes.
var Pers = []Per{PerExecution, PerWorkflow, PerSupervisor}

// eventShape says what an event type always carries and what a rule may
// filter it on.
type eventShape struct {
	run, node, workflow bool            // always carries an execution, a node, a workflow
	nodeFilter          bool            // may carry a node, so nodeId may filter it
	statuses            func() []string // the statuses status may name (nil: no status filter)
}

func execStatuses() []string {
	out := make([]string, len(execution.Statuses))
	for i, s := range execution.Statuses {
		out[i] = string(s)
	}
	return out
}

func nodeStatuses() []string {
	out := make([]string, len(execution.NodeStatuses))
	for i, s := range execution.NodeStatuses {
		out[i] = string(s)
	}
	return out
}

var eventShapes = map[string]eventShape{
	"ExecutionStarted":       {run: true, workflow: true},
	"ExecutionStatusChanged": {run: true, workflow: true, statuses: execStatuses},
	"NodeStatusChanged":      {run: true, node: true, workflow: true, nodeFilter: true, statuses: nodeStatuses},
	"BreakpointHit":          {run: true, node: true, workflow: true, nodeFilter: true},
	"InputRequested":         {run: true, node: true, workflow: true, nodeFilter: true},
	"InputAnswered":          {run: true, node: true, workflow: true, nodeFilter: true},
	"CommandAccepted":        {workflow: true, nodeFilter: true},
	"CommandApplied":         {workflow: true, nodeFilter: true},
	"CommandRejected":        {workflow: true, nodeFilter: true},
	"ReviewRequested":        {workflow: true, nodeFilter: true},
	"ReviewDecided":          {workflow: true, nodeFilter: true},
	"SessionApplied":         {},
	"SessionDeleted":         {},
	"SupervisorLimitReached": {},
}

// tickShape is what a tick rule sees: one unfinished run at a time.
var tickShape = eventShape{run: true, workflow: true, statuses: execStatuses}

// RuleDocument is the rules engine's settings: rules in order, each with an
// id and one of when+then, deny or requireApproval.
type RuleDocument struct {
	rules []Rule
}

// Rule is one rule of a document.
type Rule struct {
	id              string
	description     string
	when            *When
	then            *Then
	deny            *Gate
	requireApproval *Gate
}

// When is the condition of a reacting rule.
type When struct {
	event         string
	tick          bool
	status        string
	nodeID        string
	count         int
	withinSeconds int
	per           Per
	cond          string
}

// Then is the command a reacting rule sends.
type Then struct {
	command    CommandType
	target     Target
	nodeID     string
	fromNodeID string
	mode       execution.StopMode
	immediate  bool
	payload    any
	reason     string
	// scope is the when's per, which picks the default target of a
	// command on runs; it is derived, not written.
	scope Per
}

// Gate is a deny or requireApproval rule: which command type it reviews
// and the condition under which it decides.
type Gate struct {
	command CommandType
	cond    string
	reason  string
}

// ParseRuleDocument reads a rule document strictly and lists every problem
// at once as a *fault.ValidationError with paths (rules[2].when.count).
// check compiles the if expressions; nil checks only their structure.
func ParseRuleDocument(data []byte, check ExprChecker) (RuleDocument, error) {
	v, err := decode(data, "rule document")
	if err != nil {
		return RuleDocument{}, err
	}
	r := &reader{}
	d := r.ruleDocument(v, "", check)
	if len(r.vs) > 0 {
		return RuleDocument{}, &fault.ValidationError{Subject: "rule document", Violations: r.vs}
	}
	return d, nil
}

// RuleDocument parses the rules of a rules-engine supervisor (ok is false
// for other engines).
func (s Supervisor) RuleDocument(check ExprChecker) (doc RuleDocument, ok bool, err error) {
	if s.engine != "rules" {
		return RuleDocument{}, false, nil
	}
	r := &reader{}
	d := r.ruleDocument(s.settings, "engine.settings", check)
	if len(r.vs) > 0 {
		return RuleDocument{}, true, &fault.ValidationError{Subject: "rule document", Violations: r.vs}
	}
	return d, true, nil
}

func (r *reader) ruleDocument(v any, base string, check ExprChecker) RuleDocument {
	m := r.object(v, base, "schemaVersion", "rules")
	if m == nil {
		return RuleDocument{}
	}
	if sv, ok := m["schemaVersion"]; ok && sv != nil {
		if n, ok := wholeNumber(sv); !ok || n != RuleSchemaVersion {
			r.add(jsonvalue.Key(base, "schemaVersion"), "must be 1 (the only version this server reads), got %s", valueText(sv))
		}
	}
	var d RuleDocument
	rp := jsonvalue.Key(base, "rules")
	rv, ok := m["rules"]
	if !ok || rv == nil {
		r.add(rp, `is required: a list of rules, such as [{"id": "pause-on-failure", "when": {"event": "NodeStatusChanged", "status": "FAILURE"}, "then": {"command": "PauseWorkflow"}}]`)
		return d
	}
	list, ok := rv.([]any)
	switch {
	case !ok:
		r.add(rp, "must be an array of rules, got %s", kind(rv))
		return d
	case len(list) == 0:
		r.add(rp, "must list at least one rule")
		return d
	case len(list) > MaxRules:
		r.add(rp, "has %d rules; the limit is %d", len(list), MaxRules)
		return d
	}
	seen := map[string]int{}
	for i, e := range list {
		p := jsonvalue.Index(rp, i)
		rule := r.rule(e, p, check)
		if rule.id != "" {
			if j, dup := seen[rule.id]; dup {
				r.add(jsonvalue.Key(p, "id"), "rule id %q is already used by %s", rule.id, jsonvalue.Index(rp, j))
			}
			seen[rule.id] = i
		}
		d.rules = append(d.rules, rule)
	}
	return d
}

func valueText(v any) string {
	if isNumber(v) {
		return numberText(v)
	}
	return kind(v)
}

func (r *reader) rule(v any, path string, check ExprChecker) Rule {
	m := r.object(v, path, "id", "description", "when", "then", "deny", "requireApproval")
	if m == nil {
		return Rule{}
	}
	var rule Rule
	rule.id = r.str(m, "id", path, true, 64)
	if rule.id != "" && !ValidID(rule.id) && len(rule.id) <= 64 {
		r.add(jsonvalue.Key(path, "id"), "rule id %q must be lowercase letters, digits, '-' and '_', starting with a letter or digit", clip(rule.id))
	}
	rule.description = r.str(m, "description", path, false, MaxDescriptionLen)
	present := func(k string) bool { v, ok := m[k]; return ok && v != nil }
	hasWhen, hasThen, hasDeny, hasGate := present("when"), present("then"), present("deny"), present("requireApproval")
	forms := 0
	for _, b := range []bool{hasWhen || hasThen, hasDeny, hasGate} {
		if b {
			forms++
		}
	}
	switch {
	case forms == 0:
		r.add(path, `needs when and then (react to events or ticks), deny, or requireApproval (review commands)`)
		return rule
	case forms > 1:
		r.add(path, "has more than one of when/then, deny and requireApproval; split it into one rule each")
		return rule
	case hasWhen && !hasThen:
		r.add(jsonvalue.Key(path, "then"), `is required with when: the command to send, such as {"command": "PauseWorkflow"}`)
	case hasThen && !hasWhen:
		r.add(jsonvalue.Key(path, "when"), `is required with then: what to react to, such as {"event": "NodeStatusChanged", "status": "FAILURE"}`)
	}
	switch {
	case hasWhen || hasThen:
		shape, known := eventShape{}, false
		if hasWhen {
			w, sh, ok := r.when(m["when"], jsonvalue.Key(path, "when"), check)
			rule.when, shape, known = &w, sh, ok
		}
		if hasThen {
			per := Per("")
			if rule.when != nil {
				per = rule.when.per
			}
			t := r.then(m["then"], jsonvalue.Key(path, "then"), shape, known, per)
			rule.then = &t
		}
	case hasDeny:
		g := r.gate(m["deny"], jsonvalue.Key(path, "deny"), check)
		rule.deny = &g
	case hasGate:
		g := r.gate(m["requireApproval"], jsonvalue.Key(path, "requireApproval"), check)
		rule.requireApproval = &g
	}
	return rule
}

// when reads a when and returns what its signal always carries (known is
// false when the event could not be read).
func (r *reader) when(v any, path string, check ExprChecker) (w When, shape eventShape, known bool) {
	m := r.object(v, path, "event", "tick", "status", "nodeId", "count", "withinSeconds", "per", "if")
	if m == nil {
		return When{}, eventShape{}, false
	}
	_, hasEvent := m["event"]
	_, hasTick := m["tick"]
	w.event = r.str(m, "event", path, false, 64)
	w.tick = r.boolean(m, "tick", path, false)
	switch {
	case hasEvent && hasTick:
		r.add(path, `give event or tick, not both`)
	case hasTick && !w.tick && !r.has(jsonvalue.Key(path, "tick")):
		r.add(jsonvalue.Key(path, "tick"), `false never fires; use "tick": true, or name an event`)
	case w.tick:
		shape, known = tickShape, true
	case w.event != "":
		if s, ok := eventShapes[w.event]; ok {
			shape, known = s, true
		} else {
			r.add(jsonvalue.Key(path, "event"), "%q is not an event type; use one of %s (or \"tick\": true)", clip(w.event), oneOf(EventTypes))
		}
	case !hasEvent && !hasTick:
		r.add(path, `needs an event (such as "event": "NodeStatusChanged") or "tick": true`)
	}
	what := "tick rules"
	if !w.tick {
		what = w.event + " events"
	}
	if s := r.str(m, "status", path, false, 64); s != "" && known {
		up := strings.ToUpper(s)
		switch {
		case shape.statuses == nil:
			r.add(jsonvalue.Key(path, "status"), "%s have no status to match; status applies to NodeStatusChanged, ExecutionStatusChanged and tick rules", what)
		case !slices.Contains(shape.statuses(), up):
			r.add(jsonvalue.Key(path, "status"), "%q is not a status of %s; use one of %s", clip(s), what, oneOf(shape.statuses()))
		default:
			w.status = up
		}
	}
	if n := r.str(m, "nodeId", path, false, 64); n != "" {
		switch {
		case !session.ValidID(n):
			r.add(jsonvalue.Key(path, "nodeId"), "%q is not a node id (lowercase letters, digits, '-' and '_')", clip(n))
		case known && !shape.nodeFilter:
			r.add(jsonvalue.Key(path, "nodeId"), "%s name no node; nodeId applies to node events such as NodeStatusChanged", what)
		default:
			w.nodeID = n
		}
	}
	count, hasCount := r.integer(m, "count", path, 1, MaxCount)
	within, hasWithin := r.integer(m, "withinSeconds", path, 1, MaxWithinSeconds)
	_, countGiven := m["count"]
	_, withinGiven := m["withinSeconds"]
	switch {
	case w.tick && (countGiven || withinGiven):
		r.add(path, "a tick rule does not count; leave count and withinSeconds out (its if can test how long something lasted)")
	case countGiven && !withinGiven:
		r.add(jsonvalue.Key(path, "withinSeconds"), "is required with count: the sliding window in seconds, such as 60")
	case withinGiven && !countGiven:
		r.add(jsonvalue.Key(path, "count"), "is required with withinSeconds: how many matching events within the window fire the rule, such as 3")
	case hasCount && hasWithin:
		w.count, w.withinSeconds = int(count), int(within)
	}
	if p := r.str(m, "per", path, false, 32); p != "" {
		switch {
		case !countGiven:
			r.add(jsonvalue.Key(path, "per"), "applies only with count and withinSeconds; leave it out")
		case !slices.Contains(Pers, Per(p)):
			r.add(jsonvalue.Key(path, "per"), "%q is not a counting scope; use %s", clip(p), oneOf(Pers))
		default:
			w.per = Per(p)
		}
	}
	if w.count > 0 && w.per == "" {
		w.per = DefaultPer
	}
	c := EventRule
	if w.tick {
		c = TickRule
	}
	w.cond = r.condition(m, path, c, check)
	return w, shape, known
}

// condition reads an optional if and checks it in context c.
func (r *reader) condition(m map[string]any, path string, c ExprContext, check ExprChecker) string {
	if v, ok := m["if"]; !ok || v == nil {
		return ""
	}
	before := len(r.vs)
	e := r.str(m, "if", path, false, math.MaxInt)
	if len(r.vs) > before {
		return ""
	}
	r.expression(e, jsonvalue.Key(path, "if"), c, check)
	return e
}

// thenNotAllowed are command types a rule cannot send: they need data a
// rule cannot write (an input's answer, a breakpoint's value).
var thenNotAllowed = []CommandType{AnswerInput, SetBreakpoint}

// then reads a then. shape is what the when's signal always carries, for
// the default target; whenOK is false when the when was unreadable (then
// the defaults are not checked).
func (r *reader) then(v any, path string, shape eventShape, whenOK bool, per Per) Then {
	m, ok := v.(map[string]any)
	if !ok {
		r.add(path, `must be an object such as {"command": "PauseWorkflow"}, got %s`, kind(v))
		return Then{}
	}
	t := Then{command: r.commandType(m, "command", path), scope: per}
	spec, known := commands[t.command]
	if !known {
		r.object(m, path, "command", "target", "nodeId", "fromNodeId", "mode", "immediate", "reason")
		return t
	}
	if slices.Contains(thenNotAllowed, t.command) {
		r.add(jsonvalue.Key(path, "command"), "a rule cannot send %s; use an http, process or workflow supervisor for it", t.command)
		return Then{}
	}
	allowed := []string{"command"}
	if spec.targetKinds(t.command) != nil {
		allowed = append(allowed, "target")
	}
	if spec.fam == famNode {
		allowed = append(allowed, "nodeId")
	}
	allowed = append(append(allowed, spec.args...), "reason")
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			r.add(jsonvalue.Key(path, k), "%s in a rule takes: %s; leave %q out", t.command, strings.Join(allowed, ", "), k)
		}
	}
	var c Command
	c.typ = t.command
	r.commandTarget(&c, m, path, spec, false)
	r.commandArgs(&c, m, path, spec)
	t.target, t.nodeID, t.fromNodeID, t.mode, t.immediate, t.payload = c.target, c.nodeID, c.fromNodeID, c.mode, c.immediate, c.payload
	t.reason = r.str(m, "reason", path, false, MaxReasonLen)
	if !whenOK {
		return t
	}
	// Defaults come from the signal; refuse a default it cannot give.
	tp := jsonvalue.Key(path, "target")
	switch {
	case !t.target.IsZero() && t.target.kind != TargetNodes && spec.fam == famNode && t.nodeID == "" && !shape.node:
		r.add(jsonvalue.Key(path, "nodeId"), "is required: %s on %s needs the node to act on in each run", t.command, t.target)
	case !t.target.IsZero():
	case spec.fam == famRun && per == PerSupervisor:
	case spec.fam == famRun && per == PerWorkflow && !shape.workflow:
		r.add(tp, "is required: the signal this rule reacts to does not always name a workflow; give a target such as owned.running")
	case spec.fam == famRun && per != PerWorkflow && !shape.run, spec.fam == famNode && !shape.run:
		r.add(tp, "is required: the signal this rule reacts to does not always name a run; give a target such as owned.running or execution:<id>")
	case spec.fam == famNode && t.nodeID == "" && !shape.node:
		r.add(jsonvalue.Key(path, "nodeId"), "is required: the signal this rule reacts to names no node; give nodeId (or a node:<execution>/<node> target)")
	case (spec.fam == famStart || spec.fam == famStopAll) && !shape.workflow:
		r.add(tp, "is required: the signal this rule reacts to names no workflow; give workflow:<session>/<workflow>")
	}
	return t
}

func (r *reader) gate(v any, path string, check ExprChecker) Gate {
	m := r.object(v, path, "command", "if", "reason")
	if m == nil {
		return Gate{}
	}
	g := Gate{command: r.commandType(m, "command", path)}
	if g.command != "" && !Reviewable(g.command) {
		r.add(jsonvalue.Key(path, "command"), "%s cannot be reviewed, so this rule would never decide anything; gate another command type", g.command)
	}
	g.cond = r.condition(m, path, ReviewRule, check)
	g.reason = r.str(m, "reason", path, false, MaxReasonLen)
	return g
}

// Rules returns a copy of the rules, in order.
func (d RuleDocument) Rules() []Rule { return slices.Clone(d.rules) }

// ID returns the rule id.
func (r Rule) ID() string { return r.id }

// Description returns the rule's description.
func (r Rule) Description() string { return r.description }

// When returns the condition of a reacting rule.
func (r Rule) When() (When, bool) {
	if r.when == nil {
		return When{}, false
	}
	return *r.when, true
}

// Then returns the command of a reacting rule.
func (r Rule) Then() (Then, bool) {
	if r.then == nil {
		return Then{}, false
	}
	return *r.then, true
}

// Deny returns the gate of a deny rule.
func (r Rule) Deny() (Gate, bool) {
	if r.deny == nil {
		return Gate{}, false
	}
	return *r.deny, true
}

// RequireApproval returns the gate of a requireApproval rule.
func (r Rule) RequireApproval() (Gate, bool) {
	if r.requireApproval == nil {
		return Gate{}, false
	}
	return *r.requireApproval, true
}

func (r Rule) gate() *Gate {
	if r.deny != nil {
		return r.deny
	}
	return r.requireApproval
}

func (r Rule) gateKey() string {
	if r.deny != nil {
		return "deny"
	}
	return "requireApproval"
}

// Event returns the event type the rule reacts to ("" for a tick rule).
func (w When) Event() string { return w.event }

// Tick reports whether the rule reacts to ticks.
func (w When) Tick() bool { return w.tick }

// Status returns the status filter ("" for none): the node status of a
// NodeStatusChanged, the execution status of an ExecutionStatusChanged
// (its new status) or of the run a tick rule looks at.
func (w When) Status() string { return w.status }

// NodeID returns the node filter ("" for none).
func (w When) NodeID() string { return w.nodeID }

// Count returns how many matches within the window fire the rule (0: every
// match fires).
func (w When) Count() int { return w.count }

// Within returns the sliding window (0 when there is no count).
func (w When) Within() time.Duration { return time.Duration(w.withinSeconds) * time.Second }

// Per returns what the count is counted per ("" when there is no count).
func (w When) Per() Per { return w.per }

// If returns the CEL condition ("" for none).
func (w When) If() string { return w.cond }

// Command returns the command type.
func (t Then) Command() CommandType { return t.command }

// Target returns the explicit target (the zero Target: from the signal).
func (t Then) Target() Target { return t.target }

// NodeID returns the node argument of a node command.
func (t Then) NodeID() string { return t.nodeID }

// Mode returns the stop mode of StopWorkflow and StopAll.
func (t Then) Mode() execution.StopMode { return t.mode }

// Reason returns the reason the directive carries ("" for the default).
func (t Then) Reason() string { return t.reason }

// Command returns the command type the gate reviews.
func (g Gate) Command() CommandType { return g.command }

// If returns the CEL condition ("" for always).
func (g Gate) If() string { return g.cond }

// Reason returns the reason given with the verdict ("" for the default).
func (g Gate) Reason() string { return g.reason }

// MarshalJSON writes the rule document; ParseRuleDocument reads it back to
// an equal document.
func (d RuleDocument) MarshalJSON() ([]byte, error) { return d.wire().MarshalJSON() }

func (d RuleDocument) wire() ordered {
	rules := make([]ordered, len(d.rules))
	for i, rule := range d.rules {
		rules[i] = rule.wire()
	}
	return ordered{{"schemaVersion", RuleSchemaVersion}, {"rules", rules}}
}

// Settings returns the document as rules-engine settings (decoded JSON
// values, as Spec.Settings holds them).
func (d RuleDocument) Settings() (map[string]any, error) {
	b, err := d.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("supervisor: encode rule document: %w", err)
	}
	v, err := jsonvalue.Decode(b, "")
	if err != nil {
		return nil, fmt.Errorf("supervisor: decode rule document: %w", err)
	}
	return v.(map[string]any), nil
}

func (r Rule) wire() ordered {
	o := ordered{{"id", r.id}}
	o = o.with(r.description != "", "description", r.description)
	if w := r.when; w != nil {
		wo := ordered{}
		wo = wo.with(!w.tick, "event", w.event)
		wo = wo.with(w.tick, "tick", true)
		wo = wo.with(w.status != "", "status", w.status)
		wo = wo.with(w.nodeID != "", "nodeId", w.nodeID)
		wo = wo.with(w.count > 0, "count", w.count)
		wo = wo.with(w.count > 0, "withinSeconds", w.withinSeconds)
		wo = wo.with(w.count > 0, "per", string(w.per))
		wo = wo.with(w.cond != "", "if", w.cond)
		o = append(o, member{"when", wo})
	}
	if t := r.then; t != nil {
		to := ordered{{"command", string(t.command)}}
		to = to.with(!t.target.IsZero(), "target", t.target.String())
		to = to.with(t.nodeID != "", "nodeId", t.nodeID)
		to = to.with(t.fromNodeID != "", "fromNodeId", t.fromNodeID)
		to = to.with(t.mode != "", "mode", string(t.mode))
		to = to.with(t.immediate, "immediate", true)
		to = to.with(t.payload != nil, "payload", t.payload)
		to = to.with(t.reason != "", "reason", t.reason)
		o = append(o, member{"then", to})
	}
	if g := r.gate(); g != nil {
		gw := ordered{{"command", string(g.command)}}
		gw = gw.with(g.cond != "", "if", g.cond)
		gw = gw.with(g.reason != "", "reason", g.reason)
		o = append(o, member{r.gateKey(), gw})
	}
	return o
}

// Occurrence is what a reacting rule is matched against: an event, or a
// tick looking at one unfinished run (Type "").
type Occurrence struct {
	// Type is the event type; "" for a tick.
	Type        string
	SessionID   string
	WorkflowID  string
	ExecutionID string
	NodeID      string
	// Status is the new status of a status-change event, or the run's
	// status for a tick.
	Status string
}

// Matches reports whether o passes the rule's event (or tick), status and
// nodeId filters. The count window and the if condition come after.
func (w When) Matches(o Occurrence) bool {
	switch {
	case w.tick != (o.Type == ""):
		return false
	case !w.tick && o.Type != w.event:
		return false
	case w.status != "" && o.Status != w.status:
		return false
	case w.nodeID != "" && o.NodeID != w.nodeID:
		return false
	}
	return true
}

// WindowKey names the sliding window an occurrence counts in, by the
// rule's per: one window per run, per workflow, or one for the supervisor.
func (w When) WindowKey(o Occurrence) string {
	switch w.per {
	case PerWorkflow:
		return "workflow:" + o.SessionID + "/" + o.WorkflowID
	case PerSupervisor:
		return "supervisor"
	}
	return "execution:" + o.ExecutionID
}

// Window is the recent matches of one rule in one counting scope.
type Window struct {
	times []time.Time
}

// Record adds a match at `at` to the window and reports whether the rule
// fires: count matches within the last Within(). A rule without a count
// fires on every match. When it fires the window empties, so a burst fires
// once and the next firing needs count new matches.
func (w When) Record(win Window, at time.Time) (Window, bool) {
	if w.count <= 1 {
		return Window{}, true
	}
	cutoff := at.Add(-w.Within())
	kept := make([]time.Time, 0, len(win.times)+1)
	for _, t := range win.times {
		if t.After(cutoff) && !t.After(at) {
			kept = append(kept, t)
		}
	}
	kept = append(kept, at)
	if len(kept) >= w.count {
		return Window{}, true
	}
	return Window{times: kept}, false
}

// Len returns how many matches the window holds.
func (w Window) Len() int { return len(w.times) }

// Build builds the command a fired rule sends for o: the explicit target,
// or the run, node or workflow of o. It fails when o lacks what the
// default needs (it does not for the shapes the document was checked
// against).
func (t Then) Build(o Occurrence) (Command, error) {
	spec, ok := commands[t.command]
	if !ok {
		return Command{}, fmt.Errorf("supervisor: then has no command")
	}
	c := Command{typ: t.command, target: t.target, nodeID: t.nodeID, mode: t.mode, fromNodeID: t.fromNodeID,
		immediate: t.immediate, payload: deepCopy(t.payload)}
	if c.target.IsZero() {
		switch {
		case spec.fam == famRun && t.scope == PerSupervisor:
			c.target = OwnedRunning()
		case spec.fam == famRun && t.scope == PerWorkflow:
			if o.SessionID == "" || o.WorkflowID == "" {
				return Command{}, fault.Newf(fault.ErrInvalid, "%s needs a workflow, and the signal names none", t.command)
			}
			c.target = WorkflowTarget(o.SessionID, o.WorkflowID)
		case spec.fam == famRun || spec.fam == famNode:
			if o.ExecutionID == "" {
				return Command{}, fault.Newf(fault.ErrInvalid, "%s needs a run, and the signal names none", t.command)
			}
			c.target = ExecutionTarget(o.ExecutionID)
			if spec.fam == famNode && c.nodeID == "" {
				if o.NodeID == "" {
					return Command{}, fault.Newf(fault.ErrInvalid, "%s needs a node, and the signal names none", t.command)
				}
				c.target = NodesTarget(NodeRef{ExecutionID: o.ExecutionID, NodeID: o.NodeID})
			}
		default: // StartWorkflow, StopAll
			if o.SessionID == "" || o.WorkflowID == "" {
				return Command{}, fault.Newf(fault.ErrInvalid, "%s needs a workflow, and the signal names none", t.command)
			}
			c.target = WorkflowTarget(o.SessionID, o.WorkflowID)
		}
	} else if spec.fam == famNode && c.target.kind != TargetNodes && c.nodeID == "" {
		if o.NodeID == "" {
			return Command{}, fault.Newf(fault.ErrInvalid, "%s needs a node, and the signal names none", t.command)
		}
		c.nodeID = o.NodeID
	}
	return c, nil
}

// DirectiveReason is the reason a fired rule's directive carries: the
// then's reason, or one that names the rule.
func (r Rule) DirectiveReason() string {
	if r.then != nil && r.then.reason != "" {
		return r.then.reason
	}
	return fmt.Sprintf("rule %s matched", r.id)
}

// Review answers a review of a command of type t by the document: the
// first deny or requireApproval rule for t whose if holds (or that has no
// if) decides DENY or REQUIRE_APPROVAL; when none does, ALLOW. holds
// evaluates an if; when it fails, the review gets NO_OPINION (the parent
// or the default decides) rather than a guess. It returns the verdict and
// the id of the deciding rule ("" when none decided).
func (d RuleDocument) Review(t CommandType, holds func(expr string) (bool, error)) (Verdict, string) {
	for _, rule := range d.rules {
		g := rule.gate()
		if g == nil || g.command != t {
			continue
		}
		if g.cond != "" {
			ok, err := holds(g.cond)
			if err != nil {
				return Verdict{decision: NoOpinion, reason: fmt.Sprintf("rule %s: its if could not be evaluated: %v", rule.id, err)}, rule.id
			}
			if !ok {
				continue
			}
		}
		reason := g.reason
		if rule.deny != nil {
			if reason == "" {
				reason = fmt.Sprintf("rule %s denies %s", rule.id, t)
			}
			return Verdict{decision: Deny, reason: reason}, rule.id
		}
		if reason == "" {
			reason = fmt.Sprintf("rule %s requires an ADMIN's approval for %s", rule.id, t)
		}
		return Verdict{decision: RequireApproval, reason: reason}, rule.id
	}
	return Verdict{decision: Allow}, ""
}
