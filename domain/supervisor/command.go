package supervisor

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/session"
)

// CommandType is the type of a directive's command: the closed vocabulary a
// supervisor speaks (DESIGN §9).
type CommandType string

// The command types, in the order DESIGN §9 gives them.
const (
	StartWorkflow   CommandType = "StartWorkflow"
	PauseWorkflow   CommandType = "PauseWorkflow"
	ResumeWorkflow  CommandType = "ResumeWorkflow"
	StopWorkflow    CommandType = "StopWorkflow"
	StopAll         CommandType = "StopAll"
	RestartWorkflow CommandType = "RestartWorkflow"
	RestartFromNode CommandType = "RestartFromNode"
	PauseNode       CommandType = "PauseNode"
	ResumeNode      CommandType = "ResumeNode"
	StopNode        CommandType = "StopNode"
	StepNode        CommandType = "StepNode"
	EnableStep      CommandType = "EnableStep"
	DisableStep     CommandType = "DisableStep"
	SkipNode        CommandType = "SkipNode"
	UnskipNode      CommandType = "UnskipNode"
	RetryNode       CommandType = "RetryNode"
	SetBreakpoint   CommandType = "SetBreakpoint"
	ClearBreakpoint CommandType = "ClearBreakpoint"
	AnswerInput     CommandType = "AnswerInput"
	Hold            CommandType = "Hold"
	Release         CommandType = "Release"
)

// CommandTypes lists every command type, in the order DESIGN §9 gives.
var CommandTypes = []CommandType{
	StartWorkflow, PauseWorkflow, ResumeWorkflow, StopWorkflow, StopAll, RestartWorkflow, RestartFromNode,
	PauseNode, ResumeNode, StopNode, StepNode, EnableStep, DisableStep, SkipNode, UnskipNode, RetryNode,
	SetBreakpoint, ClearBreakpoint, AnswerInput, Hold, Release,
}

// Valid reports whether t is a known command type.
func (t CommandType) Valid() bool { return slices.Contains(CommandTypes, t) }

// family groups command types that take the same targets and arguments.
type family int

const (
	famRun     family = iota + 1 // acts on runs: execution, workflow, owned.running, held
	famNode                      // acts on nodes: node:, or a run target plus nodeId
	famStart                     // starts a workflow: workflow: only
	famStopAll                   // one workflow-scope STOP_ALL: workflow: only
	famAnswer                    // answers an input: inputId + answer, no target
)

// commandSpec is one row of the command table.
type commandSpec struct {
	fam    family
	scope  execution.Scope  // the control command it becomes ("" for none)
	action execution.Action // ditto
	args   []string         // arguments beyond type, target, executionId and nodeId
}

// commands is the command table: what each type becomes and which
// arguments it takes. Arguments not listed are refused.
var commands = map[CommandType]commandSpec{
	StartWorkflow:   {fam: famStart, args: []string{"payload"}},
	PauseWorkflow:   {fam: famRun, scope: execution.ScopeExecution, action: execution.ActionPause},
	ResumeWorkflow:  {fam: famRun, scope: execution.ScopeExecution, action: execution.ActionResume},
	StopWorkflow:    {fam: famRun, scope: execution.ScopeExecution, action: execution.ActionStop, args: []string{"mode"}},
	StopAll:         {fam: famStopAll, scope: execution.ScopeWorkflow, action: execution.ActionStopAll, args: []string{"mode"}},
	RestartWorkflow: {fam: famRun, scope: execution.ScopeExecution, action: execution.ActionRestart},
	RestartFromNode: {fam: famRun, scope: execution.ScopeExecution, action: execution.ActionRestartFromNode, args: []string{"fromNodeId"}},
	PauseNode:       {fam: famNode, scope: execution.ScopeNode, action: execution.ActionPause},
	ResumeNode:      {fam: famNode, scope: execution.ScopeNode, action: execution.ActionResume},
	StopNode:        {fam: famNode, scope: execution.ScopeNode, action: execution.ActionStop, args: []string{"immediate"}},
	StepNode:        {fam: famNode, scope: execution.ScopeNode, action: execution.ActionStep},
	EnableStep:      {fam: famNode, scope: execution.ScopeNode, action: execution.ActionStepEnable},
	DisableStep:     {fam: famNode, scope: execution.ScopeNode, action: execution.ActionStepDisable},
	SkipNode:        {fam: famNode, scope: execution.ScopeNode, action: execution.ActionSkip},
	UnskipNode:      {fam: famNode, scope: execution.ScopeNode, action: execution.ActionUnskip},
	RetryNode:       {fam: famNode, scope: execution.ScopeNode, action: execution.ActionRetry},
	SetBreakpoint:   {fam: famNode, scope: execution.ScopeNode, action: execution.ActionBreakpoint, args: []string{"field", "equals", "condition"}},
	ClearBreakpoint: {fam: famNode, scope: execution.ScopeNode, action: execution.ActionBreakpointClear},
	AnswerInput:     {fam: famAnswer, args: []string{"inputId", "answer"}},
	Hold:            {fam: famRun},
	Release:         {fam: famRun},
}

