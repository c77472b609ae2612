package plugins

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/supervisor"
)

// maxSplit bounds the messages one SPLIT run emits: each becomes a work item
// committed in the same transaction, so an unbounded array would make one
// huge transaction and flood every node downstream.
const maxSplit = 10_000

// runSplit emits each element of the array at the configured path.
func runSplit(_ context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	path := str(in.Config, "field")
	v := in.Payload
	where := "the payload"
	if path != "" {
		where = fmt.Sprintf("field %q", path)
		seen := "payload"
		for name := range strings.SplitSeq(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return executionapp.Outcome{}, fmt.Errorf("SPLIT: %s: %s is %s, not an object, so it has no member %q", where, seen, kind(v), name)
			}
			if v, ok = m[name]; !ok {
				return executionapp.Outcome{}, fmt.Errorf("SPLIT: %s: %s has no member %q", where, seen, name)
			}
			seen += "." + name
		}
	}
	a, ok := v.([]any)
	if !ok {
		return executionapp.Outcome{}, fmt.Errorf("SPLIT: %s must be an array, got %s", where, kind(v))
	}
	if len(a) > maxSplit {
		return executionapp.Outcome{}, fmt.Errorf("SPLIT: %s has %d elements, more than the limit of %d; split it in pages upstream", where, len(a), maxSplit)
	}
	out := executionapp.Outcome{Emits: make([]executionapp.Emit, len(a))}
	for i, e := range a {
		out.Emits[i] = executionapp.Emit{Port: plugin.DefaultPort, Payload: e}
	}
	return out, nil
}

// runDelay parks the message on its first run and passes it on when the
// engine brings it back. The wait is the engine's durable timer, never a
// sleeping goroutine.
func runDelay(_ context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	d, _ := duration(in.Config["duration"])
	if in.Resume != nil || d <= 0 {
		// A zero Defer means "not deferred", so a zero duration must pass
		// the message on now rather than return an empty Outcome, which
		// would drop it.
		return emit(plugin.DefaultPort, in.Payload), nil
	}
	return executionapp.Outcome{Defer: now(in).Add(d)}, nil
}

// InputRequestRunner is the behaviour of INPUT_REQUEST. It is a named type,
// not a function, so that whoever accepts answers can reach CheckAnswer and
// refuse a malformed answer before the item is resumed.
type InputRequestRunner struct{}

// Run parks the message on its first run and routes it by the answer when
// resumed.
func (InputRequestRunner) Run(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return executionapp.Outcome{}, err
	}
	prompt := str(in.Config, "prompt")
	if in.Resume == nil {
		schema, _ := in.Config["schema"].(map[string]any)
		return executionapp.Outcome{
			Park: &executionapp.InputRequest{Prompt: prompt, Schema: schema},
			Logs: []executionapp.LogLine{executionapp.Info("waiting for input: " + truncate(prompt, maxLogBytes))},
		}, nil
	}
	answer := in.Resume.Answer
	if str(in.Config, "mode") == answerMode {
		return emit(plugin.DefaultPort, mergeAnswer(in.Payload, answer), answeredBy(in.Resume)), nil
	}
	approved, err := approval(answer)
	if err != nil {
		return executionapp.Outcome{}, err
	}
	port := rejectedPort
	if approved {
		port = approvedPort
	}
	out := in.Payload
	if p, ok := in.Payload.(map[string]any); ok {
		a := map[string]any{"approved": approved, "by": in.Resume.AnsweredBy}
		if m, ok := answer.(map[string]any); ok {
			if c, ok := m["comment"]; ok {
				a["comment"] = c
			}
		}
		p = maps.Clone(p) // the engine's copy of the input stays as it was
		p["approval"] = a
		out = p
	}
	return emit(port, out, answeredBy(in.Resume)), nil
}

// CheckAnswer reports why answer cannot resume a node with config: mode
// "approval" needs true, false or an object with a boolean "approved". Any
// answer suits mode "answer"; its schema is the answering side's to check.
func (InputRequestRunner) CheckAnswer(config map[string]any, answer any) error {
	if str(config, "mode") == answerMode {
		return nil
	}
	_, err := approval(answer)
	return err
}

