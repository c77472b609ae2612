package supervisor

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// ExprContext is where an expression is written; it decides which
// variables the expression may read.
type ExprContext string

// The expression contexts.
const (
	// EventRule is the if of a rule whose when names an event.
	EventRule ExprContext = "event rule"
	// TickRule is the if of a rule whose when is a tick.
	TickRule ExprContext = "tick rule"
	// ReviewRule is the if of a deny or requireApproval rule.
	ReviewRule ExprContext = "deny or requireApproval rule"
	// EngineWhen is the when setting of the workflow engine.
	EngineWhen ExprContext = "workflow engine when"
)

// phrase names the context in a sentence.
func (c ExprContext) phrase() string {
	switch c {
	case EventRule:
		return "an event rule"
	case TickRule:
		return "a tick rule"
	case ReviewRule:
		return "a deny or requireApproval rule"
	}
	return "the workflow engine's when"
}

// Field is one field of an object variable.
type Field struct {
	Name    string
	Type    string
	Meaning string
}

// Variable is a name an expression may read.
type Variable struct {
	Name    string
	Type    string
	Meaning string
	// Fields lists the fields of an object variable; nil for a scalar.
	Fields []Field
}

var (
	varEvent = Variable{Name: "event", Type: "object", Meaning: "The event that matched (DESIGN §6 envelope), data redacted.", Fields: []Field{
		{"seq", "int", "Global sequence number of the event."},
		{"at", "timestamp", "When the change happened."},
		{"type", "string", "Event type, such as NodeStatusChanged."},
		{"sessionId", "string", "Session of the event."},
		{"workflowId", "string", `Workflow of the event ("" for session events).`},
		{"executionId", "string", `Run of the event ("" for session events).`},
		{"nodeId", "string", `Node of the event ("" for run and session events).`},
		{"actor", "string", "Who caused it: key:<name>, supervisor:<id>, engine, anonymous."},
		{"data", "map", "Event-specific data, such as from, to and error of a status change."},
	}}
	varExecution = Variable{Name: "execution", Type: "object", Meaning: "The run the event or tick is about (every field empty for session events).", Fields: []Field{
		{"id", "string", "Execution id."},
		{"sessionId", "string", "Its session."},
		{"workflowId", "string", "Its workflow."},
		{"status", "string", "Its status now: PENDING, RUNNING, PAUSED, SUCCESS, FAILURE or STOPPED."},
		{"startedAt", "timestamp", "When it was created."},
		{"lastProgressAt", "timestamp", "The last time one of its nodes changed status or finished a message; startedAt before that."},
		{"activeCount", "int", "How many runs of the same workflow are unfinished (PENDING, RUNNING or PAUSED), this one included."},
		{"nodes", "map", "Node id to node status, for every node of the run."},
	}}
	varNow     = Variable{Name: "now", Type: "timestamp", Meaning: "The time the rule is evaluated."}
	varCommand = Variable{Name: "command", Type: "object", Meaning: "The command under review, in the directive vocabulary.", Fields: []Field{
		{"type", "string", "Command type, such as RestartWorkflow."},
		{"target", "string", `Its target in wire form ("" for AnswerInput).`},
		{"sessionId", "string", "Session of the run it acts on."},
		{"workflowId", "string", "Workflow of the run it acts on."},
		{"executionId", "string", `Run it acts on ("" for StartWorkflow).`},
		{"nodeId", "string", `Node it acts on ("" for commands on runs).`},
		{"reason", "string", "The reason the sender gave."},
		{"args", "map", "Its other arguments: mode, fromNodeId, immediate, payload, inputId, field, equals, condition."},
	}}
	varActor    = Variable{Name: "actor", Type: "string", Meaning: "Who sent the command: key:<name>, supervisor:<id> or anonymous."}
	varWorkflow = Variable{Name: "workflow", Type: "object", Meaning: "The workflow the command acts on.", Fields: []Field{
		{"sessionId", "string", "Its session."},
		{"workflowId", "string", "Its id."},
		{"activeCount", "int", "How many of its runs are unfinished (PENDING, RUNNING or PAUSED) now, before the command applies."},
	}}
	allVariables = []Variable{varEvent, varExecution, varNow, varCommand, varActor, varWorkflow}
)