// targetKinds lists the target kinds a command type accepts.
func (s commandSpec) targetKinds(t CommandType) []TargetKind {
	switch s.fam {
	case famRun:
		if t == Hold {
			return []TargetKind{TargetExecution, TargetWorkflow, TargetOwnedRunning}
		}
		return []TargetKind{TargetExecution, TargetWorkflow, TargetOwnedRunning, TargetHeld}
	case famNode:
		return []TargetKind{TargetNodes, TargetExecution, TargetWorkflow, TargetOwnedRunning, TargetHeld}
	case famStart, famStopAll:
		return []TargetKind{TargetWorkflow}
	}
	return nil
}

// fields lists every member a command object of this type may have.
func (s commandSpec) fields() []string {
	out := []string{"type"}
	switch s.fam {
	case famRun:
		out = append(out, "target", "executionId")
	case famNode:
		out = append(out, "target", "executionId", "nodeId")
	case famStart, famStopAll:
		out = append(out, "target")
	}
	return append(out, s.args...)
}

// allCommandFields is every member any command object may have.
var allCommandFields = []string{"type", "target", "executionId", "nodeId", "mode", "fromNodeId", "immediate",
	"field", "equals", "condition", "payload", "inputId", "answer"}

// Limits of command arguments.
const (
	MaxPayloadBytes = 64 << 10
	MaxAnswerBytes  = 64 << 10
)

// Command is a validated directive command. Its fields change only through
// ParseDirective and the rule engine's Then.Build.
type Command struct {
	typ        CommandType
	target     Target
	nodeID     string
	mode       execution.StopMode
	fromNodeID string
	immediate  bool
	breakpoint *execution.Breakpoint
	payload    any
	inputID    string
	answer     any
}

// Type returns the command type.
func (c Command) Type() CommandType { return c.typ }

// Target returns the target (the zero Target for AnswerInput).
func (c Command) Target() Target { return c.target }

// NodeID returns the node a node command acts on when its target names
// runs rather than nodes ("" otherwise).
func (c Command) NodeID() string { return c.nodeID }

// Mode returns the stop mode of StopWorkflow and StopAll (CANCEL when none
// was sent), "" for other types.
func (c Command) Mode() execution.StopMode { return c.mode }

// FromNodeID returns the node RestartFromNode restarts from.
func (c Command) FromNodeID() string { return c.fromNodeID }

// Immediate reports whether StopNode also cancels the node's running message.
func (c Command) Immediate() bool { return c.immediate }

// Breakpoint returns the breakpoint of SetBreakpoint.
func (c Command) Breakpoint() (execution.Breakpoint, bool) {
	if c.breakpoint == nil {
		return execution.Breakpoint{}, false
	}
	return *c.breakpoint, true
}