func approval(answer any) (bool, error) {
	switch a := answer.(type) {
	case bool:
		return a, nil
	case map[string]any:
		if b, ok := a["approved"].(bool); ok {
			return b, nil
		}
	}
	return false, fmt.Errorf(`INPUT_REQUEST: an approval answer must be true, false or an object such as {"approved": true, "comment": "..."}, got %s`, kind(answer))
}

// mergeAnswer adds the answer's members to the payload, the answer's winning,
// or wraps both when either is not an object.
func mergeAnswer(payload, answer any) any {
	p, pok := payload.(map[string]any)
	a, aok := answer.(map[string]any)
	if !pok || !aok {
		return map[string]any{"input": payload, "answer": answer}
	}
	out := maps.Clone(p)
	maps.Copy(out, a)
	return out
}

func answeredBy(r *executionapp.Resume) executionapp.LogLine {
	by := r.AnsweredBy
	if by == "" {
		by = "(unknown)"
	}
	return executionapp.Info("answered by " + by)
}

// maxLogBytes bounds a log line built from a payload: logs are stored per
// message, and a multi-megabyte payload would swamp the log and its readers.
const maxLogBytes = 1 << 10

// runLog writes the message, or the payload as JSON, and passes the payload on.
func runLog(_ context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	msg := str(in.Config, "message")
	if msg == "" {
		b, err := json.Marshal(in.Payload)
		if err != nil {
			msg = fmt.Sprintf("%v", in.Payload)
		} else {
			msg = string(b)
		}
	}
	level := str(in.Config, "level")
	if level == "" {
		level = "info"
	}
	return emit(plugin.DefaultPort, in.Payload, executionapp.LogLine{Level: level, Message: truncate(msg, maxLogBytes)}), nil
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// runFail fails every attempt.
func runFail(_ context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	msg := str(in.Config, "message")
	if msg == "" {
		msg = "failed on purpose"
	}
	return executionapp.Outcome{}, errors.New(msg)
}

// runSupervisorDecision stores the decision as the run's result, where the
// supervisor engine that started the run reads it.
func runSupervisorDecision(_ context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	outcome := cmp.Or(str(in.Config, "outcome"), supervisor.DefaultOutcome)
	if outcome == supervisor.OutcomeSuccess {
		if err := checkDecision(in); err != nil {
			return executionapp.Outcome{}, err
		}
	}
	return executionapp.Outcome{HasResult: true, Result: map[string]any{
		"outcome": outcome,
		"reason":  str(in.Config, "reason"),
		"payload": in.Payload,
	}}, nil
}

// checkDecision reads the message of a SUCCESS decision as the workflow
// engine will (supervisor.ReadDecision): a command the contract cannot
// read fails the run here, naming each problem at its path
// (payload.commands[0].type), instead of a run that ends SUCCESS and
// sends nothing. The kind of the signal is the run's input envelope
// {"cursor", "kind", "signal"} when a supervisor started it. The failure is
// permanent (a *jsonvalue.Error): the same message fails every attempt.
func checkDecision(in executionapp.Invocation) error {
	env, _ := in.Execution["input"].(map[string]any)
	kind, _ := env["kind"].(string)
	cursor, _ := env["cursor"].(string)
	_, err := supervisor.ReadDecision(in.Payload, supervisor.DecisionOptions{Base: "payload", Kind: supervisor.SignalKind(kind),
		Cause: cursor, Reason: str(in.Config, "reason")})
	if err == nil {
		return nil
	}
	var parts []string
	var ve *fault.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			parts = append(parts, v.Path+": "+v.Message)
		}
	} else {
		parts = append(parts, err.Error())
	}
	return &jsonvalue.Error{Reason: "SUPERVISOR_DECISION: the decision's message cannot be read by the supervisor contract, so the run fails and nothing is sent: " +
		strings.Join(parts, "; ") + `. The message of a SUCCESS is {"commands"?: [...], "verdict"?: "ALLOW"|"DENY"|"REQUIRE_APPROVAL"|"NO_OPINION", "reason"?: "…"}; ` +
		"each command is a directive command (docs/supervisors.md#commands)"}
}
