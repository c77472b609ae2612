package supervisor

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// Limits of the directive envelope. The key and reason limits are those of
// every control command (execution.MaxKeyLen, execution.MaxReasonLen).
const (
	MaxKeyLen    = execution.MaxKeyLen
	MaxReasonLen = execution.MaxReasonLen
	MaxCauseLen  = 256
)

// Errors callers branch on.
var (
	// ErrDirectiveRefused: the supervisor may not send this directive (the
	// command is outside its allowedCommands, the target outside its owned
	// units, or it is disabled). The refusal is journaled.
	ErrDirectiveRefused = fmt.Errorf("supervisor: directive refused: %w", fault.ErrForbidden)
	// ErrTooManyRuns: a target expanded to more than MaxTargetRuns runs.
	ErrTooManyRuns = fmt.Errorf("supervisor: target names too many runs: %w", fault.ErrInvalid)
)

// Directive is what a supervisor asks the server to do: a command in the
// closed vocabulary, with an idempotency key and, optionally, what caused
// it, why, and the status the target must be in. Its wire form is
// {key, cause?, reason?, ifStatus?, command}.
type Directive struct {
	key      string
	cause    string
	reason   string
	ifStatus string
	command  Command
}

// Key returns the idempotency key: the same key from the same supervisor
// is the same directive and has no second effect.
func (d Directive) Key() string { return d.key }

// Cause returns what the supervisor reacted to (a signal cursor, a review
// or event id), recorded with the directive; "" when none was given.
func (d Directive) Cause() string { return d.cause }

// Reason returns the supervisor's explanation, recorded with the directive.
func (d Directive) Reason() string { return d.reason }

// IfStatus returns the status the target must have for the command to
// apply ("" for none): an execution status for commands on runs, a node
// status for commands on nodes.
func (d Directive) IfStatus() string { return d.ifStatus }

// Command returns the command.
func (d Directive) Command() Command { return d.command }

// MarshalJSON writes the directive in its wire form.
func (d Directive) MarshalJSON() ([]byte, error) {
	o := ordered{{"key", d.key}}
	o = o.with(d.cause != "", "cause", d.cause)
	o = o.with(d.reason != "", "reason", d.reason)
	o = o.with(d.ifStatus != "", "ifStatus", d.ifStatus)
	o = append(o, member{"command", d.command.wire()})
	return o.MarshalJSON()
}

// ParseDirective reads a directive strictly: unknown members are refused,
// the command must be one of the vocabulary with exactly the arguments its
// type takes, and every problem is listed at once in a
// *fault.ValidationError whose paths name the members (command.target).
func ParseDirective(data []byte) (Directive, error) {
	v, err := decode(data, "directive")
	if err != nil {
		return Directive{}, err
	}
	r := &reader{}
	d := r.directive(v)
	if len(r.vs) > 0 {
		return Directive{}, &fault.ValidationError{Subject: "directive", Violations: r.vs}
	}
	return d, nil
}

// NewDirective wraps a command (from ParseDirective or a rule's
// Then.Build) in an envelope and checks the envelope's rules.
func NewDirective(key, cause, reason, ifStatus string, c Command) (Directive, error) {
	if !c.typ.Valid() {
		return Directive{}, &fault.ValidationError{Subject: "directive", Violations: []fault.Violation{{Path: "command.type", Message: "is required"}}}
	}
	r := &reader{}
	d := Directive{key: key, cause: cause, reason: reason, command: c}
	r.envelope(&d, ifStatus)
	if len(r.vs) > 0 {
		return Directive{}, &fault.ValidationError{Subject: "directive", Violations: r.vs}
	}
	return d, nil
}

func (r *reader) directive(v any) Directive {
	m := r.object(v, "", "key", "cause", "reason", "ifStatus", "command")
	if m == nil {
		return Directive{}
	}
	var d Directive
	d.key = r.str(m, "key", "", true, math.MaxInt)
	d.cause = r.str(m, "cause", "", false, math.MaxInt)
	d.reason = r.str(m, "reason", "", false, math.MaxInt)
	ifStatus := r.str(m, "ifStatus", "", false, 64)
	cv, ok := m["command"]
	if !ok || cv == nil {
		r.add("command", `is required, such as {"type": "PauseWorkflow", "target": "execution:<id>"}`)
	} else {
		d.command = r.command(cv, "command")
	}
	r.envelope(&d, ifStatus)
	return d
}

