package executionapp

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
	"github.com/yukta/yukta/domain/session"
)

// AnswerValidator checks an answer against the JSON schema an input asked
// for. A refusal that names the values at fault is a *fault.ValidationError
// whose paths are inside the answer ("count", "tags[2]"); the use case
// reports each under "answer" ("answer.count").
type AnswerValidator interface {
	Validate(schema map[string]any, answer any) error
}

// AnswerInput answers an open input: the parked message becomes runnable
// again with the answer, and an InputAnswered event records who answered.
type AnswerInput struct {
	tx        Transactor
	validator AnswerValidator
	waker     Waker
	now       func() time.Time
	defs      DefinitionSource
	catalog   session.Catalog
}

// NewAnswerInput returns the use case.
func NewAnswerInput(tx Transactor, v AnswerValidator, waker Waker, now func() time.Time) *AnswerInput {
	return &AnswerInput{tx: tx, validator: v, waker: waker, now: now}
}

// WithSecretValues makes the recorded answer mask the secret config values
// of the run's workflow too (as its logs are masked), read through defs.
func (uc *AnswerInput) WithSecretValues(defs DefinitionSource, c session.Catalog) *AnswerInput {
	uc.defs, uc.catalog = defs, c
	return uc
}

// secretValues is the replacer of the run's secret config values, nil when
// there are none or no definitions to read them from.
func (uc *AnswerInput) secretValues(ctx context.Context, executionID string) (*strings.Replacer, error) {
	if uc.defs == nil || uc.catalog == nil {
		return nil, nil
	}
	src, err := uc.defs.Source(ctx, executionID)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	w, err := session.RestoreWorkflow(src.WorkflowID, "", src.Definition)
	if err != nil {
		return nil, err
	}
	if pairs := SecretValues(w, uc.catalog); len(pairs) > 0 {
		return strings.NewReplacer(pairs...), nil
	}
	return nil, nil
}

// AnswerRequest is one answer. The input's session comes from the input
// itself: SessionID, when set, is what the caller believes it to be, and
// SessionAllowed, when not nil, says which sessions' inputs the caller may
// answer. An input failing either is answered exactly as one that does not
// exist.
type AnswerRequest struct {
	InputID        string
	SessionID      string
	Answer         any
	Actor, Channel string
	SessionAllowed func(sessionID string) bool
}

// InputNotFound is the error for an input that does not exist, worded as
// the input store words it; an input the caller may not see gets it too,
// byte for byte.
func InputNotFound(id string) error {
	return fault.Newf(ErrInputNotFound, "input %s does not exist; call GET /api/inputs to list open inputs", id)
}

// Handle records the answer.
func (uc *AnswerInput) Handle(ctx context.Context, in AnswerRequest) (Input, error) {
	var out Input
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		inp, err := st.Inputs.Lock(ctx, in.InputID)
		if err != nil {
			return err
		}
		if (in.SessionID != "" && in.SessionID != inp.SessionID) || (in.SessionAllowed != nil && !in.SessionAllowed(inp.SessionID)) {
			return InputNotFound(in.InputID)
		}
		if inp.Status != "open" {
			return fault.Newf(fault.ErrConflict, "input %s is %s, not open; nothing was changed", inp.ID, inp.Status)
		}
		if inp.Schema != nil && uc.validator != nil {
			if err := uc.validator.Validate(inp.Schema, in.Answer); err != nil {
				return answerViolations(err)
			}
		}
		now := uc.now()
		w, err := newWork(ctx, st, []string{inp.ExecutionID}, now)
		if err != nil {
			return err
		}
		w.actor, w.channel = in.Actor, in.Channel
		ex := w.execs[inp.ExecutionID]
		if ex == nil || ex.Status().Terminal() {
			return fault.Newf(fault.ErrConflict, "execution %s has finished; the input can no longer be answered", inp.ExecutionID)
		}
		inp.Status, inp.Answer, inp.AnsweredBy, inp.AnsweredAt = "answered", in.Answer, in.Actor, now
		if err := st.Inputs.Save(ctx, inp); err != nil {
			return err
		}
		// The message was released once already: only a closed gate holds it.
		held := w.gate(inp.ExecutionID, inp.NodeID) == execution.GateClosed
		if err := st.Items.Resume(ctx, inp.ItemID, in.Answer, in.Actor, held); err != nil {
			return err
		}
		if n := w.nodes[inp.ExecutionID][inp.NodeID]; n != nil {
			n.Unpark()
		}
		values, err := uc.secretValues(ctx, inp.ExecutionID)
		if err != nil {
			return err
		}
		w.events = append(w.events, Event{Type: EventInputAnswered, At: now, SessionID: inp.SessionID,
			WorkflowID: w.before[inp.ExecutionID].WorkflowID, ExecutionID: inp.ExecutionID, NodeID: inp.NodeID,
			Actor: in.Actor, Channel: in.Channel, Data: answeredData(inp.ID, in, values)})
		out = inp
		return w.save(ctx)
	})
	if err == nil {
		wake(uc.waker)
	}
	return out, err
}

// answeredData is the data of an InputAnswered event: the input, the door
// (channel, as before), who answered (answeredBy: actor and channel) and
// the answer as the journal records it (journal.RecordedAnswer: secrets
// masked, the run's secret values among them, bounded by
// journal.MaxRecordedAnswer with its length and SHA-256).
func answeredData(inputID string, in AnswerRequest, values *strings.Replacer) map[string]any {
	data := journal.RecordedAnswer(in.Answer, values)
	data["inputId"], data["channel"] = inputID, in.Channel
	data["answeredBy"] = map[string]any{"actor": in.Actor, "channel": in.Channel}
	return data
}

// answerViolations words a validator's refusal for the caller: each
// violation the validator named by its path inside the answer becomes one
// under "answer" ("answer.count"), so a form can show it by its field.
func answerViolations(err error) error {
	var ve *fault.ValidationError
	if !errors.As(err, &ve) {
		return &fault.ValidationError{Subject: "answer", Violations: []fault.Violation{{Path: "answer", Message: "does not match the input's schema: " + err.Error()}}}
	}
	out := &fault.ValidationError{Subject: "answer"}
	for _, v := range ve.Violations {
		p := "answer"
		if v.Path != "" {
			p += "." + v.Path
			if strings.HasPrefix(v.Path, "[") {
				p = "answer" + v.Path
			}
		}
		out.Violations = append(out.Violations, fault.Violation{Path: p, Message: "does not match the input's schema: " + v.Message})
	}
	return out
}