// Payload returns a copy of StartWorkflow's trigger payload (nil: none).
func (c Command) Payload() any { return deepCopy(c.payload) }

// InputID returns the input AnswerInput answers.
func (c Command) InputID() string { return c.inputID }

// Answer returns a copy of AnswerInput's answer.
func (c Command) Answer() any { return deepCopy(c.answer) }

// Control returns the control command (DESIGN §5) this command becomes for
// each run or node it reaches; false for StartWorkflow, AnswerInput, Hold
// and Release, which are not control commands.
//
// PauseWorkflow and ResumeWorkflow on a workflow target pause or resume
// the workflow itself (PAUSE_WORKFLOW, RESUME_WORKFLOW): its active runs,
// and no new run of it starts until it is resumed. On runs they pause or
// resume those runs.
func (c Command) Control() (execution.Scope, execution.Action, bool) {
	s := commands[c.typ]
	if c.PausesWorkflow() {
		if c.typ == PauseWorkflow {
			return execution.ScopeWorkflow, execution.ActionPauseWorkflow, true
		}
		return execution.ScopeWorkflow, execution.ActionResumeWorkflow, true
	}
	return s.scope, s.action, s.scope != ""
}

// PausesWorkflow reports whether the command pauses or resumes a whole
// workflow: PauseWorkflow or ResumeWorkflow on a workflow target.
func (c Command) PausesWorkflow() bool {
	return (c.typ == PauseWorkflow || c.typ == ResumeWorkflow) && c.target.kind == TargetWorkflow
}

// ActsOnNodes reports whether the command acts on nodes (PauseNode …
// ClearBreakpoint).
func (c Command) ActsOnNodes() bool { return commands[c.typ].fam == famNode }

// wire returns the command in its wire form, type first.
func (c Command) wire() ordered {
	o := ordered{{"type", string(c.typ)}}
	o = o.with(!c.target.IsZero(), "target", c.target.String())
	o = o.with(c.nodeID != "", "nodeId", c.nodeID)
	o = o.with(c.mode != "", "mode", string(c.mode))
	o = o.with(c.fromNodeID != "", "fromNodeId", c.fromNodeID)
	o = o.with(c.immediate, "immediate", true)
	if bp := c.breakpoint; bp != nil {
		o = o.with(bp.Field != "", "field", bp.Field)
		o = o.with(bp.Field != "", "equals", bp.Equals)
		o = o.with(bp.Condition != "", "condition", bp.Condition)
	}
	o = o.with(c.payload != nil, "payload", c.payload)
	o = o.with(c.inputID != "", "inputId", c.inputID)
	o = o.with(c.typ == AnswerInput, "answer", c.answer)
	return o
}

// MarshalJSON writes the command in its wire form.
func (c Command) MarshalJSON() ([]byte, error) { return c.wire().MarshalJSON() }

// command reads a directive's command object.
func (r *reader) command(v any, path string) Command {
	m, ok := v.(map[string]any)
	if !ok {
		r.add(path, "must be an object such as {\"type\": \"PauseWorkflow\", \"target\": \"execution:<id>\"}, got %s", kind(v))
		return Command{}
	}
	typ := r.commandType(m, "type", path)
	spec, known := commands[typ]
	if !known {
		r.object(m, path, allCommandFields...)
		return Command{}
	}
	r.fieldsFor(m, path, typ, spec)
	c := Command{typ: typ}
	r.commandTarget(&c, m, path, spec, true)
	r.commandArgs(&c, m, path, spec)
	return c
}

// commandType reads a command type member, suggesting the right spelling.
func (r *reader) commandType(m map[string]any, key, path string) CommandType {
	s := r.str(m, key, path, true, 64)
	if s == "" {
		return ""
	}
	t := CommandType(s)
	if t.Valid() {
		return t
	}
	for _, c := range CommandTypes {
		if strings.EqualFold(string(c), s) {
			r.add(jsonvalue.Key(path, key), "%q is not a command type; did you mean %s? (types are case-sensitive)", clip(s), c)
			return ""
		}
	}
	r.add(jsonvalue.Key(path, key), "%q is not a command type; use one of %s", clip(s), oneOf(CommandTypes))
	return ""
}