// Variables returns the variables an expression in context c may read.
func Variables(c ExprContext) []Variable {
	var vs []Variable
	switch c {
	case EventRule:
		vs = []Variable{varEvent, varExecution, varNow}
	case TickRule:
		vs = []Variable{varExecution, varNow}
	case ReviewRule:
		vs = []Variable{varCommand, varActor, varWorkflow, varNow}
	case EngineWhen:
		vs = []Variable{varEvent}
	}
	out := make([]Variable, len(vs))
	for i, v := range vs {
		v.Fields = slices.Clone(v.Fields)
		out[i] = v
	}
	return out
}

// VariableNames returns the names of Variables(c).
func VariableNames(c ExprContext) []string {
	vs := Variables(c)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

// expression checks one expression: not blank, within MaxExprLen, reading
// only the variables and first-level fields of its context, and compiling
// when a checker is given.
func (r *reader) expression(expr, path string, c ExprContext, check ExprChecker) {
	if strings.TrimSpace(expr) == "" {
		r.add(path, "is empty; give a CEL condition or leave it out")
		return
	}
	if n := utf8.RuneCountInString(expr); n > MaxExprLen {
		r.add(path, "is %d characters long; the limit is %d", n, MaxExprLen)
		return
	}
	vars := Variables(c)
	names := VariableNames(c)
	reported := map[string]bool{}
	for _, ref := range references(expr) {
		key := ref.root + "." + ref.field
		if reported[key] {
			continue
		}
		i := slices.IndexFunc(vars, func(v Variable) bool { return v.Name == ref.root })
		if i < 0 {
			if slices.ContainsFunc(allVariables, func(v Variable) bool { return v.Name == ref.root }) {
				reported[key] = true
				r.add(path, "reads %s, which %s cannot read; it can read %s", ref.root, c.phrase(), oneOf(names))
			}
			continue
		}
		v := vars[i]
		if ref.field == "" {
			continue
		}
		reported[key] = true
		if v.Fields == nil {
			r.add(path, "reads %s.%s, but %s is a %s and has no fields", ref.root, ref.field, v.Name, v.Type)
			continue
		}
		if !slices.ContainsFunc(v.Fields, func(f Field) bool { return f.Name == ref.field }) {
			fields := make([]string, len(v.Fields))
			for j, f := range v.Fields {
				fields[j] = f.Name
			}
			r.add(path, "reads %s.%s, which does not exist; %s has %s", ref.root, ref.field, v.Name, strings.Join(fields, ", "))
		}
	}
	if check != nil {
		if err := check(expr, names); err != nil {
			r.add(path, "%s", err.Error())
		}
	}
}

// ref is one variable an expression reads: a root identifier and, when it
// is followed by .name (not a method call), that field.
type ref struct {
	root  string
	field string
}

// references scans an expression for the identifiers it reads as roots,
// skipping string literals, numbers, members and function calls. It is a
// structural check that needs no CEL; the compiler (ExprChecker) has the
// last word.
func references(expr string) []ref {
	var out []ref
	s := expr
	prev := byte(0) // last significant byte before the current token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '"' || c == '\'':
			raw := i > 0 && (s[i-1] == 'r' || s[i-1] == 'R') && (i < 2 || !isIdent(s[i-2]))
			i = skipString(s, i, raw)
			prev = '"'
			continue
		case c >= '0' && c <= '9':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
			prev = '0'
			continue
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			name := s[i:j]
			k := skipSpace(s, j)
			member := prev == '.'
			prev = 'a'
			if member || (k < len(s) && s[k] == '(') {
				i = j
				continue
			}
			// A raw or bytes prefix is part of the string that follows.
			if (name == "r" || name == "R" || name == "b" || name == "B") && j < len(s) && (s[j] == '"' || s[j] == '\'') {
				i = j
				continue
			}
			rf := ref{root: name}
			if k < len(s) && s[k] == '.' {
				f := skipSpace(s, k+1)
				e := f
				for e < len(s) && isIdent(s[e]) {
					e++
				}
				if e > f && isIdentStart(s[f]) {
					if after := skipSpace(s, e); after >= len(s) || s[after] != '(' {
						rf.field = s[f:e]
					}
				}
			}
			out = append(out, rf)
			i = j
			continue
		}
		prev = c
		i++
	}
	return out
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string literal that starts at i.
func skipString(s string, i int, raw bool) int {
	q := s[i]
	if strings.HasPrefix(s[i:], string([]byte{q, q, q})) {
		end := strings.Index(s[i+3:], string([]byte{q, q, q}))
		if end < 0 {
			return len(s)
		}
		return i + 3 + end + 3
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if !raw {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(s)
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
