package executionapp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// inputTx runs every transaction over one fixed set of inputs; an answer
// that passes the session checks meets an input that is no longer open (409),
// so no other store is needed.
type inputTx map[string]executionapp.Input

func (tx inputTx) WithinTx(ctx context.Context, fn func(context.Context, executionapp.Stores) error) error {
	return fn(ctx, executionapp.Stores{Inputs: inputStore(tx)})
}

type inputStore map[string]executionapp.Input

func (s inputStore) Create(context.Context, executionapp.Input) error {
	return errors.New("not in this test")
}
func (s inputStore) Save(context.Context, executionapp.Input) error {
	return errors.New("not in this test")
}
func (s inputStore) CancelOpen(context.Context, string, string) error {
	return errors.New("not in this test")
}
func (s inputStore) Lock(_ context.Context, id string) (executionapp.Input, error) {
	in, ok := s[id]
	if !ok {
		return executionapp.Input{}, executionapp.InputNotFound(id)
	}
	return in, nil
}

// TestAnswerInputTakesTheSessionFromTheInput: an input of a session the
// caller may not see, or of another session than the one it named, is
// answered byte for byte as an input that does not exist; an input of its
// own session needs no session named, and passes when it names the right one.
func TestAnswerInputTakesTheSessionFromTheInput(t *testing.T) {
	t.Parallel()
	const own, foreign, unknown = "0193d000-0000-7000-8000-000000000001", "0193d000-0000-7000-8000-000000000002", "0193d000-0000-7000-8000-000000000003"
	tx := inputTx{
		own:     {ID: own, SessionID: "alpha", ExecutionID: "e1", NodeID: "ask", Status: "answered"},
		foreign: {ID: foreign, SessionID: "beta", ExecutionID: "e2", NodeID: "ask", Status: "answered"},
	}
	uc := executionapp.NewAnswerInput(tx, nil, nil, time.Now)
	onlyAlpha := func(sid string) bool { return sid == "alpha" }
	answer := func(id, sessionID string, allowed func(string) bool) error {
		_, err := uc.Handle(context.Background(), executionapp.AnswerRequest{InputID: id, SessionID: sessionID, Answer: "x",
			Actor: "key:limited", Channel: "rest", SessionAllowed: allowed})
		return err
	}

	// Passing the session checks reaches the input's status: 409.
	for _, c := range []struct {
		name, session string
		allowed       func(string) bool
	}{
		{"own input, no session named", "", onlyAlpha},
		{"own input, its session named", "alpha", onlyAlpha},
		{"any input, a key of every session", "", nil},
	} {
		if err := answer(own, c.session, c.allowed); !errors.Is(err, fault.ErrConflict) {
			t.Errorf("%s: got %v, want the 409 of an input that is not open", c.name, err)
		}
	}

	for _, c := range []struct {
		name, session string
		allowed       func(string) bool
	}{
		{"foreign input", "", onlyAlpha},
		{"foreign input, its session named", "beta", onlyAlpha},
		{"foreign input, the caller's session named", "alpha", onlyAlpha},
		{"input of another session than the one named", "alpha", nil},
	} {
		err := answer(foreign, c.session, c.allowed)
		if !errors.Is(err, executionapp.ErrInputNotFound) || !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("%s: got %v, want not found", c.name, err)
			continue
		}
		want := executionapp.InputNotFound(unknown).Error()
		if uerr := answer(unknown, c.session, c.allowed); uerr == nil || uerr.Error() != want {
			t.Fatalf("unknown input: got %v, want %q", uerr, want)
		}
		if got := err.Error(); got != executionapp.InputNotFound(foreign).Error() {
			t.Errorf("%s: got %q, want the words of an unknown input, %q", c.name, got, executionapp.InputNotFound(foreign))
		}
	}
}

type refuseAll struct{ err error }

func (r refuseAll) Validate(map[string]any, any) error { return r.err }

// TestAnswerInputReportsEachFieldUnderAnswer: the validator's violations,
// named inside the answer, come back under "answer" ("answer.count",
// "answer[0]", "answer" for the whole), and a refusal without paths is one
// violation at "answer".
func TestAnswerInputReportsEachFieldUnderAnswer(t *testing.T) {
	t.Parallel()
	const id = "0193d000-0000-7000-8000-000000000009"
	tx := inputTx{id: {ID: id, SessionID: "alpha", ExecutionID: "e1", NodeID: "ask", Status: "open", Schema: map[string]any{"type": "object"}}}
	answer := func(v executionapp.AnswerValidator) []fault.Violation {
		_, err := executionapp.NewAnswerInput(tx, v, nil, time.Now).Handle(context.Background(),
			executionapp.AnswerRequest{InputID: id, Answer: map[string]any{}, Actor: "key:operator", Channel: "rest"})
		var ve *fault.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("a refused answer: %v, want a validation error", err)
		}
		return ve.Violations
	}
	vs := answer(refuseAll{&fault.ValidationError{Subject: "answer", Violations: []fault.Violation{
		{Path: "count", Message: "minimum: got 0, want 1"}, {Path: "[0]", Message: "x"}, {Message: "y"}}}})
	if len(vs) != 3 || vs[0].Path != "answer.count" || vs[1].Path != "answer[0]" || vs[2].Path != "answer" ||
		vs[0].Message != "does not match the input's schema: minimum: got 0, want 1" {
		t.Fatalf("violations: %+v", vs)
	}
	vs = answer(refuseAll{errors.New("no good")})
	if len(vs) != 1 || vs[0].Path != "answer" || vs[0].Message != "does not match the input's schema: no good" {
		t.Fatalf("a plain refusal: %+v", vs)
	}
}
