package processengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// How the engine reads its program's output: each line one JSON object of
// the contract (docs/process-supervisor.schema.json), acted on or dropped.

// line acts on one output line, or drops it. A line that reaches the
// server is sent with the engine's context, so Close does not wait for a
// slow database beyond what the intake takes to notice.
func (e *processEngine) line(l OutputLine) {
	if l.TooLong {
		e.drop(DropTooLong, fmt.Errorf("an output line is longer than %d bytes; it was thrown away", e.spec.MaxLineBytes))
		return
	}
	data := bytes.TrimSpace(l.Data)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		e.drop(DropNotJSON, fmt.Errorf("an output line is not a JSON object: %q", clipLine(data)))
		return
	}
	var typ string
	if raw, ok := m["type"]; !ok || json.Unmarshal(raw, &typ) != nil {
		e.drop(DropUnknownType, fmt.Errorf(`an output line has no "type" string; use one of %s`, lineTypes))
		return
	}
	delete(m, "type")
	switch typ {
	case LineCommand:
		e.command(m)
	case LineVerdict, LineNoOpinion:
		e.verdict(typ, m)
	case LineDelegate:
		e.delegate(m)
	case LineDelegationAnswer:
		e.delegationAnswer(m)
	default:
		e.drop(DropUnknownType, fmt.Errorf("an output line has type %q; use one of %s", clipLine([]byte(typ)), lineTypes))
	}
}

var lineTypes = strings.Join([]string{LineCommand, LineVerdict, LineNoOpinion, LineDelegationAnswer, LineDelegate}, ", ")

// lineMembers reads a line's members into v, refusing members it lacks.
func lineMembers(typ string, m map[string]json.RawMessage, v any, known ...string) []string {
	var problems []string
	for k := range m {
		if !slices.Contains(known, k) {
			problems = append(problems, fmt.Sprintf("%q is not a member of a %s line", clipLine([]byte(k)), typ))
		}
	}
	rest, _ := json.Marshal(m)
	if err := json.Unmarshal(rest, v); err != nil {
		problems = append(problems, "members of the wrong type: "+strings.Join(known, ", "))
	}
	slices.Sort(problems)
	return problems
}

// delegate opens a delegation: {kind, key, payload, to?}.
func (e *processEngine) delegate(m map[string]json.RawMessage) {
	if e.d.Delegate == nil {
		e.drop(DropNotBuilt, errors.New("a delegate line was dropped: delegations are not wired on this server"))
		return
	}
	var in struct {
		Kind, Key, To string
		Payload       json.RawMessage
	}
	if problems := lineMembers(LineDelegate, m, &in, "kind", "key", "to", "payload"); len(problems) > 0 {
		e.drop(DropInvalid, fmt.Errorf("delegate line: %s", strings.Join(problems, "; ")))
		return
	}
	_, _, err := e.d.Delegate.Handle(e.ctx, supervisorapp.DelegateInput{SupervisorID: e.sup.ID(), Kind: supervisor.DelegationKind(in.Kind), Key: in.Key,
		To: in.To, Payload: in.Payload, Channel: supervisorapp.ChannelSupervisor, Fence: &e.fence})
	if err != nil && e.ctx.Err() == nil {
		e.drop(DropRefused, fmt.Errorf("delegate line with key %q: %w", clipLine([]byte(in.Key)), err))
	}
}

// delegationAnswer answers a delegation sent to this supervisor:
// {answers, answer}.
func (e *processEngine) delegationAnswer(m map[string]json.RawMessage) {
	if e.d.AnswerDelegation == nil {
		e.drop(DropNotBuilt, errors.New("a delegationAnswer line was dropped: delegations are not wired on this server"))
		return
	}
	var in struct {
		Answers string
		Answer  json.RawMessage
	}
	problems := lineMembers(LineDelegationAnswer, m, &in, "answers", "answer")
	switch {
	case strings.TrimSpace(in.Answers) == "":
		problems = append(problems, "answers is required: the delegationId of the DELEGATED or CONSULTED signal it answers")
	case utf8.RuneCountInString(in.Answers) > maxAnswersLen:
		problems = append(problems, fmt.Sprintf("answers is longer than %d characters", maxAnswersLen))
	}
	if len(problems) > 0 {
		e.drop(DropInvalid, fmt.Errorf("delegationAnswer line: %s", strings.Join(problems, "; ")))
		return
	}
	_, err := e.d.AnswerDelegation.Handle(e.ctx, supervisorapp.AnswerDelegationInput{DelegationID: in.Answers, SupervisorID: e.sup.ID(), Answer: in.Answer,
		Channel: supervisorapp.ChannelSupervisor, Fence: &e.fence})
	if err != nil && e.ctx.Err() == nil {
		e.drop(DropRefused, fmt.Errorf("delegationAnswer line for %s: %w", clipLine([]byte(in.Answers)), err))
	}
}