// fieldsFor refuses members the command type does not take, saying which
// types do take them.
func (r *reader) fieldsFor(m map[string]any, path string, typ CommandType, spec commandSpec) {
	allowed := spec.fields()
	for _, k := range sortedKeys(m) {
		if slices.Contains(allowed, k) {
			continue
		}
		if !slices.Contains(allCommandFields, k) {
			r.add(jsonvalue.Key(path, k), "unknown field %q; %s takes: %s", k, typ, strings.Join(allowed, ", "))
			continue
		}
		r.add(jsonvalue.Key(path, k), "%s does not take %q (it belongs to %s); leave it out. %s takes: %s",
			typ, k, oneOf(typesTaking(k)), typ, strings.Join(allowed, ", "))
	}
}

func typesTaking(field string) []CommandType {
	var out []CommandType
	for _, t := range CommandTypes {
		if slices.Contains(commands[t].fields(), field) {
			out = append(out, t)
		}
	}
	return out
}

// commandTarget reads target (or its executionId shorthand) and nodeId.
// required is false for a rule's then, whose target defaults to the signal.
func (r *reader) commandTarget(c *Command, m map[string]any, path string, spec commandSpec, required bool) {
	kinds := spec.targetKinds(c.typ)
	if kinds == nil {
		return
	}
	tp := jsonvalue.Key(path, "target")
	ts := r.str(m, "target", path, false, 64*1024)
	eid := ""
	if _, ok := m["executionId"]; ok {
		eid = r.str(m, "executionId", path, false, MaxRefLen)
		switch {
		case ts != "":
			r.add(jsonvalue.Key(path, "executionId"), "give target or executionId, not both (executionId %q is short for target \"execution:%s\")", clip(eid), clip(eid))
			eid = ""
		case eid != "" && !ValidRef(eid):
			r.add(jsonvalue.Key(path, "executionId"), "%q is not an execution id; use the id from the signal or GET /executions", clip(eid))
			eid = ""
		}
	}
	switch {
	case ts != "":
		t, msg := parseTarget(ts)
		if msg != "" {
			r.add(tp, "%s", msg)
			break
		}
		c.target = t
	case eid != "":
		c.target = ExecutionTarget(eid)
	case required:
		r.add(tp, "is required for %s; use %s", c.typ, targetKindForms(kinds))
	}
	if !c.target.IsZero() && !slices.Contains(kinds, c.target.kind) {
		r.add(tp, "%s does not take %s targets; use %s", c.typ, c.target.kind, targetKindForms(kinds))
	}
	if spec.fam != famNode {
		return
	}
	if _, ok := m["nodeId"]; ok {
		c.nodeID = r.str(m, "nodeId", path, false, 64)
		if c.nodeID != "" && !session.ValidID(c.nodeID) {
			r.add(jsonvalue.Key(path, "nodeId"), "%q is not a node id (lowercase letters, digits, '-' and '_')", clip(c.nodeID))
		}
	}
	switch {
	case c.target.kind == TargetNodes && c.nodeID != "":
		r.add(jsonvalue.Key(path, "nodeId"), "the node: target already names the nodes; leave nodeId out, or target the runs and give nodeId")
	case required && !c.target.IsZero() && c.target.kind != TargetNodes && c.nodeID == "":
		r.add(jsonvalue.Key(path, "nodeId"), "is required for %s with target %s: the node to act on in each run (or target node:<execution>/<node>)", c.typ, c.target)
	}
}