// envelope checks the envelope members' lengths and their fit with the
// command (the reads above check only types).
func (r *reader) envelope(d *Directive, ifStatus string) {
	if n := utf8.RuneCountInString(d.key); n > MaxKeyLen {
		r.add("key", "is %d characters long; the limit is %d", n, MaxKeyLen)
	} else if strings.TrimSpace(d.key) == "" && !r.has("key") {
		r.add("key", "is required: a string that makes the directive idempotent (the same key is never applied twice)")
	}
	if n := utf8.RuneCountInString(d.cause); n > MaxCauseLen {
		r.add("cause", "is %d characters long; the limit is %d", n, MaxCauseLen)
	}
	if n := utf8.RuneCountInString(d.reason); n > MaxReasonLen {
		r.add("reason", "is %d characters long; the limit is %d", n, MaxReasonLen)
	}
	spec, known := commands[d.command.typ]
	if d.command.typ == Hold && strings.TrimSpace(d.reason) == "" {
		r.add("reason", "is required for Hold: it is shown in the hold ledger next to the run")
	}
	if ifStatus == "" {
		return
	}
	up := strings.ToUpper(ifStatus)
	switch {
	case !known:
		return // the command type is already reported
	case spec.fam == famRun:
		if !execution.Status(up).Valid() {
			r.add("ifStatus", "%q is not a status a run can have; use one of %s", clip(ifStatus), oneOf(execution.Statuses))
			return
		}
	case spec.fam == famNode:
		if !execution.NodeStatus(up).Valid() {
			r.add("ifStatus", "%q is not a status a node can have; use one of %s", clip(ifStatus), oneOf(execution.NodeStatuses))
			return
		}
	default:
		r.add("ifStatus", "applies only to commands on runs and nodes, not %s; leave it out", d.command.typ)
		return
	}
	d.ifStatus = up
}

// has reports whether a violation at path is already listed.
func (r *reader) has(path string) bool {
	for _, v := range r.vs {
		if v.Path == path {
			return true
		}
	}
	return false
}

// Place is where a run or input lives: its session and workflow, and
// whether the sender holds the run.
type Place struct {
	SessionID  string
	WorkflowID string
	// Held: the supervisor sending the directive holds this run. Outside
	// its owned units, a run it holds may still be released.
	Held bool
}

// CheckDirective decides whether s may send d, with no I/O: s must be
// enabled, d's command type must be in s's allowedCommands, and every run
// d reaches must lie in a unit s owns now. A workflow target carries its
// own place; for every other target (execution, node, owned.running, held)
// and for AnswerInput, the caller passes the places of the runs (or the
// input) the target expanded to, so that every kind meets the same rule.
// The one exception: a run outside the owned units that s holds may
// receive Release, so an ADMIN narrowing owns never strands a hold. A
// refusal matches ErrDirectiveRefused (fault.ErrForbidden) and names what
// to do.
func CheckDirective(s Supervisor, d Directive, places []Place) error {
	c := d.command
	if !s.enabled {
		return fault.Newf(ErrDirectiveRefused, "supervisor %q is disabled; an ADMIN must enable it before its directives apply", s.id)
	}
	if !s.Allows(c.typ) {
		return fault.Newf(ErrDirectiveRefused, "supervisor %q may not send %s; its allowedCommands are %s (an ADMIN can change them)",
			s.id, c.typ, oneOf(s.allowed))
	}
	var check []Place
	switch c.target.kind {
	case TargetWorkflow:
		check = append(check, Place{SessionID: c.target.sessionID, WorkflowID: c.target.workflowID})
	case TargetOwnedRunning, TargetHeld: // may expand to no run at all
	default: // execution, node, or AnswerInput
		if len(places) == 0 {
			return fmt.Errorf("supervisor: CheckDirective(%s on %q): the caller passed no places for the target", c.typ, c.target)
		}
	}
	check = append(check, places...)
	what := "target " + c.target.String()
	if c.typ == AnswerInput {
		what = "input " + c.inputID
	}
	for _, p := range check {
		if s.OwnsPlace(p) || (p.Held && c.typ == Release) {
			continue
		}
		if p.Held {
			return fault.Newf(ErrDirectiveRefused, "%s reaches a run supervisor %q holds outside the units it owns (%s); outside them a held run may only be released (Release)",
				what, s.id, ownsText(s.owns))
		}
		return fault.Newf(ErrDirectiveRefused, "%s is outside the units supervisor %q owns (%s); a supervisor acts only on runs of the units it owns",
			what, s.id, ownsText(s.owns))
	}
	return nil
}

func ownsText(us []Unit) string {
	if len(us) == 0 {
		return "none"
	}
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = u.String()
	}
	return strings.Join(s, ", ")
}

var _ json.Marshaler = Directive{}
