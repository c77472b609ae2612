package supervisor

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// The outcomes of a workflow supervisor's SUPERVISOR_DECISION (seed 000,
// `workflow`).
const (
	OutcomeSuccess  = "SUCCESS"
	OutcomeEscalate = "ESCALATE"
	OutcomeRetry    = "RETRY"
	OutcomeFailed   = "FAILED"
	// DefaultOutcome is the outcome of a SUPERVISOR_DECISION that names
	// none.
	DefaultOutcome = OutcomeSuccess
)

// DecisionOutcomes lists the outcomes, in the seed's order.
var DecisionOutcomes = []string{OutcomeSuccess, OutcomeEscalate, OutcomeRetry, OutcomeFailed}

// MaxDecisionCommands caps the commands of one decision: a workflow that
// builds more is more likely broken than busy, and each is a directive.
const MaxDecisionCommands = 100

// DecisionMessage is the message of a SUCCESS decision, read: the directives it
// sends and the verdict it gives a REVIEW signal (nil: none).
type DecisionMessage struct {
	Directives []Directive
	Verdict    *Verdict
}

// DecisionOptions say how to read a decision's message.
type DecisionOptions struct {
	// Base names the message in violation paths ("message" for the engine,
	// "payload" for the SUPERVISOR_DECISION node that receives it).
	Base string
	// Kind is the kind of the signal the run decides on; a verdict answers
	// a REVIEW only. Empty: the kind is not known, and a verdict is read
	// (as for a REVIEW) but not refused.
	Kind SignalKind
	// Key names the directive of the i-th command; Cause is their cause.
	Key   func(i int) string
	Cause string
	// Reason is the SUPERVISOR_DECISION's reason, used when the message
	// has none.
	Reason string
}

// ReadDecision reads the message of a SUCCESS decision strictly:
// {"commands"?: [command, …], "verdict"?: "ALLOW" | "DENY" |
// "REQUIRE_APPROVAL" | "NO_OPINION", "reason"?: string}. Each command is a
// directive command (ParseDirective's command member) and becomes a
// directive keyed by o.Key, with o.Cause as its cause; the message's reason
// (or else o.Reason) is the directives' and the verdict's reason. Every
// problem is listed in one *fault.ValidationError (subject "decision"),
// each at its path under o.Base (payload.commands[1].type).
func ReadDecision(msg any, o DecisionOptions) (DecisionMessage, error) {
	base := cmp.Or(o.Base, "message")
	if o.Key == nil {
		o.Key = func(i int) string { return fmt.Sprintf("decision:%d", i) }
	}
	if msg == nil {
		return DecisionMessage{}, nil
	}
	var vs []fault.Violation
	add := func(path, format string, args ...any) {
		vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	m, ok := msg.(map[string]any)
	if !ok {
		add(base, `must be an object such as {"commands": [{"type": "AnswerInput", "inputId": "…", "answer": {…}}]}`)
		return DecisionMessage{}, &fault.ValidationError{Subject: "decision", Violations: vs}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "commands" && k != "verdict" && k != "reason" {
			add(jsonvalue.Key(base, k), `is not part of a decision; the message is {"commands"?: [...], "verdict"?: "ALLOW"|"DENY"|"REQUIRE_APPROVAL"|"NO_OPINION", "reason"?: "…"}`)
		}
	}
	reason := o.Reason
	if rv, ok := m["reason"]; ok && rv != nil {
		s, ok := rv.(string)
		if !ok {
			add(jsonvalue.Key(base, "reason"), "must be a string")
		}
		reason = cmp.Or(s, reason)
	}
	if n := utf8.RuneCountInString(reason); n > MaxReasonLen {
		add(jsonvalue.Key(base, "reason"), "is %d characters long; the limit is %d (the SUPERVISOR_DECISION's reason counts when the message has none)", n, MaxReasonLen)
		reason = ""
	}
	var d DecisionMessage
	if cv, ok := m["commands"]; ok && cv != nil {
		cp := jsonvalue.Key(base, "commands")
		list, ok := cv.([]any)
		switch {
		case !ok:
			add(cp, "must be an array of commands")
		case len(list) > MaxDecisionCommands:
			add(cp, "has %d commands; one decision may send at most %d", len(list), MaxDecisionCommands)
		default:
			for i, c := range list {
				dir, err := decisionDirective(c, o.Key(i), o.Cause, reason)
				if err != nil {
					vs = append(vs, commandViolations(err, jsonvalue.Index(cp, i))...)
					continue
				}
				d.Directives = append(d.Directives, dir)
			}
		}
	}
	if vv, ok := m["verdict"]; ok {
		if o.Kind != "" && o.Kind != KindReview {
			add(jsonvalue.Key(base, "verdict"), "answers a REVIEW signal only; this run was started by a %s signal", o.Kind)
		} else {
			body := map[string]any{"verdict": vv}
			if reason != "" {
				body["reason"] = reason
			}
			b, err := json.Marshal(body)
			if err == nil {
				var v Verdict
				if v, err = ParseVerdict(b); err == nil {
					d.Verdict = &v
				}
			}
			if err != nil {
				vs = append(vs, prefixedViolations(err, base)...)
			}
		}
	}
	if len(vs) > 0 {
		return DecisionMessage{}, &fault.ValidationError{Subject: "decision", Violations: vs}
	}
	return d, nil
}

// decisionDirective wraps one command of a message in a directive.
func decisionDirective(c any, key, cause, reason string) (Directive, error) {
	env := map[string]any{"key": key, "command": c}
	if cause != "" {
		env["cause"] = cause
	}
	if reason != "" {
		env["reason"] = reason
	}
	b, err := json.Marshal(env)
	if err != nil {
		return Directive{}, fault.Newf(fault.ErrInvalid, "cannot be written as JSON: %v", err)
	}
	return ParseDirective(b)
}

// commandViolations places the problems of a directive built from a
// message's command at the command's path (message.commands[i]).
func commandViolations(err error, base string) []fault.Violation {
	var ve *fault.ValidationError
	if !errors.As(err, &ve) {
		return []fault.Violation{{Path: base, Message: err.Error()}}
	}
	out := make([]fault.Violation, 0, len(ve.Violations))
	for _, v := range ve.Violations {
		switch {
		case v.Path == "command":
			v.Path = base
		case strings.HasPrefix(v.Path, "command.") || strings.HasPrefix(v.Path, "command["):
			v.Path = base + strings.TrimPrefix(v.Path, "command")
		}
		out = append(out, v)
	}
	return out
}

// prefixedViolations places the problems of a parsed part of the message
// under it.
func prefixedViolations(err error, base string) []fault.Violation {
	var ve *fault.ValidationError
	if !errors.As(err, &ve) {
		return []fault.Violation{{Path: base, Message: err.Error()}}
	}
	out := make([]fault.Violation, 0, len(ve.Violations))
	for _, v := range ve.Violations {
		v.Path = jsonvalue.Key(base, v.Path)
		out = append(out, v)
	}
	return out
}