func targetKindForms(kinds []TargetKind) string {
	forms := make([]string, len(kinds))
	for i, k := range kinds {
		switch k {
		case TargetExecution:
			forms[i] = "execution:<id>"
		case TargetWorkflow:
			forms[i] = "workflow:<session>/<workflow>"
		case TargetNodes:
			forms[i] = "node:<execution>/<node>"
		default:
			forms[i] = string(k)
		}
	}
	return oneOf(forms)
}

// commandArgs reads the arguments the command type takes.
func (r *reader) commandArgs(c *Command, m map[string]any, path string, spec commandSpec) {
	if slices.Contains(spec.args, "mode") {
		c.mode = r.stopMode(m, path)
	}
	if slices.Contains(spec.args, "fromNodeId") {
		c.fromNodeID = r.str(m, "fromNodeId", path, true, 64)
		if c.fromNodeID != "" && !session.ValidID(c.fromNodeID) {
			r.add(jsonvalue.Key(path, "fromNodeId"), "%q is not a node id (lowercase letters, digits, '-' and '_')", clip(c.fromNodeID))
		}
	}
	if slices.Contains(spec.args, "immediate") {
		c.immediate = r.boolean(m, "immediate", path, false)
	}
	if slices.Contains(spec.args, "condition") {
		before := len(r.vs)
		// NewBreakpoint checks the lengths; these reads check the types.
		field := r.str(m, "field", path, false, math.MaxInt)
		cond := r.str(m, "condition", path, false, math.MaxInt)
		equals, hasEquals := m["equals"]
		if len(r.vs) == before {
			bp, err := execution.NewBreakpoint(field, equals, hasEquals, cond)
			if err != nil {
				r.violations(err, path)
			} else {
				c.breakpoint = &bp
			}
		}
	}
	if slices.Contains(spec.args, "payload") {
		if p, ok := m["payload"]; ok && p != nil {
			if n := jsonvalue.Size(p); n > MaxPayloadBytes {
				r.add(jsonvalue.Key(path, "payload"), "is %s; the limit is %s", jsonvalue.FormatBytes(n), jsonvalue.FormatBytes(MaxPayloadBytes))
			} else {
				c.payload = p
			}
		}
	}
	if spec.fam == famAnswer {
		c.inputID = r.str(m, "inputId", path, true, MaxRefLen)
		if c.inputID != "" && !ValidRef(c.inputID) {
			r.add(jsonvalue.Key(path, "inputId"), "%q is not an input id; use the id from the InputRequested signal or GET /inputs", clip(c.inputID))
		}
		a, ok := m["answer"]
		switch {
		case !ok || a == nil:
			r.add(jsonvalue.Key(path, "answer"), `is required: for an approval {"approved": true|false, "comment": "..."}, otherwise what the prompt asked for`)
		case jsonvalue.Size(a) > MaxAnswerBytes:
			r.add(jsonvalue.Key(path, "answer"), "is %s; the limit is %s", jsonvalue.FormatBytes(jsonvalue.Size(a)), jsonvalue.FormatBytes(MaxAnswerBytes))
		default:
			c.answer = a
		}
	}
}

// stopMode reads an optional stop mode; CANCEL when it is missing.
func (r *reader) stopMode(m map[string]any, path string) execution.StopMode {
	s := r.str(m, "mode", path, false, 16)
	if s == "" {
		return execution.DefaultStopMode
	}
	mode := execution.StopMode(strings.ToUpper(s))
	if !slices.Contains([]execution.StopMode{execution.Drain, execution.Cancel, execution.Kill}, mode) {
		r.add(jsonvalue.Key(path, "mode"), "%q is not a stop mode; use DRAIN (finish queued work), CANCEL (drop queued work) or KILL (also cancel running work)", clip(s))
		return ""
	}
	return mode
}

// violations copies the violations of a nested validation error under path.
func (r *reader) violations(err error, path string) {
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok || len(ve.Violations) == 0 {
		r.add(path, "%s", err.Error())
		return
	}
	for _, v := range ve.Violations {
		r.add(jsonvalue.Key(path, v.Path), "%s", v.Message)
	}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