// command sends a command line, the directive envelope with its type, to
// the intake.
func (e *processEngine) command(m map[string]json.RawMessage) {
	rest, err := json.Marshal(m)
	if err != nil {
		e.drop(DropInvalid, err)
		return
	}
	d, err := supervisor.ParseDirective(rest)
	if err != nil {
		e.drop(DropInvalid, fmt.Errorf("command line: %w", err))
		return
	}
	_, err = e.d.Submit.Handle(e.ctx, supervisorapp.SubmitInput{SupervisorID: e.sup.ID(), Directive: d, Channel: supervisorapp.ChannelSupervisor, Fence: &e.fence})
	if effect := supervisorapp.SortEffect(err); effect != supervisorapp.EffectDone && effect != supervisorapp.EffectLoopBound && e.ctx.Err() == nil {
		// A refusal is journaled by the intake; a failure leaves the key
		// open, so the program may send the same line again. The loop
		// bounds log their refusals once per window themselves; the
		// rest are counted and summed up (report.go).
		e.drop(DropRefused, fmt.Errorf("command line with key %q: %w", d.Key(), err))
	}
}

// verdict answers a review: verdict lines with their decision, noOpinion
// lines with NO_OPINION.
func (e *processEngine) verdict(typ string, m map[string]json.RawMessage) {
	var in struct {
		Answers *string `json:"answers"`
		Verdict *string `json:"verdict"`
		Reason  *string `json:"reason"`
	}
	var problems []string
	for k := range m {
		if k != "answers" && (typ == LineNoOpinion || (k != "verdict" && k != "reason")) {
			problems = append(problems, fmt.Sprintf("%q is not a member of a %s line", clipLine([]byte(k)), typ))
		}
	}
	rest, _ := json.Marshal(m)
	if err := json.Unmarshal(rest, &in); err != nil {
		problems = append(problems, "members of the wrong type: answers, verdict and reason are strings")
	}
	switch {
	case in.Answers == nil || strings.TrimSpace(*in.Answers) == "":
		problems = append(problems, "answers is required: the reviewId of the REVIEW signal it answers")
	case utf8.RuneCountInString(*in.Answers) > maxAnswersLen:
		problems = append(problems, fmt.Sprintf("answers is longer than %d characters; give the reviewId of the REVIEW signal", maxAnswersLen))
	}
	decision, reason := supervisor.NoOpinion, ""
	if in.Reason != nil {
		reason = *in.Reason
	}
	if typ == LineVerdict {
		switch {
		case in.Verdict == nil:
			problems = append(problems, "verdict is required: ALLOW, DENY or REQUIRE_APPROVAL")
		case strings.EqualFold(*in.Verdict, string(supervisor.NoOpinion)):
			problems = append(problems, `verdict NO_OPINION is sent as a line of its own: {"type": "noOpinion", "answers": …}`)
		default:
			decision = supervisor.Decision(*in.Verdict)
		}
	}
	if len(problems) > 0 {
		e.drop(DropInvalid, fmt.Errorf("%s line: %s", typ, strings.Join(problems, "; ")))
		return
	}
	v, err := supervisor.NewVerdict(decision, reason)
	if err != nil {
		e.drop(DropInvalid, fmt.Errorf("%s line: %w", typ, err))
		return
	}
	_, err = e.d.Answer.Handle(e.ctx, supervisorapp.AnswerInput{ReviewID: *in.Answers, SupervisorID: e.sup.ID(), Verdict: v, Fence: &e.fence})
	switch {
	case err == nil, e.ctx.Err() != nil:
	case errors.Is(err, supervisor.ErrReviewSettled):
		// Answered too late (timed out, decided by an ADMIN): the
		// answer has nothing left to decide, and is said so.
		e.drop(DropRefused, fmt.Errorf("%s line for review %s came after the review was settled: %w", typ, *in.Answers, err))
	default:
		e.drop(DropRefused, fmt.Errorf("%s line for review %s: %w", typ, *in.Answers, err))
	}
}

// clipLine shortens a dropped line for a report: enough to recognise it,
// never a whole 64 KiB line in a log.
func clipLine(b []byte) string { return supervisorapp.Clip(string(b), 120) }
